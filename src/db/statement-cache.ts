import type SQLite from 'better-sqlite3';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

/** How many of Kysely's statements a SQLite connection keeps prepared (the least recently used go). */
export const STATEMENT_CACHE_SIZE = 256;

interface Cached {
  readonly statement: SQLite.Statement;
  /** The statement as Kysely runs it: its rows made by `rowMaker` where it can. */
  readonly forKysely: SqliteStatement;
}

/**
 * The better-sqlite3 connection as Kysely sees it, with each statement prepared once. Kysely's
 * SQLite driver prepares every query it runs anew, and preparing costs several times running: 5 µs
 * against 4 for a read by primary key, 37 against 7 for the statement that finds a batch of status
 * webhooks' messages (bench/README.md). The statements are kept by their SQL, which holds no values
 * (they are bound), so a few hundred cover every query Parley builds; the least recently used are
 * dropped beyond `size`. A statement still being iterated (a streamed select) is busy and cannot
 * run again until it finishes, so a second use meanwhile gets a statement of its own. A statement
 * prepared before a schema change is prepared again by SQLite itself when next run. A read's rows
 * are made by `rowMaker`, as the precompiled queries' are.
 */
export function withStatementCache(sqlite: SQLite.Database, size = STATEMENT_CACHE_SIZE): SqliteDatabase {
  const statements = new Map<string, Cached>();
  return {
    close: () => sqlite.close(),
    prepare(sql) {
      const cached = statements.get(sql);
      if (cached) {
        if (cached.statement.busy) return sqlite.prepare(sql);
        // The Map keeps insertion order: moved to the end, it is the most recently used.
        statements.delete(sql);
        statements.set(sql, cached);
        return cached.forKysely;
      }
      const statement = sqlite.prepare(sql);
      const entry: Cached = { statement, forKysely: withRowMaker(statement) };
      statements.set(sql, entry);
      if (statements.size > size) {
        const oldest = statements.keys().next().value;
        if (oldest !== undefined) statements.delete(oldest);
      }
      return entry.forKysely;
    },
  };
}

/** A read whose rows `rowMaker` can make, answering them so; any other statement as it is. */
function withRowMaker(statement: SQLite.Statement): SqliteStatement {
  const toRow = statement.reader ? rowMaker(statement) : undefined;
  if (!toRow) return statement;
  return {
    reader: true,
    all: (parameters) => (statement.all(parameters) as unknown[][]).map(toRow),
    run: (parameters) => statement.run(parameters),
    *iterate(parameters) {
      for (const values of statement.iterate(parameters) as IterableIterator<unknown[]>) yield toRow(values);
    },
  };
}

const PLAIN_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * SQLite reads answer arrays (`raw` mode), made into rows by a function written for the
 * statement's columns: better-sqlite3 would otherwise give every row's object its properties one
 * at a time, by name, about a fifth of a by-ID read and two fifths of a list. The row is the same
 * (a repeated name keeps its last value, as better-sqlite3 does). Only columns with plain names;
 * otherwise undefined. Should the columns change (a table altered under a `select *`), the row is
 * made from the statement's columns as they are now.
 */
export function rowMaker<R>(statement: SQLite.Statement): ((values: unknown[]) => R) | undefined {
  const names = statement.columns().map((c) => c.name);
  if (!names.every((n) => PLAIN_NAME.test(n) && n !== '__proto__')) return undefined;
  statement.raw(true);
  const make = new Function('v', `return { ${names.map((n, i) => `${n}: v[${i}]`).join(', ')} };`) as (
    values: unknown[],
  ) => R;
  const width = names.length;
  return (values) =>
    values.length === width
      ? make(values)
      : (Object.fromEntries(statement.columns().map((c, i) => [c.name, values[i]])) as R);
}
