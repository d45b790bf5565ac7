import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../../src/config.js';
import { type AppContext, createContext } from '../../src/context.js';
import { dropPostgresSchema } from '../../src/db/database.js';
import { buildApp } from '../../src/http/app.js';
import type { Clock } from '../../src/shared/clock.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { createLogger } from '../../src/shared/logger.js';
import { seedFromTemplate } from './templates.js';

export type TestDialect = 'sqlite' | 'postgres';

/** PostgreSQL runs whenever DATABASE_URL is set (CI sets it); SQLite always runs. */
export const PG_URL = process.env.DATABASE_URL;
export const DIALECTS: TestDialect[] = PG_URL ? ['sqlite', 'postgres'] : ['sqlite'];
export const REDIS_URL = process.env.REDIS_URL;
/**
 * The secrets every node on PostgreSQL must be given (loadConfig refuses to start without them);
 * one pair per test file, so apps and CLI runs of a file share them as a deployment's nodes do.
 */
export const PG_SECRETS: Readonly<Record<'PARLEY_SECRET_KEY' | 'PARLEY_WEBHOOK_APP_SECRET', string>> = {
  PARLEY_SECRET_KEY: randomBytes(32).toString('base64'),
  PARLEY_WEBHOOK_APP_SECRET: randomBytes(24).toString('hex'),
};

export interface TestApp {
  readonly app: FastifyInstance;
  readonly ctx: AppContext;
  readonly dialect: TestDialect;
  /** Environment that points the CLI or a second process at this same database. */
  readonly env: Record<string, string>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  region?: string;
  clock?: Clock;
  /** Extra environment variables for loadConfig (e.g. rate limits). */
  env?: Record<string, string>;
  /** Reuse another test app's data (same folder or schema), e.g. for a second process. */
  shareWith?: TestApp;
  /**
   * With `shareWith`: a data folder of its own, as another node on the same PostgreSQL database
   * has (on SQLite, whose database lives in the data folder, this is a separate database).
   */
  ownDataDir?: boolean;
  /** false: this app works no background jobs (other processes on the same database do). */
  workJobs?: boolean;
  /** The rate limit window in seconds (production: 60), for tests that wait a window out. */
  rateLimitWindowSeconds?: number;
}

/** A real app on a real database: a fresh SQLite file, or a fresh PostgreSQL schema. */
export async function createTestApp(dialect: TestDialect, options: TestAppOptions = {}): Promise<TestApp> {
  const shared = options.shareWith?.env;
  const ownsDataDir = !shared?.PARLEY_DATA_DIR || options.ownDataDir === true;
  const dataDir =
    !ownsDataDir && shared?.PARLEY_DATA_DIR ? shared.PARLEY_DATA_DIR : mkdtempSync(join(tmpdir(), 'parley-test-'));
  const schema = shared?.PARLEY_PG_SCHEMA ?? `t_${randomBase62(12).toLowerCase()}`;
  const env: Record<string, string> = {
    PARLEY_DATA_DIR: dataDir,
    PARLEY_REGION: options.region ?? 'us',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    // Password hashes at 2^12, not the default 2^17: the suite signs in often (password.test.ts checks the default).
    PARLEY_PASSWORD_HASH_COST: '12',
    // The numbers' templates are read when a test asks (about 12 days apart otherwise, never within a
    // run): a sync at the top of an hour would make a test's unknown template the catalogue's to refuse.
    PARLEY_TEMPLATE_SYNC_MS: String(2 ** 30),
    ...(dialect === 'postgres' && PG_URL ? { DATABASE_URL: PG_URL, PARLEY_PG_SCHEMA: schema, ...PG_SECRETS } : {}),
    ...options.env,
  };
  const config = loadConfig({}, env);
  const region = config.regions[0];
  if (!region) throw new Error('no region');
  // A database of its own, where the test chose no folder or schema: a copy of the migrated template.
  if (!options.shareWith && !options.env?.PARLEY_DATA_DIR && !options.env?.PARLEY_PG_SCHEMA) {
    await seedFromTemplate(region.database, config.jobs.leaseMs);
  }
  const ctx = await createContext(config, region, {
    logger: createLogger(config),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.workJobs === false ? { workJobs: false } : {}),
    ...(options.rateLimitWindowSeconds ? { rateLimitWindowSeconds: options.rateLimitWindowSeconds } : {}),
  });
  const app = await buildApp(ctx, { logRequests: false });
  await app.ready();
  const owner = !options.shareWith;
  return {
    app,
    ctx,
    dialect,
    env,
    async close() {
      await app.close();
      await ctx.close();
      if (owner && dialect === 'postgres' && PG_URL) await dropPostgresSchema(PG_URL, schema);
      if (ownsDataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
