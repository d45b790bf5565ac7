import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../../src/config.js';
import { createContext } from '../../src/context.js';
import { dropPostgresSchema } from '../../src/db/database.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { createLogger } from '../../src/shared/logger.js';

/**
 * Migrated templates of the test databases, made once per run by the global setup: a test app
 * starts from a copy instead of running every migration (and, on PostgreSQL, installing pg-boss and
 * its queues) again. On SQLite the template is a database file, copied; on PostgreSQL it is what
 * `pg_dump` prints of a migrated schema (its tables, functions, partitions and rows), replayed in
 * one statement into the new schema. Its name in the dump is replaced, as a distinct random word.
 * test/db/templates.test.ts proves a copy the same as a database migrated from empty, on both
 * databases; test/db/migrations.test.ts runs the migrations themselves from empty.
 *
 * The app then starts as usual: its migrator finds every migration applied, pg-boss finds its
 * schema and queues. TEST_TEMPLATES=0 turns the templates off (every app migrates from empty).
 */
export interface Templates {
  /** A migrated SQLite database file (closed, no WAL beside it). */
  readonly sqlite?: string;
  /** PostgreSQL: the dump, with `schema` standing for the schema's name, and the job lease its queues were made with. */
  readonly postgres?: { readonly sql: string; readonly schema: string; readonly leaseMs: number };
}

const run = promisify(execFile);

/** Builds the templates (the global setup calls this once); `dispose` removes what they left. */
export async function buildTemplates(pgUrl: string | undefined): Promise<{ templates: Templates; dispose(): void }> {
  if (process.env.TEST_TEMPLATES === '0') return { templates: {}, dispose: () => undefined };
  const dir = mkdtempSync(join(tmpdir(), 'parley-template-'));
  const dispose = () => rmSync(dir, { recursive: true, force: true });
  try {
    const sqlite = await migrated({ PARLEY_DATA_DIR: dir });
    const templates: Templates = { sqlite };
    if (!pgUrl) return { templates, dispose };
    const schema = `t_template_${randomBase62(12).toLowerCase()}`;
    try {
      const leaseMs = await migratedLease({
        PARLEY_DATA_DIR: mkdtempSync(join(dir, 'pg-')),
        DATABASE_URL: pgUrl,
        PARLEY_PG_SCHEMA: schema,
        PARLEY_SECRET_KEY: randomBytes(32).toString('base64'),
        PARLEY_WEBHOOK_APP_SECRET: randomBytes(24).toString('hex'),
      });
      const { stdout } = await run(
        'pg_dump',
        ['--schema', schema, '--no-owner', '--no-privileges', '--inserts', '--dbname', pgUrl],
        { maxBuffer: 64 * 1024 * 1024 },
      );
      return { templates: { ...templates, postgres: { sql: replayable(stdout), schema, leaseMs } }, dispose };
    } catch (err) {
      // No pg_dump (or one that fails): every PostgreSQL test app migrates from empty, slower but the same.
      process.stderr.write(`test templates: PostgreSQL apps migrate from empty (${(err as Error).message})\n`);
      return { templates, dispose };
    } finally {
      await dropPostgresSchema(pgUrl, schema);
    }
  } catch (err) {
    dispose();
    throw err;
  }
}

/** Starts a context on `env` (migrations, the job store and its queues), stops it; the database file. */
async function migrated(env: Record<string, string>): Promise<string> {
  const config = loadConfig({}, { LOG_LEVEL: 'silent', ...env });
  const region = config.regions[0];
  if (!region) throw new Error('no region');
  const ctx = await createContext(config, region, { logger: createLogger(config), workJobs: false });
  await ctx.close();
  return region.database.kind === 'sqlite' ? region.database.file : '';
}

async function migratedLease(env: Record<string, string>): Promise<number> {
  await migrated(env);
  return loadConfig({}, { LOG_LEVEL: 'silent', ...env }).jobs.leaseMs;
}

/** The dump as one statement text: psql's own commands (`\restrict`) and comments left out. */
function replayable(dump: string): string {
  return dump
    .split('\n')
    .filter((line) => !line.startsWith('\\') && !line.startsWith('--'))
    .join('\n');
}
