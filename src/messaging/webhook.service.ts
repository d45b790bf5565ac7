import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema.js';
import { takeDeadJobs } from '../jobs/dead-letter.repository.js';
import type { JobInfo, JobRunner } from '../jobs/job-runner.js';
import type { Clock } from '../shared/clock.js';
import { type InboundOutcome, InboundWaiters } from './inbound-waiters.js';
import { type BodyOutcome, listKeptWebhooks, replayKeptWebhooks, type StoredWebhook } from './kept-webhooks.js';
import {
  type BodyDeps,
  DEFAULT_RETRY_DELAYS_MS,
  PROVIDER_WEBHOOK_QUEUE,
  type ProviderWebhookJob,
  type ProviderWebhookWorker,
  runProviderWebhook,
} from './provider-webhook.task.js';
import { parseBody, type StatusTask, tasksOf, tasksOfBody } from './webhook-payload.js';
import { StatusApplier } from './webhook-statuses.js';

export { inboundOutcomeOf } from './kept-webhooks.js';
export { DEFAULT_RETRY_DELAYS_MS, PROVIDER_WEBHOOK_QUEUE, type ProviderWebhookJob } from './provider-webhook.task.js';
export { providerErrorCode, providerTime, type SkippedItem, type Task, tasksOf } from './webhook-payload.js';
export { verifySignature } from './webhook-signature.js';
export type { BodyOutcome, InboundOutcome, StoredWebhook };

export interface WebhookProcessorOptions {
  /** The job runner whose `provider-webhook` queue applies received bodies (the server's). */
  readonly jobs?: JobRunner;
  readonly retryDelaysMs?: readonly number[];
  /** Idle time after which a conversation is closed (an inbound message then opens a new one). */
  readonly conversationIdleMs?: number;
  /** PARLEY_BOT_FALLBACK_MS. */
  readonly botFallbackMs?: number;
  /** The region's base address, for the `media.url` of `message.received`. */
  readonly baseUrl?: string;
}

/**
 * Provider webhooks, from receipt to what an operator replays. A verified body is stored as a job
 * of the `provider-webhook` queue before it is acknowledged (`receive`), then applied by whichever
 * node claims it (`handle`, or `applyStatusBatch` for bodies of statuses alone; the queue is
 * declared by `defineProviderWebhookQueue`): every message and status in it, each on its own (one
 * failing does not stop the others). A body with a failing task is retried on `retryDelaysMs`;
 * after its last attempt it is a dead letter of the job runner (logged at error level), and a body
 * with an inbound message for a phone number ID no number has is kept in the unrouted store.
 * Neither is ever dropped; `replayStored()` (CLI `parley webhooks retry`, or adding the number)
 * and `parley jobs replay` apply them again. Every step is idempotent (dedupe on inbound message
 * ID and on (message, status); statuses only move forward), so a job that runs again after a
 * crash, or a replay, is harmless.
 */
export class WebhookProcessor implements ProviderWebhookWorker {
  /** Waits before the 2nd, 3rd, ... attempt of a failing body; tests shorten it. */
  retryDelaysMs: readonly number[];
  private readonly jobs: JobRunner | undefined;
  private readonly waiters: InboundWaiters;
  private readonly statuses: StatusApplier;
  private readonly body: BodyDeps;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly clock: Clock,
    private readonly logger: Logger,
    options: WebhookProcessorOptions = {},
  ) {
    this.retryDelaysMs = options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
    this.jobs = options.jobs;
    this.waiters = new InboundWaiters(db);
    this.statuses = new StatusApplier({ db, clock, logger, jobs: this.jobs });
    this.body = {
      db,
      clock,
      logger,
      statuses: this.statuses,
      waiters: this.waiters,
      inbound: {
        db,
        clock,
        logger,
        jobs: this.jobs,
        conversationIdleMs: options.conversationIdleMs ?? 24 * 60 * 60 * 1000,
        botFallbackMs: options.botFallbackMs ?? 120_000,
        baseUrl: options.baseUrl ?? '',
      },
    };
  }

  /**
   * Stores one verified webhook body as a job; resolves (with how many tasks it holds) once it is
   * stored, which is when it may be acknowledged.
   */
  async receive(raw: string, payload: unknown): Promise<number> {
    if (!this.jobs) throw new Error('this webhook processor has no job runner');
    const receivedAt = this.clock.now();
    const { tasks, skipped } = tasksOf(payload, receivedAt);
    if (skipped.length > 0) this.logger.warn({ skipped }, 'webhook items skipped: not something Parley can apply');
    if (tasks.length === 0) return 0;
    await this.jobs.enqueue<ProviderWebhookJob>(PROVIDER_WEBHOOK_QUEUE, { raw, receivedAt });
    return tasks.length;
  }

  /** The job: applies a body; throws (to be retried) when a task failed. */
  async handle(payload: ProviderWebhookJob, job: JobInfo): Promise<void> {
    await runProviderWebhook(this.body, tasksOfBody(payload.raw, Number(payload.receivedAt)), payload, job);
  }

  /**
   * Bodies holding statuses alone, applied in one transaction (see StatusApplier.applyBatch);
   * resolves with their job IDs. A body with an inbound message is left to run on its own (it has
   * waiters, a transaction of its own and an end user to record).
   */
  async applyStatusBatch(
    jobs: readonly { readonly payload: ProviderWebhookJob; readonly job: JobInfo }[],
    complete?: (db: Kysely<DB>, ids: readonly string[]) => Promise<void>,
  ): Promise<string[]> {
    const bodies: { id: string; tasks: StatusTask[] }[] = [];
    for (const { payload, job } of jobs) {
      const tasks = tasksOfBody(payload.raw, Number(payload.receivedAt));
      const statuses = tasks.filter((t): t is StatusTask => t.kind === 'status');
      if (statuses.length === tasks.length) bodies.push({ id: job.id, tasks: statuses });
    }
    if (bodies.length === 0) return [];
    const applied = await this.statuses.applyBatch(bodies, complete);
    return applied;
  }

  /**
   * Puts back on the queue the bodies acknowledged but never applied by an earlier version (moved
   * to the dead letters, never attempted, by migration 0016), in one transaction, so that two
   * nodes starting at once cannot both take one; also tidies pending statuses.
   */
  async recover(): Promise<number> {
    await this.statuses.tidyPending();
    const jobs = this.jobs;
    if (!jobs) return 0;
    const moved = await this.db.transaction().execute(async (trx) => {
      const rows = await takeDeadJobs(trx, { queue: PROVIDER_WEBHOOK_QUEUE, neverAttempted: true });
      for (const row of rows) {
        const payload = row.payload as Partial<ProviderWebhookJob> | null;
        const raw = typeof payload?.raw === 'string' ? payload.raw : '';
        const receivedAt = Number(payload?.receivedAt ?? row.failedAt);
        if (tasksOf(parseBody(raw), receivedAt).tasks.length === 0) continue;
        await jobs.enqueue<ProviderWebhookJob>(PROVIDER_WEBHOOK_QUEUE, { raw, receivedAt }, { db: trx });
      }
      return rows.length;
    });
    if (moved > 0) {
      this.logger.info({ bodies: moved }, 'queued provider webhooks left unprocessed by an earlier version');
    }
    return moved;
  }

  /** The bodies kept out of the queue (failed or unrouted), oldest first. */
  listStored(): Promise<StoredWebhook[]> {
    return listKeptWebhooks(this.db);
  }

  /**
   * Applies kept bodies again, in this process: every failed and unrouted one, or the one with
   * `id`, or the unrouted ones naming `phoneNumberId` (a number was just added). A body is tried
   * `retryDelaysMs.length + 1` times, then kept again; resolves with what became of each.
   */
  replayStored(filter: { id?: string; phoneNumberId?: string } = {}): Promise<{ id: string; outcome: BodyOutcome }[]> {
    return replayKeptWebhooks(this.body, this.retryDelaysMs, filter);
  }

  /**
   * Resolves once the inbound message `providerMessageId` has been applied (here, or by another
   * node), or could not be, or after `timeoutMs`. Register before the webhook can arrive.
   */
  waitForInbound(providerMessageId: string, timeoutMs: number): Promise<InboundOutcome> {
    return this.waiters.wait(providerMessageId, timeoutMs);
  }

  /** Resolves once no provider webhook is queued, running or waiting for a retry. */
  async idle(): Promise<void> {
    await this.jobs?.drained([PROVIDER_WEBHOOK_QUEUE]);
  }

  /** Nothing of its own to stop: the jobs belong to the runner, which stops with the context. */
  async close(): Promise<void> {}
}
