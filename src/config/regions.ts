/**
 * The regions one process serves: which, on which address and ports, at which public base address,
 * and each on its own database (a SQLite file in the data folder, or a PostgreSQL schema).
 */
import { resolve } from 'node:path';
import { fromEnv, read } from './read.js';
import type { ConfigFlags, DatabaseConfig, Region, RegionConfig } from './types.js';
import { ConfigError, postgresUrl, region as regionKind, schemaName, url } from './values.js';

type Env = Record<string, string | undefined>;

/** The base address of a region with none configured: where it listens. */
export function defaultBaseUrl(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** `--regions us,eu`, else `--region`, else `PARLEY_REGION`; never a region twice. */
export function regionList(flags: ConfigFlags, env: Env): Region[] {
  const list: Region[] = flags.regions
    ? flags.regions.split(',').map((r) => regionKind.parse('PARLEY_REGION', r))
    : [read('PARLEY_REGION', flags.region ?? env.PARLEY_REGION)];
  if (new Set(list).size !== list.length) throw new ConfigError('--regions lists a region twice');
  return list;
}

/** Each region's address, base address and database; `firstPort` for the first, the next ports for the others. */
export function regionConfigs(
  list: readonly Region[],
  env: Env,
  where: { readonly host: string; readonly firstPort: number; readonly dataDir: string },
): readonly RegionConfig[] {
  const { host, firstPort, dataDir } = where;
  const regions = list.map((region, i): RegionConfig => {
    const port = firstPort + i;
    const upper = region.toUpperCase();
    const baseRaw = env[`PARLEY_BASE_URL_${upper}`] ?? (list.length === 1 ? env.PARLEY_BASE_URL : undefined);
    const baseUrl = baseRaw ? url.parse(`PARLEY_BASE_URL_${upper}`, baseRaw) : defaultBaseUrl(host, port);
    const pgName = env[`DATABASE_URL_${upper}`] ? `DATABASE_URL_${upper}` : 'DATABASE_URL';
    const pgRaw = env[pgName];
    const pgUrl = pgRaw ? postgresUrl.parse(pgName, pgRaw) : undefined;
    const database: DatabaseConfig = pgUrl
      ? {
          kind: 'postgres',
          url: pgUrl,
          schema: env[`PARLEY_PG_SCHEMA_${upper}`] ?? env.PARLEY_PG_SCHEMA ?? `parley_${region}`,
          poolSize: fromEnv(env, 'PARLEY_PG_POOL_SIZE'),
          connectTimeoutMs: fromEnv(env, 'PARLEY_PG_CONNECT_TIMEOUT_MS'),
          statementTimeoutMs: fromEnv(env, 'PARLEY_PG_STATEMENT_TIMEOUT_MS'),
        }
      : {
          kind: 'sqlite',
          file: resolve(dataDir, `parley-${region}.db`),
          busyTimeoutMs: fromEnv(env, 'PARLEY_SQLITE_BUSY_TIMEOUT_MS'),
        };
    if (database.kind === 'postgres') schemaName.parse('PARLEY_PG_SCHEMA', database.schema);
    return Object.freeze({ region, host, port, baseUrl, database });
  });
  // Each region keeps its own data: two regions on one schema would see each other's keys and records.
  const seen = new Map<string, Region>();
  for (const { region, database: d } of regions) {
    const where = d.kind === 'sqlite' ? d.file : `${d.url} ${d.schema}`;
    const other = seen.get(where);
    if (other) {
      throw new ConfigError(
        `regions ${other} and ${region} would share ${d.kind === 'sqlite' ? d.file : `the PostgreSQL schema "${d.schema}"`}; ` +
          'set PARLEY_PG_SCHEMA_<REGION> for each region, or leave PARLEY_PG_SCHEMA unset for parley_<region>',
      );
    }
    seen.set(where, region);
  }
  return Object.freeze(regions);
}
