import type { Kysely } from 'kysely';
import type { SendFromAgentInput, SendFromAgentResult } from '../channels/index.js';
import type { CampaignsConfig } from '../config.js';
import type { DB } from '../db/schema.js';
import { type JobRunner, RetryLater } from '../jobs/job-runner.js';
import type { Clock } from '../shared/clock.js';
import { AppError, isAppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { deliveryForSend } from './campaign.fast.js';
import { CAMPAIGN_DELIVERY_QUEUE, type CampaignDeliveryJob } from './campaign.queues.js';
import {
  campaignStatus,
  claimDelivery,
  fillDeliveryFromMessage,
  isMessageStored,
  markDeliveryFailed,
  markDeliverySending,
  releaseDelivery,
} from './campaign.repository.js';
import { parseParameters } from './campaign.service.js';
import type { UnconfirmedSends } from './expire-unconfirmed.task.js';
import type { NumberPacer } from './number-pacer.js';
import { sendingRulesAllow } from './sending-rules-check.js';

/** A send waits at most this long for its number's slot; a later slot: the job comes back then. */
const MAX_PACE_WAIT_MS = 1_000;
/** Pair-rate refusal (131056): that recipient is tried again after this, doubling each time. */
const PAIR_RATE_DELAY_MS = 6_000;
/** Throughput refusal (130429): the number rests this long, doubling per refusal of the delivery. */
const THROUGHPUT_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 60_000;
const PAIR_RATE_CODE = 131056;
/** Codes that mean "not now", not "never": the send is tried again. */
const THROTTLE_CODES = new Set([130429, 131056, 4, 80007]);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const backoff = (base: number, n: number) => Math.min(MAX_BACKOFF_MS, base * 2 ** n);

interface EndUserJson {
  name?: string;
  email?: string;
  tags?: string[];
}

/** What sending deliveries uses, all built before the deliverer. */
export interface DeliveryDeps {
  readonly db: Kysely<DB>;
  readonly clock: Clock;
  readonly config: CampaignsConfig;
  /** PARLEY_PROVIDER_TIMEOUT_MS: a claim this old (and 30 s more) without its message stored is stale. */
  readonly providerTimeoutMs: number;
  readonly pacer: NumberPacer;
  /** A send from an agent's number (channels' `sendFromAgent`, its dependencies bound). */
  readonly send: (input: SendFromAgentInput) => Promise<SendFromAgentResult>;
  /** Where a send whose outcome is unknown is watched. */
  readonly unconfirmed: Pick<UnconfirmedSends, 'watch'>;
  /** Whether a number's campaign sends go at half pace (its quality rating is YELLOW: src/policies/). */
  readonly halfPace?: (numberId: string) => Promise<boolean>;
}

/**
 * The delivery queue: sends campaign deliveries, one job each, paced per sending number. Never
 * twice: a delivery is claimed with our message ID (a compare-and-set on the row) before the
 * provider is called, and `sendFromAgent` stores the message before it calls; a run that finds a
 * message stored for the delivery adopts its outcome instead of sending. A send whose outcome is
 * unknown is watched (expire-unconfirmed.task.ts).
 */
export class CampaignDeliverer {
  /** Jobs turned away for want of a slot, per number, in the current second. */
  private readonly denied = new Map<string, { since: number; count: number }>();

  constructor(private readonly deps: DeliveryDeps) {}

  define(jobs: JobRunner): void {
    const { config, db, clock } = this.deps;
    jobs.define<CampaignDeliveryJob>({
      name: CAMPAIGN_DELIVERY_QUEUE,
      // Jobs mostly wait for their number's slot: enough of them to keep a fast number busy.
      concurrency: Math.min(64, Math.max(8, config.numberMps)),
      retryDelaysMs: config.retryDelaysMs,
      handler: (payload) => this.deliver(payload.deliveryId),
      onLastFailure: async (payload, _job, err) => {
        const reason = err instanceof Error ? err.message : String(err);
        await markDeliveryFailed(db, payload.deliveryId, reason.slice(0, 1000), clock.now(), {
          onlyUnclaimed: true,
        });
      },
    });
  }

  async close(): Promise<void> {
    await this.deps.pacer.close();
  }

  /**
   * When a job that found no slot comes back. Thousands of deliveries waiting for one number must
   * not all come back in a second (each return is a claim and a reschedule): the more were turned
   * away this second, the wider they are spread, over about the time the number needs to send them.
   */
  private spread(paceKey: string, retryInMs: number): number {
    const now = Date.now();
    let w = this.denied.get(paceKey);
    if (!w || now - w.since >= 1000) {
      w = { since: now, count: 0 };
      this.denied.set(paceKey, w);
    }
    w.count++;
    const backlogMs = (w.count / this.deps.config.numberMps) * 1000;
    return Math.ceil(retryInMs + Math.random() * backlogMs);
  }

  /** How long a claim may go without its message stored before another run may take it over. */
  private staleClaimMs(): number {
    return this.deps.providerTimeoutMs + 30_000;
  }

  async deliver(deliveryId: string): Promise<void> {
    const { db, clock } = this.deps;
    const row = await deliveryForSend(db, deliveryId);
    if (row?.state !== 'queued') return;
    if (row.campaign_status !== 'active') return; // its resume queues it again
    if (!row.agent_id || !row.template_name || !row.template_language) {
      await markDeliveryFailed(db, row.id, 'The campaign has no agent and template to send with.', clock.now());
      return;
    }
    if (row.message_id !== null) {
      const age = clock.now() - Number(row.claimed_at ?? 0);
      // Another run holds it, or held it until moments ago: let it finish (or its claim go stale).
      if (age < this.staleClaimMs()) throw new RetryLater(this.staleClaimMs() - age + 100, 'claimed by another run');
      if (row.stored_message_id !== null) {
        await this.adopt(row.id, row.message_id, {
          status: row.message_status ?? 'pending',
          errorCode: row.message_error_code === null ? null : Number(row.message_error_code),
          error: row.message_error,
          createdAt: Number(row.message_created_at ?? clock.now()),
        });
        return;
      }
      // A stale claim whose message was never stored: the provider was never called.
    }

    // Quiet hours and the marketing cap of the organization (sending-rules-check.ts).
    if (
      !(await sendingRulesAllow(db, clock, {
        ...row,
        template_name: row.template_name,
        template_language: row.template_language,
      }))
    )
      return;
    const paceKey = row.number_id ?? `agent:${row.agent_id}`;
    const slot = await this.deps.pacer.reserve(paceKey, MAX_PACE_WAIT_MS);
    if (!slot.ok) throw new RetryLater(this.spread(paceKey, slot.retryInMs), 'waiting for the number’s pace');
    // A YELLOW number: each send takes a second slot as well, so its campaigns go at half pace.
    if (row.number_id && (await this.deps.halfPace?.(row.number_id))) await this.deps.pacer.note(paceKey);
    if (slot.waitMs > 0) await sleep(slot.waitMs);
    // A pause during the wait stops this send too.
    if ((await campaignStatus(db, row.campaign_id)) !== 'active') return;

    const messageId = newId('msg');
    if (!(await claimDelivery(db, row.id, messageId, row.message_id, clock.now()))) return;
    const params = parseParameters(row.parameters) ?? parseParameters(row.default_parameters);
    const endUser = row.end_user ? (JSON.parse(row.end_user) as EndUserJson) : undefined;
    let result: SendFromAgentResult;
    try {
      result = await this.deps.send({
        orgId: row.org_id,
        agentId: row.agent_id,
        to: row.to_phone,
        content: {
          kind: 'template',
          name: row.template_name,
          language: row.template_language,
          body: params?.body ?? [],
          header: params?.header ?? [],
        },
        conversation: { origin: 'imported', endUser, campaignId: row.campaign_id, required: true },
        messageId,
        paced: true,
      });
    } catch (err) {
      // Thrown before the provider was called (the message is stored right before the call).
      if (isAppError(err) && (err.code === 'NOT_FOUND' || err.code === 'INVALID_BODY')) {
        // A recipient who opted out (src/policies/): the delivery's error is the code `opted_out`.
        const error = err.details?.reason === 'opted_out' ? 'opted_out' : err.message;
        await markDeliveryFailed(db, row.id, error, clock.now(), { messageId });
        return;
      }
      if (!(await isMessageStored(db, messageId))) await releaseDelivery(db, row.id, messageId, clock.now(), false);
      throw err;
    }
    const at = clock.now();
    const fields = { endUserId: result.endUserId, conversationId: result.conversationId };
    if (result.ok) {
      await markDeliverySending(db, row.id, { ...fields, sentAt: at, at });
      return;
    }
    const { failure } = result;
    switch (failure.kind) {
      case 'throttled':
        await this.throttled(row.id, messageId, paceKey, failure.code, row.throttles, result.sentence);
        return;
      case 'rejected':
        await markDeliveryFailed(db, row.id, result.sentence, at, fields);
        return;
      case 'unknown':
        await markDeliverySending(db, row.id, { ...fields, sentAt: null, at });
        await this.deps.unconfirmed.watch(row.id, messageId);
        return;
      default:
        // Certainly not sent (the provider could not be reached, or refused our credentials): try
        // again on the queue's schedule; past its last attempt the delivery fails with this reason.
        await releaseDelivery(db, row.id, messageId, at, false);
        throw new AppError('PROVIDER_UNAVAILABLE', result.sentence);
    }
  }

  private async throttled(
    deliveryId: string,
    messageId: string,
    paceKey: string,
    code: number | null,
    throttles: number,
    sentence: string,
  ): Promise<void> {
    const { db, clock, config, pacer } = this.deps;
    const at = clock.now();
    if (throttles + 1 > config.throttleRetries) {
      await markDeliveryFailed(db, deliveryId, sentence, at, { messageId });
      return;
    }
    await releaseDelivery(db, deliveryId, messageId, at, true);
    if (code === PAIR_RATE_CODE) throw new RetryLater(backoff(PAIR_RATE_DELAY_MS, throttles), 'pair rate limit');
    const rest = backoff(THROUGHPUT_BACKOFF_MS, throttles);
    await pacer.slowDown(paceKey, rest);
    throw new RetryLater(rest, 'number throughput limit');
  }

  /** A run found the message of an earlier run stored: that run reached the provider, or nearly. */
  private async adopt(
    deliveryId: string,
    messageId: string,
    message: { status: string; errorCode: number | null; error: string | null; createdAt: number },
  ): Promise<void> {
    const { db, clock } = this.deps;
    const at = clock.now();
    if (message.status === 'rejected') {
      // Refused for certain: a throttle is tried again, anything else failed the delivery.
      if (message.errorCode !== null && THROTTLE_CODES.has(message.errorCode)) {
        await releaseDelivery(db, deliveryId, messageId, at, true);
        throw new RetryLater(THROUGHPUT_BACKOFF_MS, 'throttled before a restart');
      }
      await markDeliveryFailed(db, deliveryId, message.error ?? 'The provider rejected the message.', at, {
        messageId,
      });
      return;
    }
    const accepted = message.status !== 'pending' && message.status !== 'unconfirmed';
    await markDeliverySending(db, deliveryId, {
      endUserId: null,
      conversationId: null,
      sentAt: accepted ? message.createdAt : null,
      at,
    });
    // Fill what the crashed run could not record, from the message.
    await fillDeliveryFromMessage(db, deliveryId, messageId);
    if (!accepted) await this.deps.unconfirmed.watch(deliveryId, messageId);
  }
}
