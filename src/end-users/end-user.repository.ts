import { type Kysely, PostgresAdapter, sql, type Transaction } from 'kysely';
import { precompiled, slot } from '../db/precompiled.js';
import type { DB } from '../db/schema.js';
import type { EndUser } from './end-user.model.js';
import type { EndUserTable } from './end-user.table.js';

type Db = Kysely<DB> | Transaction<DB>;

/** Duplicate key: SQLite SQLITE_CONSTRAINT_UNIQUE / _PRIMARYKEY, PostgreSQL 23505. */
export function isUniqueViolation(err: unknown): boolean {
  if (typeof err !== 'object' || err === null || !('code' in err)) return false;
  const code = (err as { code: unknown }).code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

export const isPostgres = (db: Db): boolean => db.getExecutor().adapter instanceof PostgresAdapter;

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

/** Inserts what it can; returns the IDs that went in. Rows hitting a unique constraint are skipped. */
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
  input: { at: number; now: number; name: string | undefined },
): Promise<void> {
  await db
    .updateTable('end_users')
    .set((eb) => ({
      last_seen_at: sql<number>`case when last_seen_at is null or last_seen_at < ${input.at} then ${input.at} else last_seen_at end`,
      updated_at: input.now,
      ...(input.name ? { name: eb.fn.coalesce('name', eb.val(input.name)) } : {}),
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
  /** Lower-cased prefix matched against name and email. */
  prefix?: string;
  /** E.164-style prefix (`+` and digits) matched against phone. */
  phonePrefix?: string;
  updatedSince?: number;
  after?: { createdAt: number; id: string };
}

const likePrefix = (text: string) => `${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** Newest first on (created_at, id): a keyset seek, so page 5,000 costs what page 1 costs. */
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
  const { tag, prefix, phonePrefix, after } = filter;
  if (tag !== undefined) {
    query = query.where('id', 'in', (eb) =>
      eb.selectFrom('end_user_tags').select('end_user_id').where('org_id', '=', orgId).where('tag', '=', tag),
    );
  }
  if (prefix !== undefined || phonePrefix !== undefined) {
    query = query.where((eb) => {
      const ors = [];
      if (prefix !== undefined) {
        const pattern = likePrefix(prefix);
        ors.push(sql<boolean>`lower(name) like ${pattern} escape '\\'`);
        ors.push(sql<boolean>`email like ${pattern} escape '\\'`);
      }
      if (phonePrefix !== undefined) ors.push(sql<boolean>`phone like ${likePrefix(phonePrefix)} escape '\\'`);
      return eb.or(ors);
    });
  }
  if (after) {
    // created_at <= c narrows the index range; the OR breaks ties on id.
    query = query
      .where('created_at', '<=', after.createdAt)
      .where((eb) => eb.or([eb('created_at', '<', after.createdAt), eb('id', '<', after.id)]));
  }
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}
