import { type Kysely, type RawBuilder, sql } from 'kysely';
import { type Seek, seekPage } from '../db/keyset.js';
import type { CampaignTable, DB } from '../db/schema.js';
import { DELIVERY_STATUSES, type DeliveryStatus } from './campaign.repository.js';

/** SQL of the campaign lists: campaigns a page at a time, and deliveries with their public status (counts, pages). */

/** A page of an organization's campaigns, newest first, on campaigns_org_created_idx. */
export async function listCampaignPageRows(
  db: Kysely<DB>,
  orgId: string,
  seek: Seek | undefined,
  limit: number,
): Promise<CampaignTable[]> {
  const query = db.selectFrom('campaigns').selectAll().where('org_id', '=', orgId);
  return seekPage(query, { at: 'created_at', id: 'id' }, { newestFirst: true, seek, limit }).execute();
}

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

const noCounts = () => Object.fromEntries(DELIVERY_STATUSES.map((s) => [s, 0])) as Record<DeliveryStatus, number>;

export async function countDeliveries(db: Kysely<DB>, campaignId: string): Promise<Record<DeliveryStatus, number>> {
  return (await countDeliveriesOf(db, [campaignId])).get(campaignId) ?? noCounts();
}

/** The counts by status of several campaigns in one statement (the campaign list's bars). */
export async function countDeliveriesOf(
  db: Kysely<DB>,
  campaignIds: readonly string[],
): Promise<Map<string, Record<DeliveryStatus, number>>> {
  const out = new Map(campaignIds.map((id) => [id, noCounts()]));
  if (campaignIds.length === 0) return out;
  const rows = await db
    .selectFrom('campaign_deliveries as d')
    .leftJoin('messages as m', 'm.id', 'd.message_id')
    .select(['d.campaign_id', STATUS_SQL.as('status'), (eb) => eb.fn.countAll<number>().as('n')])
    .where('d.campaign_id', 'in', campaignIds)
    .groupBy(['d.campaign_id', STATUS_SQL])
    .execute();
  for (const row of rows) {
    const counts = out.get(row.campaign_id);
    if (counts) counts[row.status] = Number(row.n);
  }
  return out;
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

/**
 * Deliveries of a campaign on (created_at, id), oldest first by default, from a seek, through
 * campaign_deliveries_list_idx in its order. The status is worked out from two tables, so no index
 * holds it and a planner cannot tell how common one is (PostgreSQL then reads the whole campaign
 * and sorts it): a status filter instead reads windows of the index in order and keeps the rows of
 * that status, so a filtered page costs about limit ÷ (the status's share) rows, whichever page.
 */
export async function listDeliveryRows(
  db: Kysely<DB>,
  campaignId: string,
  options: {
    status?: DeliveryStatus | undefined;
    limit: number;
    seek?: Seek | undefined;
    /** Newest first (the dashboard); oldest first by default (the API). */
    newestFirst?: boolean;
  },
): Promise<DeliveryView[]> {
  const { status, limit } = options;
  const newestFirst = options.newestFirst === true;
  if (!status) return deliveryWindow(db, campaignId, { newestFirst, seek: options.seek, limit });
  const window = Math.max(limit * 4, 200);
  const out: DeliveryView[] = [];
  let seek = options.seek;
  for (;;) {
    const rows = await deliveryWindow(db, campaignId, { newestFirst, seek, limit: window });
    for (const row of rows) if (row.status === status && out.length < limit) out.push(row);
    const last = rows[rows.length - 1];
    if (out.length >= limit || rows.length < window || !last) return out;
    seek = { at: last.created_at, id: last.id, backward: seek?.backward === true };
  }
}

async function deliveryWindow(
  db: Kysely<DB>,
  campaignId: string,
  options: { newestFirst: boolean; seek: Seek | undefined; limit: number },
): Promise<DeliveryView[]> {
  const query = db
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
  const rows = await seekPage(query, { at: 'd.created_at', id: 'd.id' }, options).execute();
  return rows.map((r) => ({
    ...r,
    created_at: Number(r.created_at),
    sent_at: r.sent_at === null ? null : Number(r.sent_at),
    updated_at: Number(r.updated_at),
    message_updated_at: r.message_updated_at === null ? null : Number(r.message_updated_at),
  }));
}
