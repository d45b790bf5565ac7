import { type Config, type ConfigFlags, loadConfig, type RegionConfig } from '../config.js';
import { type Database, migrateToLatest, openDatabase } from '../db/database.js';
import { secretBoxOf } from '../numbers/index.js';
import { type Clock, systemClock } from '../shared/clock.js';

/** What an admin command works on: the same database the server of that region uses. */
export interface AdminContext {
  readonly config: Config;
  readonly region: RegionConfig;
  readonly database: Database;
  readonly clock: Clock;
}

export interface DbFlags {
  region?: string;
  data?: string;
  json?: boolean;
}

/**
 * Opens the region's database (brought up to date first, unless `migrate` is false: the `migrate`
 * command runs the migrations itself, to report what it applied) and runs `fn` on it.
 */
export async function withAdmin<T>(
  flags: DbFlags,
  fn: (admin: AdminContext) => Promise<T>,
  options: { migrate?: boolean } = {},
): Promise<T> {
  const configFlags: ConfigFlags = {};
  if (flags.region) configFlags.region = flags.region;
  if (flags.data) configFlags.data = flags.data;
  const config = loadConfig(configFlags);
  const region = config.regions[0];
  if (!region) throw new Error('no region configured');
  const database = await openDatabase(region.database, { poolSize: 2 });
  try {
    if (options.migrate !== false) await migrateToLatest(database.db, { secrets: () => secretBoxOf(config) });
    return await fn({ config, region, database, clock: systemClock });
  } finally {
    await database.close();
  }
}
