import type { Logger } from 'pino';
import type { DatabaseConfig } from '../config.js';
import { channelOf, decodeChange, type LiveChange } from './live.model.js';
import { LOCAL_CHANGE, localChanges } from './live.service.js';

export type LiveListener = (change: LiveChange & { readonly all: boolean }) => void;

/**
 * The changes this node's open inbox pages hear: every node's on PostgreSQL, this process's on
 * SQLite. Pages subscribe by organization.
 *
 * Across nodes it is PostgreSQL's LISTEN/NOTIFY rather than Redis pub/sub: PostgreSQL is what makes
 * several nodes one deployment (Redis is optional and only shares rate limits), and a NOTIFY sent
 * inside the transaction that makes a change is delivered when, and only when, it commits, so a
 * page never reads before the change is visible and a rolled-back change tells nobody. Each node
 * holds one connection of its own that listens (not one of the pool's). When that connection is
 * lost, it is opened again (backing off up to 5 s) and every page is told to read again, since
 * notifications sent meanwhile are gone.
 */
export class LiveHub {
  private readonly listeners = new Map<string, Set<LiveListener>>();
  private client: import('pg').Client | undefined;
  private closed = false;
  private retryMs = 250;
  private timer: NodeJS.Timeout | undefined;
  private readonly onLocal = (change: LiveChange & { all: boolean }) => this.dispatch(change);
  private connected: Promise<void> = Promise.resolve();

  constructor(
    private readonly database: DatabaseConfig,
    private readonly logger: Logger,
  ) {
    if (database.kind === 'sqlite') localChanges.on(LOCAL_CHANGE, this.onLocal);
    else this.connected = this.listen(false);
  }

  /** Resolves once the first connection listens (or failed: it is then retried). */
  ready(): Promise<void> {
    return this.connected;
  }

  /** Pages open on this node. */
  get subscribers(): number {
    let n = 0;
    for (const set of this.listeners.values()) n += set.size;
    return n;
  }

  /** Calls `listener` with every change of the organization until the returned function is called. */
  subscribe(orgId: string, listener: LiveListener): () => void {
    let set = this.listeners.get(orgId);
    if (!set) {
      set = new Set();
      this.listeners.set(orgId, set);
    }
    set.add(listener);
    return () => {
      const of = this.listeners.get(orgId);
      of?.delete(listener);
      if (of?.size === 0) this.listeners.delete(orgId);
    };
  }

  private dispatch(change: LiveChange & { all: boolean }): void {
    const targets =
      change.kind === 'resync' && change.orgId === '*'
        ? [...this.listeners.values()].flatMap((s) => [...s])
        : [...(this.listeners.get(change.orgId) ?? [])];
    for (const listener of targets) {
      try {
        listener(change);
      } catch (err) {
        this.logger.warn({ err }, 'an inbox stream failed to take a change');
      }
    }
  }

  private async listen(again: boolean): Promise<void> {
    if (this.database.kind !== 'postgres' || this.closed) return;
    const { default: pg } = await import('pg');
    const client = new pg.Client({
      connectionString: this.database.url,
      connectionTimeoutMillis: this.database.connectTimeoutMs,
    });
    this.client = client;
    const lost = (err?: Error) => {
      if (this.client !== client) return;
      this.client = undefined;
      client.removeAllListeners('notification');
      void client.end().catch(() => undefined);
      if (this.closed) return;
      this.logger.warn({ err: err?.message }, 'the live updates lost their PostgreSQL connection; reconnecting');
      this.retry();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', (message) => {
      const change = message.payload ? decodeChange(message.payload) : undefined;
      if (change) this.dispatch(change);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(channelOf(this.database.schema))}`);
      this.retryMs = 250;
      // Whatever was sent while no connection listened is lost: every page reads again.
      if (again) this.dispatch({ orgId: '*', conversationIds: [], kind: 'resync', all: true });
    } catch (err) {
      lost(err instanceof Error ? err : new Error(String(err)));
    }
  }

  private retry(): void {
    if (this.timer || this.closed) return;
    const wait = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, 5_000);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.listen(true);
    }, wait);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    localChanges.off(LOCAL_CHANGE, this.onLocal);
    if (this.timer) clearTimeout(this.timer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
    this.listeners.clear();
  }
}
