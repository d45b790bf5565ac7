import type { Kysely } from 'kysely';
import { type Seek, seekPage } from '../db/keyset.js';
import type { ApiKeyTable, DB } from '../db/schema.js';

export async function insertKey(db: Kysely<DB>, row: ApiKeyTable): Promise<void> {
  await db.insertInto('api_keys').values(row).execute();
}

/** The keys of an organization, newest first. */
export async function listKeyRows(db: Kysely<DB>, orgId: string): Promise<ApiKeyTable[]> {
  return db
    .selectFrom('api_keys')
    .selectAll()
    .where('org_id', '=', orgId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}

/** Sets the revocation time of a key not revoked yet; resolves with the number of keys changed. */
export async function setKeyRevoked(db: Kysely<DB>, orgId: string, keyId: string, at: number): Promise<number> {
  const result = await db
    .updateTable('api_keys')
    .set({ revoked_at: at })
    .where('org_id', '=', orgId)
    .where('id', '=', keyId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

export async function findKeyRow(db: Kysely<DB>, orgId: string, keyId: string): Promise<ApiKeyTable | undefined> {
  return db.selectFrom('api_keys').selectAll().where('org_id', '=', orgId).where('id', '=', keyId).executeTakeFirst();
}

/** The keys of an organization with these IDs (the names an audit page shows). */
export async function findKeyRows(db: Kysely<DB>, orgId: string, keyIds: readonly string[]): Promise<ApiKeyTable[]> {
  if (keyIds.length === 0) return [];
  return db.selectFrom('api_keys').selectAll().where('org_id', '=', orgId).where('id', 'in', keyIds).execute();
}

export interface KeyListFilter {
  /** Revoked keys only, or active keys only. */
  readonly revoked: boolean;
  readonly campaignId?: string | undefined;
}

const keysOf = (db: Kysely<DB>, orgId: string, filter: KeyListFilter) => {
  let query = db
    .selectFrom('api_keys')
    .where('org_id', '=', orgId)
    .where('revoked_at', filter.revoked ? 'is not' : 'is', null);
  if (filter.campaignId !== undefined) query = query.where('campaign_id', '=', filter.campaignId);
  return query;
};

/** A page of an organization's active or revoked keys, newest first, on api_keys_org_created_id_idx. */
export async function listKeyPageRows(
  db: Kysely<DB>,
  orgId: string,
  filter: KeyListFilter,
  seek: Seek | undefined,
  limit: number,
): Promise<ApiKeyTable[]> {
  const query = keysOf(db, orgId, filter).selectAll();
  return seekPage(query, { at: 'created_at', id: 'id' }, { newestFirst: true, seek, limit }).execute();
}

export async function countKeyRows(db: Kysely<DB>, orgId: string, filter: KeyListFilter): Promise<number> {
  const row = await keysOf(db, orgId, filter)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** A campaign's keys, active and revoked, newest first (a campaign has few). */
export async function listCampaignKeyRows(db: Kysely<DB>, orgId: string, campaignId: string): Promise<ApiKeyTable[]> {
  return db
    .selectFrom('api_keys')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('campaign_id', '=', campaignId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}
