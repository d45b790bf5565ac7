import type { Logger } from 'pino';
import type { ScheduleDefinition } from './job.js';
import type { JobStore } from './job-store.js';

/**
 * The timers of scheduled jobs on one node. Intervals are counted from the epoch, so every node's
 * interval begins at the same moment: at each beginning, each node stores that interval's job
 * under the interval's number (`insertOnce`), the first store wins, and one node runs it. A node
 * that starts part-way through an interval waits for the next, as a timer of its own would have.
 * Nodes whose clocks differ by less than an interval still store each interval's job once.
 */
export class Schedules {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private stopped = false;

  constructor(
    private readonly store: JobStore,
    private readonly logger: Logger,
    /** Wakes this node's workers of a queue (its job was stored here). */
    private readonly wake: (queue: string) => void,
  ) {}

  start(schedules: Iterable<ScheduleDefinition>): void {
    for (const schedule of schedules) this.arm(schedule);
  }

  stop(): void {
    this.stopped = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  /** Waits for the beginning of the next interval (after `last`, should a timer fire a little early). */
  private arm(schedule: ScheduleDefinition, last = 0): void {
    if (this.stopped) return;
    const { name, everyMs } = schedule;
    const interval = Math.max(Math.floor(Date.now() / everyMs) + 1, last + 1);
    const timer = setTimeout(
      () => {
        this.arm(schedule, interval);
        this.store.insertOnce(name, String(interval), { interval }).then(
          (stored) => {
            if (stored) this.wake(name);
          },
          (err: unknown) => {
            if (!this.stopped)
              this.logger.warn({ err, queue: name }, 'could not schedule a job; the next interval will');
          },
        );
      },
      Math.max(0, interval * everyMs - Date.now()),
    );
    timer.unref();
    this.timers.set(name, timer);
  }
}
