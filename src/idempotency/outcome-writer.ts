import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { isPassingFault, retrying } from '../db/retry.js';
import type { DB } from '../db/schema.js';
import type { Clock } from '../shared/clock.js';
import { completeClaim, releaseClaim } from './idempotency.repository.js';
import type { Claim } from './idempotency.service.js';

/**
 * The outcome of a keyed request must reach its key: the answer kept, or the claim released. Until
 * it does the key answers 409 "in progress", and only once the claim counts as abandoned (minutes:
 * `IDEMPOTENCY_STALE_IN_FLIGHT_MS`, longer for a send) may it be used again. That wait is what keeps
 * a send from going out twice when its process died mid-request, since nobody can know then
 * whether it reached the provider. A live process knows, so a write that fails on a passing fault
 * (a connection lost under it, a restart, a full disk) is not left to that wait:
 *
 * - it runs again at once on fresh connections (QUICK_WAITS_MS, about 1.5 s) while the answer
 *   waits, so a caller that retries on hearing the answer finds the key done (or free);
 * - if the fault outlasts that, the answer goes out and the write is tried again in the background
 *   every LATER_EVERY_MS until it succeeds or the claim counts as abandoned anyway.
 *
 * Each write is a compare-and-set on this claim (its creation time, still in flight): repeating one
 * that did commit, or writing after another request took the key over, changes nothing.
 */
export const QUICK_WAITS_MS: readonly number[] = [50, 100, 200, 400, 800];
export const LATER_EVERY_MS = 2_000;

/** What a request answered, to keep under its key; none: the claim is released. */
export interface Outcome {
  readonly status: number;
  readonly body: string;
}

interface Pending {
  readonly claim: Claim;
  readonly outcome: Outcome | undefined;
  /** When the claim counts as abandoned: past it, the write is no longer needed. */
  readonly until: number;
}

/** Where a request's part of the story is logged (its request logger). */
export interface RequestLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface OutcomeWriterDeps {
  readonly db: Kysely<DB>;
  readonly clock: Clock;
  readonly logger: Logger;
}

export class OutcomeWriter {
  private readonly pending = new Set<Pending>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly deps: OutcomeWriterDeps,
    private readonly quickWaitsMs: readonly number[] = QUICK_WAITS_MS,
    private readonly laterEveryMs: number = LATER_EVERY_MS,
  ) {}

  /** Writes the outcome of `claim`; never throws (what cannot be written now is tried later). */
  async write(claim: Claim, outcome: Outcome | undefined, until: number, log: RequestLog): Promise<void> {
    try {
      await retrying(() => this.once(claim, outcome), {
        waitsMs: this.quickWaitsMs,
        onRetry: (err, attempt) =>
          log.warn({ err, attempt }, 'recording the outcome of an idempotent request failed; retrying'),
      });
    } catch (err) {
      if (!isPassingFault(err)) {
        log.error({ err }, 'could not record the outcome of an idempotent request; its key stays in flight');
        return;
      }
      log.warn(
        { err, retryEveryMs: this.laterEveryMs, until: new Date(until).toISOString() },
        'the outcome of an idempotent request could not be recorded yet; trying again in the background',
      );
      this.pending.add({ claim, outcome, until });
      this.schedule();
    }
  }

  /** Outcomes not written yet (for tests and metrics). */
  get waiting(): number {
    return this.pending.size;
  }

  private once(claim: Claim, outcome: Outcome | undefined): Promise<void> {
    return outcome ? completeClaim(this.deps.db, claim, outcome) : releaseClaim(this.deps.db, claim);
  }

  private schedule(): void {
    if (this.timer || this.pending.size === 0) return;
    this.timer = setTimeout(() => void this.retryPending(), this.laterEveryMs);
    // Nothing to keep a stopping process for: its keys wait for the stale window as a dead one's.
    this.timer.unref();
  }

  private async retryPending(): Promise<void> {
    this.timer = undefined;
    for (const p of [...this.pending]) {
      if (this.deps.clock.now() >= p.until) {
        this.pending.delete(p);
        this.deps.logger.error(
          { key: p.claim.key, orgId: p.claim.orgId },
          'gave up recording the outcome of an idempotent request: its claim now counts as abandoned',
        );
        continue;
      }
      try {
        await this.once(p.claim, p.outcome);
        this.pending.delete(p);
        this.deps.logger.info(
          { key: p.claim.key, orgId: p.claim.orgId },
          'recorded the outcome of an idempotent request',
        );
      } catch (err) {
        if (isPassingFault(err)) continue;
        this.pending.delete(p);
        this.deps.logger.error(
          { err },
          'could not record the outcome of an idempotent request; its key stays in flight',
        );
      }
    }
    this.schedule();
  }
}

/** One writer per database (per process and region), shared by every idempotent route. */
const writers = new WeakMap<Kysely<DB>, OutcomeWriter>();

export function outcomeWriterOf(deps: OutcomeWriterDeps): OutcomeWriter {
  let writer = writers.get(deps.db);
  if (!writer) {
    writer = new OutcomeWriter(deps);
    writers.set(deps.db, writer);
  }
  return writer;
}
