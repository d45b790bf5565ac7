import type SQLite from 'better-sqlite3';
import { type Compilable, type CompiledQuery, type Kysely, PostgresAdapter, type QueryResult } from 'kysely';
import type { DB } from '../db/schema.js';
import { PerTurn } from './per-turn.js';
import { rowMaker } from './statement-cache.js';

const MARK = '\u0000slot:';

/** The placeholder of the i-th value of a precompiled query, typed as whatever its column wants. */
export const slot = <T>(i: number): T => `${MARK}${i}` as unknown as T;

interface SqliteHandle {
  readonly sqlite: SQLite.Database;
  readonly writes: GroupCommit;
  readonly reads: ReadTurn;
}

const sqliteHandles = new WeakMap<Kysely<DB>, SqliteHandle>();

/** The part of pg's Pool used here (a type, so that SQLite servers never load the driver). */
export interface PgPool {
  query(config: {
    name: string;
    text: string;
    values: unknown[];
  }): Promise<{ rows: unknown[]; rowCount: number | null; command: string }>;
}

const pgPools = new WeakMap<Kysely<DB>, PgPool>();
let statementNames = 0;

/**
 * Lets precompiled queries on this PostgreSQL database run as named prepared statements: each
 * connection parses and plans one once, then only binds and executes it.
 */
export function usePgStatements(db: Kysely<DB>, pool: PgPool): void {
  pgPools.set(db, pool);
}

/** Lets precompiled queries on this SQLite database run as cached prepared statements. */
export function useSqliteStatements(db: Kysely<DB>, sqlite: SQLite.Database): void {
  sqliteHandles.set(db, { sqlite, writes: new GroupCommit(db, sqlite), reads: new ReadTurn(sqlite) });
}

/**
 * SQLite: the reads of one turn of the event loop in one read transaction. Each statement run
 * outside a transaction is a transaction of its own, and begins and ends it with three system
 * calls (two `fcntl` locks and a `stat` of the file); a turn's reads share them. The transaction is
 * open only while `run` calls its reads, synchronously: precompiled reads run then at once, in it
 * (`open`), as better-sqlite3 runs them, so nothing else can run inside it. A precompiled write
 * called meanwhile joins the group commit, which runs after it (`GroupCommit`).
 */
class ReadTurn {
  /** Whether the open transaction is this one's: precompiled reads run in it. */
  open = false;
  private readonly begin: SQLite.Statement;
  private readonly commit: SQLite.Statement;
  private readonly rollback: SQLite.Statement;

  constructor(private readonly sqlite: SQLite.Database) {
    this.begin = sqlite.prepare('BEGIN DEFERRED');
    this.commit = sqlite.prepare('COMMIT');
    this.rollback = sqlite.prepare('ROLLBACK');
  }

  /**
   * `reads()`, in one read transaction when none is open; else as it is (then a Kysely transaction
   * holds the connection, and the reads wait for it through Kysely, as any read does).
   */
  run<T>(reads: () => T): T {
    if (this.sqlite.inTransaction) return reads();
    this.begin.run();
    this.open = true;
    try {
      return reads();
    } finally {
      this.open = false;
      try {
        this.commit.run();
      } catch (err) {
        // Never left open: every later statement would run in it.
        if (this.sqlite.inTransaction) this.rollback.run();
        // biome-ignore lint/correctness/noUnsafeFinally: the reads fail with it, and run again alone (PerTurn)
        throw err;
      }
    }
  }
}

interface QueuedWrite {
  readonly statement: SQLite.Statement;
  readonly compiled: CompiledQuery;
  readonly parameters: readonly unknown[];
  readonly resolve: (result: QueryResult<never>) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * Group commit of the precompiled writes on SQLite. A commit in WAL mode costs about 30 µs of page
 * writes whatever it holds, and a send or a status webhook makes two or three; the writes of every
 * request handled in one turn of the event loop are run together in one transaction, just after
 * that turn (setImmediate), and each caller's promise settles only once that transaction has
 * committed. A statement that fails (a constraint) fails alone: SQLite undoes that statement and
 * keeps the transaction, so the others still commit. If the commit itself fails, every write of the
 * batch fails. While a Kysely transaction is open on the connection the writes go through Kysely,
 * which waits for it, as single reads do.
 */
class GroupCommit {
  private queue: QueuedWrite[] = [];
  private scheduled = false;
  private readonly begin: SQLite.Statement;
  private readonly commit: SQLite.Statement;
  private readonly rollback: SQLite.Statement;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly sqlite: SQLite.Database,
  ) {
    this.begin = sqlite.prepare('BEGIN IMMEDIATE');
    this.commit = sqlite.prepare('COMMIT');
    this.rollback = sqlite.prepare('ROLLBACK');
  }

  run(write: Omit<QueuedWrite, 'resolve' | 'reject'>): Promise<QueryResult<never>> {
    return new Promise((resolve, reject) => {
      this.queue.push({ ...write, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    const batch = this.queue;
    this.queue = [];
    this.scheduled = false;
    if (this.sqlite.inTransaction) {
      for (const w of batch) {
        this.db.executeQuery<never>({ ...w.compiled, parameters: w.parameters }).then(w.resolve, w.reject);
      }
      return;
    }
    const outcomes: (QueryResult<never> | { error: unknown })[] = [];
    try {
      this.begin.run();
    } catch (err) {
      for (const w of batch) w.reject(err);
      return;
    }
    for (const w of batch) {
      try {
        const { changes } = w.statement.run(...w.parameters);
        outcomes.push({ rows: [], numAffectedRows: BigInt(changes) });
      } catch (error) {
        outcomes.push({ error });
      }
    }
    try {
      this.commit.run();
    } catch (err) {
      if (this.sqlite.inTransaction) this.rollback.run();
      for (const w of batch) w.reject(err);
      return;
    }
    batch.forEach((w, i) => {
      const outcome = outcomes[i];
      if (outcome && 'error' in outcome) w.reject(outcome.error);
      else if (outcome) w.resolve(outcome);
    });
  }
}

interface Entry<R> {
  readonly compiled: CompiledQuery<R>;
  readonly slots: readonly (number | undefined)[];
  statement?: SQLite.Statement;
  /** SQLite reads: the statement answers arrays, turned into rows by this (see `rowMaker`). */
  toRow?: ((values: unknown[]) => R) | undefined;
  /** Name of the PostgreSQL prepared statement. */
  readonly name: string;
}

/**
 * A query built and compiled once per database, then run with new values. On SQLite, Kysely's
 * builder, compiler and per-query prepare cost several times the query itself, and these run on
 * every send and every status webhook; there the statement is prepared once and run directly,
 * except while a transaction is open on the connection (then through Kysely, which waits for it),
 * so a direct statement can never land inside someone else's transaction.
 */
export function precompiled<R>(build: (db: Kysely<DB>) => Compilable<R>) {
  const cache = new WeakMap<Kysely<DB>, Entry<R>>();
  const entryOf = (db: Kysely<DB>): Entry<R> => {
    let entry = cache.get(db);
    if (!entry) {
      const compiled = build(db).compile();
      const slots = compiled.parameters.map((p) =>
        typeof p === 'string' && p.startsWith(MARK) ? Number(p.slice(MARK.length)) : undefined,
      );
      entry = { compiled, slots, name: `prl_${++statementNames}` };
      cache.set(db, entry);
    }
    return entry;
  };
  const parametersOf = ({ compiled, slots }: Entry<R>, values: readonly unknown[]): unknown[] =>
    compiled.parameters.map((p, i) => {
      const s = slots[i];
      return s === undefined ? p : values[s];
    });
  const run = (db: Kysely<DB>, values: readonly unknown[]): Promise<QueryResult<R>> => {
    const entry = entryOf(db);
    const { compiled } = entry;
    const parameters = parametersOf(entry, values);
    const handle = sqliteHandles.get(db);
    if (handle && (!handle.sqlite.inTransaction || handle.reads.open)) {
      try {
        if (!entry.statement) {
          entry.statement = handle.sqlite.prepare(compiled.sql);
          entry.toRow = entry.statement.reader ? rowMaker<R>(entry.statement) : undefined;
        }
        const { statement, toRow } = entry;
        if (toRow) return Promise.resolve({ rows: (statement.all(...parameters) as unknown[][]).map(toRow) });
        if (statement.reader) return Promise.resolve({ rows: statement.all(...parameters) as R[] });
        return handle.writes.run({ statement, compiled, parameters });
      } catch (err) {
        return Promise.reject(err);
      }
    }
    const pool = pgPools.get(db);
    if (pool) {
      return pool
        .query({ name: entry.name, text: compiled.sql, values: parameters })
        .then((result) =>
          result.command === 'SELECT'
            ? { rows: result.rows as R[] }
            : { rows: result.rows as R[], numAffectedRows: BigInt(result.rowCount ?? 0) },
        );
    }
    return db.executeQuery<R>({ ...compiled, parameters });
  };
  /** The SQL this runs on `db` with these values, and its parameters (to EXPLAIN it, say). */
  run.statement = (db: Kysely<DB>, values: readonly unknown[]): { sql: string; parameters: unknown[] } => {
    const entry = entryOf(db);
    return { sql: entry.compiled.sql, parameters: parametersOf(entry, values) };
  };
  return run;
}

/**
 * The reads of the GETs by ID, taken per turn of the event loop on both databases. On PostgreSQL
 * the reads of one turn run as one statement (`many`, see `batchedOnPostgres`). On SQLite each
 * still runs its own statement (`one`), but all of them just after the turn, one after the other,
 * so that their answers are written together: one at a time, as each read finished, every answer
 * woke the process reading it (a proxy on the same machine, the benchmark's load generator); a
 * burst of answers wakes it once (6 to 41 % of a read's CPU on the benchmark machine,
 * bench/README.md). They run in one read transaction (`ReadTurn`), which spares each its own
 * begin and end. Each read still sees every write committed before its request came in.
 */
export function batchedReads<I, O>(
  one: (db: Kysely<DB>, item: I) => Promise<O>,
  many: (db: Kysely<DB>, items: readonly I[]) => Promise<readonly O[]>,
): (db: Kysely<DB>, item: I) => Promise<O> {
  const onPostgres = batchedOnPostgres(one, many);
  const onSqlite = perTurn(one, (db, items) => {
    const reads = () => Promise.all(items.map((i) => one(db, i)));
    const handle = sqliteHandles.get(db);
    return handle ? handle.reads.run(reads) : reads();
  });
  return (db, item) => (sqliteHandles.has(db) ? onSqlite(db, item) : onPostgres(db, item));
}

/** Whether this database (or transaction) is PostgreSQL's. */
export const isPostgres = (db: Kysely<DB>): boolean => db.getExecutor().adapter instanceof PostgresAdapter;

/** Whether precompiled queries on this database go to a PostgreSQL pool (not a transaction, not SQLite). */
export const onPostgresPool = (db: Kysely<DB>): boolean => pgPools.has(db);

/**
 * A call that runs alone (`one`), except on PostgreSQL outside a transaction: there the calls made
 * in one turn of the event loop run as one statement (`many`, see `PerTurn`), which under load
 * saves a round trip, a statement's work in PostgreSQL and, for a write, a commit per call.
 */
export function batchedOnPostgres<I, O>(
  one: (db: Kysely<DB>, item: I) => Promise<O>,
  many: (db: Kysely<DB>, items: readonly I[]) => Promise<readonly O[]>,
): (db: Kysely<DB>, item: I) => Promise<O> {
  const batched = perTurn(one, many);
  return (db, item) => (onPostgresPool(db) ? batched(db, item) : one(db, item));
}

/** The calls of one turn of the event loop, on each database, run together (see `PerTurn`). */
function perTurn<I, O>(
  one: (db: Kysely<DB>, item: I) => Promise<O>,
  many: (db: Kysely<DB>, items: readonly I[]) => Promise<readonly O[]>,
): (db: Kysely<DB>, item: I) => Promise<O> {
  const turns = new WeakMap<Kysely<DB>, PerTurn<I, O>>();
  return (db, item) => {
    let turn = turns.get(db);
    if (!turn) {
      turn = new PerTurn<I, O>(
        (i) => one(db, i),
        (items) => many(db, items),
      );
      turns.set(db, turn);
    }
    return turn.add(item);
  };
}
