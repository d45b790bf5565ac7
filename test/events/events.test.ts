import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import type { AppContext } from '../../src/context.js';
import { createEndpoint } from '../../src/events/endpoint.service.js';
import {
  EVENT_DELIVERY_QUEUE,
  emitEvent,
  emitEvents,
  enabledEndpointsOf,
  eventId,
} from '../../src/events/event.service.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { runCli } from '../helpers/cli.js';
import { makeAgent, makeOrg } from '../helpers/factories.js';
import { startReceiver } from '../helpers/receiver.js';
import { until } from '../helpers/wait.js';

const FAST = {
  PARLEY_WEBHOOK_ALLOW_PRIVATE: 'true',
  PARLEY_EVENT_RETRY_DELAYS_MS: '50,50,50',
  PARLEY_JOB_POLL_MS: '20',
};

/** A `message.status` event of the agent, with no data: enough to exercise its delivery. */
function emitStatus(ctx: AppContext, orgId: string, agentId: string) {
  return emitEvent(
    { db: ctx.db, jobs: ctx.jobs, clock: ctx.clock },
    { id: eventId('message.status', randomBase62(9)), type: 'message.status', orgId, agentId, data: {}, at: 0 },
  );
}

describe.each(DIALECTS)('event webhooks (%s)', (dialect) => {
  let t: TestApp;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    receiver = await startReceiver();
    t = await createTestApp(dialect, { env: FAST });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const deps = () => ({ db: t.ctx.db, jobs: t.ctx.jobs, clock: t.ctx.clock });
  const delivery = (id: string) =>
    t.ctx.db.selectFrom('event_deliveries').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const path = () => `/hook-${randomBase62(8)}`;

  it('signs each delivery per Standard Webhooks; a receiver verifies it with the standardwebhooks package', async () => {
    const org = await makeOrg(t.ctx);
    const agent = await makeAgent(t.ctx, org.id);
    const where = path();
    const created = await runCli(
      ['endpoint', 'create', '--org', org.id, '--url', `${receiver.url}${where}`, '--agent', agent.id, '--json'],
      t.env,
    );
    expect(created.code).toBe(0);
    const endpoint = created.json<{ id: string; url: string; agentId: string; events: string[]; secret: string }>();
    expect(endpoint).toEqual({
      id: expect.stringMatching(/^ep_/),
      url: `${receiver.url}${where}`,
      agentId: agent.id,
      events: ['*'],
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    const id = eventId('message.received', `wamid.${randomBase62(10)}`);
    const [made] = await emitEvent(deps(), {
      id,
      type: 'message.received',
      orgId: org.id,
      agentId: agent.id,
      data: { text: 'héllo ✓', from: '+14155550100' },
      at: Date.UTC(2026, 10, 23, 12),
    });
    await t.ctx.jobs.drained([EVENT_DELIVERY_QUEUE]);
    const got = receiver.received.filter((r) => r.path === where);
    expect(got).toHaveLength(1);
    const [one] = got;
    expect(one?.headers['webhook-id']).toBe(id);
    expect(one?.headers['content-type']).toBe('application/json');
    const verified = new Webhook(endpoint.secret).verify(one?.body ?? '', {
      'webhook-id': String(one?.headers['webhook-id']),
      'webhook-timestamp': String(one?.headers['webhook-timestamp']),
      'webhook-signature': String(one?.headers['webhook-signature']),
    });
    expect(verified).toEqual({
      type: 'message.received',
      timestamp: '2026-11-23T12:00:00.000Z',
      data: { text: 'héllo ✓', from: '+14155550100' },
    });
    // A forged body fails verification.
    expect(() =>
      new Webhook(endpoint.secret).verify(`${one?.body} `, {
        'webhook-id': String(one?.headers['webhook-id']),
        'webhook-timestamp': String(one?.headers['webhook-timestamp']),
        'webhook-signature': String(one?.headers['webhook-signature']),
      }),
    ).toThrow();
    expect(await delivery(made ?? '')).toMatchObject({ status: 'delivered', attempts: 1, last_status_code: 200 });
    // Raising the same event again (work that ran twice) delivers nothing more.
    expect(
      await emitEvent(deps(), { id, type: 'message.received', orgId: org.id, agentId: agent.id, data: {}, at: 0 }),
    ).toEqual([]);
  });

  it('parley endpoint list shows an organization’s endpoints; endpoint delete removes one, and it gets no more events', async () => {
    const org = await makeOrg(t.ctx);
    const agent = await makeAgent(t.ctx, org.id);
    const empty = await runCli(['endpoint', 'list', '--org', org.id], t.env);
    expect(empty.code).toBe(0);
    expect(empty.stdout.trim()).toBe('no endpoints');
    const hookPath = path();
    const allPath = path();
    const hook = await createEndpoint(t.ctx, {
      orgId: org.id,
      url: `${receiver.url}${hookPath}`,
      agentId: agent.id,
    });
    const all = await createEndpoint(t.ctx, {
      orgId: org.id,
      url: `${receiver.url}${allPath}`,
      events: 'conversation.closed',
    });
    const [listed, table] = await Promise.all([
      runCli(['endpoint', 'list', '--org', org.id, '--json'], t.env),
      runCli(['endpoint', 'list', '--org', org.id], t.env),
    ]);
    expect(listed.code, listed.stderr).toBe(0);
    const rows = listed.json<{ id: string; url: string; agentId: string | null; events: string[] }[]>();
    expect(rows.map((r) => r.id).sort()).toEqual([hook.id, all.id].sort());
    expect(rows.find((r) => r.id === hook.id)).toMatchObject({ url: `${receiver.url}${hookPath}`, agentId: agent.id });
    expect(rows.find((r) => r.id === all.id)).toMatchObject({ agentId: null, events: ['conversation.closed'] });
    expect(JSON.stringify(rows)).not.toMatch(/whsec_/);
    expect(table.stdout).toMatch(/^ID\s+URL\s+AGENT\s+EVENTS\s+STATE/m);
    expect(table.stdout).toContain(hook.id);

    const deleted = await runCli(['endpoint', 'delete', '--id', hook.id, '--json'], t.env);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.json()).toEqual({ id: hook.id, deleted: true });
    const [after, again] = await Promise.all([
      runCli(['endpoint', 'list', '--org', org.id, '--json'], t.env),
      runCli(['endpoint', 'delete', '--id', hook.id], t.env),
    ]);
    expect(after.json<{ id: string }[]>().map((r) => r.id)).toEqual([all.id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/endpoint/i);

    // An event after the deletion reaches the remaining endpoint only.
    const [made] = await emitEvent(deps(), {
      id: eventId('conversation.closed', randomBase62(10)),
      type: 'conversation.closed',
      orgId: org.id,
      agentId: agent.id,
      data: {},
      at: Date.now(),
    });
    expect(made).toBeDefined();
    await until(() => receiver.received.some((r) => r.path === allPath), 'the remaining endpoint’s delivery');
    expect(receiver.received.some((r) => r.path === hookPath)).toBe(false);
  });

  it('a receiver that fails twice then succeeds gets the same webhook-id three times', async () => {
    const org = await makeOrg(t.ctx);
    const agent = await makeAgent(t.ctx, org.id);
    const where = path();
    receiver.script(where, [500, 503, 204]);
    await createEndpoint(t.ctx, { orgId: org.id, url: `${receiver.url}${where}` });
    const id = eventId('conversation.closed', randomBase62(10));
    const [made] = await emitEvent(deps(), {
      id,
      type: 'conversation.closed',
      orgId: org.id,
      agentId: agent.id,
      data: {},
      at: Date.now(),
    });
    await until(async () => (await delivery(made ?? '')).status === 'delivered', 'the third attempt');
    const got = receiver.received.filter((r) => r.path === where);
    expect(got.map((r) => r.headers['webhook-id'])).toEqual([id, id, id]);
    expect(new Set(got.map((r) => r.body)).size).toBe(1);
    expect(await delivery(made ?? '')).toMatchObject({ status: 'delivered', attempts: 3, last_status_code: 204 });
  });

  it('a receiver that does not answer in time fails the attempt and is retried; the defaults are 15 s and the documented schedule', async () => {
    const defaults = loadConfig({}, {}).events;
    expect(defaults.timeoutMs).toBe(15_000);
    // About 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h.
    expect(defaults.retryDelaysMs).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    const silent = createServer(() => {
      // never answers
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const app = await createTestApp(dialect, { env: { ...FAST, PARLEY_EVENT_TIMEOUT_MS: '300' } });
    try {
      const org = await makeOrg(app.ctx);
      const agent = await makeAgent(app.ctx, org.id);
      const { port } = silent.address() as AddressInfo;
      await createEndpoint(app.ctx, { orgId: org.id, url: `http://127.0.0.1:${port}/hook` });
      const [made] = await emitStatus(app.ctx, org.id, agent.id);
      const row = () =>
        app.ctx.db
          .selectFrom('event_deliveries')
          .selectAll()
          .where('id', '=', made ?? '')
          .executeTakeFirstOrThrow();
      await until(async () => (await row()).attempts >= 2, 'a second attempt after the timeout');
      expect(await row()).toMatchObject({ last_error: 'no answer within 0.3 seconds', last_status_code: null });
    } finally {
      await app.close();
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('an agent-bound endpoint never sees another agent’s events; event filters hold', async () => {
    const org = await makeOrg(t.ctx);
    const mine = await makeAgent(t.ctx, org.id);
    const other = await makeAgent(t.ctx, org.id);
    const hook = path();
    const statusesOnly = path();
    await createEndpoint(t.ctx, { orgId: org.id, url: `${receiver.url}${hook}`, agentId: mine.id });
    await createEndpoint(t.ctx, {
      orgId: org.id,
      url: `${receiver.url}${statusesOnly}`,
      events: 'message.status',
    });
    // Another organization's endpoint hears nothing of this one.
    const stranger = await makeOrg(t.ctx);
    const strangerPath = path();
    await createEndpoint(t.ctx, { orgId: stranger.id, url: `${receiver.url}${strangerPath}` });
    for (const [agentId, type] of [
      [mine.id, 'message.received'],
      [other.id, 'message.received'],
      [other.id, 'message.status'],
    ] as const) {
      await emitEvent(deps(), {
        id: eventId(type, randomBase62(10)),
        type,
        orgId: org.id,
        agentId,
        data: { agentId },
        at: Date.now(),
      });
    }
    await t.ctx.jobs.drained([EVENT_DELIVERY_QUEUE]);
    const bodies = (p: string) => receiver.received.filter((r) => r.path === p).map((r) => JSON.parse(r.body));
    expect(bodies(hook)).toEqual([expect.objectContaining({ type: 'message.received', data: { agentId: mine.id } })]);
    expect(bodies(statusesOnly)).toEqual([
      expect.objectContaining({ type: 'message.status', data: { agentId: other.id } }),
    ]);
    expect(bodies(strangerPath)).toEqual([]);
  });

  it('many events at once (the endpoints read once): each wanted delivery recorded and delivered once, a repeat none', async () => {
    const org = await makeOrg(t.ctx);
    const mine = await makeAgent(t.ctx, org.id);
    const other = await makeAgent(t.ctx, org.id);
    const [all, bound, received] = [path(), path(), path()];
    const allEp = await createEndpoint(t.ctx, { orgId: org.id, url: `${receiver.url}${all}` });
    await createEndpoint(t.ctx, { orgId: org.id, url: `${receiver.url}${bound}`, agentId: mine.id });
    await createEndpoint(t.ctx, {
      orgId: org.id,
      url: `${receiver.url}${received}`,
      events: 'message.received',
    });
    const event = (agentId: string, n: number) => ({
      id: eventId('message.status', `${org.id}-${n}`),
      type: 'message.status' as const,
      orgId: org.id,
      agentId,
      data: { n },
      at: Date.now(),
    });
    const known = await enabledEndpointsOf(t.ctx.db, [org.id]);
    expect(known).toHaveLength(3);
    const made = await emitEvents(deps(), [event(mine.id, 1), event(other.id, 2), event(mine.id, 1)], known);
    // 1 to both of the agent's status endpoints, 2 to the organization-wide one; the repeat to none.
    expect(made).toHaveLength(3);
    const rows = await Promise.all(made.map(delivery));
    expect(
      rows.map((r) => [r.endpoint_id === allEp.id ? 'all' : 'bound', JSON.parse(r.payload).data.n]).sort(),
    ).toEqual([
      ['all', 1],
      ['all', 2],
      ['bound', 1],
    ]);
    // Raised again (work that ran again): nothing new.
    expect(await emitEvents(deps(), [event(mine.id, 1), event(other.id, 2)], known)).toEqual([]);
    await t.ctx.jobs.drained([EVENT_DELIVERY_QUEUE]);
    const got = (p: string) =>
      receiver.received
        .filter((r) => r.path === p)
        .map((r) => JSON.parse(r.body).data.n)
        .sort();
    expect([got(all), got(bound), got(received)]).toEqual([[1, 2], [1], []]);
    expect((await Promise.all(made.map(delivery))).map((r) => r.status)).toEqual([
      'delivered',
      'delivered',
      'delivered',
    ]);
  });

  it('410 disables the endpoint; redirects are not followed', async () => {
    const org = await makeOrg(t.ctx);
    const agent = await makeAgent(t.ctx, org.id);
    const gone = path();
    const moved = path();
    receiver.script(gone, [410]);
    receiver.script(moved, [302]);
    const goneEp = await createEndpoint(t.ctx, { orgId: org.id, url: `${receiver.url}${gone}` });
    await createEndpoint(t.ctx, { orgId: org.id, url: `${receiver.url}${moved}` });
    const made = await emitEvent(deps(), {
      id: eventId('message.status', randomBase62(10)),
      type: 'message.status',
      orgId: org.id,
      agentId: agent.id,
      data: {},
      at: Date.now(),
    });
    await t.ctx.jobs.drained([EVENT_DELIVERY_QUEUE]);
    const rows = await Promise.all(made.map(delivery));
    const byEndpoint = new Map(rows.map((r) => [r.endpoint_id, r]));
    expect(byEndpoint.get(goneEp.id)).toMatchObject({ status: 'failed', attempts: 1, last_status_code: 410 });
    const endpoint = await t.ctx.db
      .selectFrom('event_endpoints')
      .select(['disabled_at', 'disabled_reason'])
      .where('id', '=', goneEp.id)
      .executeTakeFirstOrThrow();
    expect(endpoint.disabled_reason).toBe('the endpoint answered 410 Gone');
    expect(endpoint.disabled_at).not.toBeNull();
    const redirected = rows.find((r) => r.endpoint_id !== goneEp.id);
    expect(redirected).toMatchObject({ status: 'failed', attempts: 4, last_status_code: 302 });
    expect(redirected?.last_error).toContain('redirects are not followed');
    expect(receiver.received.filter((r) => r.path === '/redirected')).toEqual([]);
    // A disabled endpoint gets no new deliveries.
    expect(
      await emitEvent(deps(), {
        id: eventId('message.status', randomBase62(10)),
        type: 'message.status',
        orgId: org.id,
        agentId: agent.id,
        data: {},
        at: Date.now(),
      }),
    ).toHaveLength(1);

    // The CLI lists the failed deliveries and replays one (same event ID).
    const failed = await runCli(['endpoint', 'deliveries', '--id', goneEp.id, '--failed', '--json'], t.env);
    expect(failed.code).toBe(0);
    expect(failed.json<{ id: string; status: string }[]>()).toEqual([
      expect.objectContaining({ id: byEndpoint.get(goneEp.id)?.id, status: 'failed', lastStatusCode: 410 }),
    ]);
    receiver.script(gone, [200]);
    expect((await runCli(['endpoint', 'enable', '--id', goneEp.id], t.env)).code).toBe(0);
    const replay = await runCli(['endpoint', 'replay', '--delivery', byEndpoint.get(goneEp.id)?.id ?? ''], t.env);
    expect(replay.code).toBe(0);
    await until(
      async () => (await delivery(byEndpoint.get(goneEp.id)?.id ?? '')).status === 'delivered',
      'the replayed delivery',
    );
  });

  it('endpoints failing for longer than the limit are disabled', async () => {
    const app = await createTestApp(dialect, { env: { ...FAST, PARLEY_EVENT_DISABLE_AFTER_MS: '1' } });
    try {
      const org = await makeOrg(app.ctx);
      const agent = await makeAgent(app.ctx, org.id);
      const where = path();
      receiver.script(where, [500]);
      const ep = await createEndpoint(app.ctx, { orgId: org.id, url: `${receiver.url}${where}` });
      await emitStatus(app.ctx, org.id, agent.id);
      await app.ctx.jobs.drained([EVENT_DELIVERY_QUEUE]);
      const row = await app.ctx.db
        .selectFrom('event_endpoints')
        .select('disabled_reason')
        .where('id', '=', ep.id)
        .executeTakeFirstOrThrow();
      expect(row.disabled_reason).toMatch(/^deliveries failed for/);
    } finally {
      await app.close();
    }
  });

  it('private, loopback and link-local addresses are refused unless allowed', async () => {
    const strict = await createTestApp(dialect, {
      env: { PARLEY_EVENT_RETRY_DELAYS_MS: '50', PARLEY_JOB_POLL_MS: '20' },
    });
    try {
      const org = await makeOrg(strict.ctx);
      const agent = await makeAgent(strict.ctx, org.id);
      const port = new URL(receiver.url).port;
      const paths = ['/x', '/y'];
      // https:// (plain http:// is refused at creation unless private addresses are allowed): the
      // guard refuses the address before any TLS handshake.
      for (const url of [
        `https://127.0.0.1:${port}/x`,
        `https://localhost:${port}/y`,
        'https://169.254.169.254/latest',
        'https://[::1]:9/z',
      ]) {
        await createEndpoint(strict.ctx, { orgId: org.id, url });
      }
      const made = await emitStatus(strict.ctx, org.id, agent.id);
      await strict.ctx.jobs.drained([EVENT_DELIVERY_QUEUE]);
      const rows = await strict.ctx.db.selectFrom('event_deliveries').selectAll().where('id', 'in', made).execute();
      expect(rows).toHaveLength(4);
      for (const row of rows) {
        expect(row.status).toBe('failed');
        expect(row.last_error).toMatch(
          /^address refused: private network: .+ is a private, loopback or link-local address/,
        );
        expect(row.attempts).toBe(1);
      }
      // The receiver is shared with the other tests (whose retries may still arrive): none of this
      // test's addresses reached it.
      expect(receiver.received.filter((r) => paths.includes(r.path))).toEqual([]);
    } finally {
      await strict.close();
    }
  });

  it('an endpoint URL must be http(s); event names must exist', async () => {
    const org = await makeOrg(t.ctx);
    const [bad, events] = await Promise.all([
      runCli(['endpoint', 'create', '--org', org.id, '--url', 'ftp://example.com/x'], t.env),
      runCli(
        ['endpoint', 'create', '--org', org.id, '--url', 'https://example.com/x', '--events', 'message.deleted'],
        t.env,
      ),
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('must be http:// or https://');
    expect(events.code).toBe(1);
    expect(events.stderr).toContain("Unknown event type 'message.deleted'");
  });

  it('after a secret rotation both secrets sign for a day', async () => {
    const org = await makeOrg(t.ctx);
    const agent = await makeAgent(t.ctx, org.id);
    const where = path();
    const ep = await createEndpoint(t.ctx, { orgId: org.id, url: `${receiver.url}${where}` });
    const rotated = await runCli(['endpoint', 'rotate-secret', '--id', ep.id, '--json'], t.env);
    expect(rotated.code).toBe(0);
    const { secret } = rotated.json<{ secret: string }>();
    expect(secret).not.toBe(ep.secret);
    await emitEvent(deps(), {
      id: eventId('message.status', randomBase62(10)),
      type: 'message.status',
      orgId: org.id,
      agentId: agent.id,
      data: {},
      at: Date.now(),
    });
    await t.ctx.jobs.drained([EVENT_DELIVERY_QUEUE]);
    const [got] = receiver.received.filter((r) => r.path === where);
    const headers = {
      'webhook-id': String(got?.headers['webhook-id']),
      'webhook-timestamp': String(got?.headers['webhook-timestamp']),
      'webhook-signature': String(got?.headers['webhook-signature']),
    };
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(new Webhook(secret).verify(got?.body ?? '', headers)).toMatchObject({ type: 'message.status' });
    expect(new Webhook(ep.secret).verify(got?.body ?? '', headers)).toMatchObject({ type: 'message.status' });
  });

  it('a restart between an event and its delivery loses nothing', async () => {
    const first = await createTestApp(dialect, { env: FAST, workJobs: false });
    const org = await makeOrg(first.ctx);
    const agent = await makeAgent(first.ctx, org.id);
    const where = path();
    await createEndpoint(first.ctx, { orgId: org.id, url: `${receiver.url}${where}` });
    const [made] = await emitStatus(first.ctx, org.id, agent.id);
    // The process stops before it delivers anything.
    const second = await createTestApp(dialect, { env: FAST, shareWith: first });
    try {
      await second.ctx.jobs.drained([EVENT_DELIVERY_QUEUE]);
      expect(receiver.received.filter((r) => r.path === where)).toHaveLength(1);
      const row = await second.ctx.db
        .selectFrom('event_deliveries')
        .select('status')
        .where('id', '=', made ?? '')
        .executeTakeFirstOrThrow();
      expect(row.status).toBe('delivered');
    } finally {
      await second.close();
      await first.close();
    }
  });
});
