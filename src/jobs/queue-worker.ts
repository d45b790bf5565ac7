import type { Logger } from 'pino';
import { DEFAULT_RETRY_DELAYS_MS, type JobInfo, type QueueDefinition } from './job.js';
import { type FailureDeps, recordFailure } from './job-failures.js';
import type { ClaimedJob, JobStore } from './job-store.js';

export interface WorkerDeps extends FailureDeps {
  readonly store: JobStore;
  readonly logger: Logger;
  /** Lease of a claimed job; renewed every third of it while the handler runs. */
  readonly leaseMs: number;
  /** How often an idle queue looks for due jobs (new jobs of this process wake it at once). */
  readonly pollMs: number;
  /** Whether the runner is stopping: nothing more is claimed, a failing job is not retried here. */
  readonly stopping: () => boolean;
  /** Every handler (or batch) running, so that stopping can wait for them. */
  readonly inFlight: Set<Promise<void>>;
}

/**
 * The workers of one queue in this process: polls for due jobs (at once when woken, else every
 * `pollMs`), claims as many as its concurrency and rate allow, runs each (or each batch), and
 * records what became of it. A job finishing frees a slot and looks for the next at once.
 */
export class QueueWorker {
  /** Jobs of this queue running in this process, by ID. */
  readonly running = new Map<string, ClaimedJob>();
  /** Batches running (a queue with `batch`: its concurrency counts these). */
  private batches = 0;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  /** A wake-up came while polling: poll again right after. */
  private again = false;
  /** Start times of the last second's jobs, for `ratePerSecond`. */
  private readonly started: number[] = [];

  constructor(
    readonly def: QueueDefinition<unknown>,
    private readonly deps: WorkerDeps,
  ) {}

  /** Looks for due jobs now. */
  wake(): void {
    if (this.polling) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    void this.poll();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
  }

  private schedule(ms: number): void {
    if (this.deps.stopping()) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.poll();
    }, ms);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    const { store, leaseMs, pollMs, logger, stopping } = this.deps;
    if (stopping()) return;
    this.polling = true;
    this.again = false;
    let claimed = 0;
    let nextPollMs = pollMs;
    try {
      const room = this.room();
      const now = Date.now();
      while (this.started.length > 0 && (this.started[0] ?? 0) <= now - 1000) this.started.shift();
      const rate = this.def.ratePerSecond;
      const allowed = rate === undefined ? room : Math.min(room, rate - this.started.length);
      const batch = this.def.batch;
      if (allowed > 0 && batch) {
        const size = Math.max(1, batch.size);
        const jobs = await store.claim(this.def.name, allowed * size, leaseMs);
        claimed = jobs.length;
        for (let i = 0; i < jobs.length; i += size) this.runBatch(jobs.slice(i, i + size));
      } else if (allowed > 0) {
        const jobs = await store.claim(this.def.name, allowed, leaseMs);
        claimed = jobs.length;
        for (const job of jobs) {
          this.started.push(Date.now());
          this.run(job);
        }
      } else if (rate !== undefined && room > 0) {
        nextPollMs = Math.max(5, (this.started[0] ?? now) + 1000 - now);
      }
    } catch (err) {
      logger.warn({ err, queue: this.def.name }, 'could not claim jobs; trying again shortly');
      nextPollMs = Math.max(pollMs, 1000);
    } finally {
      this.polling = false;
    }
    // A full claim suggests more are waiting; a wake-up during the poll may have missed them too.
    if (!stopping() && (this.again || (claimed > 0 && this.room() > 0))) {
      this.schedule(0);
    } else {
      this.schedule(nextPollMs);
    }
  }

  /** How many more jobs (batches, for a queue with `batch`) may start now in this process. */
  private room(): number {
    const concurrency = this.def.concurrency ?? 4;
    return concurrency - (this.def.batch ? this.batches : this.running.size);
  }

  private track(p: Promise<void>, done: () => void): void {
    const tracked = p.finally(() => {
      done();
      this.deps.inFlight.delete(tracked);
      // A slot is free: look for the next job.
      if (!this.deps.stopping()) this.wake();
    });
    this.deps.inFlight.add(tracked);
  }

  private runBatch(jobs: readonly ClaimedJob[]): void {
    this.batches++;
    for (const job of jobs) this.running.set(job.id, job);
    this.track(this.executeBatch(jobs), () => {
      for (const job of jobs) this.running.delete(job.id);
      this.batches--;
    });
  }

  private run(job: ClaimedJob): void {
    this.running.set(job.id, job);
    this.track(this.execute(job), () => this.running.delete(job.id));
  }

  private async executeBatch(jobs: readonly ClaimedJob[]): Promise<void> {
    const { store, logger } = this.deps;
    const batch = this.def.batch;
    if (!batch) return;
    const queue = this.def.name;
    const maxAttempts = (this.def.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS).length + 1;
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
          await store.completeMany(queue, these, db);
          for (const job of these) completedInside.add(job.id);
        },
      );
      done = new Set(finished);
    } catch (err) {
      completedInside.clear();
      logger.warn({ err, queue, jobs: jobs.length }, 'a batch of jobs failed; running each on its own');
    }
    const finished = jobs.filter((job) => done.has(job.id) && !completedInside.has(job.id));
    if (finished.length > 0) {
      try {
        await store.completeMany(queue, finished);
      } catch (err) {
        // Their leases lapse and they run again (handlers are idempotent): nothing is lost.
        logger.error(
          { err, queue, jobs: finished.length },
          'could not record that a batch of jobs finished; they run again once their leases lapse',
        );
      }
    }
    for (const job of jobs) if (!done.has(job.id)) await this.execute(job);
  }

  private async execute(job: ClaimedJob): Promise<void> {
    const { def } = this;
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
      if (outcome.ok) await this.deps.store.complete(job);
      else await recordFailure(this.deps, def, job, info, outcome.err, delays, this.deps.stopping());
    } catch (recordErr) {
      // The lease lapses and the job runs again (handlers are idempotent): nothing is lost.
      this.deps.logger.error(
        { err: recordErr, queue: job.queue, jobId: job.id },
        'could not record what became of a job; it runs again once its lease lapses',
      );
    }
  }
}
