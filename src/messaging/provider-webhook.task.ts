import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema.js';
import type { JobInfo, JobRunner } from '../jobs/job-runner.js';
import { ACCOUNT_CHANGE_QUEUE, PROVIDER_WEBHOOK_QUEUE } from '../jobs/queues.js';
import type { Clock } from '../shared/clock.js';
import type { InboundWaiters } from './inbound-waiters.js';
import { insertUnrouted } from './unrouted-webhook.repository.js';
import { applyInbound, type InboundDeps } from './webhook-inbound.js';
import type { AccountTask, Task } from './webhook-payload.js';
import type { StatusApplier } from './webhook-statuses.js';

export { PROVIDER_WEBHOOK_QUEUE };

/** A change to a business account or a number, from the provider's webhook: the policies queue's payload. */
export interface AccountChangeJob {
  readonly field: string;
  readonly accountId: string | null;
  readonly value: Record<string, unknown>;
  readonly receivedAt: number;
}

/** A provider webhook body waiting to be applied: the job's payload. */
export interface ProviderWebhookJob {
  /** The raw body, as signed. */
  readonly raw: string;
  readonly receivedAt: number;
}

/** Retries of a failing body: 5 attempts in all, about 40 s apart at most. */
export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [500, 2_000, 8_000, 30_000];

/**
 * Bodies of statuses applied together, and how many such batches run at once per process. On
 * SQLite one at a time: its one connection would run them one after the other anyway, and as
 * better-sqlite3 never waits for I/O, batches claimed together ran back to back in one turn of the
 * event loop, every other request waiting for the last of them to commit.
 */
const STATUS_BATCH = 100;
const STATUS_BATCH_CONCURRENCY = { 'pg-boss': 4, sqlite: 1 } as const;

/** What applying every task of a body came to. */
export interface Applied {
  /** The phone number IDs of inbound messages no number has. */
  readonly unrouted: Set<string>;
  /** The first error of a task that failed (the others were still applied). */
  readonly error: unknown;
  readonly failed: boolean;
}

/** What applying a body needs. */
export interface BodyDeps {
  readonly db: Kysely<DB>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly statuses: StatusApplier;
  readonly inbound: InboundDeps;
  readonly waiters: InboundWaiters;
}

/**
 * A template's status or a number's quality: applied by the policies feature on its own queue
 * (src/policies/account-change.task.ts), which reads the provider; a command replaying kept
 * webhooks has no job runner, and leaves it to the next scheduled sync.
 */
async function queueAccountChange(jobs: JobRunner | undefined, task: AccountTask): Promise<'applied'> {
  await jobs?.enqueue<AccountChangeJob>(ACCOUNT_CHANGE_QUEUE, {
    field: task.field,
    accountId: task.accountId ?? null,
    value: task.value,
    receivedAt: task.receivedAt,
  });
  return 'applied';
}

/** Applies every task of a body, each on its own; tells whoever waits for an inbound message. */
export async function applyBody(
  deps: BodyDeps,
  tasks: readonly Task[],
  again: boolean,
  retrying: boolean,
): Promise<Applied> {
  const unrouted = new Set<string>();
  let error: unknown;
  let failed = false;
  for (const task of tasks) {
    try {
      const outcome =
        task.kind === 'status'
          ? await deps.statuses.applyOne(task)
          : task.kind === 'account'
            ? await queueAccountChange(deps.inbound.jobs, task)
            : await applyInbound(deps.inbound, task, again);
      if (outcome === 'unrouted' && task.kind !== 'account') unrouted.add(task.phoneNumberId ?? '');
      if (task.kind === 'inbound') {
        deps.waiters.notify(
          task.providerMessageId,
          outcome === 'applied' ? { ok: true } : { ok: false, reason: 'unknown number', retrying: false },
        );
      }
    } catch (err) {
      if (!failed) error = err;
      failed = true;
      deps.logger.warn({ err, kind: task.kind, retrying }, 'webhook task failed');
      if (task.kind === 'inbound')
        deps.waiters.notify(task.providerMessageId, { ok: false, reason: 'failed', retrying });
    }
  }
  return { unrouted, error, failed };
}

/**
 * The job: applies a body; throws (to be retried, and after its last attempt to become a dead
 * letter of the job runner) when a task failed. A body with an inbound message for a phone number
 * ID no number has is kept in the unrouted store (idempotent: the job's ID is the body's).
 */
export async function runProviderWebhook(
  deps: BodyDeps,
  tasks: readonly Task[],
  payload: ProviderWebhookJob,
  job: JobInfo,
): Promise<void> {
  const retrying = job.attempt < job.maxAttempts;
  const result = await applyBody(deps, tasks, job.attempt > 1, retrying);
  if (result.failed) throw result.error;
  if (result.unrouted.size === 0) return;
  await insertUnrouted(deps.db, {
    id: job.id,
    body: payload.raw,
    receivedAt: Number(payload.receivedAt),
    attempts: job.attempt,
    at: deps.clock.now(),
    phoneNumberIds: result.unrouted,
  });
  deps.logger.warn(
    { inboxId: job.id, phoneNumberIds: [...result.unrouted] },
    'inbound message for an unknown number kept as an unrouted webhook; adding the number replays it',
  );
}

/** What the queue calls: looked up at each call, so that a change (tests wrap them) applies at once. */
export interface ProviderWebhookWorker {
  readonly retryDelaysMs: readonly number[];
  handle(payload: ProviderWebhookJob, job: JobInfo): Promise<void>;
  applyStatusBatch(
    jobs: readonly { readonly payload: ProviderWebhookJob; readonly job: JobInfo }[],
    complete?: (db: Kysely<DB>, ids: readonly string[]) => Promise<void>,
  ): Promise<readonly string[]>;
}

/**
 * Declares the `provider-webhook` queue on the job runner: a body is retried on the worker's
 * `retryDelaysMs`, then becomes a dead letter (`parley jobs dead`, `parley webhooks failed`).
 * Bodies of statuses go in batches: one transaction (one commit) and a few statements for many.
 */
export function defineProviderWebhookQueue(
  jobs: JobRunner,
  worker: ProviderWebhookWorker,
  options: { readonly concurrency?: number } = {},
): void {
  jobs.define<ProviderWebhookJob>({
    name: PROVIDER_WEBHOOK_QUEUE,
    // Read at each failure, so a change (tests shorten it) applies to bodies already queued.
    get retryDelaysMs() {
      return worker.retryDelaysMs;
    },
    handler: (payload, job) => worker.handle(payload, job),
    concurrency: options.concurrency ?? STATUS_BATCH_CONCURRENCY[jobs.kind],
    batch: { size: STATUS_BATCH, handler: (batch, complete) => worker.applyStatusBatch(batch, complete) },
  });
}
