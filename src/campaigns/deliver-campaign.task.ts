import { sendFromAgent } from '../channels/send-from-agent.js';
import type { CampaignsConfig } from '../config.js';
import type { AppContext } from '../context.js';
import { type JobRunner, RetryLater } from '../jobs/job-runner.js';
import { AppError, isAppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import {
  CAMPAIGN_DELIVERY_QUEUE,
  CAMPAIGN_DISPATCH_QUEUE,
  CAMPAIGN_UNCONFIRMED_QUEUE,
  type CampaignDeliveryJob,
  type CampaignDispatchJob,
  type CampaignUnconfirmedJob,
} from './campaign.queues.js';
import {
  campaignStatus,
  claimDelivery,
  deliveryForSend,
  markDeliveryFailed,
  markDeliverySending,
  queuedDeliveryIds,
  releaseDelivery,
} from './campaign.repository.js';
import { parseParameters } from './campaign.service.js';
import type { NumberPacer } from './number-pacer.js';

/** A send waits at most this long for its number's slot; a later slot: the job comes back then. */
const MAX_PACE_WAIT_MS = 1_000;
/** Pair-rate refusal (131056): that recipient is tried again after this, doubling each time. */
const PAIR_RATE_DELAY_MS = 6_000;
/** Throughput refusal (130429): the number rests this long, doubling per refusal of the delivery. */
const THROUGHPUT_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 60_000;
const PAGE = 1_000;
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

/**
 * Sends campaign deliveries, one job each, paced per sending number. Never twice: a delivery is
 * claimed with our message ID (a compare-and-set on the row) before the provider is called, and
 * `sendFromAgent` stores the message before it calls; a run that finds a message stored for the
 * delivery adopts its outcome instead of sending. A send whose outcome is unknown is left to the
 * provider's status webhooks (our message ID travels as `biz_opaque_callback_data`), and failed if
 * nothing arrives within `unconfirmedMs`.
 */
export class CampaignDeliverer {
  private ctx: AppContext | undefined;
  private readonly waiting: ((ctx: AppContext) => void)[] = [];
  /** Jobs turned away for want of a slot, per number, in the current second. */
  private readonly denied = new Map<string, { since: number; count: number }>();

  constructor(
    private readonly config: CampaignsConfig,
    private readonly pacer: NumberPacer,
  ) {}

  define(jobs: JobRunner): void {
    jobs.define<CampaignDispatchJob>({
      name: CAMPAIGN_DISPATCH_QUEUE,
      concurrency: 2,
      handler: async (payload) => this.dispatch(await this.context(), payload),
    });
    jobs.define<CampaignDeliveryJob>({
      name: CAMPAIGN_DELIVERY_QUEUE,
      // Jobs mostly wait for their number's slot: enough of them to keep a fast number busy.
      concurrency: Math.min(64, Math.max(8, this.config.numberMps)),
      retryDelaysMs: this.config.retryDelaysMs,
      handler: async (payload) => this.deliver(await this.context(), payload.deliveryId),
      onLastFailure: async (payload, _job, err) => {
        const ctx = await this.context();
        const reason = err instanceof Error ? err.message : String(err);
        await markDeliveryFailed(ctx.db, payload.deliveryId, reason.slice(0, 1000), ctx.clock.now(), {
          onlyUnclaimed: true,
        });
      },
    });
    jobs.define<CampaignUnconfirmedJob>({
      name: CAMPAIGN_UNCONFIRMED_QUEUE,
      handler: async (payload) => this.expireUnconfirmed(await this.context(), payload),
    });
  }

  /** The context, once built: queues are defined (and may run) before it exists. */
  attach(ctx: AppContext): void {
    this.ctx = ctx;
    for (const resolve of this.waiting.splice(0)) resolve(ctx);
  }

  private context(): Promise<AppContext> {
    if (this.ctx) return Promise.resolve(this.ctx);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  async close(): Promise<void> {
    await this.pacer.close();
  }

  /** Queues one delivery job per delivery; run again after a crash, it queues them again (harmless). */
  private async dispatch(ctx: AppContext, payload: CampaignDispatchJob): Promise<void> {
    // A paused campaign's deliveries are queued by its resume.
    if ((await campaignStatus(ctx.db, payload.campaignId)) !== 'active') return;
    const enqueueAll = (ids: readonly string[]) =>
      ctx.db.transaction().execute(async (trx) => {
        for (const deliveryId of ids) {
          await ctx.jobs.enqueue<CampaignDeliveryJob>(CAMPAIGN_DELIVERY_QUEUE, { deliveryId }, { db: trx });
        }
      });
    if (payload.deliveryIds) {
      await enqueueAll(payload.deliveryIds);
    } else {
      let after = '';
      for (;;) {
        const ids = await queuedDeliveryIds(ctx.db, payload.campaignId, after, PAGE);
        if (ids.length === 0) break;
        await enqueueAll(ids);
        after = ids[ids.length - 1] ?? '';
      }
    }
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
    const backlogMs = (w.count / this.config.numberMps) * 1000;
    return Math.ceil(retryInMs + Math.random() * backlogMs);
  }

  /** How long a claim may go without its message stored before another run may take it over. */
  private staleClaimMs(ctx: AppContext): number {
    return ctx.config.messaging.providerTimeoutMs + 30_000;
  }

  async deliver(ctx: AppContext, deliveryId: string): Promise<void> {
    const { db, clock } = ctx;
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
      if (age < this.staleClaimMs(ctx))
        throw new RetryLater(this.staleClaimMs(ctx) - age + 100, 'claimed by another run');
      if (row.stored_message_id !== null) {
        await this.adopt(ctx, row.id, row.message_id, {
          status: row.message_status ?? 'pending',
          errorCode: row.message_error_code === null ? null : Number(row.message_error_code),
          error: row.message_error,
          createdAt: Number(row.message_created_at ?? clock.now()),
        });
        return;
      }
      // A stale claim whose message was never stored: the provider was never called.
    }

    const paceKey = row.number_id ?? `agent:${row.agent_id}`;
    const slot = await this.pacer.reserve(paceKey, MAX_PACE_WAIT_MS);
    if (!slot.ok) throw new RetryLater(this.spread(paceKey, slot.retryInMs), 'waiting for the number’s pace');
    if (slot.waitMs > 0) await sleep(slot.waitMs);
    // A pause during the wait stops this send too.
    if ((await campaignStatus(db, row.campaign_id)) !== 'active') return;

    const messageId = newId('msg');
    if (!(await claimDelivery(db, row.id, messageId, row.message_id, clock.now()))) return;
    const params = parseParameters(row.parameters) ?? parseParameters(row.default_parameters);
    const endUser = row.end_user ? (JSON.parse(row.end_user) as EndUserJson) : undefined;
    let result: Awaited<ReturnType<typeof sendFromAgent>>;
    try {
      result = await sendFromAgent(ctx, {
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
        await markDeliveryFailed(db, row.id, err.message, clock.now(), { messageId });
        return;
      }
      const stored = await db.selectFrom('messages').select('id').where('id', '=', messageId).executeTakeFirst();
      if (!stored) await releaseDelivery(db, row.id, messageId, clock.now(), false);
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
        await this.throttled(ctx, row.id, messageId, paceKey, failure.code, row.throttles, result.sentence);
        return;
      case 'rejected':
        await markDeliveryFailed(db, row.id, result.sentence, at, fields);
        return;
      case 'unknown':
        await markDeliverySending(db, row.id, { ...fields, sentAt: null, at });
        await this.watchUnconfirmed(ctx, row.id, messageId);
        return;
      default:
        // Certainly not sent (the provider could not be reached, or refused our credentials): try
        // again on the queue's schedule; past its last attempt the delivery fails with this reason.
        await releaseDelivery(db, row.id, messageId, at, false);
        throw new AppError('PROVIDER_UNAVAILABLE', result.sentence);
    }
  }

  private async throttled(
    ctx: AppContext,
    deliveryId: string,
    messageId: string,
    paceKey: string,
    code: number | null,
    throttles: number,
    sentence: string,
  ): Promise<void> {
    const at = ctx.clock.now();
    if (throttles + 1 > this.config.throttleRetries) {
      await markDeliveryFailed(ctx.db, deliveryId, sentence, at, { messageId });
      return;
    }
    await releaseDelivery(ctx.db, deliveryId, messageId, at, true);
    if (code === PAIR_RATE_CODE) throw new RetryLater(backoff(PAIR_RATE_DELAY_MS, throttles), 'pair rate limit');
    const rest = backoff(THROUGHPUT_BACKOFF_MS, throttles);
    await this.pacer.slowDown(paceKey, rest);
    throw new RetryLater(rest, 'number throughput limit');
  }

  /** A run found the message of an earlier run stored: that run reached the provider, or nearly. */
  private async adopt(
    ctx: AppContext,
    deliveryId: string,
    messageId: string,
    message: { status: string; errorCode: number | null; error: string | null; createdAt: number },
  ): Promise<void> {
    const at = ctx.clock.now();
    if (message.status === 'rejected') {
      // Refused for certain: a throttle is tried again, anything else failed the delivery.
      if (message.errorCode !== null && THROTTLE_CODES.has(message.errorCode)) {
        await releaseDelivery(ctx.db, deliveryId, messageId, at, true);
        throw new RetryLater(THROUGHPUT_BACKOFF_MS, 'throttled before a restart');
      }
      await markDeliveryFailed(ctx.db, deliveryId, message.error ?? 'The provider rejected the message.', at, {
        messageId,
      });
      return;
    }
    const accepted = message.status !== 'pending' && message.status !== 'unconfirmed';
    await markDeliverySending(ctx.db, deliveryId, {
      endUserId: null,
      conversationId: null,
      sentAt: accepted ? message.createdAt : null,
      at,
    });
    // Fill what the crashed run could not record, from the message.
    const msg = await ctx.db
      .selectFrom('messages as m')
      .leftJoin('conversations as c', 'c.id', 'm.conversation_id')
      .select(['m.conversation_id', 'c.end_user_id'])
      .where('m.id', '=', messageId)
      .executeTakeFirst();
    await ctx.db
      .updateTable('campaign_deliveries')
      .set({ conversation_id: msg?.conversation_id ?? null, end_user_id: msg?.end_user_id ?? null })
      .where('id', '=', deliveryId)
      .execute();
    if (!accepted) await this.watchUnconfirmed(ctx, deliveryId, messageId);
  }

  private async watchUnconfirmed(ctx: AppContext, deliveryId: string, messageId: string): Promise<void> {
    await ctx.jobs.enqueue<CampaignUnconfirmedJob>(
      CAMPAIGN_UNCONFIRMED_QUEUE,
      { deliveryId, messageId },
      { delayMs: this.config.unconfirmedMs },
    );
  }

  /** A send whose outcome no status webhook has settled by now is failed, with that reason. */
  private async expireUnconfirmed(ctx: AppContext, payload: CampaignUnconfirmedJob): Promise<void> {
    const message = await ctx.db
      .selectFrom('messages')
      .select('status')
      .where('id', '=', payload.messageId)
      .executeTakeFirst();
    if (message && message.status !== 'pending' && message.status !== 'unconfirmed') return;
    const minutes = Math.round(this.config.unconfirmedMs / 60_000);
    await markDeliveryFailed(
      ctx.db,
      payload.deliveryId,
      `Whether the provider accepted the message is unknown (its answer was lost) and no status arrived within ${minutes > 0 ? `${minutes} minutes` : 'the allowed time'}; it was not sent again.`,
      ctx.clock.now(),
      { messageId: payload.messageId },
    );
  }
}
