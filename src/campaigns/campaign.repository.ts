import type { Kysely } from 'kysely';
import type { CampaignTable, DB } from '../db/schema.js';
import type { CampaignDedupeKeyTable, CampaignDeliveryTable } from './campaign.tables.js';

/** SQL of campaigns, their deliveries and dedupe keys; nothing else. */

export const DELIVERY_STATUSES = ['queued', 'sending', 'sent', 'delivered', 'read', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export async function insertCampaign(db: Kysely<DB>, row: CampaignTable): Promise<void> {
  await db.insertInto('campaigns').values(row).execute();
}

export async function findCampaignRow(db: Kysely<DB>, orgId: string, id: string): Promise<CampaignTable | undefined> {
  return db.selectFrom('campaigns').selectAll().where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst();
}

export async function listCampaignRows(db: Kysely<DB>, orgId: string): Promise<CampaignTable[]> {
  return db
    .selectFrom('campaigns')
    .selectAll()
    .where('org_id', '=', orgId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Sets the status; returns the row as it is now, or undefined when there is no such campaign. */
export async function setCampaignStatus(
  db: Kysely<DB>,
  orgId: string,
  id: string,
  status: CampaignTable['status'],
  at: number,
): Promise<CampaignTable | undefined> {
  return db
    .updateTable('campaigns')
    .set({ status, updated_at: at, paused_reason: null })
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** The status of the campaign, read before each send (a pause takes effect on the next send). */
export async function campaignStatus(db: Kysely<DB>, id: string): Promise<CampaignTable['status'] | undefined> {
  const row = await db.selectFrom('campaigns').select('status').where('id', '=', id).executeTakeFirst();
  return row?.status;
}

const CHUNK = 500;

export async function insertDeliveries(db: Kysely<DB>, rows: readonly CampaignDeliveryTable[]): Promise<void> {
  for (let i = 0; i < rows.length; i += CHUNK) {
    await db
      .insertInto('campaign_deliveries')
      .values(rows.slice(i, i + CHUNK))
      .execute();
  }
}

/** Forgets dedupe keys older than `before`, so they may be used again. */
export async function deleteDedupeKeysBefore(db: Kysely<DB>, campaignId: string, before: number): Promise<void> {
  await db
    .deleteFrom('campaign_dedupe_keys')
    .where('campaign_id', '=', campaignId)
    .where('created_at', '<', before)
    .execute();
}

/**
 * Stores dedupe keys that are new; returns, for every key given, the delivery it points at (the
 * new one, or the first one of an earlier or concurrent request).
 */
export async function claimDedupeKeys(
  db: Kysely<DB>,
  rows: readonly CampaignDedupeKeyTable[],
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const campaignId = rows[0]?.campaign_id;
  if (campaignId === undefined) return out;
  for (let i = 0; i < rows.length; i += CHUNK) {
    const chunk = rows.slice(i, i + CHUNK);
    // A key another request stored (even one committing right now) is left alone: DO NOTHING
    // waits for that request's transaction on PostgreSQL, and SQLite writes one at a time.
    await db
      .insertInto('campaign_dedupe_keys')
      .values(chunk)
      .onConflict((oc) => oc.columns(['campaign_id', 'dedupe_key']).doNothing())
      .execute();
    const stored = await db
      .selectFrom('campaign_dedupe_keys')
      .select(['dedupe_key', 'delivery_id'])
      .where('campaign_id', '=', campaignId)
      .where(
        'dedupe_key',
        'in',
        chunk.map((r) => r.dedupe_key),
      )
      .execute();
    for (const row of stored) out.set(row.dedupe_key, row.delivery_id);
  }
  return out;
}

export async function findDedupeKeys(
  db: Kysely<DB>,
  campaignId: string,
  keys: readonly string[],
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (let i = 0; i < keys.length; i += CHUNK) {
    const rows = await db
      .selectFrom('campaign_dedupe_keys')
      .select(['dedupe_key', 'delivery_id'])
      .where('campaign_id', '=', campaignId)
      .where('dedupe_key', 'in', keys.slice(i, i + CHUNK))
      .execute();
    for (const row of rows) out.set(row.dedupe_key, row.delivery_id);
  }
  return out;
}

export async function deleteDeliveries(db: Kysely<DB>, ids: readonly string[]): Promise<void> {
  for (let i = 0; i < ids.length; i += CHUNK) {
    await db
      .deleteFrom('campaign_deliveries')
      .where('id', 'in', ids.slice(i, i + CHUNK))
      .execute();
  }
}

/** IDs of a campaign's deliveries not yet handed to the provider, after `afterId`, in ID order. */
export async function queuedDeliveryIds(
  db: Kysely<DB>,
  campaignId: string,
  afterId: string,
  limit: number,
): Promise<string[]> {
  const rows = await db
    .selectFrom('campaign_deliveries')
    .select('id')
    .where('campaign_id', '=', campaignId)
    .where('state', '=', 'queued')
    .where('id', '>', afterId)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/**
 * Claims a delivery for one send with our message ID: only if it is still queued and its message
 * ID is still the one seen (`expected`), so two runs of the same delivery never both send.
 */
export async function claimDelivery(
  db: Kysely<DB>,
  id: string,
  messageId: string,
  expected: string | null,
  at: number,
): Promise<boolean> {
  const result = await db
    .updateTable('campaign_deliveries')
    .set({ message_id: messageId, claimed_at: at, updated_at: at })
    .where('id', '=', id)
    .where('state', '=', 'queued')
    .where((eb) => (expected === null ? eb('message_id', 'is', null) : eb('message_id', '=', expected)))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Lets go of a claim whose send certainly did not go out, so a later run may send afresh. */
export async function releaseDelivery(
  db: Kysely<DB>,
  id: string,
  messageId: string,
  at: number,
  throttled: boolean,
): Promise<void> {
  await db
    .updateTable('campaign_deliveries')
    .set((eb) => ({
      message_id: null,
      claimed_at: null,
      updated_at: at,
      ...(throttled ? { throttles: eb('throttles', '+', 1) } : {}),
    }))
    .where('id', '=', id)
    .where('message_id', '=', messageId)
    .execute();
}

export async function markDeliverySending(
  db: Kysely<DB>,
  id: string,
  fields: { endUserId: string | null; conversationId: string | null; sentAt: number | null; at: number },
): Promise<void> {
  await db
    .updateTable('campaign_deliveries')
    .set({
      state: 'sending',
      end_user_id: fields.endUserId,
      conversation_id: fields.conversationId,
      sent_at: fields.sentAt,
      updated_at: fields.at,
    })
    .where('id', '=', id)
    .execute();
}

export async function markDeliveryFailed(
  db: Kysely<DB>,
  id: string,
  error: string,
  at: number,
  fields: {
    endUserId?: string | null;
    conversationId?: string | null;
    onlyUnclaimed?: boolean;
    messageId?: string;
  } = {},
): Promise<void> {
  let query = db
    .updateTable('campaign_deliveries')
    .set({
      state: 'failed',
      error,
      updated_at: at,
      ...(fields.endUserId !== undefined ? { end_user_id: fields.endUserId } : {}),
      ...(fields.conversationId !== undefined ? { conversation_id: fields.conversationId } : {}),
    })
    .where('id', '=', id);
  if (fields.onlyUnclaimed) query = query.where('message_id', 'is', null).where('state', '=', 'queued');
  if (fields.messageId !== undefined) query = query.where('message_id', '=', fields.messageId);
  await query.execute();
}

/** Deletes a campaign and its keys (its deliveries and dedupe keys go with it: ON DELETE CASCADE); how many keys. */
export async function deleteCampaignAndKeys(db: Kysely<DB>, orgId: string, id: string): Promise<number> {
  const keys = await db
    .deleteFrom('api_keys')
    .where('org_id', '=', orgId)
    .where('campaign_id', '=', id)
    .executeTakeFirst();
  await db.deleteFrom('campaigns').where('org_id', '=', orgId).where('id', '=', id).execute();
  return Number(keys.numDeletedRows);
}

/** Whether a message was stored under this ID (a send stores it right before calling the provider). */
export async function isMessageStored(db: Kysely<DB>, messageId: string): Promise<boolean> {
  return (await db.selectFrom('messages').select('id').where('id', '=', messageId).executeTakeFirst()) !== undefined;
}

/** The status of a message, if stored. */
export async function messageStatus(db: Kysely<DB>, messageId: string): Promise<string | undefined> {
  const row = await db.selectFrom('messages').select('status').where('id', '=', messageId).executeTakeFirst();
  return row?.status;
}

/** Fills a delivery's conversation and end user from its message (what a crashed run could not record). */
export async function fillDeliveryFromMessage(db: Kysely<DB>, deliveryId: string, messageId: string): Promise<void> {
  const msg = await db
    .selectFrom('messages as m')
    .leftJoin('conversations as c', 'c.id', 'm.conversation_id')
    .select(['m.conversation_id', 'c.end_user_id'])
    .where('m.id', '=', messageId)
    .executeTakeFirst();
  await db
    .updateTable('campaign_deliveries')
    .set({ conversation_id: msg?.conversation_id ?? null, end_user_id: msg?.end_user_id ?? null })
    .where('id', '=', deliveryId)
    .execute();
}
