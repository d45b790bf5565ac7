import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWindow } from '../../src/messaging/window.repository.js';
import { ManualClock } from '../../src/shared/clock.js';
import { DIALECTS } from '../helpers/app.js';
import { expectMatchesContract } from '../helpers/contract.js';
import { makeAgent, makeKey } from '../helpers/factories.js';
import {
  createMessagingApp,
  dropTestData,
  endUsersWithPhone,
  failWrites,
  type MessagingTestApp,
  makeSendingTenant,
  randomPhone,
  sandboxInbound,
  textSend,
} from '../helpers/messaging.js';

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
    // Refused on Parley's own records: the provider was not called at all.
    expect(t.sandbox.received.filter((r) => (r.body as { to?: string }).to === user)).toEqual([]);
    const stored = await t.ctx.db.selectFrom('messages').selectAll().where('to_phone', '=', user).execute();
    expect(stored).toEqual([]);

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

  it('senders the provider spells another way (Brazil without the ninth digit, Mexico 521) open the window for both spellings', async () => {
    const cases = [
      { from: '+551187654321', other: '+5511987654321', endUser: '+5511987654321' },
      { from: '+5215512345678', other: '+525512345678', endUser: '+525512345678' },
    ];
    for (const c of cases) {
      const res = await inbound({ from: c.from, text: 'Olá / Hola', name: 'Ana' });
      expect(res.statusCode).toBe(200);
      const messageId = res.json().messageId as string;
      const stored = await t.ctx.db
        .selectFrom('inbound_messages')
        .select(['from_phone', 'number_id'])
        .where('provider_message_id', '=', messageId)
        .executeTakeFirstOrThrow();
      expect(stored).toEqual({ from_phone: c.from, number_id: tenant.number.id });
      expect(
        await t.ctx.db
          .selectFrom('messaging_windows')
          .select('user_phone')
          .where('number_id', '=', tenant.number.id)
          .where('user_phone', 'in', [c.from, c.other])
          .execute(),
      ).toHaveLength(1);
      // The end user is recorded under the spelling the end-user records accept.
      const users = await t.ctx.db
        .selectFrom('end_users')
        .select(['phone', 'name', 'origin'])
        .where('org_id', '=', tenant.org.id)
        .where('phone', 'in', [c.from, c.other])
        .execute();
      expect(users).toEqual([{ phone: c.endUser, name: 'Ana', origin: 'inbound' }]);
      // Free text to either spelling passes Parley's window check and the provider's (the sandbox's).
      for (const to of [c.from, c.other]) {
        const sent = await send(textSend(undefined, to, 'Obrigado!'));
        expect(sent.statusCode).toBe(200);
        expect(t.sandbox.received.at(-1)?.body).toMatchObject({ to, type: 'text' });
      }
    }
    await t.settle();
  });

  it('a sender the end-user records refuse still opens the window; no end user is recorded', async () => {
    // Valid for the send validator, not for the strict one of end users.
    const from = '+861300000000';
    const res = await inbound({ from, text: 'ni hao' });
    expect(res.statusCode).toBe(200);
    expect(
      await t.ctx.db
        .selectFrom('inbound_messages')
        .select('from_phone')
        .where('provider_message_id', '=', res.json().messageId)
        .execute(),
    ).toEqual([{ from_phone: from }]);
    expect(await endUsersWithPhone(t, tenant.org.id, from, ['id'])).toEqual([]);
    expect((await send(textSend(undefined, from, 'hello'))).statusCode).toBe(200);
    await t.settle();
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
    expectError(
      await inbound({ from: '+14155550100 ext. 5', text: 'x' }),
      400,
      /'from' must be a phone number without an extension/,
    );
    expectError(await inbound({ from, text: '   ' }), 400, "'text' must not be empty.");
    expectError(
      await inbound({ from, text: 'x', convId: '' }),
      400,
      "Invalid body: 'convId' must NOT have fewer than 1 characters.",
    );
    expectError(await inbound({ text: 'x' }), 400, "Invalid body: 'from' is required.");
    expectError(await inbound({ from, text: 'x' }, {}), 401, /Missing Authorization/);
    const noChannels = await makeKey(t.ctx, tenant.org.id, { permissions: ['endusers'] });
    expectError(await inbound({ from, text: 'x', convId: tenant.agent.id }, noChannels.auth), 403, /Channels/);
    // An organization key naming the agent works.
    expect((await inbound({ from, text: 'x', convId: tenant.agent.id }, tenant.orgKey.auth)).statusCode).toBe(200);
  });
});

describe.each(DIALECTS)('the sandbox remembers its windows (%s)', (dialect) => {
  it('across a restart of parley serve, and between two processes of one data folder', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 1, 12, 0, 0));
    const first = await createMessagingApp(dialect, { clock });
    let second: MessagingTestApp | undefined;
    let third: MessagingTestApp | undefined;
    try {
      const tenant = await makeSendingTenant(first.ctx);
      const user = randomPhone();
      const inbound = await sandboxInbound(first, tenant.agentKey.auth, user);
      expect(inbound.statusCode).toBe(200);
      await first.settle();
      // Restart: the process (with its in-process sandbox) stops, a new one starts on the same data.
      await first.app.close();
      await first.ctx.close();
      second = await createMessagingApp(dialect, { clock, shareWith: first });
      clock.advance(HOUR);
      const after = await second.app.inject({
        method: 'POST',
        url: '/api/channels/send',
        headers: tenant.agentKey.auth,
        payload: textSend(undefined, user, 'Still here?'),
      });
      expect(after.statusCode).toBe(200);
      expect(second.sandbox.received.at(-1)?.body).toMatchObject({ to: user, text: { body: 'Still here?' } });

      // A second process alongside: a user writing in through one is known to the other's sandbox.
      third = await createMessagingApp(dialect, { clock, shareWith: first });
      const other = randomPhone();
      expect((await sandboxInbound(second, tenant.agentKey.auth, other, 'hello')).statusCode).toBe(200);
      const viaThird = await third.app.inject({
        method: 'POST',
        url: '/api/channels/send',
        headers: tenant.agentKey.auth,
        payload: textSend(undefined, other, 'Hi from the other process'),
      });
      expect(viaThird.statusCode).toBe(200);
      // The provider's window closes after 24 hours there too.
      clock.advance(25 * HOUR);
      await openWindow(third.ctx.db, tenant.number.id, other, clock.now());
      const expired = await third.app.inject({
        method: 'POST',
        url: '/api/channels/send',
        headers: tenant.agentKey.auth,
        payload: textSend(undefined, other, 'Too late'),
      });
      expect(expired.statusCode).toBe(400);
      expect(expired.json().error).toMatch(/more than 24 hours have passed/);
      await second.settle();
      await third.settle();
    } finally {
      await third?.close();
      await second?.close();
      await dropTestData(first);
    }
  });
});

describe.each(DIALECTS)('POST /api/sandbox/inbound waits for its own webhook only (%s)', (dialect) => {
  it('reports a webhook whose work failed, and does not wait for other work to drain', async () => {
    const t = await createMessagingApp(dialect);
    try {
      const tenant = await makeSendingTenant(t.ctx);
      const failing = randomPhone();
      const restore = await failWrites(t, 'inbound_messages', 'INSERT', { column: 'from_phone', value: failing });
      // A long retry: the failed body stays queued for a minute.
      t.ctx.messaging.webhooks.retryDelaysMs = [60_000];
      const post = (from: string) => sandboxInbound(t, tenant.agentKey.auth, from);
      const failed = await post(failing);
      expect(failed.statusCode).toBe(502);
      expect(failed.json()).toEqual({
        success: false,
        error: expect.stringMatching(
          /^The sandbox delivered inbound message wamid\.\S+, but its webhook could not be applied; Parley retries it in the background and keeps it as a failed webhook if it keeps failing, so the 24-hour window may not be open\.$/,
        ),
      });
      expectMatchesContract(t.app, 'POST', '/api/sandbox/inbound', failed);
      expect((await send(t, tenant, failing)).statusCode).toBe(400);

      // Another user writes in while that retry is pending: answered at once, window open.
      const started = Date.now();
      const user = randomPhone();
      expect((await post(user)).statusCode).toBe(200);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect((await send(t, tenant, user)).statusCode).toBe(200);
      await restore();
    } finally {
      await t.close();
    }
  });
});

function send(t: MessagingTestApp, tenant: Awaited<ReturnType<typeof makeSendingTenant>>, to: string) {
  return t.app.inject({
    method: 'POST',
    url: '/api/channels/send',
    headers: tenant.agentKey.auth,
    payload: textSend(undefined, to, 'hello'),
  });
}
