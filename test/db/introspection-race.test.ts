import { type Kysely, PostgresIntrospector, sql, type Transaction } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, dropPostgresSchema, migrateToLatest, openDatabase } from '../../src/db/database.js';
import type { DB } from '../../src/db/schema.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { PG_URL } from '../helpers/app.js';

/**
 * Test files run at once, each on schemas of its own in one PostgreSQL database, and drop them as
 * they end. The Migrator introspects the database on every run; that must not fail when another
 * schema is dropped meanwhile. A REPEATABLE READ transaction holds the moment before the drop, so
 * the query sees the dropped schema in its snapshot, as a query under way does when the drop
 * commits part-way through it.
 */
describe.skipIf(!PG_URL)('introspection while another schema is dropped (PostgreSQL)', () => {
  const url = PG_URL ?? '';
  const schema = `t_${randomBase62(12).toLowerCase()}`;
  let database: Database;
  let admin: pg.Client;

  beforeAll(async () => {
    database = await openDatabase({
      kind: 'postgres',
      url,
      schema,
      poolSize: 2,
      connectTimeoutMs: 5_000,
      statementTimeoutMs: 15_000,
    });
    await migrateToLatest(database.db);
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
  });

  afterAll(async () => {
    await admin?.end();
    await database?.close();
    await dropPostgresSchema(url, schema);
  });

  /** Runs `introspect` in a snapshot taken while a schema of another's still existed. */
  async function afterAnotherSchemaIsDropped<T>(introspect: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
    const other = `t_${randomBase62(12).toLowerCase()}`;
    await admin.query(`create schema ${other}; create table ${other}.things (id serial primary key, name text)`);
    try {
      return await database.db
        .transaction()
        .setIsolationLevel('repeatable read')
        .execute(async (trx) => {
          await sql`select 1`.execute(trx);
          await admin.query(`drop schema ${other} cascade`);
          return introspect(trx);
        });
    } finally {
      await admin.query(`drop schema if exists ${other} cascade`);
    }
  }

  it("lists this schema's tables, and the migrations find nothing to do", async () => {
    const tables = await afterAnotherSchemaIsDropped((trx) => trx.introspection.getTables());
    expect(new Set(tables.map((t) => t.schema))).toEqual(new Set([schema]));
    expect(tables.map((t) => t.name)).toContain('api_keys');
    const withInternal = await afterAnotherSchemaIsDropped((trx) =>
      trx.introspection.getTables({ withInternalKyselyTables: true }),
    );
    expect(withInternal.map((t) => t.name)).toContain('kysely_migration');
    expect(await migrateToLatest(database.db)).toEqual([]);
  });

  it("is where Kysely's own introspection, which reads every schema, fails", async () => {
    await expect(
      afterAnotherSchemaIsDropped((trx) => new PostgresIntrospector(trx as Kysely<DB>).getTables()),
    ).rejects.toThrow(/schema "t_\w+" does not exist/);
  });
});
