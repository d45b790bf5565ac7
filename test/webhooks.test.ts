import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody } from '../src/sandbox/sandbox.js';
import { ManualClock } from '../src/shared/clock.js';
import { createTestApp, DIALECTS, type TestApp } from './helpers/app.js';
import { expectMatchesContract } from './helpers/contract.js';
import { makeKey } from './helpers/factories.js';
import {
  createMessagingApp,
  inboundPayload,
  type MessagingTestApp,
  makeSendingTenant,
  randomPhone,
  signedWebhook,
  startFakeProvider,
  statusPayload,
  templateSend,
} from './helpers/messaging.js';

const T0 = Date.UTC(2026, 10, 1, 12, 0, 0);

describe.each(DIALECTS)('provider webhooks (%s)', (dialect) => {
  let t: MessagingTestApp;
  let tenant: Awaited<ReturnType<typeof makeSendingTenant>>;
  const clock = new ManualClock(T0);
  beforeAll(async () => {
    // The sandbox sends no statuses here: the tests post them, in the orders they need.
    t = await createMessagingApp(dialect, {
      clock,
      webhooks: false,
      env: { PARLEY_WEBHOOK_VERIFY_TOKEN: 'verify-me' },
    });
    tenant = await makeSendingTenant(t.ctx);
  });
  afterAll(async () => {
    await t.close();
  });

  const post = async (payload: unknown) => {
    const { body, headers } = signedWebhook(t.ctx.messaging.appSecret, payload);
    const res = await t.app.inject({ method: 'POST', url: '/webhooks/msgapp', headers, payload: body });
    await t.ctx.messaging.webhooks.idle();
    return res;
  };
  const sendOne = async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/channels/send',
      headers: tenant.agentKey.auth,
      payload: templateSend(),
    });
    expect(res.statusCode).toBe(200);
    return res.json().messageId as string;
  };
  const changesOf = (p: ReturnType<typeof statusPayload>) => p.entry.flatMap((e) => e.changes);
  const getMessage = (id: string, headers: Record<string, string> = tenant.agentKey.auth) =>
    t.app.inject({ method: 'GET', url: `/api/messages/${id}`, headers });
  const pid = () => tenant.number.phoneNumberId;

  it('answers the verification handshake only with the configured token', async () => {
    const ok = await t.app.inject({
      method: 'GET',
      url: '/webhooks/msgapp?hub.mode=subscribe&hub.verify_token=verify-me&hub.challenge=1158201444',
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toBe('1158201444');
    const wrong = await t.app.inject({
      method: 'GET',
      url: '/webhooks/msgapp?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1',
    });
    expect(wrong.statusCode).toBe(403);
    const mode = await t.app.inject({
      method: 'GET',
      url: '/webhooks/msgapp?hub.mode=unsubscribe&hub.verify_token=verify-me&hub.challenge=1',
    });
    expect(mode.statusCode).toBe(403);
  });

  it('refuses a missing or bad signature with 401, and checks the raw bytes', async () => {
    const payload = inboundPayload(pid(), randomPhone(), `wamid.sig${Date.now()}`, 'Grüße, 你好 👋', 'Zoë', T0);
    const { body, headers } = signedWebhook(t.ctx.messaging.appSecret, payload);
    expect(body).toContain('\\u00fc'); // escaped as the provider does before signing

    const missing = await t.app.inject({
      method: 'POST',
      url: '/webhooks/msgapp',
      headers: { 'content-type': 'application/json' },
      payload: body,
    });
    expect(missing.statusCode).toBe(401);
    const bad = await t.app.inject({
      method: 'POST',
      url: '/webhooks/msgapp',
      headers: { ...headers, 'x-hub-signature-256': signBody('another secret', body) },
      payload: body,
    });
    expect(bad.statusCode).toBe(401);
    const malformed = await t.app.inject({
      method: 'POST',
      url: '/webhooks/msgapp',
      headers: { ...headers, 'x-hub-signature-256': 'sha256=zz' },
      payload: body,
    });
    expect(malformed.statusCode).toBe(401);
    // Signed over a re-serialised body (non-ASCII unescaped): does not match the bytes sent.
    const reserialised = await t.app.inject({
      method: 'POST',
      url: '/webhooks/msgapp',
      headers: { ...headers, 'x-hub-signature-256': signBody(t.ctx.messaging.appSecret, JSON.stringify(payload)) },
      payload: body,
    });
    expect(reserialised.statusCode).toBe(401);

    const good = await t.app.inject({ method: 'POST', url: '/webhooks/msgapp', headers, payload: body });
    expect(good.statusCode).toBe(200);
    expect(good.json()).toEqual({ received: 1 });
    await t.ctx.messaging.webhooks.idle();
    const stored = await t.ctx.db
      .selectFrom('inbound_messages')
      .select('text')
      .where('provider_message_id', '=', payload.entry[0]?.changes[0]?.value.messages[0]?.id ?? '')
      .executeTakeFirstOrThrow();
    expect(stored.text).toBe('Grüße, 你好 👋');

    const notJson = '{"object":';
    const res = await t.app.inject({
      method: 'POST',
      url: '/webhooks/msgapp',
      headers: {
        'content-type': 'application/json',
        'x-hub-signature-256': signBody(t.ctx.messaging.appSecret, notJson),
      },
      payload: notJson,
    });
    expect(res.statusCode).toBe(400);
  });

  it('statuses arriving out of order only move forward, and each is kept once in the history', async () => {
    const id = await sendOne();
    expect((await post(statusPayload(pid(), [{ id, status: 'read', timestamp: T0 + 3000 }]))).statusCode).toBe(200);
    await post(statusPayload(pid(), [{ id, status: 'delivered', timestamp: T0 + 2000 }]));
    await post(statusPayload(pid(), [{ id, status: 'sent', timestamp: T0 + 1000 }]));
    // Duplicates, also inside one webhook.
    await post(
      statusPayload(pid(), [
        { id, status: 'delivered', timestamp: T0 + 2000 },
        { id, status: 'delivered', timestamp: T0 + 2000 },
      ]),
    );
    const res = await getMessage(id);
    expect(res.statusCode).toBe(200);
    expectMatchesContract(t.app, 'GET', '/api/messages/{messageId}', res);
    const message = res.json().message;
    expect(message).toMatchObject({ messageId: id, status: 'read', channel: 'msgapp', convId: tenant.agent.id });
    expect(message.statuses.map((s: { status: string }) => s.status)).toEqual(['sent', 'delivered', 'read']);
    expect(message.statuses[0].timestamp).toBe(T0 + 1000);
  });

  it('a body is stored before it is acknowledged and cleared once applied', async () => {
    const id = await sendOne();
    const payload = statusPayload(pid(), [{ id, status: 'delivered', timestamp: T0 + 1000 }]);
    const { body, headers } = signedWebhook(t.ctx.messaging.appSecret, payload);
    const res = await t.app.inject({ method: 'POST', url: '/webhooks/msgapp', headers, payload: body });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ received: 1 });
    // Acknowledged: the raw body is in the inbox until its status has been applied.
    const stored = await t.ctx.db.selectFrom('webhook_inbox').select('body').execute();
    expect(stored.map((r) => r.body)).toContain(body);
    await t.ctx.messaging.webhooks.idle();
    expect(await t.ctx.db.selectFrom('webhook_inbox').selectAll().execute()).toEqual([]);
    expect((await getMessage(id)).json().message.status).toBe('delivered');
  });

  it('bodies left in the inbox by a stopped process are applied at the next start', async () => {
    const id = await sendOne();
    // As a crash would leave them: acknowledged to the provider, never processed.
    const body = JSON.stringify(statusPayload(pid(), [{ id, status: 'read', timestamp: T0 + 5000 }]));
    await t.ctx.db
      .insertInto('webhook_inbox')
      .values([
        { id: 'evt_leftover', body, received_at: T0 },
        { id: 'evt_garbage', body: 'not json', received_at: T0 },
      ])
      .execute();
    expect(await t.ctx.messaging.webhooks.recover()).toBe(2);
    await t.ctx.messaging.webhooks.idle();
    const message = (await getMessage(id)).json().message;
    expect(message.status).toBe('read');
    expect(message.statuses.map((s: { status: string }) => s.status)).toEqual(['read']);
    expect(await t.ctx.db.selectFrom('webhook_inbox').selectAll().execute()).toEqual([]);
  });

  it('read without delivered is fine; a late sent does not undo read', async () => {
    const id = await sendOne();
    await post(statusPayload(pid(), [{ id, status: 'read', timestamp: T0 + 2000 }]));
    await post(statusPayload(pid(), [{ id, status: 'sent', timestamp: T0 + 1000 }]));
    const message = (await getMessage(id)).json().message;
    expect(message.status).toBe('read');
    expect(message.statuses.map((s: { status: string }) => s.status)).toEqual(['sent', 'read']);
  });

  it('failed is final and carries its error', async () => {
    const id = await sendOne();
    await post(statusPayload(pid(), [{ id, status: 'sent', timestamp: T0 + 1000 }]));
    await post(
      statusPayload(pid(), [
        {
          id,
          status: 'failed',
          timestamp: T0 + 2000,
          errors: [
            {
              code: 131026,
              title: 'Message undeliverable',
              message: 'Message undeliverable',
              error_data: { details: 'Receiver is incapable of receiving this message' },
            },
          ],
        },
      ]),
    );
    await post(statusPayload(pid(), [{ id, status: 'delivered', timestamp: T0 + 3000 }]));
    const message = (await getMessage(id)).json().message;
    expect(message.status).toBe('failed');
    expect(message.error).toEqual({ code: 131026, message: 'Receiver is incapable of receiving this message' });
    const failed = message.statuses.find((s: { status: string }) => s.status === 'failed');
    expect(failed.error).toEqual({ code: 131026, message: 'Receiver is incapable of receiving this message' });
  });

  it('handles every entry, change and status of one webhook', async () => {
    const a = await sendOne();
    const b = await sendOne();
    const one = statusPayload(pid(), [{ id: a, status: 'delivered', timestamp: T0 }]);
    const two = statusPayload(pid(), [
      { id: b, status: 'sent', timestamp: T0 },
      { id: b, status: 'delivered', timestamp: T0 + 1000 },
    ]);
    const both = {
      object: 'whatsapp_business_account',
      entry: [
        { id: 'w1', changes: [...changesOf(one), ...changesOf(two)] },
        { id: 'w2', changes: changesOf(statusPayload(pid(), [{ id: a, status: 'read', timestamp: T0 + 5000 }])) },
      ],
    };
    const res = await post(both);
    expect(res.json()).toEqual({ received: 4 });
    expect((await getMessage(a)).json().message.status).toBe('read');
    expect((await getMessage(b)).json().message.status).toBe('delivered');
  });

  it('an inbound message is processed once however often it is delivered; unknown numbers are ignored', async () => {
    const from = randomPhone();
    const payload = inboundPayload(pid(), from, `wamid.dup${Date.now()}`, 'hello', 'Ada', T0);
    expect((await post(payload)).statusCode).toBe(200);
    expect((await post(payload)).statusCode).toBe(200);
    const rows = await t.ctx.db
      .selectFrom('inbound_messages')
      .select('from_phone')
      .where('from_phone', '=', from)
      .execute();
    expect(rows).toHaveLength(1);
    const users = await t.ctx.db.selectFrom('end_users').select(['origin']).where('phone', '=', from).execute();
    expect(users).toEqual([{ origin: 'inbound' }]);

    const stranger = inboundPayload('999999999', randomPhone(), `wamid.unknown${Date.now()}`, 'hi');
    expect((await post(stranger)).statusCode).toBe(200);
  });

  it('GET /api/messages: same scope rules as a send; other organizations see nothing', async () => {
    const id = await sendOne();
    expect((await getMessage(id, tenant.orgKey.auth)).statusCode).toBe(200);
    const forbidden = await getMessage(id, tenant.otherKey.auth);
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json()).toEqual({ success: false, error: 'This API key is bound to another agent.' });
    const stranger = await makeSendingTenant(t.ctx);
    const notFound = await getMessage(id, stranger.orgKey.auth);
    expect(notFound.statusCode).toBe(404);
    expect(notFound.json()).toEqual({ success: false, error: `No message with ID '${id}' in this organization.` });
    expectMatchesContract(t.app, 'GET', '/api/messages/{messageId}', notFound);
    expect((await getMessage('wamid.nothing')).statusCode).toBe(404);
    expect((await getMessage(id, {})).statusCode).toBe(401);
    const noChannels = await makeKey(t.ctx, tenant.org.id, { permissions: ['endusers'] });
    expect((await getMessage(id, noChannels.auth)).statusCode).toBe(403);
    // Parley's own message ID works too.
    const own = (await getMessage(id)).json().message.id as string;
    expect((await getMessage(own)).json().message.messageId).toBe(id);
  });
});

describe.each(DIALECTS)('statuses from the sandbox (%s)', (dialect) => {
  it('a send is followed by signed sent, delivered and read webhooks', async () => {
    const t = await createMessagingApp(dialect);
    try {
      const tenant = await makeSendingTenant(t.ctx);
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/channels/send',
        headers: tenant.agentKey.auth,
        payload: templateSend(),
      });
      await t.settle();
      const got = await t.app.inject({
        method: 'GET',
        url: `/api/messages/${res.json().messageId}`,
        headers: tenant.agentKey.auth,
      });
      const message = got.json().message;
      expect(message.status).toBe('read');
      expect(message.statuses.map((s: { status: string }) => s.status)).toEqual(['sent', 'delivered', 'read']);
    } finally {
      await t.close();
    }
  });
});

describe.each(DIALECTS)('a status before its message is stored (%s)', (dialect) => {
  it('is kept and applied when the message is stored', async () => {
    const provider = await startFakeProvider(() => ({
      status: 200,
      body: { messaging_product: 'whatsapp', messages: [{ id: 'wamid.EARLY1' }] },
    }));
    const t = await createTestApp(dialect, { env: { PARLEY_PROVIDER_BASE_URL: provider.url } });
    try {
      const tenant = await makeSendingTenant(t.ctx);
      const early = statusPayload(tenant.number.phoneNumberId, [
        { id: 'wamid.EARLY1', status: 'delivered', timestamp: Date.now() },
      ]);
      const { body, headers } = signedWebhook(t.ctx.messaging.appSecret, early);
      const ack = await t.app.inject({ method: 'POST', url: '/webhooks/msgapp', headers, payload: body });
      expect(ack.statusCode).toBe(200);
      await t.ctx.messaging.webhooks.idle();
      const before = await t.app.inject({
        method: 'GET',
        url: '/api/messages/wamid.EARLY1',
        headers: tenant.agentKey.auth,
      });
      expect(before.statusCode).toBe(404);

      const sent = await t.app.inject({
        method: 'POST',
        url: '/api/channels/send',
        headers: tenant.agentKey.auth,
        payload: templateSend(),
      });
      expect(sent.json().messageId).toBe('wamid.EARLY1');
      const after = await t.app.inject({
        method: 'GET',
        url: '/api/messages/wamid.EARLY1',
        headers: tenant.agentKey.auth,
      });
      expect(after.json().message.status).toBe('delivered');
      expect(after.json().message.statuses.map((s: { status: string }) => s.status)).toEqual(['delivered']);
      const left = await t.ctx.db.selectFrom('pending_statuses').selectAll().execute();
      expect(left).toHaveLength(0);
    } finally {
      await t.close();
      await provider.close();
    }
  });
});

describe.each(DIALECTS)('statuses racing the send (%s)', (dialect) => {
  it('a status that arrives before the provider has even answered the send is applied to the stored message', async () => {
    let t: TestApp | undefined;
    // The provider reports "delivered" (with our callback data) before it answers the send.
    const provider = await startFakeProvider(async (body) => {
      if (!t) throw new Error('no app');
      const early = statusPayload('0', [
        {
          id: 'wamid.RACE1',
          status: 'delivered',
          timestamp: Date.now(),
          callback: String(body.biz_opaque_callback_data),
        },
      ]);
      const { body: raw, headers } = signedWebhook(t.ctx.messaging.appSecret, early);
      const ack = await t.app.inject({ method: 'POST', url: '/webhooks/msgapp', headers, payload: raw });
      if (ack.statusCode !== 200) throw new Error(`webhook answered ${ack.statusCode}`);
      await t.ctx.messaging.webhooks.idle();
      return { status: 200, body: { messaging_product: 'whatsapp', messages: [{ id: 'wamid.RACE1' }] } };
    });
    t = await createTestApp(dialect, { env: { PARLEY_PROVIDER_BASE_URL: provider.url } });
    try {
      const tenant = await makeSendingTenant(t.ctx);
      const sent = await t.app.inject({
        method: 'POST',
        url: '/api/channels/send',
        headers: tenant.agentKey.auth,
        payload: templateSend(),
      });
      expect(sent.json().messageId).toBe('wamid.RACE1');
      const got = await t.app.inject({
        method: 'GET',
        url: '/api/messages/wamid.RACE1',
        headers: tenant.agentKey.auth,
      });
      // `accepted` (the send's own answer) does not undo `delivered`.
      expect(got.json().message.status).toBe('delivered');
      expect(got.json().message.statuses.map((s: { status: string }) => s.status)).toEqual(['delivered']);
    } finally {
      await t.close();
      await provider.close();
    }
  });
});
