import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema.js';
import type { Clock } from '../shared/clock.js';
import { type DeadJob, insertDeadJob, listDeadJobs, takeDeadJobs } from './dead-letter.repository.js';

/**
 * One job runner for everything Parley does after answering a request. A job belongs to a named
 * queue, carries a JSON payload, and runs once at a time on one node: it is claimed with a lease
 * that its node renews while the handler runs, so a job whose node dies is claimed again by another
 * node once the lease runs out (seconds). A handler that throws is retried on the queue's schedule;
 * past its last attempt the job becomes a dead letter (`parley jobs dead`, `parley jobs replay`).
 * Handlers must be idempotent: a job can run again after a crash at any point.
 *
 * The store is pluggable: pg-boss on PostgreSQL (several nodes), a table of the region's database
 * on SQLite (the one process of the embedded default). This file holds what both share: polling,
 * concurrency, rate, leases, retries and dead letters.
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

export interface EnqueueOptions {
  /** Run no sooner than this many ms from now. */
  readonly delayMs?: number;
  /** The database handle (a transaction) to write the job with, so it commits with the caller's rows. */
  readonly db?: Kysely<DB>;
}

export interface QueueCount {
  readonly queue: string;
  /** `queued` (due or scheduled), `running`, `dead`. */
  readonly state: 'queued' | 'running' | 'dead';
  readonly count: number;
}

/** A job as a store hands it to the runner. */
export interface ClaimedJob {
  readonly id: string;
  readonly queue: string;
  readonly payload: unknown;
  readonly attempt: number;
}

/** Where jobs live: claimed with a lease, finished, retried or removed. */
export interface JobStore {
  readonly kind: 'sqlite' | 'pg-boss';
  /** Prepares the store for these queues (tables, queue records). */
  init(queues: readonly string[]): Promise<void>;
  insert(queue: string, payload: unknown, attempt: number, runAt: number, db?: Kysely<DB>): Promise<string>;
  /** First attempts of many jobs of one queue, due now, stored together (in `db`'s transaction when given). */
  insertMany(queue: string, payloads: readonly unknown[], db?: Kysely<DB>): Promise<string[]>;
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

export interface JobRunnerOptions {
  readonly db: Kysely<DB>;
  readonly store: JobStore;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Lease of a claimed job; renewed every third of it while the handler runs. */
  readonly leaseMs: number;
  /** How often an idle queue looks for due jobs (new jobs of this process wake it at once). */
  readonly pollMs: number;
  /** Called when a job fails (for metrics). */
  readonly onFailure?: (queue: string) => void;
}

export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [1_000, 5_000, 30_000, 120_000, 600_000];

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 2000);

interface QueueState {
  readonly def: QueueDefinition<unknown>;
  readonly running: Map<string, ClaimedJob>;
  /** Batches running (a queue with `batch`: its concurrency counts these). */
  batches: number;
  timer: NodeJS.Timeout | undefined;
  polling: boolean;
  /** A wake-up came while polling: poll again right after. */
  again: boolean;
  /** Start times of the last second's jobs, for `ratePerSecond`. */
  readonly started: number[];
}

export class JobRunner {
  private readonly queues = new Map<string, QueueState>();
  private started = false;
  private stopping = false;
  private heartbeat: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly options: JobRunnerOptions) {}

  get kind(): JobStore['kind'] {
    return this.options.store.kind;
  }

  /** Declares a queue and its handler; before `start()`. */
  define<P>(def: QueueDefinition<P>): void {
    if (this.queues.has(def.name)) throw new Error(`job queue "${def.name}" is defined twice`);
    this.queues.set(def.name, {
      def: def as QueueDefinition<unknown>,
      running: new Map(),
      batches: 0,
      timer: undefined,
      polling: false,
      again: false,
      started: [],
    });
  }

  /** Prepares the store; after it, jobs can be enqueued (workers start with `start()`). */
  async init(): Promise<void> {
    await this.options.store.init([...this.queues.keys()]);
  }

  /** Starts working every defined queue in this process. */
  start(): void {
    if (this.started) return;
    this.started = true;
    for (const name of this.queues.keys()) this.wake(name);
    const every = Math.max(250, Math.floor(this.options.leaseMs / 3));
    this.heartbeat = setInterval(() => void this.renewLeases(), every);
    this.heartbeat.unref();
  }

  /** Stores a job; resolves once it is durable. Wakes this process's workers of the queue at once. */
  async enqueue<P>(queue: string, payload: P, options: EnqueueOptions = {}): Promise<string> {
    // A queue defined elsewhere (a command adding work for the servers) is fine: the store has it.
    // Scheduling follows real time, whatever clock records business times.
    const runAt = Date.now() + (options.delayMs ?? 0);
    const id = await this.options.store.insert(queue, payload, 1, runAt, options.db);
    // Inside a transaction the job is not visible yet; the next poll finds it.
    if (!options.db && !options.delayMs) this.wake(queue);
    return id;
  }

  /**
   * Stores many jobs of one queue, due now, together (on PostgreSQL one statement); resolves once
   * they are durable (or, with `db`, part of its transaction). Wakes this process's workers at once.
   */
  async enqueueMany<P>(
    queue: string,
    payloads: readonly P[],
    options: Pick<EnqueueOptions, 'db'> = {},
  ): Promise<string[]> {
    if (payloads.length === 0) return [];
    const ids = await this.options.store.insertMany(queue, payloads, options.db);
    if (!options.db) this.wake(queue);
    return ids;
  }

  /** Jobs by queue and state, dead letters included. */
  async counts(): Promise<QueueCount[]> {
    const live = await this.options.store.counts();
    const dead = await this.options.db
      .selectFrom('job_dead_letters')
      .select(['queue', (eb) => eb.fn.countAll<number>().as('n')])
      .groupBy('queue')
      .execute();
    const out: QueueCount[] = [];
    const names = new Set([...this.queues.keys(), ...live.map((r) => r.queue), ...dead.map((d) => d.queue)]);
    for (const name of [...names].sort()) {
      const row = live.find((r) => r.queue === name);
      out.push({ queue: name, state: 'queued', count: row?.queued ?? 0 });
      out.push({ queue: name, state: 'running', count: row?.running ?? 0 });
      out.push({ queue: name, state: 'dead', count: Number(dead.find((d) => d.queue === name)?.n ?? 0) });
    }
    return out;
  }

  listDead(queue?: string): Promise<DeadJob[]> {
    return listDeadJobs(this.options.db, queue);
  }

  /** Puts dead letters back on their queues as new first attempts; resolves with how many. */
  async replayDead(filter: { id?: string; queue?: string }): Promise<DeadJob[]> {
    // One transaction on SQLite (the jobs table is in the same database); on PostgreSQL a dead
    // letter is deleted only once its job is stored, so a crash in between replays it twice at worst.
    const taken = await this.options.db.transaction().execute(async (trx) => {
      const rows = await takeDeadJobs(trx, filter);
      if (this.options.store.kind === 'sqlite') {
        for (const row of rows) await this.options.store.insert(row.queue, row.payload, 1, Date.now(), trx);
      }
      return rows;
    });
    if (this.options.store.kind !== 'sqlite') {
      for (const row of taken) await this.options.store.insert(row.queue, row.payload, 1, Date.now());
    }
    for (const row of taken) if (this.queues.has(row.queue)) this.wake(row.queue);
    return taken;
  }

  /** Resolves once no job of these queues (all by default) is queued or running anywhere. */
  async drained(queues?: readonly string[], timeoutMs = 60_000): Promise<void> {
    const names = queues ?? [...this.queues.keys()];
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const counts = await this.options.store.counts();
      const busy = counts.some((c) => names.includes(c.queue) && c.queued + c.running > 0);
      const local = names.some((n) => (this.queues.get(n)?.running.size ?? 0) > 0);
      if (!busy && !local) return;
      if (Date.now() > deadline) throw new Error(`jobs of ${names.join(', ')} still pending after ${timeoutMs} ms`);
      for (const n of names) this.wake(n);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** Stops claiming, waits for running jobs (their leases lapse if they outlive the process). */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    for (const state of this.queues.values()) if (state.timer) clearTimeout(state.timer);
    await Promise.allSettled([...this.inFlight]);
    await this.options.store.close();
  }

  /** Looks for due jobs of `queue` now. */
  wake(queue: string): void {
    const state = this.queues.get(queue);
    if (!state || !this.started || this.stopping) return;
    if (state.polling) {
      state.again = true;
      return;
    }
    if (state.timer) clearTimeout(state.timer);
    state.timer = undefined;
    void this.poll(state);
  }

  private schedule(state: QueueState, ms: number): void {
    if (this.stopping) return;
    if (state.timer) clearTimeout(state.timer);
    state.timer = setTimeout(() => {
      state.timer = undefined;
      void this.poll(state);
    }, ms);
    state.timer.unref();
  }

  private async poll(state: QueueState): Promise<void> {
    if (this.stopping) return;
    state.polling = true;
    state.again = false;
    let claimed = 0;
    let nextPollMs = this.options.pollMs;
    try {
      const room = this.room(state);
      const now = Date.now();
      while (state.started.length > 0 && (state.started[0] ?? 0) <= now - 1000) state.started.shift();
      const rate = state.def.ratePerSecond;
      const allowed = rate === undefined ? room : Math.min(room, rate - state.started.length);
      const batch = state.def.batch;
      if (allowed > 0 && batch) {
        const size = Math.max(1, batch.size);
        const jobs = await this.options.store.claim(state.def.name, allowed * size, this.options.leaseMs);
        claimed = jobs.length;
        for (let i = 0; i < jobs.length; i += size) this.runBatch(state, jobs.slice(i, i + size));
      } else if (allowed > 0) {
        const jobs = await this.options.store.claim(state.def.name, allowed, this.options.leaseMs);
        claimed = jobs.length;
        for (const job of jobs) {
          state.started.push(Date.now());
          this.run(state, job);
        }
      } else if (rate !== undefined && room > 0) {
        nextPollMs = Math.max(5, (state.started[0] ?? now) + 1000 - now);
      }
    } catch (err) {
      this.options.logger.warn({ err, queue: state.def.name }, 'could not claim jobs; trying again shortly');
      nextPollMs = Math.max(this.options.pollMs, 1000);
    } finally {
      state.polling = false;
    }
    // A full claim suggests more are waiting; a wake-up during the poll may have missed them too.
    if (!this.stopping && (state.again || (claimed > 0 && this.room(state) > 0))) {
      this.schedule(state, 0);
    } else {
      this.schedule(state, nextPollMs);
    }
  }

  /** How many more jobs (batches, for a queue with `batch`) may start now in this process. */
  private room(state: QueueState): number {
    const concurrency = state.def.concurrency ?? 4;
    return concurrency - (state.def.batch ? state.batches : state.running.size);
  }

  private runBatch(state: QueueState, jobs: readonly ClaimedJob[]): void {
    state.batches++;
    for (const job of jobs) state.running.set(job.id, job);
    const p = this.executeBatch(state, jobs).finally(() => {
      for (const job of jobs) state.running.delete(job.id);
      state.batches--;
      this.inFlight.delete(p);
      this.wake(state.def.name);
    });
    this.inFlight.add(p);
  }

  private async executeBatch(state: QueueState, jobs: readonly ClaimedJob[]): Promise<void> {
    const batch = state.def.batch;
    if (!batch) return;
    const maxAttempts = (state.def.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS).length + 1;
    let done = new Set<string>();
    // Completed by the handler in its own transaction, which committed if the handler resolved.
    const completedInside = new Set<string>();
    const byId = new Map(jobs.map((job) => [job.id, job]));
    try {
      const finished = await batch.handler(
        jobs.map((job) => ({
          payload: job.payload,
          job: { id: job.id, queue: job.queue, attempt: job.attempt, maxAttempts },
        })),
        async (db, ids) => {
          const these = ids.map((id) => byId.get(id)).filter((job): job is ClaimedJob => job !== undefined);
          await this.options.store.completeMany(state.def.name, these, db);
          for (const job of these) completedInside.add(job.id);
        },
      );
      done = new Set(finished);
    } catch (err) {
      completedInside.clear();
      this.options.logger.warn(
        { err, queue: state.def.name, jobs: jobs.length },
        'a batch of jobs failed; running each on its own',
      );
    }
    const finished = jobs.filter((job) => done.has(job.id) && !completedInside.has(job.id));
    if (finished.length > 0) {
      try {
        await this.options.store.completeMany(state.def.name, finished);
      } catch (err) {
        // Their leases lapse and they run again (handlers are idempotent): nothing is lost.
        this.options.logger.error(
          { err, queue: state.def.name, jobs: finished.length },
          'could not record that a batch of jobs finished; they run again once their leases lapse',
        );
      }
    }
    for (const job of jobs) if (!done.has(job.id)) await this.execute(state, job);
  }

  private run(state: QueueState, job: ClaimedJob): void {
    state.running.set(job.id, job);
    const p = this.execute(state, job).finally(() => {
      state.running.delete(job.id);
      this.inFlight.delete(p);
      // A slot is free: look for the next job.
      this.wake(state.def.name);
    });
    this.inFlight.add(p);
  }

  private async execute(state: QueueState, job: ClaimedJob): Promise<void> {
    const { def } = state;
    const delays = def.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
    const info: JobInfo = { id: job.id, queue: job.queue, attempt: job.attempt, maxAttempts: delays.length + 1 };
    let outcome: { ok: true } | { ok: false; err: unknown };
    try {
      await def.handler(job.payload, info);
      outcome = { ok: true };
    } catch (err) {
      outcome = { ok: false, err };
    }
    try {
      if (outcome.ok) await this.options.store.complete(job);
      else await this.failed(job, info, outcome.err, delays);
    } catch (recordErr) {
      // The lease lapses and the job runs again (handlers are idempotent): nothing is lost.
      this.options.logger.error(
        { err: recordErr, queue: job.queue, jobId: job.id },
        'could not record what became of a job; it runs again once its lease lapses',
      );
    }
  }

  private async failed(job: ClaimedJob, info: JobInfo, err: unknown, delays: readonly number[]): Promise<void> {
    const { store, logger, clock, db } = this.options;
    const state = this.queues.get(job.queue);
    if (err instanceof RetryLater) {
      await store.reschedule(job, job.attempt, Date.now() + err.delayMs, err.message);
      return;
    }
    this.options.onFailure?.(job.queue);
    const delay = delays[job.attempt - 1];
    if (delay !== undefined && !this.stopping) {
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
    if (state?.def.onLastFailure) {
      await state.def.onLastFailure(job.payload, info, err);
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

  private async renewLeases(): Promise<void> {
    for (const state of this.queues.values()) {
      if (state.running.size === 0) continue;
      try {
        await this.options.store.extend(state.def.name, [...state.running.keys()], this.options.leaseMs);
      } catch (err) {
        this.options.logger.warn({ err, queue: state.def.name }, 'could not renew job leases');
      }
    }
  }
}
