import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { IdempotencyKeyTable } from './idempotency.table.js';

export type IdempotencyRow = IdempotencyKeyTable;

/** Inserts an in-flight claim; throws a unique violation when the key is taken. */
export async function insertClaim(
  db: Kysely<DB>,
  row: { orgId: string; key: string; requestHash: string; createdAt: number; claimToken: string },
): Promise<void> {
  await db
    .insertInto('idempotency_keys')
    .values({
      org_id: row.orgId,
      key: row.key,
      request_hash: row.requestHash,
      state: 'in_flight',
      response_status: null,
      response_body: null,
      created_at: row.createdAt,
      claim_token: row.claimToken,
    })
    .execute();
}

export async function findClaim(db: Kysely<DB>, orgId: string, key: string): Promise<IdempotencyRow | undefined> {
  return db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('key', '=', key)
    .executeTakeFirst();
}

/**
 * Takes over a row that no longer counts (expired, or an abandoned in-flight claim) in one
 * compare-and-set on the creation time that was read: of several takers, exactly one wins.
 */
export async function takeOverClaim(
  db: Kysely<DB>,
  seen: Pick<IdempotencyRow, 'org_id' | 'key' | 'created_at' | 'state'>,
  next: { requestHash: string; createdAt: number; claimToken: string },
): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_keys')
    .set({
      request_hash: next.requestHash,
      state: 'in_flight',
      response_status: null,
      response_body: null,
      created_at: next.createdAt,
      claim_token: next.claimToken,
    })
    .where('org_id', '=', seen.org_id)
    .where('key', '=', seen.key)
    .where('created_at', '=', seen.created_at)
    .where('state', '=', seen.state)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** Stores the response of a claim this request still holds. */
export async function completeClaim(
  db: Kysely<DB>,
  claim: { orgId: string; key: string; createdAt: number },
  response: { status: number; body: string },
): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ state: 'done', response_status: response.status, response_body: response.body })
    .where('org_id', '=', claim.orgId)
    .where('key', '=', claim.key)
    .where('created_at', '=', claim.createdAt)
    .where('state', '=', 'in_flight')
    .execute();
}

/** Deletes a claim this request still holds, so the key can be used again. */
export async function releaseClaim(
  db: Kysely<DB>,
  claim: { orgId: string; key: string; createdAt: number },
): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('org_id', '=', claim.orgId)
    .where('key', '=', claim.key)
    .where('created_at', '=', claim.createdAt)
    .where('state', '=', 'in_flight')
    .execute();
}

/** Deletes every key created at or before `cutoff`. */
export async function deleteOlderThan(db: Kysely<DB>, cutoff: number): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('created_at', '<=', cutoff).execute();
}
