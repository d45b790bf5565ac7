import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { type PageRequest, pageOf, seekOf, type TwoWayPage } from '../shared/page.js';
import { countKeyRows, type KeyListFilter, listCampaignKeyRows, listKeyPageRows } from './key.repository.js';
import { type ApiKey, toApiKey } from './key.service.js';

/**
 * The dashboard's key lists: active keys and revoked keys apart, each newest first a page at a
 * time both ways, with how many there are.
 */

const KEY_ID = /^key_[A-Za-z0-9]{22}$/;

export async function pageOfKeys(
  db: Kysely<DB>,
  orgId: string,
  filter: KeyListFilter,
  request: PageRequest,
): Promise<TwoWayPage<ApiKey> & { total: number }> {
  const seek = seekOf(request, KEY_ID);
  const [rows, total] = await Promise.all([
    listKeyPageRows(db, orgId, filter, seek, request.limit + 1),
    countKeyRows(db, orgId, filter),
  ]);
  return { ...pageOf(rows, request.limit, seek, (r) => ({ at: Number(r.created_at), id: r.id }), toApiKey), total };
}

/** The keys of one campaign (its page lists them, active and revoked apart). */
export async function listCampaignKeys(db: Kysely<DB>, orgId: string, campaignId: string): Promise<ApiKey[]> {
  return (await listCampaignKeyRows(db, orgId, campaignId)).map(toApiKey);
}
