import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { recordFirstUse, recordLastUses } from './auth.repository.js';

/**
 * Records when keys were last used without a database write per request: the first use of a key
 * is written at once (so a key is never shown "Never" after a successful call), later uses are
 * kept in memory and flushed on an interval (PARLEY_LAST_USED_FLUSH_MS) and at shutdown.
 *
 * The flush is a ticker of each process, not a scheduled job of the job runner: what it writes is
 * in this process's memory, so every node must flush its own, and a job run by one node for the
 * region could not reach the others' buffers. It is the one background timer outside the job runner.
 */
export class LastUsedTracker {
  private readonly pending = new Map<string, number>();
  private readonly written = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly flushMs: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.flush().catch(this.onError);
    }, this.flushMs);
    this.timer.unref();
  }

  /**
   * Call after a successful authentication. Only a key's first use waits (for its write); any later
   * use is recorded in memory and returns undefined, so a caller awaiting it loses no promise.
   */
  touch(keyId: string, storedLastUsedAt: number | null, now: number): Promise<void> | undefined {
    if (storedLastUsedAt === null && !this.written.has(keyId)) {
      this.written.add(keyId);
      return recordFirstUse(this.db, keyId, now);
    }
    this.pending.set(keyId, now);
    return undefined;
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = [...this.pending];
    this.pending.clear();
    await recordLastUses(this.db, batch);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}
