import type { Logger } from 'pino';
import type { Config, DatabaseConfig } from '../config.js';
import type { Database } from '../db/database.js';
import type { Clock } from '../shared/clock.js';
import { JobRunner } from './job-runner.js';
import { createPgBossStore } from './pg-boss-store.js';
import { createSqliteJobStore } from './sqlite-store.js';

/** The region's job runner: pg-boss on PostgreSQL, a table of its database on SQLite. */
export async function createJobRunner(
  config: Config,
  databaseConfig: DatabaseConfig,
  database: Database,
  clock: Clock,
  logger: Logger,
  onFailure?: (queue: string) => void,
): Promise<JobRunner> {
  const { leaseMs, pollMs } = config.jobs;
  const store =
    databaseConfig.kind === 'postgres'
      ? await createPgBossStore({ db: database.db, schema: databaseConfig.schema, leaseMs, logger })
      : createSqliteJobStore(database.db, clock);
  return new JobRunner({
    db: database.db,
    store,
    clock,
    logger,
    leaseMs,
    pollMs,
    ...(onFailure ? { onFailure } : {}),
  });
}
