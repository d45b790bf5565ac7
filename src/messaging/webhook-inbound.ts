import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { joinInbound } from '../conversations/index.js';
import type { DB } from '../db/schema.js';
import { getEndUser, recordInboundEndUser } from '../end-users/end-user.service.js';
import type { JobRunner } from '../jobs/job-runner.js';
import { CONSENT_KEYWORD_QUEUE, INBOUND_MEDIA_QUEUE } from '../jobs/queues.js';
import { findMediaById, insertMedia } from '../media/index.js';
import type { Clock } from '../shared/clock.js';
import { isAppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { endUserPhoneOf, windowKey } from '../shared/phone.js';
import { inboundFields } from './inbound-event.js';
import { contentJson } from './inbound-kinds.js';
import type { InboundMediaJob } from './inbound-media.task.js';
import { conversationOfInbound, inboundKindRow, insertInboundMessage } from './inbound-message.repository.js';
import { numberByPhoneNumberId } from './webhook.fast.js';
import type { InboundTask } from './webhook-payload.js';
import { openWindow } from './window.repository.js';

export interface InboundDeps {
  readonly db: Kysely<DB>;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Joins the message to a conversation; without it (a CLI replay) the message joins none. */
  readonly jobs: JobRunner | undefined;
  /** Idle time after which a conversation is closed (an inbound message then opens a new one). */
  readonly conversationIdleMs: number;
  /** PARLEY_BOT_FALLBACK_MS: how long the agent's hook has to acknowledge a message. */
  readonly botFallbackMs: number;
  /** The region's base address, for the `media.url` of `message.received`. */
  readonly baseUrl: string;
}

/**
 * Applies one inbound message: stores it and opens the window for the sender the provider reports
 * (E.164 of its digits), in one transaction; then records the end user, best effort: by a phone the
 * end-user records accept, or not at all (logged) when the sender has none; then joins the message
 * to a conversation. `again` (a retry or a replay) records the end user even when the message was
 * stored by an earlier attempt. `unrouted` when no number has the webhook's phone number ID.
 */
export async function applyInbound(
  deps: InboundDeps,
  task: InboundTask,
  again: boolean,
): Promise<'applied' | 'unrouted'> {
  const { db, clock, jobs } = deps;
  const number = task.phoneNumberId ? (await numberByPhoneNumberId(db, [task.phoneNumberId])).rows[0] : undefined;
  if (!number) return 'unrouted';
  const mediaId = task.media ? newId('med') : null;
  const stored = await db.transaction().execute(async (trx) => {
    const receivedAt = clock.now();
    const inserted = await insertInboundMessage(trx, {
      providerMessageId: task.providerMessageId,
      orgId: number.org_id,
      numberId: number.id,
      from: task.from,
      text: task.text,
      type: task.type,
      sentAt: task.sentAt,
      receivedAt,
      mediaId,
      replyTo: task.replyTo,
      content: contentJson(task.content),
    });
    if (!inserted) return false; // a redelivery
    await openWindow(trx, number.id, windowKey(task.from), task.sentAt);
    if (task.media && mediaId) {
      // The file is fetched on the job runner: the provider's copy is kept only for a while.
      await insertMedia(trx, {
        id: mediaId,
        org_id: number.org_id,
        source: 'inbound',
        // A command applying kept webhooks has no job runner to download with (nor joins conversations).
        state: jobs ? 'pending' : 'unavailable',
        ...(jobs ? {} : { unavailable_reason: 'applied by a command, which does not download files' }),
        mime_type: task.media.mimeType,
        size: null,
        sha256: task.media.sha256,
        filename: task.media.filename,
        store: null,
        storage_key: null,
        provider_media_id: task.media.providerMediaId,
        number_id: number.id,
        agent_id: null,
        created_at: receivedAt,
      });
      await jobs?.enqueue<InboundMediaJob>(
        INBOUND_MEDIA_QUEUE,
        { mediaId, providerMessageId: task.providerMessageId },
        { db: trx },
      );
    }
    return true;
  });
  const joined = stored ? null : await conversationOfInbound(db, task.providerMessageId);
  // A redelivery of a message fully handled before is left alone; an attempt after a failure or a
  // crash (the message stored, its conversation not yet set) finishes the work.
  if (!stored && !again && joined !== null) return 'applied';
  const endUserId = await recordEndUser(deps, number.org_id, task);
  if (endUserId && jobs) {
    const endUser = await findEndUser(db, number.org_id, endUserId);
    await joinInbound(
      { db, jobs, clock, idleMs: deps.conversationIdleMs, botFallbackMs: deps.botFallbackMs },
      {
        orgId: number.org_id,
        numberId: number.id,
        providerMessageId: task.providerMessageId,
        from: task.from,
        endUser: {
          id: endUserId,
          name: endUser?.name ?? null,
          phone: endUser?.phone ?? null,
          email: endUser?.email ?? null,
        },
        fields: (trx) => fieldsToRaise(trx, task.providerMessageId, deps.baseUrl),
        sentAt: task.sentAt,
        conversationId: joined,
      },
    );
    if (stored) await queueKeywordCheck(jobs, { orgId: number.org_id, numberId: number.id, endUserId }, task);
  }
  return 'applied';
}

/**
 * A text of one short word may be an opt-out or opt-in keyword of the organization (STOP, START):
 * the policies feature decides on its own queue (src/policies/consent-keyword.task.ts), after the
 * message was stored and handed to the agent as any other.
 */
async function queueKeywordCheck(
  jobs: JobRunner,
  of: { orgId: string; numberId: string; endUserId: string },
  task: InboundTask,
): Promise<void> {
  const word = task.type === 'text' ? (task.text ?? '').trim() : '';
  if (!word || word.length > 32 || /\s/.test(word)) return;
  await jobs.enqueue(CONSENT_KEYWORD_QUEUE, {
    ...of,
    from: task.from,
    word,
    providerMessageId: task.providerMessageId,
    at: task.sentAt,
  });
}

/**
 * What `message.received` says of the stored message; null while its file is still downloading
 * (the download raises the event once it is settled).
 */
async function fieldsToRaise(db: Kysely<DB>, providerMessageId: string, baseUrl: string) {
  const row = await inboundKindRow(db, providerMessageId);
  if (!row) return null;
  const media = row.media_id ? await findMediaById(db, row.media_id) : undefined;
  if (row.media_id && (!media || media.state === 'pending')) return null;
  return inboundFields(row, media, baseUrl);
}

/** The end user just recorded (undefined when it was deleted since). */
async function findEndUser(db: Kysely<DB>, orgId: string, id: string) {
  try {
    return await getEndUser(db, orgId, id);
  } catch (err) {
    if (isAppError(err) && err.code === 'NOT_FOUND') return undefined;
    throw err;
  }
}

/** Records the sender as an end user; resolves with its ID, or undefined when it has no usable phone. */
async function recordEndUser(deps: InboundDeps, orgId: string, task: InboundTask): Promise<string | undefined> {
  const phone = endUserPhoneOf(task.from);
  const skip = () =>
    deps.logger.warn(
      { from: task.from, providerMessageId: task.providerMessageId },
      'inbound sender has no phone number the end-user records accept; message stored and window opened, no end user recorded',
    );
  if (!phone) {
    skip();
    return undefined;
  }
  try {
    const { id } = await recordInboundEndUser(deps.db, deps.clock, {
      orgId,
      phone,
      ...(task.name ? { name: task.name } : {}),
      at: task.sentAt,
    });
    return id;
  } catch (err) {
    if (isAppError(err) && err.code === 'INVALID_BODY') {
      skip();
      return undefined;
    }
    throw err;
  }
}
