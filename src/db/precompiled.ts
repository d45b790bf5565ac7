import type SQLite from 'better-sqlite3';
import type { Compilable, CompiledQuery, Kysely, QueryResult } from 'kysely';
import type { DB } from '../db/schema.js';

const MARK = '\u0000slot:';

/** The placeholder of the i-th value of a precompiled query, typed as whatever its column wants. */
export const slot = <T>(i: number): T => `${MARK}${i}` as unknown as T;

const sqliteHandles = new WeakMap<Kysely<DB>, SQLite.Database>();

/** Lets precompiled queries on this SQLite database run as cached prepared statements. */
export function useSqliteStatements(db: Kysely<DB>, sqlite: SQLite.Database): void {
  sqliteHandles.set(db, sqlite);
}

interface Entry<R> {
  readonly compiled: CompiledQuery<R>;
  readonly slots: readonly (number | undefined)[];
  statement?: SQLite.Statement;
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
  return (db: Kysely<DB>, values: readonly unknown[]): Promise<QueryResult<R>> => {
    let entry = cache.get(db);
    if (!entry) {
      const compiled = build(db).compile();
      const slots = compiled.parameters.map((p) =>
        typeof p === 'string' && p.startsWith(MARK) ? Number(p.slice(MARK.length)) : undefined,
      );
      entry = { compiled, slots };
      cache.set(db, entry);
    }
    const { compiled, slots } = entry;
    const parameters = compiled.parameters.map((p, i) => {
      const s = slots[i];
      return s === undefined ? p : values[s];
    });
    const sqlite = sqliteHandles.get(db);
    if (sqlite && !sqlite.inTransaction) {
      try {
        entry.statement ??= sqlite.prepare(compiled.sql);
        const statement = entry.statement;
        if (statement.reader) return Promise.resolve({ rows: statement.all(...parameters) as R[] });
        const { changes } = statement.run(...parameters);
        return Promise.resolve({ rows: [], numAffectedRows: BigInt(changes) });
      } catch (err) {
        return Promise.reject(err);
      }
    }
    return db.executeQuery<R>({ ...compiled, parameters });
  };
}
