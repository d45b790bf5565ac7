import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

/**
 * Records when keys were last used without a database write per request: the first use of a key
 * is written at once (so a key is never shown "Never" after a successful call), later uses are
 * kept in memory and flushed on an interval and at shutdown.
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
      return this.db
        .updateTable('api_keys')
        .set({ last_used_at: now })
        .where('id', '=', keyId)
        .where('last_used_at', 'is', null)
        .execute()
        .then(() => undefined);
    }
    this.pending.set(keyId, now);
    return undefined;
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = [...this.pending];
    this.pending.clear();
    await this.db.transaction().execute(async (trx) => {
      for (const [id, at] of batch) {
        await trx
          .updateTable('api_keys')
          .set({ last_used_at: at })
          .where('id', '=', id)
          .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
          .execute();
      }
    });
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}
