import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyRecord } from '../../src/auth/auth.js';
import { keyCacheOf } from '../../src/auth/key-cache.js';
import { revokeKey } from '../../src/keys/key.service.js';
import { hashKey } from '../../src/keys/key-format.js';
import { assignNumber } from '../../src/numbers/number.service.js';
import { setOrganizationPlan } from '../../src/orgs/org.service.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { runCli } from '../helpers/cli.js';
import { makeKey, makeOrg } from '../helpers/factories.js';
import { makeNumber, makeSendingTenant, randomPhone, templateSend } from '../helpers/messaging.js';
import { until } from '../helpers/wait.js';

/** Creates an end user through the API; its ID. */
async function makeEndUser(t: TestApp, auth: { authorization: string }): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/endusers',
    headers: auth,
    payload: { name: 'Cached', origin: 'imported' },
  });
  expect(res.statusCode).toBe(201);
  return (res.json() as { _id: string })._id;
}

interface Outcome {
  readonly started: number;
  readonly status: number;
  readonly body: unknown;
}

/**
 * Requests from `workers` concurrent callers until stopped; each outcome keeps when its request
 * was sent, so the test can tell which ones left after a given moment.
 */
function flood(t: TestApp, authorization: string, url = '/api/endusers?limit=1', workers = 6) {
  const outcomes: Outcome[] = [];
  let stopped = false;
  const loops = Array.from({ length: workers }, async () => {
    while (!stopped) {
      const started = performance.now();
      const res = await t.app.inject({ method: 'GET', url, headers: { authorization } });
      outcomes.push({ started, status: res.statusCode, body: res.statusCode === 200 ? null : res.json() });
      // On SQLite a whole request can run in microtasks; let timers (and the test) run between them.
      await new Promise((resolve) => setImmediate(resolve));
    }
  });
  return {
    outcomes,
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

describe.each(DIALECTS)('key cache: changes seen on the very next request (%s)', (dialect) => {
  let t: TestApp;
  let env: Record<string, string>;
  const cli = (...args: string[]) => runCli(args, env);

  beforeAll(async () => {
    t = await createTestApp(dialect);
    env = { ...t.env, LOG_LEVEL: 'warn' };
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a key revoked by `parley key revoke` during a flood of requests is refused by every request sent after the CLI returns', async () => {
    const org = await makeOrg(t.ctx);
    const k = await makeKey(t.ctx, org.id, { permissions: ['endusers'] });
    const endUser = await makeEndUser(t, k.auth);
    // GET by ID, the hot read (on PostgreSQL its own query confirms the cached key).
    const load = flood(t, `Bearer ${k.key}`, `/api/endusers/${endUser}`);
    let returned = 0;
    try {
      await until(() => load.outcomes.filter((o) => o.status === 200).length >= 50, 'the flood to be served');
      const revoke = await cli('key', 'revoke', '--org', org.id, '--id', k.id);
      returned = performance.now();
      expect(revoke.code, revoke.stderr).toBe(0);
      const next = await t.app.inject({ method: 'GET', url: `/api/endusers/${endUser}`, headers: k.auth });
      expect(next.statusCode).toBe(401);
      expect(next.json()).toEqual({ error: 'This API key has been revoked.', code: 'UNAUTHORIZED' });
      await until(() => load.outcomes.filter((o) => o.started > returned).length >= 50, 'requests after the revoke');
    } finally {
      await load.stop();
    }
    expect(load.outcomes.filter((o) => o.status === 200).length).toBeGreaterThanOrEqual(50);
    for (const o of load.outcomes) expect([200, 401]).toContain(o.status);
    const late = load.outcomes.filter((o) => o.started > returned);
    expect(late.length).toBeGreaterThanOrEqual(50);
    for (const o of late) {
      expect(o).toEqual({
        started: o.started,
        status: 401,
        body: { error: 'This API key has been revoked.', code: 'UNAUTHORIZED' },
      });
    }
  }, 60_000);

  it('a plan changed to free by `parley org plan` during a flood is refused at once, and paid again at once', async () => {
    const org = await makeOrg(t.ctx);
    const k = await makeKey(t.ctx, org.id, { permissions: ['endusers'] });
    const load = flood(t, `Bearer ${k.key}`);
    let returned = 0;
    try {
      await until(() => load.outcomes.filter((o) => o.status === 200).length >= 50, 'the flood to be served');
      const free = await cli('org', 'plan', '--org', org.id, '--plan', 'free');
      returned = performance.now();
      expect(free.code, free.stderr).toBe(0);
      const next = await t.app.inject({ method: 'GET', url: '/api/endusers', headers: k.auth });
      expect(next.statusCode).toBe(403);
      expect(next.json()).toEqual({ error: 'API access requires a paid plan', code: 'FORBIDDEN' });
      await until(() => load.outcomes.filter((o) => o.started > returned).length >= 50, 'requests after the change');
    } finally {
      await load.stop();
    }
    const late = load.outcomes.filter((o) => o.started > returned);
    expect(late.length).toBeGreaterThanOrEqual(50);
    for (const o of late) expect(o.status).toBe(403);

    const paid = await cli('org', 'plan', '--org', org.id, '--plan', 'paid');
    expect(paid.code, paid.stderr).toBe(0);
    expect((await t.app.inject({ method: 'GET', url: '/api/endusers', headers: k.auth })).statusCode).toBe(200);
  }, 60_000);

  it('a revocation or plan change written by this server itself is seen on the next request', async () => {
    const org = await makeOrg(t.ctx);
    const k = await makeKey(t.ctx, org.id, { permissions: ['endusers'] });
    const other = await makeKey(t.ctx, org.id, { permissions: ['endusers'] });
    const get = (auth: { authorization: string }) =>
      t.app.inject({ method: 'GET', url: '/api/endusers', headers: auth });
    expect((await get(k.auth)).statusCode).toBe(200);
    expect((await get(other.auth)).statusCode).toBe(200);

    await revokeKey(t.ctx.db, t.ctx.clock, org.id, k.id);
    expect((await get(k.auth)).statusCode).toBe(401);
    expect((await get(other.auth)).statusCode).toBe(200);

    await setOrganizationPlan(t.ctx.db, org.id, 'free');
    expect((await get(other.auth)).statusCode).toBe(403);
    await setOrganizationPlan(t.ctx.db, org.id, 'paid');
    expect((await get(other.auth)).statusCode).toBe(200);

    // Written directly in SQL, as an operator might: the triggers bump the epoch all the same.
    await t.ctx.db.updateTable('api_keys').set({ revoked_at: 1 }).where('id', '=', other.id).execute();
    expect((await get(other.auth)).statusCode).toBe(401);
  });

  it('a transaction that revokes a key: nothing seen if rolled back, refused once committed', async () => {
    const org = await makeOrg(t.ctx);
    const k = await makeKey(t.ctx, org.id, { permissions: ['endusers'] });
    const get = () => t.app.inject({ method: 'GET', url: '/api/endusers', headers: k.auth });
    expect((await get()).statusCode).toBe(200);

    await expect(
      t.ctx.db.transaction().execute(async (trx) => {
        await trx.updateTable('api_keys').set({ revoked_at: 1 }).where('id', '=', k.id).execute();
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect((await get()).statusCode).toBe(200);

    await t.ctx.db.transaction().execute(async (trx) => {
      await trx.updateTable('api_keys').set({ revoked_at: 1 }).where('id', '=', k.id).execute();
    });
    expect((await get()).statusCode).toBe(401);
  });

  it.runIf(dialect === 'sqlite')('the cache is not trusted while a transaction is open on the connection', async () => {
    const cache = keyCacheOf<KeyRecord>(t.ctx.database);
    let reads = 0;
    const read = async (): Promise<KeyRecord> => {
      reads++;
      return {
        revoked: false,
        plan: 'paid',
        lastUsedAt: null,
        principal: { keyId: 'k', orgId: 'o', scope: 'organization', agentId: null, campaignId: null, permissions: [] },
      };
    };
    const hash = 'test-only:in-transaction';
    await cache.get(hash, read);
    await cache.get(hash, read);
    expect(reads).toBe(1);
    await t.ctx.db.transaction().execute(async () => {
      await cache.get(hash, read);
    });
    expect(reads).toBe(2);
    await cache.get(hash, read);
    expect(reads).toBe(2);
  });

  it('unrelated commits, here or in another process, keep the cache; a key change empties it', async () => {
    const org = await makeOrg(t.ctx);
    const k = await makeKey(t.ctx, org.id, { permissions: ['endusers'] });
    const cache = keyCacheOf<KeyRecord>(t.ctx.database);
    let reads = 0;
    const read = async (): Promise<KeyRecord> => {
      reads++;
      return {
        revoked: false,
        plan: 'paid',
        lastUsedAt: null,
        principal: {
          keyId: k.id,
          orgId: org.id,
          scope: 'organization',
          agentId: null,
          campaignId: null,
          permissions: [],
        },
      };
    };
    // A hash of its own: the app's requests must not be answered from this made-up record.
    const hash = `${hashKey(k.key)}:test`;
    await cache.get(hash, read);
    await cache.get(hash, read);
    expect(reads).toBe(1);

    const created = await t.app.inject({
      method: 'POST',
      url: '/api/endusers',
      headers: k.auth,
      payload: { name: 'Unrelated', origin: 'imported' },
    });
    expect(created.statusCode).toBe(201);
    const elsewhere = await runCli(['org', 'create', '--name', 'Unrelated', '--plan', 'paid'], env);
    expect(elsewhere.code, elsewhere.stderr).toBe(0);
    await cache.get(hash, read);
    expect(reads).toBe(1);

    const another = await makeKey(t.ctx, org.id, { permissions: ['endusers'] });
    await revokeKey(t.ctx.db, t.ctx.clock, org.id, another.id);
    await cache.get(hash, read);
    expect(reads).toBe(2);
  });

  it('last-used times are still recorded for keys answered from the cache', async () => {
    const org = await makeOrg(t.ctx);
    const k = await makeKey(t.ctx, org.id, { permissions: ['endusers'] });
    const lastUsed = () =>
      t.ctx.db.selectFrom('api_keys').select('last_used_at').where('id', '=', k.id).executeTakeFirstOrThrow();
    expect((await t.app.inject({ method: 'GET', url: '/api/endusers', headers: k.auth })).statusCode).toBe(200);
    const first = (await lastUsed()).last_used_at;
    expect(first).toEqual(expect.any(Number));
    await until(async () => {
      await t.app.inject({ method: 'GET', url: '/api/endusers', headers: k.auth });
      await t.ctx.lastUsed.flush();
      return ((await lastUsed()).last_used_at ?? 0) > (first ?? 0);
    }, 'a later use to be recorded');
  });
});

// Two nodes: on PostgreSQL two servers on one schema; on SQLite two servers, each with its own
// connection, on one database file (as two processes on one data folder).
describe.each(DIALECTS)('key cache: two nodes on one database (%s)', (dialect) => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    a = await createTestApp(dialect);
    b = await createTestApp(dialect, { shareWith: a, ownDataDir: dialect === 'postgres' });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('a revocation or plan change made through one node is refused on the next request to the other', async () => {
    const org = await makeOrg(a.ctx);
    const k = await makeKey(a.ctx, org.id, { permissions: ['endusers'] });
    const other = await makeKey(a.ctx, org.id, { permissions: ['endusers'] });
    const get = (t: TestApp, auth: { authorization: string }) =>
      t.app.inject({ method: 'GET', url: '/api/endusers', headers: auth });
    for (const t of [a, b]) {
      for (let i = 0; i < 3; i++) {
        expect((await get(t, k.auth)).statusCode).toBe(200);
        expect((await get(t, other.auth)).statusCode).toBe(200);
      }
    }

    await revokeKey(a.ctx.db, a.ctx.clock, org.id, k.id);
    expect((await get(b, k.auth)).statusCode).toBe(401);
    expect((await get(a, k.auth)).statusCode).toBe(401);

    await setOrganizationPlan(b.ctx.db, org.id, 'free');
    expect((await get(a, other.auth)).statusCode).toBe(403);
    expect((await get(b, other.auth)).statusCode).toBe(403);
    await setOrganizationPlan(a.ctx.db, org.id, 'paid');
    expect((await get(b, other.auth)).statusCode).toBe(200);
    expect((await get(a, other.auth)).statusCode).toBe(200);
  });

  it('GET by ID, whose own query reads the epoch: refused on the next request to either node, 404s included', async () => {
    const org = await makeOrg(a.ctx);
    const k = await makeKey(a.ctx, org.id, { permissions: ['endusers'] });
    const id = await makeEndUser(a, k.auth);
    const byId = (t: TestApp, endUser = id) =>
      t.app.inject({ method: 'GET', url: `/api/endusers/${endUser}`, headers: k.auth });
    for (const t of [a, b]) {
      for (let i = 0; i < 3; i++) {
        expect((await byId(t)).statusCode).toBe(200);
        expect((await byId(t, 'eu_unknown')).statusCode).toBe(404);
      }
    }
    await setOrganizationPlan(a.ctx.db, org.id, 'free');
    for (const t of [b, a]) {
      expect((await byId(t)).json()).toEqual({ error: 'API access requires a paid plan', code: 'FORBIDDEN' });
      expect((await byId(t, 'eu_unknown')).statusCode).toBe(403);
    }
    await setOrganizationPlan(b.ctx.db, org.id, 'paid');
    expect((await byId(a)).statusCode).toBe(200);
    expect((await byId(b)).statusCode).toBe(200);

    await revokeKey(b.ctx.db, b.ctx.clock, org.id, k.id);
    for (const t of [a, b]) {
      const res = await byId(t);
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ error: 'This API key has been revoked.', code: 'UNAUTHORIZED' });
      expect((await byId(t, 'eu_unknown')).statusCode).toBe(401);
      expect((await byId(t, 'not a valid id!')).statusCode).toBe(401);
    }
  });

  it('POST /api/channels/send reads the epoch with its recipient: a key revoked on one node is refused by the other, and nothing is sent', async () => {
    const tenant = await makeSendingTenant(a.ctx);
    const send = (t: TestApp, auth: { authorization: string }, payload: object, headers = {}) =>
      t.app.inject({ method: 'POST', url: '/api/channels/send', headers: { ...auth, ...headers }, payload });
    const stored = async () =>
      (await a.ctx.db.selectFrom('messages').select('id').where('org_id', '=', tenant.org.id).execute()).length;
    const claims = async (key: string) =>
      (await a.ctx.db.selectFrom('idempotency_keys').select('key').where('key', '=', key).execute()).length;
    const good = () => templateSend(tenant.agent.id);
    const knownPhone = randomPhone();
    // Each case: what the request gets from a live key, then from the same key cached on `node`
    // and revoked through the other node just before (the request is the first to see it).
    const cases: {
      name: string;
      payload: () => object;
      headers?: (n: number) => Record<string, string>;
      live: number;
    }[] = [
      { name: 'a send', payload: good, live: 200 },
      // Known, in a live conversation (made by its live send): on PostgreSQL the recipient read
      // would store the message too, which it must not do once the epoch has moved.
      { name: 'a send to a known recipient', payload: () => templateSend(tenant.agent.id, knownPhone), live: 200 },
      { name: 'a body the schema refuses', payload: () => ({ channel: 'msgapp' }), live: 400 },
      { name: 'an unknown agent', payload: () => templateSend('agt_unknown'), live: 404 },
      {
        name: 'an idempotent send',
        payload: good,
        headers: (n) => ({ 'idempotency-key': `cached-revoked-${dialect}-${n}` }),
        live: 200,
      },
    ];
    let n = 0;
    for (const node of [a, b]) {
      const other = node === a ? b : a;
      for (const c of cases) {
        const k = await makeKey(a.ctx, tenant.org.id, { permissions: ['channels'] });
        // Cached on both nodes, by sends that went through.
        for (const t of [a, b]) expect((await send(t, k.auth, good())).statusCode).toBe(200);
        expect((await send(node, k.auth, c.payload(), c.headers?.(n++))).statusCode, c.name).toBe(c.live);
        await revokeKey(other.ctx.db, other.ctx.clock, tenant.org.id, k.id);
        const before = await stored();
        const idempotencyKey = c.headers?.(n++);
        const res = await send(node, k.auth, c.payload(), idempotencyKey);
        expect(res.statusCode, `${c.name} on ${node === a ? 'a' : 'b'}`).toBe(401);
        expect(res.json()).toEqual({ success: false, error: 'This API key has been revoked.' });
        expect(await stored(), c.name).toBe(before);
        if (idempotencyKey) expect(await claims(idempotencyKey['idempotency-key'] ?? '')).toBe(0);
      }
    }
  });

  it('a send to a known recipient goes from the number assigned through the other node a moment before', async () => {
    const tenant = await makeSendingTenant(a.ctx);
    const to = randomPhone();
    const send = (t: TestApp) =>
      t.app.inject({
        method: 'POST',
        url: '/api/channels/send',
        headers: tenant.agentKey.auth,
        payload: templateSend(undefined, to),
      });
    const numberOf = async (messageId: string) =>
      (
        await a.ctx.db
          .selectFrom('messages')
          .select('number_id')
          .where('provider_message_id', '=', messageId)
          .executeTakeFirstOrThrow()
      ).number_id;
    // Key and number cached on both nodes; the recipient known, in a live conversation.
    for (const t of [a, b, a, b]) expect((await send(t)).statusCode).toBe(200);
    const first = (await send(a)).json();
    expect(await numberOf(first.messageId)).toBe(tenant.number.id);

    const next = await makeNumber(a.ctx, tenant.org.id);
    await assignNumber(b.ctx.db, tenant.org.id, tenant.agent.id, next.phone);
    const res = await send(a);
    expect(res.statusCode).toBe(200);
    expect(res.json().conversationId).toBe(first.conversationId);
    expect(await numberOf(res.json().messageId)).toBe(next.id);
    const stored = await a.ctx.db
      .selectFrom('messages')
      .select('id')
      .where('conversation_id', '=', first.conversationId)
      .execute();
    expect(stored).toHaveLength(6);
  });

  it('GET /api/messages/:id and /api/conversations/:id read the epoch too: a revocation on one node is refused on the other', async () => {
    const tenant = await makeSendingTenant(a.ctx);
    const k = tenant.orgKey;
    const sent = await a.app.inject({
      method: 'POST',
      url: '/api/channels/send',
      headers: k.auth,
      payload: templateSend(tenant.agent.id),
    });
    expect(sent.statusCode).toBe(200);
    const { messageId, conversationId } = sent.json() as { messageId: string; conversationId: string };
    const urls = [
      `/api/messages/${messageId}`,
      `/api/conversations/${conversationId}`,
      '/api/messages/wamid.unknown',
      '/api/conversations/cnv_unknown',
    ];
    const get = (t: TestApp, url: string) => t.app.inject({ method: 'GET', url, headers: k.auth });
    for (const t of [a, b]) {
      for (let i = 0; i < 3; i++) {
        expect((await get(t, urls[0] ?? '')).json().message.messageId).toBe(messageId);
        expect((await get(t, urls[1] ?? '')).json().id).toBe(conversationId);
        expect((await get(t, urls[2] ?? '')).statusCode).toBe(404);
        expect((await get(t, urls[3] ?? '')).statusCode).toBe(404);
      }
    }
    // An agent key of another agent: the conversation is absent for it, the message refused.
    expect((await a.app.inject({ method: 'GET', url: urls[1] ?? '', headers: tenant.otherKey.auth })).statusCode).toBe(
      404,
    );
    expect((await b.app.inject({ method: 'GET', url: urls[0] ?? '', headers: tenant.otherKey.auth })).statusCode).toBe(
      403,
    );

    await revokeKey(b.ctx.db, b.ctx.clock, tenant.org.id, k.id);
    for (const t of [a, b]) {
      for (const url of urls) {
        const res = await get(t, url);
        expect(res.statusCode, `${t === a ? 'a' : 'b'} ${url}`).toBe(401);
        expect(res.json()).toEqual({ success: false, error: 'This API key has been revoked.' });
      }
    }
  });
});
