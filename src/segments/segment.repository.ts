import { type ExpressionBuilder, type Kysely, type SelectQueryBuilder, sql, type Transaction } from 'kysely';
import { type Seek, seekPage } from '../db/keyset.js';
import { isPostgres } from '../db/precompiled.js';
import type { DB } from '../db/schema.js';
import type { EndUserTable } from '../end-users/end-user.table.js';
import type { SegmentTable } from './segment.tables.js';

/** SQL of segments: the saved rows, and the end users a filter matches. */

type Db = Kysely<DB> | Transaction<DB>;

/** A filter as the SQL reads it: attribute values already as their stored text. */
export interface MemberFilter {
  tagsAny?: readonly string[];
  tagsAll?: readonly string[];
  origin?: EndUserTable['origin'];
  attributes?: readonly { name: string; value: string }[];
  consent?: 'granted' | 'not_denied';
  lastSeenAfter?: number;
  lastSeenBefore?: number;
  createdAfter?: number;
}

/** As in end_user_attributes_org_name_value_idx (migration 0060). */
const ATTRIBUTE_INDEXED = 200;

/** The msgapp consent status stored in the record's consent JSON (null when none). */
function consentStatus(db: Db) {
  return isPostgres(db)
    ? sql<string | null>`(end_users.consent::jsonb #>> '{msgapp,status}')`
    : sql<string | null>`json_extract(end_users.consent, '$.msgapp.status')`;
}

function members(db: Db, orgId: string, filter: MemberFilter): SelectQueryBuilder<DB, 'end_users', object> {
  let query = db.selectFrom('end_users').where('end_users.org_id', '=', orgId);
  if (filter.origin !== undefined) query = query.where('end_users.origin', '=', filter.origin);
  if (filter.createdAfter !== undefined) query = query.where('end_users.created_at', '>=', filter.createdAfter);
  if (filter.lastSeenAfter !== undefined) query = query.where('end_users.last_seen_at', '>=', filter.lastSeenAfter);
  if (filter.lastSeenBefore !== undefined) query = query.where('end_users.last_seen_at', '<', filter.lastSeenBefore);
  const tagged = (tags: readonly string[]) => (eb: ExpressionBuilder<DB, 'end_users'>) =>
    eb
      .selectFrom('end_user_tags')
      .select('end_user_tags.end_user_id')
      .where('end_user_tags.org_id', '=', orgId)
      .where('end_user_tags.tag', 'in', tags);
  if (filter.tagsAny && filter.tagsAny.length > 0) query = query.where('end_users.id', 'in', tagged(filter.tagsAny));
  for (const tag of filter.tagsAll ?? []) query = query.where('end_users.id', 'in', tagged([tag]));
  for (const pair of filter.attributes ?? []) {
    const head = Array.from(pair.value).slice(0, ATTRIBUTE_INDEXED).join('');
    query = query.where('end_users.id', 'in', (eb) =>
      eb
        .selectFrom('end_user_attributes')
        .select('end_user_attributes.end_user_id')
        .where('end_user_attributes.org_id', '=', orgId)
        .where('end_user_attributes.name', '=', pair.name)
        .where(sql<string>`substr(end_user_attributes.value, 1, ${sql.lit(ATTRIBUTE_INDEXED)})`, '=', head)
        .where('end_user_attributes.value', '=', pair.value),
    );
  }
  if (filter.consent === 'granted') query = query.where(consentStatus(db), '=', 'granted');
  if (filter.consent === 'not_denied') {
    const status = consentStatus(db);
    query = query.where((eb) => eb.or([eb(status, 'is', null), eb(status, '!=', 'denied')]));
  }
  return query;
}

export async function countMembers(db: Db, orgId: string, filter: MemberFilter): Promise<number> {
  const row = await members(db, orgId, filter)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** A page of the members, newest first on (created_at, id). */
export async function listMemberRows(
  db: Db,
  orgId: string,
  filter: MemberFilter,
  seek: Seek | undefined,
  limit: number,
): Promise<EndUserTable[]> {
  return seekPage(
    members(db, orgId, filter).selectAll('end_users'),
    { at: 'end_users.created_at', id: 'end_users.id' },
    {
      newestFirst: true,
      seek,
      limit,
    },
  ).execute();
}

export interface MemberSlice {
  id: string;
  phone: string | null;
  /** channelIdentifiers.msgapp. */
  msgapp: string | null;
  /** msgapp consent denied: the end user opted out. */
  denied: boolean;
}

/** A slice of the members' IDs and phones in ID order after `afterId`: what a segment send walks. */
export async function memberPhonesAfter(
  db: Db,
  orgId: string,
  filter: MemberFilter,
  afterId: string,
  limit: number,
): Promise<MemberSlice[]> {
  const rows = await members(db, orgId, filter)
    .select(['end_users.id', 'end_users.phone', 'end_users.channel_identifiers', 'end_users.consent'])
    .where('end_users.id', '>', afterId)
    .orderBy('end_users.id')
    .limit(limit)
    .execute();
  return rows.map((r) => {
    let msgapp: string | null = null;
    try {
      const ids = JSON.parse(r.channel_identifiers) as { msgapp?: unknown };
      if (typeof ids.msgapp === 'string') msgapp = ids.msgapp;
    } catch {
      // a malformed identifiers column: the phone alone
    }
    let denied = false;
    try {
      denied = (JSON.parse(r.consent) as { msgapp?: { status?: unknown } }).msgapp?.status === 'denied';
    } catch {
      // a malformed consent column: nothing recorded
    }
    return { id: r.id, phone: r.phone, msgapp, denied };
  });
}

export async function insertSegment(db: Db, row: SegmentTable): Promise<void> {
  await db.insertInto('segments').values(row).execute();
}

export async function findSegment(db: Db, orgId: string, id: string): Promise<SegmentTable | undefined> {
  return db.selectFrom('segments').selectAll().where('id', '=', id).where('org_id', '=', orgId).executeTakeFirst();
}

export async function listSegmentRows(db: Db, orgId: string, seek: Seek | undefined, limit: number) {
  return seekPage(
    db.selectFrom('segments').selectAll().where('org_id', '=', orgId),
    { at: 'created_at', id: 'id' },
    { newestFirst: true, seek, limit },
  ).execute();
}

export async function setSegmentCount(db: Db, id: string, count: number, at: number): Promise<void> {
  await db.updateTable('segments').set({ count, counted_at: at }).where('id', '=', id).execute();
}

export async function deleteSegmentRow(db: Db, orgId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('segments').where('id', '=', id).where('org_id', '=', orgId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
