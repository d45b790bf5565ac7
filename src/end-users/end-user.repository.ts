import { type ExpressionBuilder, type Kysely, sql, type Transaction } from 'kysely';
import { type Seek, seekPage } from '../db/keyset.js';
import { isPostgres } from '../db/precompiled.js';
import type { DB } from '../db/schema.js';
import type { EndUser } from './end-user.model.js';
import type { EndUserTable } from './end-user.table.js';
import { prefixEnd } from './normalize.js';

/** SQL of end users outside the hot path (that is in end-user.fast.ts); nothing else. */

type Db = Kysely<DB> | Transaction<DB>;

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
    attributes: parseJson(row.attributes ?? '{}', {}),
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

export async function insertAttributes(
  db: Db,
  rows: readonly { end_user_id: string; org_id: string; name: string; value: string }[],
): Promise<void> {
  // 4 parameters a row: 1,000 rows stay below both databases' bound on parameters.
  const CHUNK = 1000;
  for (let i = 0; i < rows.length; i += CHUNK) {
    await db
      .insertInto('end_user_attributes')
      .values(rows.slice(i, i + CHUNK))
      .execute();
  }
}

export async function replaceAttributes(
  db: Db,
  orgId: string,
  id: string,
  rows: readonly { end_user_id: string; org_id: string; name: string; value: string }[],
): Promise<void> {
  await db.deleteFrom('end_user_attributes').where('end_user_id', '=', id).where('org_id', '=', orgId).execute();
  if (rows.length > 0) await insertAttributes(db, rows);
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
  /** `attribute=key:value`: every pair must match (the value as stored: text, numbers as JSON text). */
  attributes?: readonly { name: string; value: string }[];
  /** Where the page starts (or, backward, ends) on (created_at, id), newest first. */
  seek?: Seek;
}

/** The index keeps the first 200 characters of a value (migration 0060); this many, in the same count. */
const ATTRIBUTE_INDEXED = 200;

/**
 * The IDs of an organization's end users whose attribute `name` is `value`: a seek on
 * end_user_attributes_org_name_value_idx (org_id, name, substr(value, 1, 200)), then the whole value.
 */
export function withAttribute(orgId: string, pair: { name: string; value: string }) {
  const head = Array.from(pair.value).slice(0, ATTRIBUTE_INDEXED).join('');
  return (eb: ExpressionBuilder<DB, 'end_users'>) =>
    eb
      .selectFrom('end_user_attributes')
      .select('end_user_attributes.end_user_id')
      .where('end_user_attributes.org_id', '=', orgId)
      .where('end_user_attributes.name', '=', pair.name)
      .where(sql<string>`substr(end_user_attributes.value, 1, ${sql.lit(ATTRIBUTE_INDEXED)})`, '=', head)
      .where('end_user_attributes.value', '=', pair.value);
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
  const { tag, search, seek } = filter;
  if (tag !== undefined) {
    query = query.where('id', 'in', (eb) =>
      eb.selectFrom('end_user_tags').select('end_user_id').where('org_id', '=', orgId).where('tag', '=', tag),
    );
  }
  for (const pair of filter.attributes ?? []) query = query.where('id', 'in', withAttribute(orgId, pair));
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
  return seekPage(query, { at: 'created_at', id: 'id' }, { newestFirst: true, seek, limit }).execute();
}
