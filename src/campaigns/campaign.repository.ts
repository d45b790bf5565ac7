import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { CampaignTable, DB } from '../db/schema.js';
import type { CampaignDedupeKeyTable, CampaignDeliveryTable } from './campaign.tables.js';

/** SQL of campaigns, their deliveries and dedupe keys; nothing else. */

export const DELIVERY_STATUSES = ['queued', 'sending', 'sent', 'delivered', 'read', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/**
 * A delivery's public status, from its own row (`d`) and its message's (`m`): the provider's word
 * (sent, delivered, read, failed) wins, since the messages row only ever moves forward; then a
 * failure of ours; then queued (no send attempted yet) or sending (handed to the provider, or
 * about to be, with no status back yet).
 */
const STATUS_SQL: RawBuilder<DeliveryStatus> = sql<DeliveryStatus>`case
  when m.status in ('sent', 'delivered', 'read', 'failed') then m.status
  when d.state = 'failed' or m.status = 'rejected' then 'failed'
  when d.state = 'queued' then 'queued'
  else 'sending' end`;

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
    .set({ status, updated_at: at })
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

export async function countDeliveries(db: Kysely<DB>, campaignId: string): Promise<Record<DeliveryStatus, number>> {
  const rows = await db
    .selectFrom('campaign_deliveries as d')
    .leftJoin('messages as m', 'm.id', 'd.message_id')
    .select([STATUS_SQL.as('status'), (eb) => eb.fn.countAll<number>().as('n')])
    .where('d.campaign_id', '=', campaignId)
    .groupBy(STATUS_SQL)
    .execute();
  const counts = Object.fromEntries(DELIVERY_STATUSES.map((s) => [s, 0])) as Record<DeliveryStatus, number>;
  for (const row of rows) counts[row.status] = Number(row.n);
  return counts;
}

export interface DeliveryView {
  id: string;
  to_phone: string;
  end_user_id: string | null;
  conversation_id: string | null;
  status: DeliveryStatus;
  provider_message_id: string | null;
  error: string | null;
  message_error: string | null;
  created_at: number;
  sent_at: number | null;
  updated_at: number;
  message_updated_at: number | null;
}

/** Deliveries of a campaign, oldest first, after the (created_at, id) cursor. */
export async function listDeliveryRows(
  db: Kysely<DB>,
  campaignId: string,
  options: {
    status?: DeliveryStatus | undefined;
    limit: number;
    after?: [number, string] | undefined;
    /** Newest first (the dashboard's recent deliveries); oldest first by default. */
    newestFirst?: boolean;
  },
): Promise<DeliveryView[]> {
  let query = db
    .selectFrom('campaign_deliveries as d')
    .leftJoin('messages as m', 'm.id', 'd.message_id')
    .select([
      'd.id',
      'd.to_phone',
      'd.end_user_id',
      'd.conversation_id',
      STATUS_SQL.as('status'),
      'm.provider_message_id',
      'd.error',
      'm.error_message as message_error',
      'd.created_at',
      'd.sent_at',
      'd.updated_at',
      'm.updated_at as message_updated_at',
    ])
    .where('d.campaign_id', '=', campaignId);
  if (options.status) query = query.where(STATUS_SQL, '=', options.status);
  const after = options.after;
  const direction = options.newestFirst ? 'desc' : 'asc';
  const past = options.newestFirst ? '<' : '>';
  if (after) {
    query = query.where((eb) =>
      eb.or([
        eb('d.created_at', past, after[0]),
        eb.and([eb('d.created_at', '=', after[0]), eb('d.id', past, after[1])]),
      ]),
    );
  }
  const rows = await query.orderBy('d.created_at', direction).orderBy('d.id', direction).limit(options.limit).execute();
  return rows.map((r) => ({
    ...r,
    created_at: Number(r.created_at),
    sent_at: r.sent_at === null ? null : Number(r.sent_at),
    updated_at: Number(r.updated_at),
    message_updated_at: r.message_updated_at === null ? null : Number(r.message_updated_at),
  }));
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
