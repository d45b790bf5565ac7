import type SQLite from 'better-sqlite3';
import type { SqliteDatabase } from 'kysely';

/** How many of Kysely's statements a SQLite connection keeps prepared (the least recently used go). */
export const STATEMENT_CACHE_SIZE = 256;

/**
 * The better-sqlite3 connection as Kysely sees it, with each statement prepared once. Kysely's
 * SQLite driver prepares every query it runs anew, and preparing costs several times running: 5 µs
 * against 4 for a read by primary key, 37 against 7 for the statement that finds a batch of status
 * webhooks' messages (bench/README.md). The statements are kept by their SQL, which holds no values
 * (they are bound), so a few hundred cover every query Parley builds; the least recently used are
 * dropped beyond `size`. A statement still being iterated (a streamed select) is busy and cannot
 * run again until it finishes, so a second use meanwhile gets a statement of its own. A statement
 * prepared before a schema change is prepared again by SQLite itself when next run.
 */
export function withStatementCache(sqlite: SQLite.Database, size = STATEMENT_CACHE_SIZE): SqliteDatabase {
  const statements = new Map<string, SQLite.Statement>();
  return {
    close: () => sqlite.close(),
    prepare(sql) {
      const cached = statements.get(sql);
      if (cached) {
        if (cached.busy) return sqlite.prepare(sql);
        // The Map keeps insertion order: moved to the end, it is the most recently used.
        statements.delete(sql);
        statements.set(sql, cached);
        return cached;
      }
      const statement = sqlite.prepare(sql);
      statements.set(sql, statement);
      if (statements.size > size) {
        const oldest = statements.keys().next().value;
        if (oldest !== undefined) statements.delete(oldest);
      }
      return statement;
    },
  };
}
