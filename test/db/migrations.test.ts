import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Migrator, NO_MIGRATIONS } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { DatabaseConfig } from '../../src/config.js';
import { type Database, dropPostgresSchema, migrateToLatest, openDatabase } from '../../src/db/database.js';
import { migrationProvider, migrations } from '../../src/db/migrations/index.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { DIALECTS, PG_URL, type TestDialect } from '../helpers/app.js';

const PLATFORM_TABLES = ['organizations', 'agents', 'campaigns', 'api_keys'];

/** Tables of this database only (PostgreSQL introspection lists every schema of the database). */
async function tablesOf(database: Database, config: DatabaseConfig) {
  const all = await database.db.introspection.getTables();
  return config.kind === 'postgres' ? all.filter((t) => t.schema === config.schema) : all;
}

function freshConfig(dialect: TestDialect): { config: DatabaseConfig; cleanup: () => Promise<void> } {
  const url = PG_URL;
  if (dialect === 'postgres' && url) {
    const schema = `t_${randomBase62(12).toLowerCase()}`;
    return {
      config: { kind: 'postgres', url, schema, poolSize: 2, connectTimeoutMs: 5_000, statementTimeoutMs: 15_000 },
      cleanup: () => dropPostgresSchema(url, schema),
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'parley-migrate-'));
  return {
    config: { kind: 'sqlite', file: join(dir, 'nested', 'parley-us.db'), busyTimeoutMs: 5_000 },
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

describe.each(DIALECTS)('migrations from empty (%s)', (dialect) => {
  let database: Database | undefined;
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await database?.close();
    await cleanup?.();
    database = undefined;
  });

  it('a fresh database gets every table; a second run is a no-op', async () => {
    const fresh = freshConfig(dialect);
    cleanup = fresh.cleanup;
    database = await openDatabase(fresh.config);
    const before = (await tablesOf(database, fresh.config)).map((t) => t.name);
    expect(before).toEqual([]);

    const applied = await migrateToLatest(database.db);
    expect(applied).toEqual(Object.keys(migrations));

    const tables = (await tablesOf(database, fresh.config)).map((t) => t.name);
    for (const name of PLATFORM_TABLES) expect(tables).toContain(name);
    const apiKeys = (await tablesOf(database, fresh.config)).find((t) => t.name === 'api_keys');
    expect(apiKeys?.columns.map((c) => c.name).sort()).toEqual(
      [
        'agent_id',
        'campaign_id',
        'created_at',
        'hash',
        'id',
        'label',
        'last_used_at',
        'org_id',
        'permissions',
        'prefix',
        'revoked_at',
        'scope',
      ].sort(),
    );

    expect(await migrateToLatest(database.db)).toEqual([]);
    expect(applied.length).toBeGreaterThan(0);
  });

  it('two schemas of one PostgreSQL database migrate independently (regions side by side)', async (c) => {
    if (dialect !== 'postgres') c.skip();
    const a = freshConfig(dialect);
    const b = freshConfig(dialect);
    cleanup = async () => {
      await a.cleanup();
      await b.cleanup();
    };
    const first = await openDatabase(a.config);
    try {
      expect(await migrateToLatest(first.db)).toEqual(Object.keys(migrations));
    } finally {
      await first.close();
    }
    database = await openDatabase(b.config);
    expect(await migrateToLatest(database.db)).toEqual(Object.keys(migrations));
    expect((await tablesOf(database, b.config)).map((t) => t.name)).toContain('api_keys');
    expect(await migrateToLatest(database.db)).toEqual([]);
  });

  it('every migration goes down cleanly, back to an empty database', async () => {
    const fresh = freshConfig(dialect);
    cleanup = fresh.cleanup;
    database = await openDatabase(fresh.config);
    await migrateToLatest(database.db);
    const schema = fresh.config.kind === 'postgres' ? fresh.config.schema : undefined;
    const migrator = new Migrator({
      db: database.db,
      provider: migrationProvider,
      ...(schema ? { migrationTableSchema: schema } : {}),
    });
    const down = await migrator.migrateTo(NO_MIGRATIONS);
    expect(down.error).toBeUndefined();
    expect(down.results?.map((r) => r.migrationName)).toEqual(Object.keys(migrations).reverse());
    const left = (await tablesOf(database, fresh.config)).map((t) => t.name);
    expect(left.filter((n) => !n.startsWith('kysely_'))).toEqual([]);
    expect(await migrateToLatest(database.db)).toEqual(Object.keys(migrations));
  });
});
