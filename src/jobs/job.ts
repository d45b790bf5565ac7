import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

/**
 * What a feature sees of a job: the definition of a queue (its handler, concurrency, rate, retries,
 * batches), what a handler is told of the job it runs, and how a job is stored.
 */

export interface JobInfo {
  readonly id: string;
  readonly queue: string;
  /** 1 for the first run; counts the handler's failures, not restarts after a crash. */
  readonly attempt: number;
  /** Attempts in all: the queue's retry schedule plus one. */
  readonly maxAttempts: number;
}

export type JobHandler<P> = (payload: P, job: JobInfo) => Promise<void>;

/** Thrown by a handler to run the job again later without counting an attempt (pacing, a busy key). */
export class RetryLater extends Error {
  constructor(
    readonly delayMs: number,
    reason = 'not yet',
  ) {
    super(reason);
    this.name = 'RetryLater';
  }
}

export interface QueueDefinition<P> {
  readonly name: string;
  readonly handler: JobHandler<P>;
  /** Jobs of this queue run at once in one process (default 4). */
  readonly concurrency?: number;
  /** Jobs of this queue started per second in one process (default: no limit). */
  readonly ratePerSecond?: number;
  /** Waits before the 2nd, 3rd, ... attempt; its length + 1 is the number of attempts. */
  readonly retryDelaysMs?: readonly number[];
  /**
   * Called instead of making a dead letter when the last attempt fails (a queue with a dead-letter
   * store of its own, such as the provider webhooks'); the job is then done.
   */
  readonly onLastFailure?: (payload: P, job: JobInfo, err: unknown) => Promise<void>;
  /**
   * Jobs of this queue run together, up to `size` at a time (`concurrency` then counts batches):
   * `handler` gets them at once and resolves with the IDs of those it finished (their work
   * committed); those are completed together, and every other job of the batch runs on its own
   * through the queue's `handler`, as without batches (retries and dead letters included). A batch
   * handler that throws leaves every job of the batch to run on its own.
   *
   * `complete(db, ids)` lets the handler complete jobs of its batch inside its own transaction
   * (`db`), so that they are done exactly when their work commits, in the same commit: nothing runs
   * twice after a crash between the two, and a commit (a statement, on PostgreSQL a round trip) is
   * saved. The IDs so completed must be among those the handler resolves with; if the handler
   * throws, its transaction rolled back and they run on their own as above.
   */
  readonly batch?: {
    readonly size: number;
    readonly handler: (
      jobs: readonly { readonly payload: P; readonly job: JobInfo }[],
      complete: (db: Kysely<DB>, ids: readonly string[]) => Promise<void>,
    ) => Promise<readonly string[]>;
  };
}

/**
 * A scheduled job: `run` once every `everyMs` across all the nodes of a region that work jobs (not
 * once per node). Each node's timer stores that interval's one job as it begins; the store keeps
 * the first and the others find it there, and one node runs it.
 */
export interface ScheduleDefinition {
  readonly name: string;
  readonly everyMs: number;
  /** The work of one interval (numbered from the epoch); an error is logged and the next interval runs it again. */
  readonly run: (interval: number) => Promise<void>;
}

export interface EnqueueOptions {
  /** Run no sooner than this many ms from now. */
  readonly delayMs?: number;
  /**
   * The database handle (a transaction) to write the job with, so it commits with the caller's
   * rows. The queue's workers in this process are woken once that transaction commits.
   */
  readonly db?: Kysely<DB>;
}

export interface QueueCount {
  readonly queue: string;
  /** `queued` (due or scheduled), `running`, `dead`. */
  readonly state: 'queued' | 'running' | 'dead';
  readonly count: number;
}

export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [1_000, 5_000, 30_000, 120_000, 600_000];
