import { TypeCompiler } from '@sinclair/typebox/compiler';
import { assertCampaignKey, type Principal } from '../auth/index.js';
import { MAX_BODY_PARAMETERS, MAX_HEADER_PARAMETERS } from '../channels/channel.schemas.js';
import { checkParameters } from '../channels/channel.service.js';
import type { AppContext } from '../context.js';
import { clip } from '../shared/clip.js';
import { decodeCursor, encodeCursor } from '../shared/cursor.js';
import { AppError, isAppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { parseInternationalPhone } from '../shared/phone.js';
import { CAMPAIGN_DISPATCH_QUEUE, type CampaignDispatchJob } from './campaign.queues.js';
import {
  claimDedupeKeys,
  type DeliveryStatus,
  deleteDedupeKeysBefore,
  findCampaignRow,
  insertDeliveries,
} from './campaign.repository.js';
import {
  CampaignRecipient,
  type CampaignWebhookBody,
  type CampaignWebhookResponse,
  type DeliveriesQuery,
  type DeliveriesResponse,
  type RecipientResult,
} from './campaign.schemas.js';
import type { CampaignDeliveryTable } from './campaign.tables.js';
import { type DeliveryView, listDeliveryRows } from './campaign-list.repository.js';

/** Dedupe keys are remembered this long. */
export const DEDUPE_MS = 30 * 24 * 60 * 60 * 1000;

const recipientCheck = TypeCompiler.Compile(CampaignRecipient);

/** The recipient's row, or why it is rejected (a sentence). */
export function checkRecipient(
  value: unknown,
  index: number,
): { ok: true; to: string; recipient: CampaignRecipient } | { ok: false; error: string } {
  const at = `recipients[${index}]`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, error: `${at} must be an object with 'to'.` };
  }
  if (!recipientCheck.Check(value)) {
    const first = recipientCheck.Errors(value).First();
    const path = first?.path ? first.path.replace(/^\//, '').replaceAll('/', '.') : '';
    const known = new Set(['to', 'parameters', 'dedupeKey', 'endUser']);
    const unknownField = Object.keys(value).find((k) => !known.has(k));
    if (unknownField !== undefined)
      return { ok: false, error: `${at} has an unknown field '${clip(unknownField, 40)}'.` };
    return { ok: false, error: `${at}${path ? `.${path}` : ''}: ${first?.message ?? 'is not a valid recipient'}.` };
  }
  const phone = parseInternationalPhone(value.to);
  if (!phone.ok) {
    return {
      ok: false,
      error:
        phone.problem === 'extension'
          ? `${at}.to must be a phone number without an extension; got '${clip(value.to)}'.`
          : `${at}.to must be a valid phone number in international format, such as +14155550100; got '${clip(value.to)}'.`,
    };
  }
  try {
    const params = value.parameters;
    checkParameters(params?.header ?? [], 'header', MAX_HEADER_PARAMETERS, `${at}.parameters`);
    checkParameters(params?.body ?? [], 'body', MAX_BODY_PARAMETERS, `${at}.parameters`);
  } catch (err) {
    if (isAppError(err)) return { ok: false, error: err.message };
    throw err;
  }
  return { ok: true, to: phone.e164, recipient: value };
}

/**
 * The verb of POST /api/campaigns/<id>/webhook: checks each recipient alone, skips dedupe keys
 * seen in the last 30 days (or earlier in the same request), and stores the deliveries with one
 * job that queues their sends, in one transaction: once it commits (and only then) the 202 is
 * answered, so an accepted delivery survives any crash after it.
 */
export async function acceptRecipients(
  ctx: AppContext,
  principal: Principal,
  campaignId: string,
  body: CampaignWebhookBody,
): Promise<CampaignWebhookResponse> {
  assertCampaignKey(principal, campaignId);
  const campaign = await findCampaignRow(ctx.db, principal.orgId, campaignId);
  if (!campaign) throw new AppError('NOT_FOUND', `No campaign with ID '${clip(campaignId, 64)}' in this organization.`);
  if (campaign.status === 'paused') {
    throw new AppError('CONFLICT', 'This campaign is paused; recipients are accepted again once it is resumed.');
  }
  if (!campaign.agent_id || !campaign.template_name || !campaign.template_language) {
    throw new AppError(
      'CONFLICT',
      'This campaign has no agent and template to send with, so it cannot take recipients.',
    );
  }
  const now = ctx.clock.now();
  const results: RecipientResult[] = [];
  const rows: CampaignDeliveryTable[] = [];
  /** Dedupe key → the delivery of its first occurrence in this request. */
  const firstOfKey = new Map<string, string>();
  for (const [index, value] of body.recipients.entries()) {
    const checked = checkRecipient(value, index);
    if (!checked.ok) {
      results.push({ index, status: 'rejected', error: checked.error });
      continue;
    }
    const { recipient } = checked;
    const key = recipient.dedupeKey;
    const earlier = key !== undefined ? firstOfKey.get(key) : undefined;
    if (earlier !== undefined) {
      results.push({ index, status: 'duplicate', deliveryId: earlier });
      continue;
    }
    const id = newId('dlv');
    if (key !== undefined) firstOfKey.set(key, id);
    const params = recipient.parameters;
    rows.push({
      id,
      org_id: principal.orgId,
      campaign_id: campaign.id,
      to_phone: checked.to,
      parameters: params && (params.body?.length || params.header?.length) ? JSON.stringify(params) : null,
      end_user: recipient.endUser ? JSON.stringify(recipient.endUser) : null,
      dedupe_key: key ?? null,
      state: 'queued',
      message_id: null,
      claimed_at: null,
      end_user_id: null,
      conversation_id: null,
      error: null,
      throttles: 0,
      created_at: now,
      sent_at: null,
      updated_at: now,
    });
    results.push({ index, status: 'queued', deliveryId: id });
  }

  if (rows.length > 0) {
    const duplicateOf = await ctx.db.transaction().execute(async (trx) => {
      const keyed = rows.filter((r) => r.dedupe_key !== null);
      let owners = new Map<string, string>();
      if (keyed.length > 0) {
        await deleteDedupeKeysBefore(trx, campaign.id, now - DEDUPE_MS);
        owners = await claimDedupeKeys(
          trx,
          keyed.map((r) => ({
            campaign_id: campaign.id,
            dedupe_key: r.dedupe_key ?? '',
            delivery_id: r.id,
            created_at: now,
          })),
        );
      }
      // A key stored by an earlier (or concurrent) request points at that request's delivery.
      const dupes = new Map<string, string>();
      for (const r of keyed) {
        const owner = owners.get(r.dedupe_key ?? '');
        if (owner !== undefined && owner !== r.id) dupes.set(r.id, owner);
      }
      const fresh = rows.filter((r) => !dupes.has(r.id));
      await insertDeliveries(trx, fresh);
      if (fresh.length > 0) {
        await ctx.jobs.enqueue<CampaignDispatchJob>(
          CAMPAIGN_DISPATCH_QUEUE,
          { campaignId: campaign.id, deliveryIds: fresh.map((r) => r.id) },
          { db: trx },
        );
      }
      return dupes;
    });
    for (const result of results) {
      const owner = result.deliveryId !== undefined ? duplicateOf.get(result.deliveryId) : undefined;
      // The first of its key (and any repeat of it in this request) is a duplicate of the earlier delivery.
      if (owner !== undefined) {
        result.status = 'duplicate';
        result.deliveryId = owner;
      }
    }
  }
  return {
    success: true,
    accepted: results.filter((r) => r.status === 'queued').length,
    duplicates: results.filter((r) => r.status === 'duplicate').length,
    rejected: results.filter((r) => r.status === 'rejected').length,
    results,
  };
}

const badCursor = () =>
  new AppError('INVALID_BODY', "Invalid query parameter: 'cursor' is not a cursor this API returned.");

function decodeListCursor(cursor: string): [number, string] {
  const position = decodeCursor(cursor, /^dlv_[A-Za-z0-9]{22}$/);
  if (!position) throw badCursor();
  return [position.at, position.id];
}

/** GET /api/campaigns/<id>/deliveries: oldest first, filtered by status, a page at a time. */
export async function listCampaignDeliveries(
  ctx: AppContext,
  principal: Principal,
  campaignId: string,
  query: DeliveriesQuery,
): Promise<DeliveriesResponse> {
  assertCampaignKey(principal, campaignId);
  return deliveriesOfCampaign(ctx, principal.orgId, campaignId, query);
}

/** A page of a campaign's deliveries for its key (the API), oldest first. */
export async function deliveriesOfCampaign(
  ctx: AppContext,
  orgId: string,
  campaignId: string,
  query: DeliveriesQuery,
): Promise<DeliveriesResponse> {
  const campaign = await findCampaignRow(ctx.db, orgId, campaignId);
  if (!campaign) throw new AppError('NOT_FOUND', `No campaign with ID '${clip(campaignId, 64)}' in this organization.`);
  const limit = query.limit ?? 100;
  const after = query.cursor !== undefined ? decodeListCursor(query.cursor) : undefined;
  const rows = await listDeliveryRows(ctx.db, campaign.id, {
    status: query.status as DeliveryStatus | undefined,
    limit: limit + 1,
    seek: after ? { at: after[0], id: after[1], backward: false } : undefined,
  });
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    data: page.map(toDelivery),
    nextCursor: rows.length > limit && last ? encodeCursor(Number(last.created_at), last.id) : null,
  };
}

/** A delivery as the API and the dashboard show it. */
export const toDelivery = (r: DeliveryView): DeliveriesResponse['data'][number] => ({
  id: r.id,
  to: r.to_phone,
  endUserId: r.end_user_id,
  conversationId: r.conversation_id,
  status: r.status,
  messageId: r.provider_message_id,
  error: r.error ?? (r.status === 'failed' ? r.message_error : null),
  createdAt: r.created_at,
  sentAt: r.sent_at,
  updatedAt: Math.max(r.updated_at, r.message_updated_at ?? 0),
});
