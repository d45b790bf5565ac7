import type SQLite from 'better-sqlite3';
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.js';
import type { DB } from '../db/schema.js';
import { epochQuery } from './auth.fast.js';

/** How many keys a server keeps in memory; past that the cache starts over (keys are few). */
const MAX_KEYS = 10_000;

/** Marks the names of values kept `beside` the keys (key hashes are hex, so never start with it). */
const BESIDE = '\u0000';
/** How old (ms) the PostgreSQL epoch last read may be for a value kept `beside` the keys. */
const BESIDE_EPOCH_MS = 1000;

/** What the cache holds: whatever the caller derived from the key's row (never the key itself). */
export interface Entry<T> {
  readonly value: T;
  /** The key epoch observed before the row was read. */
  readonly epoch: number;
}

/**
 * Keys in memory, with revocation still immediate on every node and every process.
 *
 * Every change that can alter what a key may do (a revocation, a plan change, a deletion) bumps the
 * key epoch, a one-row table, in the same transaction (triggers, migration 0013-key-epoch). An
 * entry is used only while the epoch is the one observed before its row was read; any other epoch
 * empties the cache. How the current epoch is known on each request:
 *
 * - **SQLite.** `PRAGMA data_version` on the server's connection (about 3 µs, against 5–7 for the
 *   key read) changes whenever another connection (the CLI, a second process) has committed
 *   anything; only then is the epoch row read again, so unrelated commits cost one small read and
 *   do not empty the cache. Commits on the server's own connection do not move data_version; a
 *   temporary trigger (this connection only) on the epoch row tells the cache when one of them
 *   bumped it. While a transaction is open on the connection the cache is not trusted at all: the
 *   key is read through the database, as without a cache.
 * - **PostgreSQL.** The epoch row is read on every request (one round trip, a named prepared
 *   statement of one primary-key row) before the cache is consulted; the key and its organization
 *   are read only on a miss or after a change. Another node's or the CLI's revocation is therefore
 *   seen on the very next request, with no message between nodes to lose. A read route can save
 *   that round trip by reading the epoch in its own statement (`peek`, then `confirm` before it
 *   answers; a changed epoch means authenticating again from the database first): a change
 *   committed before the request began is in that statement's snapshot.
 * - **Both.** The by-ID reads peek and confirm on SQLite too: one statement (one read transaction,
 *   one snapshot) then answers for the key and the record, where `PRAGMA data_version` would be a
 *   read transaction of its own. Not while a transaction is open on the connection.
 */
export class KeyCache<T> {
  private entries = new Map<string, Entry<T>>();
  /** The newest epoch observed. */
  private epoch = -1;
  /** When the epoch was last read from PostgreSQL (performance.now()). */
  private pgEpochReadAt = Number.NEGATIVE_INFINITY;
  private readonly sqlite: SqliteEpoch | undefined;

  constructor(
    private readonly db: Kysely<DB>,
    sqlite: SQLite.Database | undefined,
  ) {
    this.sqlite = sqlite ? new SqliteEpoch(sqlite) : undefined;
  }

  /**
   * The cached value for a key hash, else `read()` (the database), cached when it found a row.
   * `read` must read the database after this call starts.
   */
  async get(hash: string, read: () => Promise<T | undefined>): Promise<T | undefined> {
    return this.under(await this.readEpoch(), hash, read);
  }

  /**
   * A value derived from rows whose changes also bump the key epoch (an agent's sending number,
   * migration 0014-sender-epoch), kept beside the keys and dropped with them. On SQLite the epoch
   * is checked as for a key; on PostgreSQL the epoch the last request's key check read is used
   * when it is under a second old (under load, a moment ago), else the epoch is read first. So a
   * send on the API uses what was current when its key was checked, and a background send (a
   * campaign's) what was current a second ago at most.
   */
  async beside<V>(name: string, read: () => Promise<V | undefined>): Promise<V | undefined> {
    const recent = this.epoch >= 0 && performance.now() - this.pgEpochReadAt < BESIDE_EPOCH_MS;
    const epoch = this.sqlite ? this.sqlite.current() : recent ? this.epoch : await this.pgEpoch();
    return this.under(epoch, `${BESIDE}${name}`, read as () => Promise<unknown>) as Promise<V | undefined>;
  }

  /** The entry under `key` if it was read under `epoch` (the current one), else `read()`, kept when found. */
  private async under<V>(epoch: number | undefined, key: string, read: () => Promise<V | undefined>) {
    if (epoch === undefined) return read();
    if (epoch !== this.epoch) {
      if (epoch < this.epoch) return read(); // an answer older than one already seen: not trusted
      this.entries.clear();
      this.epoch = epoch;
    }
    const hit = this.entries.get(key);
    if (hit && hit.epoch === epoch) return hit.value as unknown as V;
    const value = await read();
    // Kept only if no newer epoch was seen meanwhile (a change may have landed after the read).
    if (value !== undefined && this.epoch === epoch) {
      if (this.entries.size >= MAX_KEYS) this.entries.clear();
      this.entries.set(key, { value: value as unknown as T, epoch });
    }
    return value;
  }

  /**
   * For a route that reads the epoch in its own query: the value cached under the newest epoch
   * seen, without a statement or round trip of its own. The caller must then read the epoch in the
   * same statement as its data and pass it to `confirm` before answering.
   */
  peek(hash: string): Entry<T> | undefined {
    if (this.sqlite?.inTransaction) return undefined;
    const hit = this.entries.get(hash);
    return hit && hit.epoch === this.epoch ? hit : undefined;
  }

  /** An epoch read by a route's own query: true when it is still the one the entry was used under. */
  confirm(used: number, seen: number): boolean {
    if (seen > this.epoch) {
      this.entries.clear();
      this.epoch = seen;
    }
    // Read from the database just now: what `beside` may use for the next second.
    if (seen === this.epoch) this.pgEpochReadAt = performance.now();
    return seen === used;
  }

  /** The epoch the entries now held were read under (undefined before the first). */
  get current(): number | undefined {
    return this.epoch >= 0 ? this.epoch : undefined;
  }

  /** The current key epoch, read from the database (undefined: none to trust, as in a transaction). */
  readEpoch(): Promise<number | undefined> {
    return this.sqlite ? Promise.resolve(this.sqlite.current()) : this.pgEpoch();
  }

  private async pgEpoch(): Promise<number | undefined> {
    this.pgEpochReadAt = performance.now();
    const row = (await epochQuery(this.db, [])).rows[0];
    return row ? Number(row.epoch) : undefined;
  }
}

/** The key epoch as seen from one SQLite connection, read again only when something may have moved it. */
class SqliteEpoch {
  get inTransaction(): boolean {
    return this.sqlite.inTransaction;
  }

  private statements: { dataVersion: SQLite.Statement; epochRow: SQLite.Statement } | undefined;
  private lastDataVersion = -1;
  private epoch: number | undefined;
  /** Set by the temporary trigger when this connection bumps the epoch (even in a transaction). */
  private bumpedHere = true;

  constructor(private readonly sqlite: SQLite.Database) {}

  /** Prepared on first use: the epoch table exists once migrations have run. */
  private prepare(): { dataVersion: SQLite.Statement; epochRow: SQLite.Statement } | undefined {
    if (this.statements) return this.statements;
    try {
      const epochRow = this.sqlite.prepare('SELECT epoch FROM key_epoch WHERE id = 1').pluck();
      this.sqlite.function('parley_key_epoch_bumped', { deterministic: false }, () => {
        this.bumpedHere = true;
        return null;
      });
      // TEMP: on this connection only, so the CLI and other processes never call a function they lack.
      this.sqlite.exec(
        'CREATE TEMP TRIGGER IF NOT EXISTS parley_key_epoch_bumped AFTER UPDATE ON main.key_epoch ' +
          'BEGIN SELECT parley_key_epoch_bumped(); END',
      );
      this.statements = { dataVersion: this.sqlite.prepare('PRAGMA data_version').pluck(), epochRow };
    } catch {
      return undefined; // no epoch table (not migrated): no cache
    }
    return this.statements;
  }

  /** The current epoch, or undefined when the cache must not be trusted (a transaction is open). */
  current(): number | undefined {
    if (this.sqlite.inTransaction) return undefined;
    const statements = this.prepare();
    if (!statements) return undefined;
    const { dataVersion, epochRow } = statements;
    const version = dataVersion.get() as number;
    if (version !== this.lastDataVersion || this.bumpedHere) {
      this.lastDataVersion = version;
      this.bumpedHere = false;
      const epoch = epochRow.get() as number | bigint | undefined;
      this.epoch = epoch === undefined ? undefined : Number(epoch);
    }
    return this.epoch;
  }
}

const caches = new WeakMap<Database, KeyCache<unknown>>();

/** The key cache of a database handle (one per connection or pool, shared by the apps on it). */
export function keyCacheOf<T>(database: Database): KeyCache<T> {
  let cache = caches.get(database);
  if (!cache) {
    cache = new KeyCache<unknown>(database.db, database.sqlite);
    caches.set(database, cache);
  }
  return cache as KeyCache<T>;
}
