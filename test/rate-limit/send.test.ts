import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBase62 } from '../../src/shared/ids.js';
import { DIALECTS, REDIS_URL } from '../helpers/app.js';
import { makeCampaignTenant, phones } from '../helpers/campaigns.js';
import { CLI_ENTRY } from '../helpers/cli.js';
import { makeKey } from '../helpers/factories.js';
import {
  createMessagingApp,
  type MessagingTestApp,
  makeSendingTenant,
  randomPhone,
  templateSend,
} from '../helpers/messaging.js';

const SEND = '/api/channels/send';

describe.each(DIALECTS)('rate limits of POST /api/channels/send, one process (%s)', (dialect) => {
  let t: MessagingTestApp;
  beforeAll(async () => {
    t = await createMessagingApp(dialect, { env: { PARLEY_SEND_RATE_LIMIT: '3', PARLEY_SEND_RATE_LIMIT_ORG: '5' } });
  });
  afterAll(async () => {
    await t.close();
  });

  const send = (auth: Record<string, string>, body: unknown) =>
    t.app.inject({ method: 'POST', url: SEND, headers: auth, payload: body as Record<string, unknown> });

  it('allows 3 sends per key, then 429 with Retry-After 60, the envelope and the RateLimit headers', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    for (const r of [2, 1, 0]) {
      const res = await send(tenant.agentKey.auth, templateSend(undefined, randomPhone()));
      expect(res.statusCode).toBe(200);
      expect(res.headers['ratelimit-policy']).toBe('"key";q=3;w=60, "org";q=5;w=60');
      expect(res.headers.ratelimit).toMatch(new RegExp(`^"key";r=${r};t=(59|60)$`));
    }
    const refused = await send(tenant.agentKey.auth, templateSend(undefined, randomPhone()));
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('60');
    expect(refused.headers['ratelimit-policy']).toBe('"key";q=3;w=60, "org";q=5;w=60');
    expect(refused.headers.ratelimit).toMatch(/^"key";r=0;t=\d+$/);
    expect(refused.json()).toEqual({
      success: false,
      error: 'Rate limit exceeded: this API key may make 3 requests per 60 seconds; retry after 60 seconds.',
    });
  });

  it('counts refused bodies too, and every answer of the route carries the headers', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const bad = await send(tenant.agentKey.auth, { channel: 'sms' });
    expect(bad.statusCode).toBe(400);
    expect(bad.headers.ratelimit).toMatch(/^"key";r=2;t=\d+$/);
    expect(bad.headers['ratelimit-policy']).toBe('"key";q=3;w=60, "org";q=5;w=60');
  });

  it('limits the organization across its keys (5), and other organizations are unaffected', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const second = await makeKey(t.ctx, tenant.org.id, { permissions: ['channels'] });
    const statuses: number[] = [];
    for (const auth of [tenant.orgKey.auth, tenant.orgKey.auth, tenant.orgKey.auth, second.auth, second.auth]) {
      statuses.push((await send(auth, templateSend(tenant.agent.id, randomPhone()))).statusCode);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    // Key `second` has used 2 of its 3, but the organization has used its 5.
    const refused = await send(second.auth, templateSend(tenant.agent.id, randomPhone()));
    expect(refused.statusCode).toBe(429);
    expect(refused.headers.ratelimit).toMatch(/^"org";r=0;t=\d+$/);
    expect(refused.json().error).toBe(
      'Rate limit exceeded: this organization may make 5 requests per 60 seconds; retry after 60 seconds.',
    );

    const other = await makeSendingTenant(t.ctx);
    const res = await send(other.agentKey.auth, templateSend(undefined, randomPhone()));
    expect(res.statusCode).toBe(200);
    expect(res.headers.ratelimit).toMatch(/^"key";r=2;t=\d+$/);
  });
});

/** Ports free right now, for child servers. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

interface Child {
  readonly process: ChildProcess;
  readonly url: string;
  output: string;
}

/** `parley serve` in a child process, on the given database and Redis, once it answers /api/health. */
async function startServe(env: Record<string, string>): Promise<Child> {
  const port = await freePort();
  const base: Record<string, string> = {};
  // Only the test's own settings: an inherited DATABASE_URL would move a SQLite run to PostgreSQL.
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !k.startsWith('PARLEY_') && !k.startsWith('DATABASE_URL') && k !== 'REDIS_URL') base[k] = v;
  }
  const child: Child = {
    process: spawn(process.execPath, [...CLI_ENTRY, 'serve', '--port', String(port)], {
      cwd: process.cwd(),
      env: { ...base, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
    url: `http://127.0.0.1:${port}`,
    output: '',
  };
  child.process.stdout?.on('data', (d: Buffer) => {
    child.output += d.toString();
  });
  child.process.stderr?.on('data', (d: Buffer) => {
    child.output += d.toString();
  });
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.process.exitCode !== null) throw new Error(`parley serve exited: ${child.output}`);
    try {
      const res = await fetch(`${child.url}/api/health`);
      if (res.ok) return child;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.process.kill('SIGKILL');
  throw new Error(`parley serve did not start: ${child.output}`);
}

async function stop(child: Child | undefined): Promise<void> {
  if (!child || child.process.exitCode !== null) return;
  const exited = new Promise((resolve) => child.process.once('exit', resolve));
  child.process.kill('SIGTERM');
  const timer = setTimeout(() => child.process.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

describe.skipIf(!REDIS_URL).each(DIALECTS)('rate limits shared through Redis by two processes (%s)', (dialect) => {
  let t: MessagingTestApp;
  let one: Child | undefined;
  let two: Child | undefined;
  const prefix = `parley-test-${randomBase62(10)}`;

  beforeAll(async () => {
    t = await createMessagingApp(dialect);
    const env = {
      ...t.env,
      REDIS_URL: REDIS_URL ?? '',
      PARLEY_REDIS_PREFIX: prefix,
      PARLEY_SEND_RATE_LIMIT: '3',
      PARLEY_SEND_RATE_LIMIT_ORG: '5',
      PARLEY_CAMPAIGN_RATE_LIMIT: '2',
      PARLEY_CAMPAIGN_RATE_LIMIT_ORG: '3',
      LOG_LEVEL: 'warn',
    };
    [one, two] = await Promise.all([startServe(env), startServe(env)]);
  }, 90_000);
  afterAll(async () => {
    await Promise.all([stop(one), stop(two)]);
    await t.close();
    const { Redis } = await import('ioredis');
    const redis = new Redis(REDIS_URL ?? '');
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  const post = (child: Child | undefined, auth: Record<string, string>, body: unknown) =>
    fetch(`${child?.url}${SEND}`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('counts one key across both processes', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const seen: string[] = [];
    for (const child of [one, two, one]) {
      const res = await post(child, tenant.agentKey.auth, templateSend(undefined, randomPhone()));
      expect(res.status).not.toBe(429);
      seen.push(res.headers.get('ratelimit') ?? '');
    }
    expect(seen.map((h) => h.replace(/;t=\d+$/, ''))).toEqual(['"key";r=2', '"key";r=1', '"key";r=0']);
    const refused = await post(two, tenant.agentKey.auth, templateSend(undefined, randomPhone()));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(refused.headers.get('ratelimit-policy')).toBe('"key";q=3;w=60, "org";q=5;w=60');
    expect(await refused.json()).toEqual({
      success: false,
      error: 'Rate limit exceeded: this API key may make 3 requests per 60 seconds; retry after 60 seconds.',
    });

    const { Redis } = await import('ioredis');
    const redis = new Redis(REDIS_URL ?? '');
    try {
      expect(await redis.get(`${prefix}:us:rl:key:${tenant.agentKey.id}`)).toBe('4');
      expect(await redis.get(`${prefix}:us:rl:org:${tenant.org.id}`)).toBe('3');
    } finally {
      await redis.quit();
    }
  });

  it('counts one organization across both processes and its keys', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const second = await makeKey(t.ctx, tenant.org.id, { permissions: ['channels'] });
    const plan: [Child | undefined, Record<string, string>][] = [
      [one, tenant.orgKey.auth],
      [two, tenant.orgKey.auth],
      [one, second.auth],
      [two, second.auth],
      [one, tenant.agentKey.auth],
    ];
    for (const [child, auth] of plan) {
      const res = await post(child, auth, templateSend(tenant.agent.id, randomPhone()));
      expect(res.status).not.toBe(429);
    }
    const refused = await post(two, tenant.agentKey.auth, templateSend(undefined, randomPhone()));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('ratelimit')).toMatch(/^"org";r=0;t=\d+$/);
  });

  it('counts the campaign endpoint’s own limits, per key and per organization, across both processes', async () => {
    const c = await makeCampaignTenant(t.ctx);
    const second = await makeKey(t.ctx, c.org.id, { scope: 'campaign', campaignId: c.campaign.id });
    const postTo = (child: Child | undefined, auth: Record<string, string>) =>
      fetch(`${child?.url}/api/campaigns/${c.campaign.id}/webhook`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ recipients: [{ to: phones(1)[0] }] }),
      });
    expect((await postTo(one, c.campaignKey.auth)).status).toBe(202);
    expect((await postTo(two, c.campaignKey.auth)).status).toBe(202);
    const byKey = await postTo(one, c.campaignKey.auth);
    expect(byKey.status).toBe(429);
    expect(byKey.headers.get('retry-after')).toBe('60');
    expect(byKey.headers.get('ratelimit-policy')).toBe('"key";q=2;w=60, "org";q=3;w=60');
    expect(((await byKey.json()) as { error: string }).error).toMatch(/this API key may make 2 requests/);
    // The organization's third request, on another key and the other process; then its fourth.
    expect((await postTo(two, second.auth)).status).toBe(202);
    const byOrg = await postTo(one, second.auth);
    expect(byOrg.status).toBe(429);
    expect(((await byOrg.json()) as { error: string }).error).toMatch(/this organization may make 3 requests/);
    // The send endpoint's counters are its own.
    const send = await post(two, c.agentKey.auth, templateSend(undefined, randomPhone()));
    expect(send.status).toBe(200);
  });
});
