import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { dropPostgresSchema, openDatabase } from '../../src/db/database.js';
import { createKey } from '../../src/keys/key.service.js';
import { type RunningServer, startServer } from '../../src/server.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { DIALECTS, PG_SECRETS, PG_URL } from '../helpers/app.js';
import { freePortRange } from '../helpers/cli.js';
import { expectMatchesContract, fromFetch } from '../helpers/contract.js';
import { makeUser, PASSWORD, postLogin, signInAs } from '../helpers/dashboard.js';
import { makeOrg } from '../helpers/factories.js';

const REGIONS = ['us', 'eu', 'in', 'qa'] as const;
const BASES: Record<(typeof REGIONS)[number], string> = {
  us: 'https://us.parley.example',
  eu: 'https://eu.parley.example',
  in: 'https://in.parley.example',
  qa: 'https://qa.parley.example',
};

describe('configuration', () => {
  const env = { PARLEY_DATA_DIR: '/tmp/parley-config-test', ...PG_SECRETS };
  const error = (fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    return 'no error';
  };

  it('defaults: region us on 127.0.0.1:3000, SQLite in the data folder, 1 MiB bodies', () => {
    const config = loadConfig({}, env);
    expect(config.regions).toHaveLength(1);
    expect(config.regions[0]).toEqual({
      region: 'us',
      host: '127.0.0.1',
      port: 3000,
      baseUrl: 'http://127.0.0.1:3000',
      database: { kind: 'sqlite', file: '/tmp/parley-config-test/parley-us.db', busyTimeoutMs: 5_000 },
    });
    expect(config.bodyLimit).toBe(1024 * 1024);
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.regions[0])).toBe(true);
  });

  it('flags win over the environment', () => {
    const config = loadConfig(
      { region: 'eu', port: '4000', host: '0.0.0.0' },
      { ...env, PARLEY_REGION: 'in', PORT: '5000' },
    );
    expect(config.regions[0]).toMatchObject({ region: 'eu', port: 4000, host: '0.0.0.0' });
  });

  it('--regions: consecutive ports, one database and one base address each', () => {
    const config = loadConfig(
      { regions: 'us,eu,in,qa', port: 7000 },
      { ...env, PARLEY_BASE_URL_EU: 'https://eu.example/', PARLEY_BASE_URL: 'https://ignored.example' },
    );
    expect(config.regions.map((r) => [r.region, r.port])).toEqual([
      ['us', 7000],
      ['eu', 7001],
      ['in', 7002],
      ['qa', 7003],
    ]);
    expect(config.regions.map((r) => r.baseUrl)).toEqual([
      'http://127.0.0.1:7000',
      'https://eu.example',
      'http://127.0.0.1:7002',
      'http://127.0.0.1:7003',
    ]);
    expect(new Set(config.regions.map((r) => JSON.stringify(r.database))).size).toBe(4);
  });

  it('PostgreSQL: one schema per region, or a database per region', () => {
    const config = loadConfig(
      { regions: 'us,eu' },
      { ...env, DATABASE_URL: 'postgres://db/parley', DATABASE_URL_EU: 'postgres://eu-db/parley' },
    );
    expect(config.regions.map((r) => r.database)).toEqual([
      {
        kind: 'postgres',
        url: 'postgres://db/parley',
        schema: 'parley_us',
        poolSize: 10,
        connectTimeoutMs: 5_000,
        statementTimeoutMs: 15_000,
      },
      {
        kind: 'postgres',
        url: 'postgres://eu-db/parley',
        schema: 'parley_eu',
        poolSize: 10,
        connectTimeoutMs: 5_000,
        statementTimeoutMs: 15_000,
      },
    ]);
    const pooled = loadConfig({}, { ...env, DATABASE_URL: 'postgres://db/parley', PARLEY_PG_POOL_SIZE: '25' });
    expect(pooled.regions[0]?.database).toMatchObject({ kind: 'postgres', poolSize: 25 });
  });

  it('says clearly what is wrong', () => {
    expect(error(() => loadConfig({ region: 'mars' }, env))).toBe(
      'unknown region "mars"; expected one of us, eu, in, qa',
    );
    expect(error(() => loadConfig({ regions: 'us,us' }, env))).toMatch(/lists a region twice/);
    expect(error(() => loadConfig({ port: 'abc' }, env))).toMatch(/port must be a positive integer, got "abc"/);
    expect(error(() => loadConfig({ port: 70000 }, env))).toMatch(/1-65535/);
    expect(error(() => loadConfig({ regions: 'us,eu', port: 65535 }, env))).toMatch(/past 65535/);
    expect(error(() => loadConfig({}, { ...env, PARLEY_BASE_URL: 'not a url' }))).toMatch(/must be a URL/);
    expect(error(() => loadConfig({}, { ...env, PARLEY_BODY_LIMIT: '-1' }))).toMatch(/PARLEY_BODY_LIMIT/);
    expect(
      error(() => loadConfig({}, { ...env, DATABASE_URL: 'postgres://x/y', PARLEY_PG_POOL_SIZE: 'many' })),
    ).toMatch(/PARLEY_PG_POOL_SIZE must be a positive integer/);
    expect(error(() => loadConfig({}, { ...env, LOG_LEVEL: 'verbose' }))).toBe(
      'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"',
    );
    expect(loadConfig({}, { ...env, LOG_LEVEL: 'WARN' }).logLevel).toBe('warn');
    // A connection URL that is not one: named, without repeating a value that may hold a password.
    for (const bad of ['notaurl', 'mysql://root:s3cret@db/x', 'postgres://:s3cret@/x']) {
      const message = error(() => loadConfig({}, { ...env, DATABASE_URL: bad }));
      expect(message).toBe('DATABASE_URL must be a PostgreSQL URL such as postgres://user@127.0.0.1:5432/parley');
    }
    expect(error(() => loadConfig({ region: 'eu' }, { ...env, DATABASE_URL_EU: 'x' }))).toMatch(
      /^DATABASE_URL_EU must/,
    );
    expect(error(() => loadConfig({}, { ...env, PARLEY_PROVIDER_TIMEOUT_MS: '600000' }))).toBe(
      'PARLEY_PROVIDER_TIMEOUT_MS must be at most 120000 (2 minutes), got "600000"',
    );
    expect(loadConfig({}, { ...env, PARLEY_PROVIDER_TIMEOUT_MS: '120000' }).messaging.providerTimeoutMs).toBe(120_000);
    // A data folder that is a file.
    expect(error(() => loadConfig({ data: '/etc/passwd' }, env))).toBe(
      'data folder "/etc/passwd" is not a folder (--data, PARLEY_DATA_DIR)',
    );
    expect(
      error(() => loadConfig({}, { ...env, DATABASE_URL: 'postgres://x/y', PARLEY_PG_SCHEMA: 'Bad-Name' })),
    ).toMatch(/schema name/);
    // Regions never share data.
    expect(
      error(() =>
        loadConfig({ regions: 'us,eu' }, { ...env, DATABASE_URL: 'postgres://x/y', PARLEY_PG_SCHEMA: 'one' }),
      ),
    ).toBe(
      'regions us and eu would share the PostgreSQL schema "one"; set PARLEY_PG_SCHEMA_<REGION> for each region, ' +
        'or leave PARLEY_PG_SCHEMA unset for parley_<region>',
    );
    expect(
      loadConfig(
        { regions: 'us,eu' },
        { ...env, DATABASE_URL: 'postgres://x/y', PARLEY_PG_SCHEMA_US: 'a', PARLEY_PG_SCHEMA_EU: 'b' },
      ).regions.map((r) => (r.database.kind === 'postgres' ? r.database.schema : '')),
    ).toEqual(['a', 'b']);
  });
});

describe.each(DIALECTS)('four regions in one process (%s)', (dialect) => {
  let server: RunningServer;
  let dataDir: string;
  let firstPort: number;
  const schemas: string[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'parley-regions-'));
    firstPort = await freePortRange(4);
    // Password hashes at 2^12, as createTestApp's: the dashboard test signs in sixteen times.
    const env: Record<string, string> = { LOG_LEVEL: 'silent', PARLEY_PASSWORD_HASH_COST: '12' };
    for (const r of REGIONS) env[`PARLEY_BASE_URL_${r.toUpperCase()}`] = BASES[r];
    if (dialect === 'postgres' && PG_URL) {
      Object.assign(env, { DATABASE_URL: PG_URL }, PG_SECRETS);
      for (const r of REGIONS) {
        const schema = `t_${randomBase62(10).toLowerCase()}_${r}`;
        schemas.push(schema);
        env[`PARLEY_PG_SCHEMA_${r.toUpperCase()}`] = schema;
      }
    }
    server = await startServer(loadConfig({ regions: 'us,eu,in,qa', port: firstPort, data: dataDir }, env), {
      logRequests: false,
    });
  });
  afterAll(async () => {
    await server?.close();
    if (PG_URL) for (const s of schemas) await dropPostgresSchema(PG_URL, s);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('listens on N..N+3, each region answering for itself', async () => {
    expect(server.regions.map((r) => r.url)).toEqual(REGIONS.map((_, i) => `http://127.0.0.1:${firstPort + i}`));
    for (const [i, region] of REGIONS.entries()) {
      const res = await fromFetch(await fetch(`http://127.0.0.1:${firstPort + i}/api/health`));
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ status: 'ok', region });
      const app = server.regions[i]?.app;
      if (app) expectMatchesContract(app, 'GET', '/api/health', res);
    }
  });

  it("each region's /api/openapi.json names its own base address", async () => {
    for (const [i, region] of REGIONS.entries()) {
      const doc = (await (await fetch(`http://127.0.0.1:${firstPort + i}/api/openapi.json`)).json()) as {
        servers: { url: string }[];
      };
      expect(doc.servers).toHaveLength(1);
      expect(doc.servers[0]?.url).toBe(BASES[region]);
    }
  });

  it('each region has its own database', async () => {
    const [us, eu] = server.regions;
    if (!us || !eu) throw new Error('regions missing');
    const org = await makeOrg(us.ctx);
    expect(
      await us.ctx.db.selectFrom('organizations').select('id').where('id', '=', org.id).executeTakeFirst(),
    ).toBeTruthy();
    expect(
      await eu.ctx.db.selectFrom('organizations').select('id').where('id', '=', org.id).executeTakeFirst(),
    ).toBeUndefined();
    if (dialect === 'sqlite') {
      for (const r of REGIONS) expect(existsSync(join(dataDir, `parley-${r}.db`))).toBe(true);
    }
  });

  it('the dashboard in every region: its people sign in there, and nowhere else', async () => {
    for (const home of server.regions) {
      const org = await makeOrg(home.ctx);
      const user = await makeUser(home.ctx, org.id);
      const browser = await signInAs(home.app, user.email);
      const panel = await browser.get('/dashboard/settings/integrations/api-keys');
      expect(panel.statusCode, home.region.region).toBe(200);
      expect(panel.body).toContain('API Keys');
      for (const other of server.regions.filter((r) => r !== home)) {
        const away = await other.app.inject({
          url: '/dashboard/settings/integrations/api-keys',
          headers: { cookie: browser.cookie },
        });
        expect(away.statusCode, `${home.region.region} session in ${other.region.region}`).toBe(303);
        expect(away.headers.location).toMatch(/^\/dashboard\/login/);
        expect((await postLogin(other.app, user.email, PASSWORD)).statusCode).toBe(401);
      }
    }
  }, 90_000); // 16 sign-ins at the scrypt cost: seconds each on a busy machine

  it('a us key works in us and gets 401 in every other region', async () => {
    const us = server.regions[0];
    if (!us) throw new Error('no us');
    const org = await makeOrg(us.ctx);
    const { key } = await createKey(us.ctx.db, us.ctx.clock, 'us', {
      orgId: org.id,
      label: 'us',
      scope: 'organization',
      permissions: ['endusers'],
    });
    const headers = { authorization: `Bearer ${key}` };
    const home = await fetch(`${us.url}/api/endusers`, { headers });
    expect(home.status).toBe(200);
    for (const r of server.regions.slice(1)) {
      const res = await fetch(`${r.url}/api/endusers`, { headers });
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({
        error: `This API key belongs to region "us" and is not valid in region "${r.region.region}".`,
        code: 'UNAUTHORIZED',
      });
    }
  });
});

describe.each(DIALECTS)('graceful shutdown (%s)', (dialect) => {
  it('flushes buffered key usage times when the server closes', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-shutdown-'));
    const schema = `t_${randomBase62(12).toLowerCase()}`;
    const env: Record<string, string> = {
      LOG_LEVEL: 'silent',
      PARLEY_LAST_USED_FLUSH_MS: '3600000',
      ...(dialect === 'postgres' && PG_URL ? { DATABASE_URL: PG_URL, PARLEY_PG_SCHEMA: schema, ...PG_SECRETS } : {}),
    };
    const [port] = [await freePortRange(1)];
    const config = loadConfig({ port, data: dataDir }, env);
    const server = await startServer(config, { logRequests: false });
    try {
      const region = server.regions[0];
      if (!region) throw new Error('no region');
      const org = await makeOrg(region.ctx);
      const { apiKey, key } = await createKey(region.ctx.db, region.ctx.clock, 'us', {
        orgId: org.id,
        label: 'k',
        scope: 'organization',
        permissions: ['endusers'],
      });
      const headers = { authorization: `Bearer ${key}` };
      expect((await fetch(`${region.url}/api/endusers`, { headers })).status).toBe(200);
      const first = await region.ctx.db
        .selectFrom('api_keys')
        .select('last_used_at')
        .where('id', '=', apiKey.id)
        .executeTakeFirstOrThrow();
      await new Promise((r) => setTimeout(r, 20));
      expect((await fetch(`${region.url}/api/endusers`, { headers })).status).toBe(200);
      await server.close();

      const reopened = await openDatabase(
        config.regions[0]?.database ?? { kind: 'sqlite', file: '', busyTimeoutMs: 5_000 },
      );
      try {
        const row = await reopened.db
          .selectFrom('api_keys')
          .select('last_used_at')
          .where('id', '=', apiKey.id)
          .executeTakeFirstOrThrow();
        expect(row.last_used_at).toBeGreaterThan(first.last_used_at ?? Number.POSITIVE_INFINITY);
      } finally {
        await reopened.close();
      }
      // Closed means closed: no more connections accepted.
      await expect(fetch(`${region.url}/api/health`)).rejects.toThrow();
    } finally {
      await server.close().catch(() => undefined);
      if (dialect === 'postgres' && PG_URL) await dropPostgresSchema(PG_URL, schema);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
