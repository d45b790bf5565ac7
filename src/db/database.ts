import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import {
  CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Driver,
  Kysely,
  type LimitNode,
  Migrator,
  PostgresDialect,
  type PostgresDialectConfig,
  PostgresDriver,
  type QueryCompiler,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
  SqliteQueryCompiler,
  sql,
} from 'kysely';
import type pgTypes from 'pg';
import type { Logger } from 'pino';
import { ConfigError, type DatabaseConfig } from '../config.js';
import { ensurePrivateDir, ensurePrivateFile, SQLITE_COMPANIONS } from '../shared/private-files.js';
import { transactionCommitted, transactionRolledBack } from './after-commit.js';
import { startCheckpointer, WAL_SIZE_LIMIT } from './checkpointer.js';
import { isConnectionLost } from './db-errors.js';
import { droppingLostConnections } from './lost-connections.js';
import { type MigrationDeps, migrationProviderWith } from './migrations/index.js';
import { isPostgres, usePgStatements, useSqliteStatements } from './precompiled.js';
import type { DB } from './schema.js';
import { OwnSchemaIntrospector } from './schema-introspector.js';
import { withStatementCache } from './statement-cache.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Database {
  readonly db: Kysely<DB>;
  readonly dialect: Dialect;
  /** The raw better-sqlite3 handle, when on SQLite (for hot paths that want a prepared statement). */
  readonly sqlite: SQLite.Database | undefined;
  close(): Promise<void>;
}

/**
 * The PostgreSQL driver, loaded on first use: a server on SQLite never needs it (and saves its
 * memory). BIGINT (int8) columns hold ms timestamps, well inside Number's safe range.
 */
let pgModule: Promise<typeof pgTypes> | undefined;
function loadPg(): Promise<typeof pgTypes> {
  pgModule ??= import('pg').then(({ default: pg }) => {
    pg.types.setTypeParser(20, (value) => Number(value));
    return pg;
  });
  return pgModule;
}

/**
 * SQLite through Kysely, with every transaction begun `BEGIN IMMEDIATE`: it takes the write lock
 * at its start, waiting for another connection's (`busy_timeout`) as any write does. Kysely's own
 * `BEGIN` is deferred: a transaction that reads, then writes, asks for the lock only at its first
 * write, and if another process (the CLI, a second server) committed in between, SQLite refuses it
 * at once as "database is locked" (its snapshot is stale), whatever the busy timeout. Every
 * transaction Parley opens writes, so nothing waits for a lock it would not have taken anyway.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }

  // What waits for the commit (`afterCommit`) runs once it is done, or never.
  override async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await super.commitTransaction(connection);
    transactionCommitted(connection);
  }

  /**
   * After a full disk or an I/O error SQLite has already rolled the transaction back itself; the
   * ROLLBACK that follows would fail ("no transaction is active") and hide the real error.
   */
  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    transactionRolledBack(connection);
    try {
      await super.rollbackTransaction(connection);
    } catch (err) {
      if (err instanceof Error && /no transaction is active/.test(err.message)) return;
      throw err;
    }
  }
}

/** PostgreSQL through Kysely, running what waits for a transaction's commit (`afterCommit`) after it. */
class AfterCommitPostgresDriver extends PostgresDriver {
  override async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await super.commitTransaction(connection);
    transactionCommitted(connection);
  }

  /**
   * A transaction whose connection was lost is already rolled back by the server; the ROLLBACK
   * that follows would fail on the dead connection and hide the real error.
   */
  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    transactionRolledBack(connection);
    try {
      await super.rollbackTransaction(connection);
    } catch (err) {
      if (isConnectionLost(err)) return;
      throw err;
    }
  }
}

class AfterCommitPostgresDialect extends PostgresDialect {
  constructor(private readonly settings: PostgresDialectConfig) {
    super(settings);
  }

  override createDriver(): Driver {
    return new AfterCommitPostgresDriver(this.settings);
  }

  // Only the region's own schema: see OwnSchemaIntrospector for the race Kysely's has.
  override createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new OwnSchemaIntrospector(db);
  }
}

/**
 * SQLite's SQL, with each LIMIT bound as `cast(? as integer)` rather than a bare `?`. SQLite reads
 * a bare bound LIMIT while planning, so a statement holding one is prepared again on every run once
 * its parameters are bound (11 µs more per run for the job runner's claim, more for a list's join):
 * the statement cache would save nothing for the lists, the claims and every `.limit(1)`. A cast
 * is an expression the planner leaves alone, so the statement is prepared once; the rows are the
 * same. Raw SQL with a LIMIT writes the cast itself (the job runner's claim).
 */
class SqliteStableLimitCompiler extends SqliteQueryCompiler {
  protected override visitLimit(node: LimitNode): void {
    this.append('limit cast(');
    this.visitNode(node.limit);
    this.append(' as integer)');
  }
}

class ImmediateSqliteDialect extends SqliteDialect {
  constructor(private readonly settings: SqliteDialectConfig) {
    super(settings);
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.settings);
  }

  override createQueryCompiler(): QueryCompiler {
    return new SqliteStableLimitCompiler();
  }
}

export interface OpenOptions {
  poolSize?: number;
  /** Told of connection errors that reach no query (an idle connection dropped by the server). */
  logger?: Pick<Logger, 'warn'>;
  /** SQLite: WAL checkpoints on a worker thread rather than in requests (a server; see checkpointer.ts). */
  backgroundCheckpoints?: boolean;
}

export async function openDatabase(config: DatabaseConfig, options: OpenOptions = {}): Promise<Database> {
  if (config.kind === 'sqlite') {
    ensurePrivateDir(dirname(config.file));
    if (config.file !== ':memory:') ensurePrivateFile(config.file, SQLITE_COMPANIONS);
    const sqlite = new SQLite(config.file, { timeout: config.busyTimeoutMs });
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = NORMAL');
    // Once the log starts again from its start, a file grown past this under a burst is cut back.
    sqlite.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`);
    // A write waits this long for another connection's lock, then fails as busy (a 503).
    sqlite.pragma(`busy_timeout = ${Math.floor(config.busyTimeoutMs)}`);
    sqlite.pragma('foreign_keys = ON');
    const db = new Kysely<DB>({ dialect: new ImmediateSqliteDialect({ database: withStatementCache(sqlite) }) });
    useSqliteStatements(db, sqlite);
    const checkpointer = options.backgroundCheckpoints
      ? startCheckpointer(sqlite, options.logger ? { logger: options.logger } : {})
      : undefined;
    return {
      db,
      dialect: 'sqlite',
      sqlite,
      close: async () => {
        await checkpointer?.stop();
        await db.destroy();
      },
    };
  }

  const pg = await loadPg();
  // Make sure the region's schema exists before the pool pins search_path to it.
  const bootstrap = new pg.Client({ connectionString: config.url, connectionTimeoutMillis: config.connectTimeoutMs });
  try {
    await bootstrap.connect();
  } catch (err) {
    await bootstrap.end().catch(() => undefined);
    const reason = err instanceof Error ? err.message : String(err);
    throw new ConfigError(
      `cannot connect to PostgreSQL at ${await describePgUrl(config.url)} (DATABASE_URL): ${reason}`,
    );
  }
  try {
    // Under the start-up lock: nodes starting at once on a fresh database would otherwise race on
    // the schema's catalog row (a unique violation on pg_namespace).
    await bootstrap.query('select pg_advisory_lock(hashtext($1))', [startupLockKey(config.schema)]);
    await bootstrap.query(`CREATE SCHEMA IF NOT EXISTS "${config.schema}"`);
  } finally {
    await bootstrap.end();
  }
  const statementTimeout = Math.floor(config.statementTimeoutMs);
  const { parseIntoClientConfig } = await import('pg-connection-string');
  const fromUrl = parseIntoClientConfig(config.url);
  const pool = new pg.Pool({
    // The URL parsed here rather than given as `connectionString`, whose `options` would replace
    // the pool's own (and with them the region's search_path).
    ...fromUrl,
    max: options.poolSize ?? config.poolSize,
    // Bounded waits: for a connection, for a statement (on the server), and for an answer (on the
    // client, a little longer, in case the server itself hangs); then the request gets a 503.
    connectionTimeoutMillis: config.connectTimeoutMs,
    query_timeout: statementTimeout + 5_000,
    options: connectionOptions(
      fromUrl.options ?? process.env.PGOPTIONS,
      `-c search_path=${config.schema} -c statement_timeout=${statementTimeout} -c idle_in_transaction_session_timeout=${Math.max(60_000, statementTimeout * 2)}`,
    ),
  });
  // An idle connection the server drops (a restart, a failover, pg_terminate_backend, a pooler's
  // idle timeout) emits here; unheard, it would reach the process and stop it. The pool replaces
  // the connection on the next checkout.
  // A connection lost while checked out between two statements (inside a transaction, say)
  // emits on the client itself; unheard, that too would stop the process. The statement in
  // flight, if any, fails on its own (a 503); the pool discards the client when it is released.
  pool.on('connect', (client) => {
    client.on('error', (err) => {
      options.logger?.warn(
        { err: { message: err.message, code: (err as { code?: string }).code } },
        'PostgreSQL connection lost while in use',
      );
    });
  });
  pool.on('error', (err) => {
    options.logger?.warn(
      { err: { message: err.message, code: (err as { code?: string }).code } },
      'PostgreSQL dropped an idle connection; it will be replaced',
    );
  });
  const db = new Kysely<DB>({ dialect: new AfterCommitPostgresDialect({ pool: droppingLostConnections(pool) }) });
  usePgStatements(db, pool);
  return { db, dialect: 'postgres', sqlite: undefined, close: () => db.destroy() };
}

/**
 * What a PostgreSQL server's settings mean for Parley, as sentences for the log; none when all is
 * well. Each statement is prepared once per connection and PostgreSQL plans it from the tables'
 * statistics, which autovacuum (on by default) keeps. Without them PostgreSQL plans every table
 * as if it were nearly empty and keeps those plans: a send may then read every open conversation
 * of its agent, or every end user of its organization, to find one.
 */
export function postgresSettingWarnings(settings: { autovacuum: string; trackCounts: string }): string[] {
  if (settings.autovacuum === 'on' && settings.trackCounts === 'on') return [];
  const off = [settings.autovacuum !== 'on' ? 'autovacuum' : '', settings.trackCounts !== 'on' ? 'track_counts' : '']
    .filter(Boolean)
    .join(' and ');
  return [
    `PostgreSQL runs with ${off} off, so nothing keeps the statistics of Parley's tables: ` +
      'PostgreSQL then plans statements as if the tables were nearly empty, and reads grow with the tables. ' +
      "Turn autovacuum on (PostgreSQL's default) or run `vacuumdb --analyze-only` regularly.",
  ];
}

/** `postgresSettingWarnings` of this database's server; none on SQLite. */
export async function databaseWarnings(database: Database): Promise<string[]> {
  if (database.dialect !== 'postgres') return [];
  const { rows } = await sql<{ name: string; setting: string }>`
    select name, setting from pg_settings where name in ('autovacuum', 'track_counts')`.execute(database.db);
  const setting = (name: string) => rows.find((r) => r.name === name)?.setting ?? 'on';
  return postgresSettingWarnings({ autovacuum: setting('autovacuum'), trackCounts: setting('track_counts') });
}

/**
 * The server settings a pool connection starts with: the user's own (the URL's `options`, else
 * `PGOPTIONS`, as libpq reads them), then Parley's, which PostgreSQL applies last, so they win
 * where both set the same one (the region's `search_path`, the statement timeout).
 */
export function connectionOptions(user: string | null | undefined, parley: string): string {
  const own = user?.trim();
  return own ? `${own} ${parley}` : parley;
}

/**
 * Where a connection URL points, never its password: `host:port/database`, or the Unix socket
 * (`postgresql://user@%2Fvar%2Frun%2Fpostgresql/db`, or `?host=/var/run/postgresql`) and the database.
 */
export async function describePgUrl(url: string): Promise<string> {
  const { parse } = await import('pg-connection-string');
  try {
    const { host, port, database } = parse(url);
    const db = database ? `/${database}` : '';
    if (host?.startsWith('/'))
      return `socket ${host.replace(/\/$/, '')}/.s.PGSQL.${port || '5432'}, database ${database ?? '(default)'}`;
    return `${host || 'localhost'}:${port || '5432'}${db}`;
  } catch {
    return '(unparsable URL)';
  }
}

/**
 * The PostgreSQL schema the connection works in, or undefined on SQLite. Kysely's Migrator looks
 * for its bookkeeping tables in every schema of the database unless told which one, so a second
 * region (or a second test schema) in the same database would find the first one's tables and
 * then fail to use them through its own search_path.
 */
async function currentPostgresSchema(db: Kysely<DB>): Promise<string | undefined> {
  if (!isPostgres(db)) return undefined;
  const { rows } = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db);
  return rows[0]?.schema ?? undefined;
}

/** The advisory lock that serializes start-up DDL (schema, migrations, job store) of one schema. */
export const startupLockKey = (schema: string) => `parley.startup.${schema}`;

/**
 * Runs `fn` holding the start-up lock of the database's schema (PostgreSQL; on SQLite, whose
 * writers are serialized anyway, it just runs). The lock is held on a connection of its own, so
 * `fn` may use the pool (which needs room for at least one more connection).
 */
export async function withStartupLock<T>(db: Kysely<DB>, fn: () => Promise<T>): Promise<T> {
  const schema = await currentPostgresSchema(db);
  if (schema === undefined) return fn();
  const key = startupLockKey(schema);
  return db.connection().execute(async (conn) => {
    await sql`select pg_advisory_lock(hashtext(${key}))`.execute(conn);
    try {
      return await fn();
    } finally {
      await sql`select pg_advisory_unlock(hashtext(${key}))`.execute(conn);
    }
  });
}

/** Brings the schema up to date; nodes starting at once take turns (the first migrates). */
export async function migrateToLatest(db: Kysely<DB>, deps: MigrationDeps = {}): Promise<string[]> {
  return withStartupLock(db, () => migrateUnlocked(db, deps));
}

async function migrateUnlocked(db: Kysely<DB>, deps: MigrationDeps): Promise<string[]> {
  const schema = await currentPostgresSchema(db);
  const migrator = new Migrator({
    db,
    provider: migrationProviderWith(deps),
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`migration ${failed?.migrationName ?? '(unknown)'} failed: ${reason}`);
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** Drops a PostgreSQL schema (tests use one schema per run). */
export async function dropPostgresSchema(url: string, schema: string): Promise<void> {
  const pg = await loadPg();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

export { sql };
