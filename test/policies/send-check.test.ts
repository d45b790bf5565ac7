import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateEndUser } from '../../src/end-users/end-user.service.js';
import { DIALECTS } from '../helpers/app.js';
import { expectMatchesContract } from '../helpers/contract.js';
import { makeKey } from '../helpers/factories.js';
import {
  createMessagingApp,
  type MessagingTestApp,
  makeSendingTenant,
  randomPhone,
  sandboxInbound,
} from '../helpers/messaging.js';
import { syncCatalogue } from '../helpers/policies.js';
import { sandboxLog } from '../helpers/sandbox-log.js';

type Tenant = Awaited<ReturnType<typeof makeSendingTenant>>;
interface Check {
  rule: string;
  ok: boolean;
  reason?: string;
}

describe.each(DIALECTS)('POST /api/channels/send/check (%s)', (dialect) => {
  let t: MessagingTestApp;
  let tenant: Tenant;
  let optedOut: string;
  let writing: string;
  beforeAll(async () => {
    t = await createMessagingApp(dialect, {
      env: { PARLEY_SEND_RATE_LIMIT: '20', PARLEY_SEND_RATE_LIMIT_ORG: '1000' },
    });
    tenant = await makeSendingTenant(t.ctx);
    await syncCatalogue(t, { orgId: tenant.org.id });
    writing = randomPhone();
    expect((await sandboxInbound(t, tenant.agentKey.auth, writing, 'hello')).statusCode).toBe(200);
    optedOut = randomPhone();
    const made = await t.app.inject({
      method: 'POST',
      url: '/api/channels/send',
      headers: tenant.agentKey.auth,
      payload: {
        channel: 'msgapp',
        to: optedOut,
        type: 'template',
        template: { name: 'hello_world', language: 'en_US' },
      },
    });
    expect(made.statusCode).toBe(200);
    const user = await t.ctx.db
      .selectFrom('end_users')
      .select('id')
      .where('org_id', '=', tenant.org.id)
      .where('phone', '=', optedOut)
      .executeTakeFirstOrThrow();
    await updateEndUser(t.ctx.db, t.ctx.clock, tenant.org.id, user.id, {
      consent: { msgapp: { status: 'denied', source: 'import' } },
    });
  });
  afterAll(async () => {
    await t.close();
  });

  const post = (url: string, auth: Record<string, string>, payload: Record<string, unknown>) =>
    t.app.inject({ method: 'POST', url, headers: auth, payload });
  const template = (name: string, body: string[] = [], header: string[] = []) => ({
    type: 'template',
    template: { name, language: 'en_US', parameters: { body, header } },
  });

  /** [what, the key, the body, the rule that refuses it (none: it goes)]. */
  const cases: [string, () => Record<string, string>, () => Record<string, unknown>, string | null][] = [
    ['a utility template', () => tenant.agentKey.auth, () => ({ to: randomPhone(), ...template('hello_world') }), null],
    ['an unknown template', () => tenant.agentKey.auth, () => ({ to: randomPhone(), ...template('nope') }), 'template'],
    [
      'too few body parameters',
      () => tenant.agentKey.auth,
      () => ({ to: randomPhone(), ...template('order_update', ['x'], ['A']) }),
      'parameters',
    ],
    [
      'marketing to who opted out',
      () => tenant.agentKey.auth,
      () => ({ to: optedOut, ...template('spring_sale', ['x']) }),
      'consent',
    ],
    [
      'utility to who opted out',
      () => tenant.agentKey.auth,
      () => ({ to: optedOut, ...template('hello_world') }),
      null,
    ],
    [
      'free text, window closed',
      () => tenant.agentKey.auth,
      () => ({ to: randomPhone(), type: 'message', message: { text: 'Hi' } }),
      'window',
    ],
    [
      'free text, window open',
      () => tenant.agentKey.auth,
      () => ({ to: writing, type: 'message', message: { text: 'Hi' } }),
      null,
    ],
    [
      'an unknown agent',
      () => tenant.orgKey.auth,
      () => ({ to: randomPhone(), convId: 'agt_nope', ...template('hello_world') }),
      'agent',
    ],
    [
      'an agent without a number',
      () => tenant.otherKey.auth,
      () => ({ to: randomPhone(), ...template('hello_world') }),
      'number',
    ],
  ];

  it.each(cases)('agrees with the send: %s', async (_what, auth, body, refusedBy) => {
    const payload: Record<string, unknown> = { channel: 'msgapp', ...body() };
    const checked = await post('/api/channels/send/check', auth(), payload);
    expect(checked.statusCode, checked.body).toBe(200);
    expectMatchesContract(t.app, 'POST', '/api/channels/send/check', checked);
    const { wouldSend, checks } = checked.json<{ wouldSend: boolean; checks: Check[] }>();
    expect(checks.map((c) => c.rule)).toEqual([
      'agent',
      'number',
      'window',
      'template',
      'parameters',
      'consent',
      'rate_limit',
    ]);
    const firstRefusal = checks.find((c) => !c.ok);
    expect(firstRefusal?.rule ?? null).toBe(refusedBy);
    expect(wouldSend).toBe(refusedBy === null);
    // The check sent nothing.
    if (typeof payload.to === 'string' && payload.to !== optedOut && payload.to !== writing) {
      expect(await sandboxLog(t, tenant.orgKey.auth, { to: payload.to })).toEqual([]);
    }
    const sent = await post('/api/channels/send', auth(), payload);
    if (wouldSend) expect(sent.statusCode, sent.body).toBe(200);
    else {
      expect(sent.statusCode).toBeGreaterThanOrEqual(400);
      expect(sent.json()).toEqual({ success: false, error: firstRefusal?.reason });
    }
  });

  it('answers 400, 401 and 403 as a send does', async () => {
    const bad = await post('/api/channels/send/check', tenant.agentKey.auth, {
      channel: 'sms',
      to: randomPhone(),
      type: 'message',
      message: { text: 'x' },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({
      success: false,
      error: "Unsupported channel 'sms'; the only allowed value is 'msgapp'.",
    });
    const noConv = await post('/api/channels/send/check', tenant.orgKey.auth, {
      channel: 'msgapp',
      to: randomPhone(),
      ...template('hello_world'),
    });
    expect(noConv.statusCode).toBe(400);
    expect((await post('/api/channels/send/check', {}, { channel: 'msgapp' })).statusCode).toBe(401);
    const other = await post('/api/channels/send/check', tenant.agentKey.auth, {
      channel: 'msgapp',
      to: randomPhone(),
      convId: tenant.other.id,
      ...template('hello_world'),
    });
    expect(other.statusCode).toBe(403);
    const endUsersOnly = await makeKey(t.ctx, tenant.org.id, { permissions: ['endusers'] });
    expect((await post('/api/channels/send/check', endUsersOnly.auth, { channel: 'msgapp' })).statusCode).toBe(403);
  });

  it('consumes no rate limit, and says when the limit would refuse the send', async () => {
    const key = await makeKey(t.ctx, tenant.org.id, {
      scope: 'agent',
      agentId: tenant.agent.id,
      permissions: ['channels'],
    });
    const body = { channel: 'msgapp', to: randomPhone(), ...template('hello_world') };
    for (let i = 0; i < 25; i++) {
      const res = await post('/api/channels/send/check', key.auth, body);
      expect(res.json().wouldSend).toBe(true);
    }
    let last = await post('/api/channels/send', key.auth, body);
    for (let i = 0; i < 20 && last.statusCode === 200; i++) last = await post('/api/channels/send', key.auth, body);
    expect(last.statusCode).toBe(429);
    const checked = (await post('/api/channels/send/check', key.auth, body)).json<{
      wouldSend: boolean;
      checks: Check[];
    }>();
    expect(checked.wouldSend).toBe(false);
    const limit = checked.checks.find((c) => c.rule === 'rate_limit');
    expect(limit?.ok).toBe(false);
    expect(limit?.reason).toMatch(
      /^Rate limit exceeded: this API key may make 20 requests per 60 seconds; retry after \d+ seconds\.$/,
    );
  });
});
