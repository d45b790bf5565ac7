import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { afterCommit } from '../db/after-commit.js';
import type { DB } from '../db/schema.js';
import type { Clock } from '../shared/clock.js';
import { countDeadJobs, type DeadJob, listDeadJobs, takeDeadJobs } from './dead-letter.repository.js';
import type { EnqueueOptions, QueueCount, QueueDefinition, ScheduleDefinition } from './job.js';
import type { JobStore } from './job-store.js';
import { QueueWorker } from './queue-worker.js';
import { Schedules } from './schedules.js';

export type { EnqueueOptions, JobHandler, JobInfo, QueueCount, QueueDefinition, ScheduleDefinition } from './job.js';
export { DEFAULT_RETRY_DELAYS_MS, RetryLater } from './job.js';
export type { ClaimedJob, JobStore } from './job-store.js';

/**
 * One job runner for everything Parley does after answering a request. A job belongs to a named
 * queue (`queues.ts`), carries a JSON payload, and runs once at a time on one node: it is claimed
 * with a lease that its node renews while the handler runs, so a job whose node dies is claimed
 * again by another node once the lease runs out (seconds). A handler that throws is retried on the
 * queue's schedule; past its last attempt the job becomes a dead letter (`parley jobs dead`,
 * `parley jobs replay`). Handlers must be idempotent: a job can run again after a crash at any point.
 *
 * A job stored inside a transaction wakes its queue's workers once that transaction commits
 * (`afterCommit`); any other wakes them at once. Scheduled jobs (`schedule`) run once per interval
 * across the region's nodes.
 *
 * The store is pluggable: pg-boss on PostgreSQL (several nodes), a table of the region's database
 * on SQLite (the one process of the embedded default). The workers of each queue are in
 * `queue-worker.ts`, what becomes of a failed job in `job-failures.ts`.
 */
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

export class JobRunner {
  private readonly workers = new Map<string, QueueWorker>();
  private readonly schedules = new Map<string, ScheduleDefinition>();
  private readonly timers: Schedules;
  private started = false;
  private stopping = false;
  private heartbeat: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  /** The queues a transaction will wake when it commits (each once, however many jobs it stores). */
  private readonly wakesOnCommit = new WeakMap<Kysely<DB>, Set<string>>();

  constructor(private readonly options: JobRunnerOptions) {
    this.timers = new Schedules(options.store, options.logger, (queue) => this.wake(queue));
  }

  get kind(): JobStore['kind'] {
    return this.options.store.kind;
  }

  /** Declares a queue and its handler; before `start()`. */
  define<P>(def: QueueDefinition<P>): void {
    if (this.workers.has(def.name)) throw new Error(`job queue "${def.name}" is defined twice`);
    this.workers.set(
      def.name,
      new QueueWorker(def as QueueDefinition<unknown>, {
        ...this.options,
        stopping: () => this.stopping,
        inFlight: this.inFlight,
      }),
    );
  }

  /**
   * Declares a scheduled job (a queue of its own, one job per interval across all nodes, run by
   * one of them); before `start()`. A failed run is logged, not retried: the next interval runs it.
   */
  schedule(def: ScheduleDefinition): void {
    const { logger } = this.options;
    this.define<{ interval: number }>({
      name: def.name,
      concurrency: 1,
      retryDelaysMs: [],
      handler: (payload) => def.run(Number(payload.interval)),
      onLastFailure: async (_payload, job, err) => {
        logger.error({ err, queue: job.queue }, 'a scheduled job failed; the next interval runs it again');
      },
    });
    this.schedules.set(def.name, def);
  }

  /** Prepares the store; after it, jobs can be enqueued (workers start with `start()`). */
  async init(): Promise<void> {
    await this.options.store.init([...this.workers.keys()]);
  }

  /** Starts working every defined queue in this process, and the timers of the scheduled jobs. */
  start(): void {
    if (this.started) return;
    this.started = true;
    for (const name of this.workers.keys()) this.wake(name);
    this.timers.start(this.schedules.values());
    const every = Math.max(250, Math.floor(this.options.leaseMs / 3));
    this.heartbeat = setInterval(() => void this.renewLeases(), every);
    this.heartbeat.unref();
  }

  /**
   * Stores a job; resolves once it is durable (or, with `db`, part of its transaction). Wakes this
   * process's workers of the queue at once, or once `db`'s transaction commits.
   */
  async enqueue<P>(queue: string, payload: P, options: EnqueueOptions = {}): Promise<string> {
    // A queue defined elsewhere (a command adding work for the servers) is fine: the store has it.
    // Scheduling follows real time, whatever clock records business times.
    const runAt = Date.now() + (options.delayMs ?? 0);
    const id = await this.options.store.insert(queue, payload, 1, runAt, options.db);
    if (!options.delayMs) await this.wakeOnCommit(queue, options.db);
    return id;
  }

  /**
   * Stores many jobs of one queue, due now, together (on PostgreSQL one statement); resolves once
   * they are durable (or, with `db`, part of its transaction). Wakes this process's workers at
   * once, or once `db`'s transaction commits.
   */
  async enqueueMany<P>(
    queue: string,
    payloads: readonly P[],
    options: Pick<EnqueueOptions, 'db'> = {},
  ): Promise<string[]> {
    if (payloads.length === 0) return [];
    const ids = await this.options.store.insertMany(queue, payloads, options.db);
    await this.wakeOnCommit(queue, options.db);
    return ids;
  }

  /** Wakes the queue now, or once `db`'s transaction commits: inside it the jobs are not visible yet. */
  private async wakeOnCommit(queue: string, db: Kysely<DB> | undefined): Promise<void> {
    if (!db?.isTransaction) {
      this.wake(queue);
      return;
    }
    let queues = this.wakesOnCommit.get(db);
    if (queues?.has(queue)) return;
    if (!queues) {
      queues = new Set();
      this.wakesOnCommit.set(db, queues);
    }
    queues.add(queue);
    await afterCommit(db, () => this.wake(queue));
  }

  /** Jobs by queue and state, dead letters included. */
  async counts(): Promise<QueueCount[]> {
    const live = await this.options.store.counts();
    const dead = await countDeadJobs(this.options.db);
    const out: QueueCount[] = [];
    const names = new Set([...this.workers.keys(), ...live.map((r) => r.queue), ...dead.map((d) => d.queue)]);
    for (const name of [...names].sort()) {
      const row = live.find((r) => r.queue === name);
      out.push({ queue: name, state: 'queued', count: row?.queued ?? 0 });
      out.push({ queue: name, state: 'running', count: row?.running ?? 0 });
      out.push({ queue: name, state: 'dead', count: dead.find((d) => d.queue === name)?.count ?? 0 });
    }
    return out;
  }

  listDead(queue?: string): Promise<DeadJob[]> {
    return listDeadJobs(this.options.db, queue);
  }

  /** Puts dead letters back on their queues as new first attempts; resolves with how many. */
  async replayDead(filter: { id?: string; queue?: string }): Promise<DeadJob[]> {
    const { db, store } = this.options;
    // One transaction on SQLite (the jobs table is in the same database); on PostgreSQL a dead
    // letter is deleted only once its job is stored, so a crash in between replays it twice at worst.
    const taken = await db.transaction().execute(async (trx) => {
      const rows = await takeDeadJobs(trx, filter);
      if (store.kind === 'sqlite') {
        for (const row of rows) await store.insert(row.queue, row.payload, 1, Date.now(), trx);
      }
      return rows;
    });
    if (store.kind !== 'sqlite') {
      for (const row of taken) await store.insert(row.queue, row.payload, 1, Date.now());
    }
    for (const row of taken) this.wake(row.queue);
    return taken;
  }

  /**
   * Resolves once no job of these queues (by default all but the scheduled ones, which come back
   * every interval) is queued or running anywhere.
   */
  async drained(queues?: readonly string[], timeoutMs = 60_000): Promise<void> {
    const names = queues ?? [...this.workers.keys()].filter((name) => !this.schedules.has(name));
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const counts = await this.options.store.counts();
      const busy = counts.some((c) => names.includes(c.queue) && c.queued + c.running > 0);
      const local = names.some((n) => (this.workers.get(n)?.running.size ?? 0) > 0);
      if (!busy && !local) return;
      if (Date.now() > deadline) throw new Error(`jobs of ${names.join(', ')} still pending after ${timeoutMs} ms`);
      for (const n of names) this.wake(n);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** Stops claiming, waits for running jobs (their leases lapse if they outlive the process). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.timers.stop();
    if (this.heartbeat) clearInterval(this.heartbeat);
    for (const worker of this.workers.values()) worker.stop();
    await Promise.allSettled([...this.inFlight]);
    await this.options.store.close();
  }

  /**
   * Looks for due jobs of `queue` now. Storing a job wakes its queue by itself (after the commit,
   * inside a transaction): callers need this only for work stored by other means.
   */
  wake(queue: string): void {
    const worker = this.workers.get(queue);
    if (!worker || !this.started || this.stopping) return;
    worker.wake();
  }

  private async renewLeases(): Promise<void> {
    for (const worker of this.workers.values()) {
      if (worker.running.size === 0) continue;
      try {
        await this.options.store.extend(worker.def.name, [...worker.running.keys()], this.options.leaseMs);
      } catch (err) {
        this.options.logger.warn({ err, queue: worker.def.name }, 'could not renew job leases');
      }
    }
  }
}
