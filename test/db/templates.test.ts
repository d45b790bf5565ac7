import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createContext } from '../../src/context.js';
import { dropPostgresSchema } from '../../src/db/database.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { createLogger } from '../../src/shared/logger.js';
import { DIALECTS, PG_SECRETS, PG_URL, type TestDialect } from '../helpers/app.js';
import { seedFromTemplate } from '../helpers/templates.js';

/**
 * Test apps start from a copy of a migrated template (test/helpers/templates.ts). This proves a
 * copy is the database that the migrations and the job store make from empty: the same tables,
 * columns, defaults, constraints, indexes, functions, triggers, partitions, sequences and rows.
 */
const templates = inject('parleyTemplates');
const ON = process.env.TEST_TEMPLATES !== '0';

interface Made {
  env: Record<string, string>;
  cleanup(): Promise<void>;
}

/** A database started by a context (migrations, job store, queues), from empty or from the template. */
async function make(dialect: TestDialect, fromTemplate: boolean): Promise<Made> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-template-test-'));
  const schema = `t_${randomBase62(12).toLowerCase()}`;
  const env: Record<string, string> = {
    PARLEY_DATA_DIR: dir,
    LOG_LEVEL: 'silent',
    ...(dialect === 'postgres' && PG_URL ? { DATABASE_URL: PG_URL, PARLEY_PG_SCHEMA: schema, ...PG_SECRETS } : {}),
  };
  const config = loadConfig({}, env);
  const region = config.regions[0];
  if (!region) throw new Error('no region');
  if (fromTemplate) await seedFromTemplate(region.database, config.jobs.leaseMs);
  const ctx = await createContext(config, region, { logger: createLogger(config), workJobs: false });
  await ctx.close();
  return {
    env,
    async cleanup() {
      if (dialect === 'postgres' && PG_URL) await dropPostgresSchema(PG_URL, schema);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Every object of the SQLite database and every row (migration times aside). */
function sqliteShape(dir: string) {
  const db = new SQLite(join(dir, 'parley-us.db'), { readonly: true });
  try {
    const objects = db
      .prepare("select type, name, tbl_name, sql from sqlite_master where name not like 'sqlite_%' order by type, name")
      .all() as { type: string; name: string }[];
    const rows: Record<string, unknown[]> = {};
    for (const { name } of objects.filter((o) => o.type === 'table')) {
      const all = db.prepare(`select * from "${name}" order by 1`).all() as Record<string, unknown>[];
      rows[name] = name === 'kysely_migration' ? all.map((r) => r.name) : all;
    }
    return {
      objects,
      rows,
      userVersion: db.pragma('user_version', { simple: true }),
      journal: db.pragma('journal_mode', { simple: true }),
    };
  } finally {
    db.close();
  }
}

/** Every object of the PostgreSQL schema, its name replaced by S, and every row (times aside). */
async function postgresShape(schema: string) {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    const q = async (text: string) =>
      JSON.parse(JSON.stringify((await client.query(text, [schema])).rows).replaceAll(schema, 'S')) as unknown[];
    const shape = {
      relations: await q(`select c.relname, c.relkind, c.relpersistence, c.relispartition,
          pg_get_expr(c.relpartbound, c.oid) as bound
        from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1 order by c.relname`),
      columns: await q(`select table_name, column_name, ordinal_position, data_type, udt_schema, udt_name,
          is_nullable, column_default, character_maximum_length, numeric_precision, is_identity, is_generated,
          generation_expression
        from information_schema.columns where table_schema = $1 order by table_name, ordinal_position`),
      constraints:
        await q(`select c.conname, c.contype, c.conrelid::regclass::text as rel, pg_get_constraintdef(c.oid) as def
        from pg_constraint c join pg_namespace n on n.oid = c.connamespace where n.nspname = $1 order by rel, c.conname`),
      indexes: await q(
        'select tablename, indexname, indexdef from pg_indexes where schemaname = $1 order by indexname',
      ),
      functions:
        await q(`select p.proname, pg_get_function_identity_arguments(p.oid) as args, pg_get_functiondef(p.oid) as def
        from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = $1 order by p.proname, args`),
      triggers: await q(`select t.tgname, c.relname, pg_get_triggerdef(t.oid) as def, t.tgenabled
        from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = $1 and not t.tgisinternal order by c.relname, t.tgname`),
      types: await q(`select t.typname, t.typtype, array(select e.enumlabel::text from pg_enum e
          where e.enumtypid = t.oid order by e.enumsortorder) as labels
        from pg_type t join pg_namespace n on n.oid = t.typnamespace where n.nspname = $1 order by t.typname`),
      sequences: await q(`select sequencename, data_type, start_value, increment_by, last_value
        from pg_sequences where schemaname = $1 order by sequencename`),
      policies: await q('select tablename, policyname, cmd, qual from pg_policies where schemaname = $1 order by 1, 2'),
      rows: {} as Record<string, unknown[]>,
    };
    const tables = (shape.relations as { relname: string; relkind: string }[]).filter((r) => r.relkind === 'r');
    for (const { relname } of tables) {
      const { rows } = await client.query(`select * from "${schema}"."${relname}"`);
      // Times of creation are when each was made; everything else must match.
      const kept = rows.map((r: Record<string, unknown>) =>
        Object.fromEntries(Object.entries(r).filter(([k]) => !/(_on|^timestamp)$/.test(k))),
      );
      shape.rows[relname] = JSON.parse(JSON.stringify(kept).replaceAll(schema, 'S')).sort((a: unknown, b: unknown) =>
        JSON.stringify(a).localeCompare(JSON.stringify(b)),
      );
    }
    return shape;
  } finally {
    await client.end();
  }
}

describe.each(DIALECTS)('test databases from a template (%s)', (dialect) => {
  const made: Made[] = [];
  afterAll(async () => {
    for (const m of made) await m.cleanup();
  });

  it.runIf(ON)(
    'there is a template, and a copy of it is the database the migrations make from empty',
    async () => {
      expect(dialect === 'sqlite' ? templates.sqlite : templates.postgres, 'the template of the run').toBeDefined();
      const fromEmpty = await make(dialect, false);
      made.push(fromEmpty);
      const copy = await make(dialect, true);
      made.push(copy);
      if (dialect === 'sqlite') {
        const [a, b] = [sqliteShape(fromEmpty.env.PARLEY_DATA_DIR ?? ''), sqliteShape(copy.env.PARLEY_DATA_DIR ?? '')];
        expect(a.objects.length).toBeGreaterThan(20);
        expect(b).toEqual(a);
      } else {
        const [a, b] = [
          await postgresShape(fromEmpty.env.PARLEY_PG_SCHEMA ?? ''),
          await postgresShape(copy.env.PARLEY_PG_SCHEMA ?? ''),
        ];
        expect(a.columns.length).toBeGreaterThan(100);
        expect(a.functions.length).toBeGreaterThan(0);
        expect(a.rows.kysely_migration?.length).toBeGreaterThan(10);
        expect(b).toEqual(a);
      }
    },
    60_000,
  );
});
