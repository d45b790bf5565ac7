import { type ExpressionBuilder, type Kysely, sql, type Transaction } from 'kysely';
import { byIdWithKeyEpoch } from '../db/by-id-with-key-epoch.js';
import { isRetryableWrite, isUniqueViolation } from '../db/db-errors.js';
import { isPostgres, precompiled, slot } from '../db/precompiled.js';
import type { DB } from '../db/schema.js';
import type { EndUser } from './end-user.model.js';
import type { EndUserTable } from './end-user.table.js';
import { prefixEnd } from './normalize.js';

type Db = Kysely<DB> | Transaction<DB>;

const codeOf = (err: unknown): string | undefined => {
  if (typeof err !== 'object' || err === null || !('code' in err)) return undefined;
  const code = (err as { code: unknown }).code;
  return typeof code === 'string' ? code : undefined;
};

/**
 * The database refused the row itself, for a reason other than a duplicate: a check, foreign key,
 * not-null or trigger constraint, or a value it cannot store. Retrying the same write cannot help.
 */
export function isRefusedWrite(err: unknown): boolean {
  const code = codeOf(err);
  if (code === undefined || isUniqueViolation(err)) return false;
  if (code.startsWith('SQLITE_CONSTRAINT') || code === 'SQLITE_MISMATCH' || code === 'SQLITE_TOOBIG') return true;
  // PostgreSQL SQLSTATE classes 22 (data exception) and 23 (integrity constraint), and P0001 (RAISE).
  return /^(22|23)[0-9A-Z]{3}$/.test(code) || code === 'P0001';
}

const WRITE_ATTEMPTS = 5;

/**
 * Runs a write (a whole transaction) again when PostgreSQL aborted it as a deadlock victim or a
 * serialization failure, a few times with a short random pause; the last error is thrown as is.
 * SQLite needs none of this: its one writer waits (busy_timeout) instead.
 */
export async function withWriteRetry<T>(write: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (attempt >= WRITE_ATTEMPTS || !isRetryableWrite(err)) throw err;
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20 * attempt));
    }
  }
}

function parseJson<T>(text: string, fallback: T): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

/** The one place a stored row becomes the public record. */
export function toEndUser(row: EndUserTable): EndUser {
  return {
    _id: row.id,
    name: row.name,
    email: row.email,
    phone: row.phone,
    tags: parseJson<string[]>(row.tags, []),
    origin: row.origin,
    channelIdentifiers: parseJson(row.channel_identifiers, {}),
    consent: parseJson(row.consent, {}),
    createdAt: Number(row.created_at),
    lastSeenAt: row.last_seen_at === null ? null : Number(row.last_seen_at),
    updatedAt: Number(row.updated_at),
  };
}

export async function findOrgCountry(db: Db, orgId: string): Promise<string | null> {
  const row = await db.selectFrom('organizations').select('default_country').where('id', '=', orgId).executeTakeFirst();
  return row?.default_country ?? null;
}

export async function findEndUser(db: Db, orgId: string, id: string, lock = false): Promise<EndUserTable | undefined> {
  let query = db.selectFrom('end_users').selectAll().where('id', '=', id).where('org_id', '=', orgId);
  if (lock && isPostgres(db)) query = query.forUpdate();
  return query.executeTakeFirst();
}

/**
 * The read of GET by ID, the hottest query: built and compiled once, and on SQLite a statement
 * prepared once (Kysely would build and prepare it again on every call).
 */
const endUserById = precompiled((db) =>
  db.selectFrom('end_users').selectAll().where('id', '=', slot<string>(0)).where('org_id', '=', slot<string>(1)),
);

export async function findEndUserById(db: Db, orgId: string, id: string): Promise<EndUserTable | undefined> {
  return (await endUserById(db, [id, orgId])).rows[0];
}

/** The key epoch and the end user (if any) in one statement: always one row, the epoch's. */
const endUserByIdWithKeyEpoch = precompiled((db) =>
  db
    .selectFrom('key_epoch')
    .leftJoin('end_users', (join) =>
      join.on('end_users.id', '=', slot<string>(0)).on('end_users.org_id', '=', slot<string>(1)),
    )
    .selectAll('end_users')
    .select('key_epoch.epoch as key_epoch')
    .where('key_epoch.id', '=', 1),
);

/** See `byIdWithKeyEpoch`: the reads of one turn of the event loop are taken together just after it. */
export const findEndUserByIdWithKeyEpoch = byIdWithKeyEpoch<EndUserTable>(
  'end_users',
  async (db, { orgId, id }) => (await endUserByIdWithKeyEpoch(db, [id, orgId])).rows[0],
);

export async function findByPhone(db: Db, orgId: string, phone: string): Promise<EndUserTable | undefined> {
  return db
    .selectFrom('end_users')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('phone', '=', phone)
    .executeTakeFirst();
}

/** Records of the organization holding any of these emails or phones. */
export async function findHolders(
  db: Db,
  orgId: string,
  emails: readonly string[],
  phones: readonly string[],
): Promise<{ id: string; email: string | null; phone: string | null }[]> {
  const out: { id: string; email: string | null; phone: string | null }[] = [];
  const CHUNK = 500;
  for (let i = 0; i < emails.length; i += CHUNK) {
    out.push(
      ...(await db
        .selectFrom('end_users')
        .select(['id', 'email', 'phone'])
        .where('org_id', '=', orgId)
        .where('email', 'in', emails.slice(i, i + CHUNK))
        .execute()),
    );
  }
  for (let i = 0; i < phones.length; i += CHUNK) {
    out.push(
      ...(await db
        .selectFrom('end_users')
        .select(['id', 'email', 'phone'])
        .where('org_id', '=', orgId)
        .where('phone', 'in', phones.slice(i, i + CHUNK))
        .execute()),
    );
  }
  return out;
}

export async function insertEndUser(db: Db, row: EndUserTable): Promise<void> {
  await db.insertInto('end_users').values(row).execute();
}

// 12 columns a row: 500 rows stay far below SQLite's 32,766 and PostgreSQL's 65,535 bound parameters.
const INSERT_CHUNK = 500;

/**
 * Inserts what it can; returns the IDs that went in. Rows hitting a unique constraint are skipped.
 * Concurrent callers should pass rows in one global order (see byIdentity): two transactions that
 * take the same unique keys in different orders wait on each other, and PostgreSQL kills one.
 */
export async function insertEndUsersSkippingConflicts(db: Db, rows: readonly EndUserTable[]): Promise<Set<string>> {
  const inserted = new Set<string>();
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
    const got = await db
      .insertInto('end_users')
      .values(rows.slice(i, i + INSERT_CHUNK))
      .onConflict((oc) => oc.doNothing())
      .returning('id')
      .execute();
    for (const r of got) inserted.add(r.id);
  }
  return inserted;
}

/** Same as insertEndUsersSkippingConflicts, but for one row: true when it went in. */
export async function insertEndUserSkippingConflict(db: Db, row: EndUserTable): Promise<boolean> {
  const got = await db
    .insertInto('end_users')
    .values(row)
    .onConflict((oc) => oc.doNothing())
    .returning('id')
    .executeTakeFirst();
  return got !== undefined;
}

export async function insertTags(
  db: Db,
  rows: readonly { end_user_id: string; org_id: string; tag: string }[],
): Promise<void> {
  const CHUNK = 1000;
  for (let i = 0; i < rows.length; i += CHUNK) {
    await db
      .insertInto('end_user_tags')
      .values(rows.slice(i, i + CHUNK))
      .execute();
  }
}

export async function replaceTags(db: Db, orgId: string, id: string, tags: readonly string[]): Promise<void> {
  await db.deleteFrom('end_user_tags').where('end_user_id', '=', id).where('org_id', '=', orgId).execute();
  if (tags.length > 0)
    await insertTags(
      db,
      tags.map((tag) => ({ end_user_id: id, org_id: orgId, tag })),
    );
}

export async function updateEndUserRow(
  db: Db,
  orgId: string,
  id: string,
  set: Partial<Omit<EndUserTable, 'id' | 'org_id' | 'origin' | 'created_at'>>,
): Promise<boolean> {
  const result = await db
    .updateTable('end_users')
    .set(set)
    .where('id', '=', id)
    .where('org_id', '=', orgId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Inbound activity: last seen moves forward only, the name fills in only when empty. */
export async function touchInbound(
  db: Db,
  id: string,
  input: { at: number; now: number; name: { name: string; search: string } | undefined },
): Promise<void> {
  const { name } = input;
  await db
    .updateTable('end_users')
    .set((eb) => ({
      last_seen_at: sql<number>`case when last_seen_at is null or last_seen_at < ${input.at} then ${input.at} else last_seen_at end`,
      updated_at: input.now,
      ...(name
        ? {
            name: eb.fn.coalesce('name', eb.val(name.name)),
            name_search: sql<string>`case when name is null then ${name.search} else name_search end`,
          }
        : {}),
    }))
    .where('id', '=', id)
    .execute();
}

/** Sets the identifiers only if nobody changed them since they were read. */
export async function setChannelIdentifiersIf(db: Db, id: string, before: string, after: string): Promise<boolean> {
  const result = await db
    .updateTable('end_users')
    .set({ channel_identifiers: after })
    .where('id', '=', id)
    .where('channel_identifiers', '=', before)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function deleteEndUserRow(db: Db, orgId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('end_users').where('id', '=', id).where('org_id', '=', orgId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export interface ListFilter {
  origin?: string;
  tag?: string;
  email?: string;
  phone?: string;
  /** `q`: records whose name key, email or phone starts with one of these prefixes (ORed). */
  search?: { name: string; email: string; phones: readonly string[] };
  updatedSince?: number;
  after?: { createdAt: number; id: string };
}

type PrefixColumn = 'name_search' | 'email' | 'phone';
type Search = NonNullable<ListFilter['search']>;

/** Up to this many matches, a prefix search goes through the prefix indexes (SQLite). */
const NARROW_PREFIX = 10_000;

/**
 * name_search, email or phone starts with one of the prefixes: ranges `col >= p AND col < next(p)`.
 * `unindexed` writes the columns as `+col`, which keeps SQLite from using their indexes.
 */
function prefixCondition(eb: ExpressionBuilder<DB, 'end_users'>, search: Search, unindexed = false) {
  const ref = (column: PrefixColumn) => (unindexed ? sql<string>`+${sql.ref(column)}` : eb.ref(column));
  const range = (column: PrefixColumn, prefix: string) => {
    const end = prefixEnd(prefix);
    return end === undefined
      ? eb(ref(column), '>=', prefix)
      : eb.and([eb(ref(column), '>=', prefix), eb(ref(column), '<', end)]);
  };
  return eb.or([
    range('name_search', search.name),
    range('email', search.email),
    ...search.phones.map((p) => range('phone', p)),
  ]);
}

/** How many records match the prefixes, counting no further than `bound`. */
async function countPrefixMatches(db: Db, orgId: string, search: Search, bound: number): Promise<number> {
  const row = await db
    .selectFrom((qb) =>
      qb
        .selectFrom('end_users')
        .select(sql<number>`1`.as('one'))
        .where('org_id', '=', orgId)
        .where((eb) => prefixCondition(eb, search))
        .limit(bound)
        .as('matches'),
    )
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/**
 * Newest first on (created_at, id): a keyset seek, so page 5,000 costs what page 1 costs. Prefixes
 * are ranges (`col >= p AND col < next(p)`) on columns compared in byte order on both databases,
 * so an index on (org_id, col) answers each.
 */
export async function listEndUserRows(
  db: Db,
  orgId: string,
  filter: ListFilter,
  limit: number,
): Promise<EndUserTable[]> {
  let query = db.selectFrom('end_users').selectAll().where('org_id', '=', orgId);
  if (filter.origin !== undefined) query = query.where('origin', '=', filter.origin as EndUserTable['origin']);
  if (filter.email !== undefined) query = query.where('email', '=', filter.email);
  if (filter.phone !== undefined) query = query.where('phone', '=', filter.phone);
  if (filter.updatedSince !== undefined) query = query.where('updated_at', '>=', filter.updatedSince);
  const { tag, search, after } = filter;
  if (tag !== undefined) {
    query = query.where('id', 'in', (eb) =>
      eb.selectFrom('end_user_tags').select('end_user_id').where('org_id', '=', orgId).where('tag', '=', tag),
    );
  }
  if (search !== undefined) {
    // SQLite's planner cannot tell a narrow prefix from a broad one, and picks one plan for both:
    // the prefix indexes (then a sort of every match: 1.4 s for a prefix matching 1,000,000
    // records) or the newest-first index (then a scan until a page is found: 0.5 s over 1,000,000
    // records when almost nothing matches). So count the matches, up to a bound, through the
    // prefix indexes: up to 10,000 → those indexes and a sort (about 20 ms at the bound); more →
    // the newest-first scan, which fills a page quickly when matches are that common (unless they
    // all sit among the oldest records). PostgreSQL's planner makes this choice from its statistics.
    const broad = !isPostgres(db) && (await countPrefixMatches(db, orgId, search, NARROW_PREFIX + 1)) > NARROW_PREFIX;
    query = query.where((eb) => prefixCondition(eb, search, broad));
  }
  if (after) {
    // created_at <= c narrows the index range; the OR breaks ties on id.
    query = query
      .where('created_at', '<=', after.createdAt)
      .where((eb) => eb.or([eb('created_at', '<', after.createdAt), eb('id', '<', after.id)]));
  }
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}
