import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

/** A job as a store hands it to the runner. */
export interface ClaimedJob {
  readonly id: string;
  readonly queue: string;
  readonly payload: unknown;
  readonly attempt: number;
}

/**
 * Where jobs live: claimed with a lease, finished, retried or removed. Two stores: pg-boss on
 * PostgreSQL (`pg-boss-store.ts`), a table of the region's database on SQLite (`sqlite-store.ts`).
 */
export interface JobStore {
  readonly kind: 'sqlite' | 'pg-boss';
  /** Prepares the store for these queues (tables, queue records). */
  init(queues: readonly string[]): Promise<void>;
  insert(queue: string, payload: unknown, attempt: number, runAt: number, db?: Kysely<DB>): Promise<string>;
  /** First attempts of many jobs of one queue, due now, stored together (in `db`'s transaction when given). */
  insertMany(queue: string, payloads: readonly unknown[], db?: Kysely<DB>): Promise<string[]>;
  /**
   * A job due now known by `key` within its queue, stored unless one of that key is stored already
   * (waiting, running or done lately); resolves with whether this call stored it. A scheduled job
   * is stored so once per interval, whichever nodes try.
   */
  insertOnce(queue: string, key: string, payload: unknown): Promise<boolean>;
  claim(queue: string, limit: number, leaseMs: number): Promise<ClaimedJob[]>;
  /** Renews the lease of running jobs. */
  extend(queue: string, ids: readonly string[], leaseMs: number): Promise<void>;
  complete(job: ClaimedJob, db?: Kysely<DB>): Promise<void>;
  /** Completes jobs of one queue together (in `db`'s transaction when given). */
  completeMany(queue: string, jobs: readonly ClaimedJob[], db?: Kysely<DB>): Promise<void>;
  /** Runs the job again at `runAt`, as attempt `attempt`, remembering the error. */
  reschedule(job: ClaimedJob, attempt: number, runAt: number, error: string): Promise<void>;
  /** Jobs not yet done, by queue: due or scheduled, and running. */
  counts(): Promise<{ queue: string; queued: number; running: number }[]>;
  close(): Promise<void>;
}
