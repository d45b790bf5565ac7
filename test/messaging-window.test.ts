import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/shared/clock.js';
import { DIALECTS } from './helpers/app.js';
import { expectMatchesContract } from './helpers/contract.js';
import { makeAgent, makeKey } from './helpers/factories.js';
import {
  createMessagingApp,
  type MessagingTestApp,
  makeSendingTenant,
  randomPhone,
  textSend,
} from './helpers/messaging.js';

const HOUR = 60 * 60 * 1000;

describe.each(DIALECTS)('the 24-hour window and the sandbox inbound helper (%s)', (dialect) => {
  let t: MessagingTestApp;
  let clock: ManualClock;
  let tenant: Awaited<ReturnType<typeof makeSendingTenant>>;
  beforeAll(async () => {
    clock = new ManualClock(Date.UTC(2026, 10, 1, 12, 0, 0));
    t = await createMessagingApp(dialect, { clock });
    tenant = await makeSendingTenant(t.ctx);
  });
  afterAll(async () => {
    await t.close();
  });

  const send = (payload: unknown, headers = tenant.agentKey.auth) =>
    t.app.inject({ method: 'POST', url: '/api/channels/send', headers, payload: payload as Record<string, unknown> });
  const inbound = (payload: Record<string, unknown>, headers: Record<string, string> = tenant.agentKey.auth) =>
    t.app.inject({ method: 'POST', url: '/api/sandbox/inbound', headers, payload });

  it('free text is refused before any inbound message, opened by one, and closed again after 24 hours', async () => {
    const user = randomPhone();
    const closed = await send(textSend(undefined, user));
    expect(closed.statusCode).toBe(400);
    expect(closed.json()).toEqual({
      success: false,
      error: `${user} has not written to this agent's number in the last 24 hours, so free text cannot be sent; use type 'template' with an approved template.`,
    });
    const before = t.sandbox.received.length;
    expect(before).toBeGreaterThanOrEqual(0);

    const res = await inbound({ from: user, text: 'Hi, where is my order?', name: 'Ada Lovelace' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true, messageId: expect.stringMatching(/^wamid\./) });
    expectMatchesContract(t.app, 'POST', '/api/sandbox/inbound', res);

    clock.advance(23 * HOUR);
    const open = await send(textSend(undefined, user, 'It ships today.'));
    expect(open.statusCode).toBe(200);
    expect(open.json()).toMatchObject({ success: true, messageType: 'message', channel: 'msgapp' });
    expect(t.sandbox.received.at(-1)?.body).toMatchObject({
      type: 'text',
      text: { preview_url: false, body: 'It ships today.' },
    });

    clock.advance(HOUR + 1000);
    const after = await send(textSend(undefined, user));
    expect(after.statusCode).toBe(400);
    expect(after.json().error).toMatch(/use type 'template'/);
    await t.settle();
  });

  it('a message of exactly 4,096 characters is sent inside the window', async () => {
    const user = randomPhone();
    expect((await inbound({ from: user, text: 'hello' })).statusCode).toBe(200);
    const res = await send(textSend(undefined, user, 'x'.repeat(4096)));
    expect(res.statusCode).toBe(200);
    await t.settle();
  });

  it("a window belongs to one number: writing to one agent's number does not open another's", async () => {
    const user = randomPhone();
    const second = await makeSendingTenant(t.ctx);
    expect((await inbound({ from: user, text: 'hi' })).statusCode).toBe(200);
    const res = await send(textSend(undefined, user), second.agentKey.auth);
    expect(res.statusCode).toBe(400);
  });

  it('an inbound message creates the end user with origin inbound, profile name and msgapp identifier', async () => {
    const user = randomPhone();
    expect((await inbound({ from: user, text: 'hello', name: 'Grace Hopper' })).statusCode).toBe(200);
    const list = await t.app.inject({
      method: 'GET',
      url: '/api/endusers?origin=inbound',
      headers: tenant.orgKey.auth,
    });
    expect(list.statusCode).toBe(200);
    const records = (list.json() as { data: Record<string, unknown>[] }).data;
    const record = records.find((r) => r.phone === user);
    expect(record).toMatchObject({
      name: 'Grace Hopper',
      phone: user,
      origin: 'inbound',
      channelIdentifiers: { msgapp: user },
      lastSeenAt: Math.floor(clock.now() / 1000) * 1000,
    });

    // Writing again later renews the window and lastSeenAt, and creates no second record.
    clock.advance(HOUR);
    expect((await inbound({ from: user, text: 'again' })).statusCode).toBe(200);
    const again = await t.app.inject({
      method: 'GET',
      url: '/api/endusers?origin=inbound',
      headers: tenant.orgKey.auth,
    });
    const same = (again.json() as { data: Record<string, unknown>[] }).data.filter((r) => r.phone === user);
    expect(same).toHaveLength(1);
    expect(same[0]?.lastSeenAt).toBe(Math.floor(clock.now() / 1000) * 1000);
  });

  it('the inbound helper follows the agent rules of a send', async () => {
    const from = randomPhone();
    const expectError = (res: Awaited<ReturnType<typeof inbound>>, status: number, error: string | RegExp) => {
      expect(res.statusCode).toBe(status);
      expect(res.json().success).toBe(false);
      expect(res.json().error).toMatch(error);
    };
    expectError(await inbound({ from, text: 'x' }, tenant.orgKey.auth), 400, /'convId' is required/);
    expectError(await inbound({ from, text: 'x', convId: tenant.other.id }), 403, /bound to another agent/);
    expectError(await inbound({ from, text: 'x', convId: 'agt_nope' }, tenant.orgKey.auth), 404, /No agent/);
    const bare = await makeAgent(t.ctx, tenant.org.id);
    expectError(await inbound({ from, text: 'x', convId: bare.id }, tenant.orgKey.auth), 400, /no messaging number/);
    expectError(await inbound({ from: '12', text: 'x' }), 400, /'from' must be a valid phone number/);
    expectError(await inbound({ text: 'x' }), 400, "Invalid body: 'from' is required.");
    expectError(await inbound({ from, text: 'x' }, {}), 401, /Missing Authorization/);
    const noChannels = await makeKey(t.ctx, tenant.org.id, { permissions: ['endusers'] });
    expectError(await inbound({ from, text: 'x', convId: tenant.agent.id }, noChannels.auth), 403, /Channels/);
    // An organization key naming the agent works.
    expect((await inbound({ from, text: 'x', convId: tenant.agent.id }, tenant.orgKey.auth)).statusCode).toBe(200);
  });
});
