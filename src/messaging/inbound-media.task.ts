import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { emitMessageReceived } from '../conversations/index.js';
import type { DB } from '../db/schema.js';
import type { JobInfo, JobRunner } from '../jobs/job-runner.js';
import { INBOUND_MEDIA_QUEUE } from '../jobs/queues.js';
import { publishLive } from '../live/index.js';
import { findMediaById, type MediaStore, markStored, markUnavailable, mediaKey } from '../media/index.js';
import type { Clock } from '../shared/clock.js';
import { inboundFields } from './inbound-event.js';
import { conversationParties, lockInboundOfMedia, numberCredentials } from './inbound-media.repository.js';
import { MediaFetchError, type ProviderMedia } from './provider-media.js';

export { INBOUND_MEDIA_QUEUE };

/** What a download job carries. */
export interface InboundMediaJob {
  readonly mediaId: string;
  readonly providerMessageId: string;
}

export interface InboundMediaDeps {
  readonly db: Kysely<DB>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly jobs: JobRunner;
  readonly store: MediaStore;
  readonly provider: ProviderMedia;
  readonly secrets: { open(sealed: string): string };
  /** The region's base address: the event's `media.url`. */
  readonly baseUrl: string;
}

/** The largest file the provider delivers (a document, 100 MB). */
export const MAX_INBOUND_MEDIA_BYTES = 100 * 1024 * 1024;

/** A failure no retry will mend: the file is marked unavailable at once. */
class GiveUp extends Error {}

/**
 * Declares the `inbound-media` queue: a job downloads the file of one inbound message (resolve the
 * provider's media ID, fetch its URL with the number's token, stream it into the media store, check
 * its SHA-256), then raises the message's `message.received`. A failing download is tried again on
 * `retryDelaysMs`; after the last try, or at once when the provider no longer knows the file, the
 * file is marked unavailable and the event goes out all the same. A job that runs again (its node
 * died mid-download) starts over: the file's key is fixed, so a second put replaces the first.
 */
export function defineInboundMediaQueue(jobs: JobRunner, deps: InboundMediaDeps, retryDelaysMs: readonly number[]) {
  jobs.define<InboundMediaJob>({
    name: INBOUND_MEDIA_QUEUE,
    concurrency: 4,
    retryDelaysMs,
    handler: async (payload, job) => {
      try {
        await downloadInboundMedia(deps, payload, job);
      } catch (err) {
        if (!(err instanceof GiveUp)) throw err;
        await settleInboundMedia(deps, payload, { unavailable: err.message });
      }
    },
    onLastFailure: async (payload, job, err) => {
      const reason = err instanceof Error ? err.message : String(err);
      deps.logger.warn(
        { err, mediaId: payload.mediaId, attempts: job.attempt },
        'inbound media could not be downloaded',
      );
      await settleInboundMedia(deps, payload, { unavailable: `download failed ${job.attempt} times: ${reason}` });
    },
  });
}

async function downloadInboundMedia(deps: InboundMediaDeps, payload: InboundMediaJob, job: JobInfo): Promise<void> {
  const media = await findMediaById(deps.db, payload.mediaId);
  if (!media) return; // its organization is gone
  if (media.state !== 'pending') {
    // Settled by an earlier run whose event may not have gone out: raise it (the same event ID).
    await settleInboundMedia(deps, payload, undefined);
    return;
  }
  if (!media.providerMediaId || !media.numberId) throw new GiveUp('the webhook named no media ID');
  const number = await numberCredentials(deps.db, media.numberId);
  if (!number) throw new GiveUp('the number that received it was removed');
  const token = number.access_token_enc ? deps.secrets.open(number.access_token_enc) : 'sandbox';
  const resolved = await deps.provider.resolve({
    mediaId: media.providerMediaId,
    accessToken: token,
    phoneNumberId: number.phone_number_id,
  });
  if (!resolved.ok) {
    if (resolved.permanent) throw new GiveUp(resolved.message);
    throw new Error(resolved.message);
  }
  let download: Awaited<ReturnType<ProviderMedia['download']>>;
  try {
    download = await deps.provider.download(resolved.url, token);
  } catch (err) {
    if (err instanceof MediaFetchError && err.permanent) throw new GiveUp(err.message);
    throw err;
  }
  const key = mediaKey(media.orgId, media.id);
  const mimeType =
    media.mimeType === 'application/octet-stream' && resolved.mimeType ? resolved.mimeType : media.mimeType;
  const put = await deps.store.put(key, download.body, { contentType: mimeType, maxBytes: MAX_INBOUND_MEDIA_BYTES });
  // Every SHA-256 the provider gave (the webhook's, the media ID's) must be the bytes'.
  const expected = [media.sha256, resolved.sha256].find((sha) => sha && sha !== put.sha256);
  if (expected) {
    await deps.store.delete(key);
    throw new Error(`the SHA-256 of the bytes (${put.sha256}) is not the provider's (${expected})`);
  }
  deps.logger.debug({ mediaId: media.id, size: put.size, attempt: job.attempt }, 'inbound media stored');
  await settleInboundMedia(deps, payload, {
    stored: {
      store: deps.store.kind,
      storageKey: key,
      size: put.size,
      sha256: put.sha256,
      mimeType,
      at: deps.clock.now(),
    },
  });
}

/**
 * Records what became of the file (stored, or unavailable and why) and raises `message.received`
 * once the message has its conversation, in one transaction that first locks the message's row:
 * joining the message to its conversation raises the event itself when it finds the file settled.
 */
export async function settleInboundMedia(
  deps: InboundMediaDeps,
  payload: InboundMediaJob,
  outcome: { stored: Parameters<typeof markStored>[2] } | { unavailable: string } | undefined,
): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    const row = await lockInboundOfMedia(trx, payload.providerMessageId);
    if (outcome && 'stored' in outcome) await markStored(trx, payload.mediaId, outcome.stored);
    if (outcome && 'unavailable' in outcome)
      await markUnavailable(trx, payload.mediaId, outcome.unavailable.slice(0, 1000));
    if (!row?.conversation_id) return;
    const conversation = await conversationParties(trx, row.conversation_id);
    const media = await findMediaById(trx, payload.mediaId);
    if (!conversation || !media || media.state === 'pending') return;
    await emitMessageReceived(
      { db: trx, jobs: deps.jobs, clock: deps.clock },
      {
        orgId: conversation.org_id,
        agentId: conversation.agent_id,
        conversationId: conversation.id,
        endUserId: conversation.end_user_id,
        from: row.from_phone,
        messageId: row.provider_message_id,
        fields: inboundFields(row, media, deps.baseUrl),
        at: Number(row.sent_at),
        // While people hold the conversation the agent's own hook hears nothing of it.
        ...(conversation.handler === 'human' && conversation.status === 'open' ? { toAgentHook: false } : {}),
      },
    );
    // Open inbox pages show the file now that it is here.
    await publishLive(trx, { orgId: conversation.org_id, conversationIds: [conversation.id], kind: 'message' });
  });
}
