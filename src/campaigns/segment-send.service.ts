import type { Kysely } from 'kysely';
import { assertCampaignKey, type Principal } from '../auth/index.js';
import { MAX_BODY_PARAMETERS, MAX_HEADER_PARAMETERS } from '../channels/channel.schemas.js';
import { checkParameters } from '../channels/channel.service.js';
import type { AppContext } from '../context.js';
import type { DB } from '../db/schema.js';
import { findSegmentById } from '../segments/segment.service.js';
import { clip } from '../shared/clip.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { SEGMENT_SEND_QUEUE, type SegmentSendJob } from './campaign.queues.js';
import { findCampaignRow } from './campaign.repository.js';
import type { SegmentSendTable } from './campaign.tables.js';
import { findSegmentSend, insertSegmentSend, listSegmentSendRows, moveSegmentSend } from './segment-send.repository.js';
import type { SegmentSendBody, SegmentSendResponse } from './segment-send.schemas.js';

/** Sending a campaign to a segment: scheduling, reading and canceling a send (its run: segment-send.task.ts). */

/** A send may be scheduled this far ahead. */
const MAX_AHEAD_MS = 366 * 24 * 60 * 60 * 1000;
const SEND_ID = /^snd_[0-9A-Za-z]{22}$/;

export function toSegmentSend(row: SegmentSendTable): SegmentSendResponse {
  return {
    id: row.id,
    status: row.status,
    at: Number(row.at),
    segment: row.segment_id,
    segmentName: row.segment_name,
    counts: {
      members: Number(row.members),
      accepted: Number(row.accepted),
      duplicates: Number(row.duplicates),
      optedOut: Number(row.opted_out),
      skipped: Number(row.skipped),
    },
    error: row.error,
    createdAt: Number(row.created_at),
    startedAt: row.started_at === null ? null : Number(row.started_at),
    finishedAt: row.finished_at === null ? null : Number(row.finished_at),
  };
}

const campaignNotFound = (id: string) =>
  new AppError('NOT_FOUND', `No campaign with ID '${clip(id, 64)}' in this organization.`);

/**
 * Schedules a send of the campaign to the segment: the row and its job (due at `at`) in one
 * transaction, so a send answered 202 always runs, and only once (segment-send.task.ts).
 */
export async function scheduleSegmentSend(
  ctx: Pick<AppContext, 'db' | 'clock' | 'jobs'>,
  orgId: string,
  campaignId: string,
  body: SegmentSendBody,
): Promise<SegmentSendResponse> {
  const { db, clock, jobs } = ctx;
  const campaign = await findCampaignRow(db, orgId, campaignId);
  if (!campaign) throw campaignNotFound(campaignId);
  if (!campaign.agent_id || !campaign.template_name || !campaign.template_language) {
    throw new AppError('CONFLICT', 'This campaign has no agent and template to send with, so it cannot be sent.');
  }
  const segment = await findSegmentById(db, orgId, body.segment);
  if (!segment) throw new AppError('NOT_FOUND', `No segment with ID '${clip(body.segment, 64)}' in this organization.`);
  const now = clock.now();
  if (body.at !== undefined && body.at > now + MAX_AHEAD_MS) {
    throw new AppError('INVALID_BODY', "Invalid body: 'at' must be at most a year ahead.", {
      details: { field: 'at' },
    });
  }
  const params = body.parameters;
  checkParameters(params?.header ?? [], 'header', MAX_HEADER_PARAMETERS, 'parameters');
  checkParameters(params?.body ?? [], 'body', MAX_BODY_PARAMETERS, 'parameters');
  const at = Math.max(body.at ?? now, now);
  const row: SegmentSendTable = {
    id: newId('snd'),
    org_id: orgId,
    campaign_id: campaign.id,
    segment_id: segment.id,
    segment_name: segment.name,
    at,
    parameters: params && (params.body?.length || params.header?.length) ? JSON.stringify(params) : null,
    status: 'scheduled',
    members: 0,
    accepted: 0,
    duplicates: 0,
    opted_out: 0,
    skipped: 0,
    after_end_user_id: '',
    error: null,
    created_at: now,
    started_at: null,
    finished_at: null,
    updated_at: now,
  };
  await db.transaction().execute(async (trx) => {
    await insertSegmentSend(trx, row);
    // Due at `at`: the job runner's own start time (real time, as every delay of the runner).
    await jobs.enqueue<SegmentSendJob>(SEGMENT_SEND_QUEUE, { sendId: row.id }, { db: trx, delayMs: at - now });
  });
  return toSegmentSend(row);
}

async function sendOf(db: Kysely<DB>, orgId: string, campaignId: string, sendId: string) {
  const row = SEND_ID.test(sendId) ? await findSegmentSend(db, orgId, campaignId, sendId) : undefined;
  if (!row) throw new AppError('NOT_FOUND', `No send with ID '${clip(sendId, 64)}' of this campaign.`);
  return row;
}

export async function getSegmentSend(
  db: Kysely<DB>,
  orgId: string,
  campaignId: string,
  sendId: string,
): Promise<SegmentSendResponse> {
  if (!(await findCampaignRow(db, orgId, campaignId))) throw campaignNotFound(campaignId);
  return toSegmentSend(await sendOf(db, orgId, campaignId, sendId));
}

/** Cancels a send that has not started; once it runs (or ran) it cannot be (409). Canceling twice is fine. */
export async function cancelSegmentSend(
  ctx: Pick<AppContext, 'db' | 'clock'>,
  orgId: string,
  campaignId: string,
  sendId: string,
): Promise<SegmentSendResponse> {
  const { db, clock } = ctx;
  if (!(await findCampaignRow(db, orgId, campaignId))) throw campaignNotFound(campaignId);
  const row = await sendOf(db, orgId, campaignId, sendId);
  if (row.status === 'canceled') return toSegmentSend(row);
  const now = clock.now();
  if (!(await moveSegmentSend(db, row.id, 'scheduled', 'canceled', now, { finished_at: now }))) {
    throw new AppError('CONFLICT', 'This send has started (or is done): it can no longer be canceled.');
  }
  return toSegmentSend(await sendOf(db, orgId, campaignId, sendId));
}

/** The API's verbs: only the key bound to the campaign. */
export const segmentSendsForKey = {
  schedule: (
    ctx: Pick<AppContext, 'db' | 'clock' | 'jobs'>,
    p: Principal,
    campaignId: string,
    body: SegmentSendBody,
  ) => {
    assertCampaignKey(p, campaignId);
    return scheduleSegmentSend(ctx, p.orgId, campaignId, body);
  },
  get: (db: Kysely<DB>, p: Principal, campaignId: string, sendId: string) => {
    assertCampaignKey(p, campaignId);
    return getSegmentSend(db, p.orgId, campaignId, sendId);
  },
  cancel: (ctx: Pick<AppContext, 'db' | 'clock'>, p: Principal, campaignId: string, sendId: string) => {
    assertCampaignKey(p, campaignId);
    return cancelSegmentSend(ctx, p.orgId, campaignId, sendId);
  },
};

/** The newest sends of a campaign (the dashboard's campaign page). */
export async function listSegmentSends(db: Kysely<DB>, campaignId: string, limit = 20): Promise<SegmentSendResponse[]> {
  return (await listSegmentSendRows(db, campaignId, limit)).map(toSegmentSend);
}
