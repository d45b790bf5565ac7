import type { Kysely } from 'kysely';
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
