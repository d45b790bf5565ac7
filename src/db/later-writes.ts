import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Clock } from '../shared/clock.js';
import { isPassingFault, QUICK_WAITS_MS, retrying } from './retry.js';
import type { DB } from './schema.js';

/**
 * Writes that record what already happened and must not be lost to a passing fault: the outcome of
 * a keyed request (else its key answers 409 for minutes), the provider's answer to a send (else the
 * message stays pending without the provider's ID). What happened is known only to this process,
 * so it keeps trying while it lives:
 *
 * - at once, on fresh connections (QUICK_WAITS_MS, about 1.5 s), while the caller waits: a
 *   connection lost under the write (a terminated backend, a failover) costs a few milliseconds;
 * - if the fault outlasts that (a restart, a full disk), the caller goes on and the write is tried
 *   again in the background every LATER_EVERY_MS until it succeeds or its `until` has passed.
 *
 * Only a passing fault (`isPassingFault`) is tried again; a refused statement is logged at once.
 * Every write must be safe to repeat (a compare-and-set, an upsert, a delete by key): a connection
 * may be lost after its commit, before its answer. A process that stops or dies loses what it had
 * not written yet: what depends on it (an idempotent claim) must have its own way out.
 */
export const LATER_EVERY_MS = 2_000;
/** Writes kept for later at most; past that the oldest are given up (and logged). */
export const MAX_LATER_WRITES = 10_000;

/** Where a caller's part of the story is logged (a request's logger, say). */
export interface WriteLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

interface Pending {
  readonly what: string;
  readonly write: () => Promise<unknown>;
  readonly until: number;
  readonly context: object;
}

export interface LaterWritesDeps {
  readonly clock: Clock;
  readonly logger: Logger;
}

export class LaterWrites {
  private readonly pending = new Set<Pending>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly deps: LaterWritesDeps,
    private readonly quickWaitsMs: readonly number[] = QUICK_WAITS_MS,
    private readonly laterEveryMs: number = LATER_EVERY_MS,
  ) {}

  /**
   * Runs `write` (`what` names it in the log); never throws. True when it was written now, false
   * when it was refused or left for the background.
   */
  async run(
    what: string,
    write: () => Promise<unknown>,
    options: { readonly until: number; readonly log?: WriteLog; readonly context?: object },
  ): Promise<boolean> {
    const log = options.log ?? this.deps.logger;
    const context = options.context ?? {};
    try {
      await retrying(write, { waitsMs: this.quickWaitsMs });
      return true;
    } catch (err) {
      if (!isPassingFault(err)) {
        log.error({ err, ...context }, `${what} failed`);
        return false;
      }
      log.warn(
        { err, ...context, retryEveryMs: this.laterEveryMs, until: new Date(options.until).toISOString() },
        `${what} failed for now; trying again in the background`,
      );
      this.keep({ what, write, until: options.until, context });
      return false;
    }
  }

  /** Writes kept for the background (for tests and metrics). */
  get waiting(): number {
    return this.pending.size;
  }

  private keep(p: Pending): void {
    this.pending.add(p);
    if (this.pending.size > MAX_LATER_WRITES) {
      const oldest = this.pending.values().next().value;
      if (oldest) {
        this.pending.delete(oldest);
        this.deps.logger.error({ ...oldest.context }, `gave up ${oldest.what}: too many writes waiting`);
      }
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.pending.size === 0) return;
    this.timer = setTimeout(() => void this.retryPending(), this.laterEveryMs);
    // Nothing to keep a stopping process for (see above).
    this.timer.unref();
  }

  private async retryPending(): Promise<void> {
    this.timer = undefined;
    for (const p of [...this.pending]) {
      if (this.deps.clock.now() >= p.until) {
        this.pending.delete(p);
        this.deps.logger.error({ ...p.context }, `gave up ${p.what}: it is no longer needed`);
        continue;
      }
      try {
        await p.write();
        this.pending.delete(p);
        this.deps.logger.info({ ...p.context }, `${p.what} succeeded in the background`);
      } catch (err) {
        if (isPassingFault(err)) continue;
        this.pending.delete(p);
        this.deps.logger.error({ err, ...p.context }, `${p.what} failed`);
      }
    }
    this.schedule();
  }
}

/** One per database (per process and region), shared by everything that writes to it. */
const byDatabase = new WeakMap<Kysely<DB>, LaterWrites>();

export function laterWritesOf(deps: LaterWritesDeps & { readonly db: Kysely<DB> }): LaterWrites {
  let writes = byDatabase.get(deps.db);
  if (!writes) {
    writes = new LaterWrites(deps);
    byDatabase.set(deps.db, writes);
  }
  return writes;
}
