import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, PG_SECRETS, type TestApp } from '../helpers/app.js';
import { freePort, runCli, type ServeProcess, startServe } from '../helpers/cli.js';
import { makeTenant } from '../helpers/factories.js';
import { type OwnPostgres, postgresBin, startOwnPostgres } from '../helpers/own-postgres.js';
import { until } from '../helpers/wait.js';

/**
 * PostgreSQL faults against a `parley serve` process on a PostgreSQL of the test's own: idle
 * connections terminated, the server stopped and started again, a statement held by a lock.
 * Parley keeps running, answers 503 with Retry-After in each route's envelope meanwhile, and
 * recovers by itself.
 */
describe.skipIf(!postgresBin())('PostgreSQL faults', () => {
  let db: OwnPostgres;
  let server: ServeProcess;
  let base: string;
  let auth: Record<string, string>;
  let dataDir: string;
  let env: Record<string, string>;

  const admin = async <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  };
  const alive = () => server.child.exitCode === null && server.child.signalCode === null;

  beforeAll(async () => {
    db = startOwnPostgres(await freePort());
    dataDir = mkdtempSync(join(tmpdir(), 'parley-pgfault-'));
    env = {
      DATABASE_URL: db.url,
      PARLEY_DATA_DIR: dataDir,
      PARLEY_PG_CONNECT_TIMEOUT_MS: '1000',
      PARLEY_PG_STATEMENT_TIMEOUT_MS: '1500',
      ...PG_SECRETS,
    };
    const org = await runCli(['org', 'create', '--name', 'Faults', '--plan', 'paid', '--json'], env);
    expect(org.code).toBe(0);
    const key = await runCli(
      [
        'key',
        'create',
        '--org',
        org.json<{ id: string }>().id,
        '--label',
        'faults',
        '--scope',
        'organization',
        '--permissions',
        'endusers,channels',
        '--json',
      ],
      env,
    );
    expect(key.code).toBe(0);
    auth = { authorization: `Bearer ${key.json<{ key: string }>().key}` };
    const port = await freePort();
    server = await startServe(['--port', String(port)], env, 90_000);
    base = `http://127.0.0.1:${port}`;
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    db?.destroy();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('survives idle connections being terminated', async () => {
    expect((await fetch(`${base}/api/endusers`, { headers: auth })).status).toBe(200);
    const terminated = await admin(async (c) => {
      const { rows } = await c.query(
        "select pg_terminate_backend(pid) as done from pg_stat_activity where datname = 'postgres' and pid <> pg_backend_pid() and state = 'idle'",
      );
      return rows.length;
    });
    expect(terminated).toBeGreaterThan(0);
    // The process is still there, and the next requests are served on fresh connections.
    await new Promise((r) => setTimeout(r, 200));
    expect(alive()).toBe(true);
    for (let i = 0; i < 5; i++) expect((await fetch(`${base}/api/endusers`, { headers: auth })).status).toBe(200);
    expect(server.output()).toContain('PostgreSQL dropped an idle connection');
  });

  it('a statement held past its bound is a 503, not a hang', async () => {
    const blocker = new pg.Client({ connectionString: db.url });
    await blocker.connect();
    try {
      await blocker.query('begin');
      await blocker.query('lock table parley_us.end_users in access exclusive mode');
      const started = Date.now();
      const res = await fetch(`${base}/api/endusers`, { headers: auth });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(await res.json()).toEqual({ error: expect.any(String), code: 'SERVICE_UNAVAILABLE' });
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      await blocker.query('rollback');
      await blocker.end();
    }
    expect((await fetch(`${base}/api/endusers`, { headers: auth })).status).toBe(200);
  });

  it('answers 503 while PostgreSQL is down and recovers by itself when it is back', async () => {
    db.stop();
    const coded = await fetch(`${base}/api/endusers`, { headers: auth });
    const codedBody = await coded.text();
    expect(coded.status, `${codedBody}\n${server.output().slice(-2000)}`).toBe(503);
    expect(coded.headers.get('retry-after')).toBe('5');
    expect(JSON.parse(codedBody)).toEqual({ error: expect.any(String), code: 'SERVICE_UNAVAILABLE' });
    const channel = await fetch(`${base}/api/channels/send`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ channel: 'msgapp', to: '+14155550100', type: 'message', message: { text: 'hi' } }),
    });
    const channelBody = await channel.text();
    expect(channel.status, `${channelBody}\n${server.output().slice(-2000)}`).toBe(503);
    expect(JSON.parse(channelBody)).toEqual({ success: false, error: expect.any(String) });
    // Liveness needs no database.
    expect((await fetch(`${base}/api/health`)).status).toBe(200);
    expect(alive()).toBe(true);

    db.start();
    await until(
      async () => (await fetch(`${base}/api/endusers`, { headers: auth })).status === 200,
      'service to resume',
    );
    expect(alive()).toBe(true);
  });
});

/** SQLite: a write that waits on another connection's lock past the busy timeout is a 503. */
describe('SQLite busy', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp('sqlite', { env: { PARLEY_SQLITE_BUSY_TIMEOUT_MS: '300' } });
  });
  afterAll(async () => {
    await t.close();
  });

  it('a write held up by a long writer gets 503 with Retry-After, then succeeds', async () => {
    const { orgKey } = await makeTenant(t.ctx);
    const file = t.ctx.region.database.kind === 'sqlite' ? t.ctx.region.database.file : '';
    const other = new SQLite(file);
    const create = () =>
      t.app.inject({
        method: 'POST',
        url: '/api/endusers',
        headers: orgKey.auth,
        payload: { origin: 'manual', name: 'Busy Bee' },
      });
    try {
      other.exec('begin immediate');
      const res = await create();
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.json()).toEqual({ error: expect.any(String), code: 'SERVICE_UNAVAILABLE' });
    } finally {
      other.exec('rollback');
      other.close();
    }
    const ok = await create();
    expect(ok.statusCode).toBe(201);
    expect(await t.ctx.db.selectFrom('end_users').select('name').where('name', '=', 'Busy Bee').execute()).toHaveLength(
      1,
    );
  });
});
