import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema.js';
import type { Clock } from '../shared/clock.js';
import { insertDeadJob } from './dead-letter.repository.js';
import { type JobInfo, type QueueDefinition, RetryLater } from './job.js';
import type { ClaimedJob, JobStore } from './job-store.js';

/**
 * What becomes of a job whose handler threw: run again later without spending an attempt
 * (`RetryLater`), retried on its queue's schedule, handed to the queue's own store of failures
 * (`onLastFailure`), or kept as a dead letter (`parley jobs dead`, `parley jobs replay`).
 */

export interface FailureDeps {
  readonly db: Kysely<DB>;
  readonly store: JobStore;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Called when a job fails (for metrics). */
  readonly onFailure?: (queue: string) => void;
}

export const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 2000);

export async function recordFailure(
  deps: FailureDeps,
  def: QueueDefinition<unknown> | undefined,
  job: ClaimedJob,
  info: JobInfo,
  err: unknown,
  delays: readonly number[],
  stopping: boolean,
): Promise<void> {
  const { store, logger, clock, db } = deps;
  if (err instanceof RetryLater) {
    await store.reschedule(job, job.attempt, Date.now() + err.delayMs, err.message);
    return;
  }
  deps.onFailure?.(job.queue);
  const delay = delays[job.attempt - 1];
  if (delay !== undefined && !stopping) {
    logger.warn(
      { err, queue: job.queue, jobId: job.id, attempt: job.attempt, retryInMs: delay },
      'job failed; retrying',
    );
    await store.reschedule(job, job.attempt + 1, Date.now() + delay, errorText(err));
    return;
  }
  if (delay !== undefined) {
    // Shutting down: the next start (or another node) runs it again soon, as the same attempt.
    await store.reschedule(job, job.attempt, Date.now(), errorText(err));
    return;
  }
  if (def?.onLastFailure) {
    await def.onLastFailure(job.payload, info, err);
    await store.complete(job);
    return;
  }
  logger.error(
    { err, queue: job.queue, jobId: job.id, attempts: job.attempt },
    'job failed after its last attempt; kept as a dead letter (parley jobs dead / replay)',
  );
  await db.transaction().execute(async (trx) => {
    await insertDeadJob(trx, {
      id: job.id,
      queue: job.queue,
      payload: job.payload,
      attempts: job.attempt,
      error: errorText(err),
      at: clock.now(),
    });
    // On SQLite the job row goes in the same transaction; pg-boss completes it right after.
    if (store.kind === 'sqlite') await store.complete(job, trx);
  });
  if (store.kind !== 'sqlite') await store.complete(job);
}
