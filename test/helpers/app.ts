import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../../src/config.js';
import { type AppContext, createContext, createLogger } from '../../src/context.js';
import { dropPostgresSchema } from '../../src/db/database.js';
import { buildApp } from '../../src/http/app.js';
import type { Clock } from '../../src/shared/clock.js';
import { randomBase62 } from '../../src/shared/ids.js';

export type TestDialect = 'sqlite' | 'postgres';

/** PostgreSQL runs whenever DATABASE_URL is set (CI sets it); SQLite always runs. */
export const PG_URL = process.env.DATABASE_URL;
export const DIALECTS: TestDialect[] = PG_URL ? ['sqlite', 'postgres'] : ['sqlite'];
export const REDIS_URL = process.env.REDIS_URL;

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
}

/** A real app on a real database: a fresh SQLite file, or a fresh PostgreSQL schema. */
export async function createTestApp(dialect: TestDialect, options: TestAppOptions = {}): Promise<TestApp> {
  const shared = options.shareWith?.env;
  const dataDir = shared?.PARLEY_DATA_DIR ?? mkdtempSync(join(tmpdir(), 'parley-test-'));
  const schema = shared?.PARLEY_PG_SCHEMA ?? `t_${randomBase62(12).toLowerCase()}`;
  const env: Record<string, string> = {
    PARLEY_DATA_DIR: dataDir,
    PARLEY_REGION: options.region ?? 'us',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...(dialect === 'postgres' && PG_URL ? { DATABASE_URL: PG_URL, PARLEY_PG_SCHEMA: schema } : {}),
    ...options.env,
  };
  const config = loadConfig({}, env);
  const region = config.regions[0];
  if (!region) throw new Error('no region');
  const ctx = await createContext(config, region, {
    logger: createLogger(config),
    ...(options.clock ? { clock: options.clock } : {}),
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
      if (!owner) return;
      if (dialect === 'postgres' && PG_URL) await dropPostgresSchema(PG_URL, schema);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
