import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, ParleyError, verifyEvent, WebhookVerificationError } from '../../packages/client/src/index.js';
import { createCampaign } from '../../src/campaigns/campaign.service.js';
import { createEndpoint } from '../../src/events/endpoint.service.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { DIALECTS } from '../helpers/app.js';
import { makeKey, makeTrigger } from '../helpers/factories.js';
import { startFaultyProxy } from '../helpers/faulty-proxy.js';
import { pngOf, sha256Of } from '../helpers/media.js';
import {
  createMessagingApp,
  type MessagingTestApp,
  makeSendingTenant,
  randomPhone,
  sandboxInbound,
} from '../helpers/messaging.js';
import { startReceiver } from '../helpers/receiver.js';
import { until } from '../helpers/wait.js';

/** A fetch that records what the client sent. */
function recordingFetch() {
  const calls: { url: string; method: string; idempotencyKey: string | null }[] = [];
  const fetchImpl: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    calls.push({ url: String(input), method: init?.method ?? 'GET', idempotencyKey: headers.get('idempotency-key') });
    return fetch(input, init);
  };
  return { calls, fetchImpl };
}

describe.each(DIALECTS)('@parley/client against a real server (%s)', (dialect) => {
  let t: MessagingTestApp;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    receiver = await startReceiver();
    t = await createMessagingApp(dialect, {
      env: { PARLEY_WEBHOOK_ALLOW_PRIVATE: 'true', PARLEY_JOB_POLL_MS: '20' },
    });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  it('sends, starts a trigger, reads messages and conversations, typed end to end', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    await makeTrigger(t.ctx, tenant.org.id, tenant.agent.id, 'hello');
    const client = createClient({ baseUrl: t.url, apiKey: tenant.agentKey.key });
    const to = randomPhone();
    const started = await client.triggers.start(tenant.agent.id, 'hello', { to, context: { source: 'client' } });
    expect(started).toMatchObject({ success: true, created: true, conversationId: expect.stringMatching(/^cnv_/) });
    const conversation = await client.conversations.get(started.conversationId);
    expect(conversation).toMatchObject({ id: started.conversationId, context: { source: 'client' }, status: 'open' });

    expect((await sandboxInbound(t, tenant.agentKey.auth, to, 'hi')).statusCode).toBe(200);
    const sent = await client.channels.send({
      channel: 'msgapp',
      to,
      type: 'message',
      message: { text: 'Hello back' },
    });
    expect(sent).toMatchObject({ success: true, conversationId: started.conversationId });
    const message = await client.messages.get(sent.messageId);
    expect(message).toMatchObject({ messageId: sent.messageId, type: 'message', to });
    const thread = await client.conversations.messages(started.conversationId);
    expect(thread.data.map((m) => m.direction)).toEqual(['outbound', 'inbound', 'outbound']);
    const listed = [];
    for await (const c of client.conversations.iterate({ status: 'open', limit: 1 })) listed.push(c.id);
    expect(listed).toContain(started.conversationId);
    const closed = await client.conversations.close(started.conversationId);
    expect(closed.status).toBe('closed');
  });

  it('end users: create, get, update, batch, iterate every page, delete; errors carry status, code and request ID', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const client = createClient({ baseUrl: t.url, apiKey: tenant.orgKey.key });
    const tag = `t${randomBase62(6).toLowerCase()}`;
    const made = await client.endUsers.create({ origin: 'manual', name: 'Ada', tags: [tag] });
    expect(made).toMatchObject({ _id: expect.stringMatching(/^eu_/), name: 'Ada', tags: [tag] });
    expect((await client.endUsers.get(made._id)).name).toBe('Ada');
    expect((await client.endUsers.update(made._id, { name: 'Ada L.' })).name).toBe('Ada L.');
    const batch = await client.endUsers.batch({
      origin: 'imported',
      endUsers: Array.from({ length: 4 }, (_, i) => ({ name: `B${i}`, tags: [tag] })),
    });
    expect(batch).toMatchObject({ created: 4, failed: 0 });
    const seen: string[] = [];
    for await (const u of client.endUsers.iterate({ tag, limit: 2 })) seen.push(u._id);
    expect(seen).toHaveLength(5);
    expect(new Set(seen).size).toBe(5);
    await client.endUsers.delete(made._id);
    const missing = await client.endUsers.get(made._id).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ParleyError);
    expect(missing).toMatchObject({ status: 404, code: 'NOT_FOUND', requestId: expect.any(String) });
    // Channel routes have no code: the sentence is the message.
    const refused = await client.channels
      .send({ channel: 'sms', to: randomPhone(), type: 'message', message: { text: 'x' }, convId: tenant.agent.id })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 400, code: undefined, message: expect.stringMatching(/channel/) });
  });

  it('campaigns: posts recipients with the campaign key and reads the campaign back', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const campaign = await createCampaign(t.ctx.db, t.ctx.clock, {
      orgId: tenant.org.id,
      name: 'Client test',
      agentId: tenant.agent.id,
      template: 'hello_world',
      language: 'en_US',
    });
    const key = await makeKey(t.ctx, tenant.org.id, { scope: 'campaign', campaignId: campaign.id });
    const client = createClient({ baseUrl: t.url, apiKey: key.key });
    const accepted = await client.campaigns.webhook(campaign.id, {
      recipients: [{ to: randomPhone() }, { to: 'nope' }],
    });
    expect(accepted).toMatchObject({ success: true, accepted: 1, rejected: 1 });
    const got = await client.campaigns.get(campaign.id);
    expect(got).toMatchObject({ id: campaign.id });
    await until(async () => (await client.campaigns.deliveries(campaign.id)).data.length === 1, 'the delivery');
  });

  it('verifyEvent checks a real event signature and refuses a forged body', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    await makeTrigger(t.ctx, tenant.org.id, tenant.agent.id, 'hello');
    const where = `/client-${randomBase62(8)}`;
    const endpoint = await createEndpoint(t.ctx, {
      orgId: tenant.org.id,
      url: `${receiver.url}${where}`,
      agentId: tenant.agent.id,
    });
    const client = createClient({ baseUrl: t.url, apiKey: tenant.agentKey.key });
    const started = await client.triggers.start(tenant.agent.id, 'hello', { to: randomPhone() });
    // The endpoint takes every event of the agent, and deliveries are not ordered: a status of the
    // opening message may come first. The conversation's own event is the one checked.
    const isStarted = (r: { path: string; body: string }) =>
      r.path === where && r.body.includes('"type":"conversation.started"');
    await until(() => receiver.received.some(isStarted), 'the conversation.started event');
    const got = receiver.received.find(isStarted);
    const headers = got?.headers ?? {};
    const event = await verifyEvent(got?.body ?? '', headers as Record<string, string>, endpoint.secret);
    expect(event).toMatchObject({ type: 'conversation.started', data: { conversationId: started.conversationId } });
    await expect(
      verifyEvent(`${got?.body} `, headers as Record<string, string>, endpoint.secret),
    ).rejects.toBeInstanceOf(WebhookVerificationError);
    await expect(
      verifyEvent(
        got?.body ?? '',
        headers as Record<string, string>,
        endpoint.secret,
        new Date(Date.now() + 3_600_000),
      ),
    ).rejects.toThrow(/too far/);
  });

  it('502, 503 and dropped connections: sends and GETs are retried with backoff and one Idempotency-Key; a create is not', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const proxy = await startFaultyProxy(t.url);
    try {
      const client = createClient({ baseUrl: proxy.url, apiKey: tenant.orgKey.key, retry: { backoffMs: 20 } });
      const to = randomPhone();
      const send = () =>
        client.channels.send({
          channel: 'msgapp',
          to,
          type: 'template',
          template: { name: 'hello_world', language: 'en_US' },
          convId: tenant.agent.id,
        });

      // Refused twice before Parley, then Parley sends but its answer is lost: the retry with the
      // same key gets the stored answer, and the message went out once.
      proxy.faults.push('503', 'reset', 'lost-answer');
      const sent = await send();
      const sends = proxy.requests.filter((r) => r.path === '/api/channels/send');
      expect(sends.map((r) => r.fault)).toEqual(['503', 'reset', 'lost-answer', undefined]);
      expect(new Set(sends.map((r) => r.idempotencyKey)).size).toBe(1);
      expect(sends[0]?.idempotencyKey).toMatch(/.{8,}/);
      expect(sends[2]?.upstreamStatus).toBe(200);
      const first = JSON.parse(sends[2]?.upstreamBody ?? '{}') as { messageId?: string };
      expect(sent.messageId).toBe(first.messageId);
      const thread = await client.conversations.messages(sent.conversationId ?? '');
      expect(thread.data.filter((m) => m.direction === 'outbound')).toHaveLength(1);

      // A GET is safe to repeat.
      proxy.faults.push('502', '503');
      expect((await client.messages.get(sent.messageId)).messageId).toBe(sent.messageId);
      expect(proxy.requests.slice(-3).map((r) => r.fault)).toEqual(['502', '503', undefined]);

      // A create carries no Idempotency-Key: it is not repeated, the 502 reaches the caller.
      const before = proxy.requests.length;
      proxy.faults.push('502');
      const refused = await client.endUsers.create({ origin: 'manual', name: 'Once' }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ParleyError);
      expect(refused).toMatchObject({ status: 502 });
      expect(proxy.requests.length - before).toBe(1);

      // Retries are bounded: after `retries` more attempts the last 503 is the caller's.
      proxy.faults.push('503', '503', '503', '503', '503');
      const given = await createClient({
        baseUrl: proxy.url,
        apiKey: tenant.orgKey.key,
        retry: { backoffMs: 5, retries: 2 },
      })
        .health()
        .catch((e: unknown) => e);
      expect(given).toMatchObject({ status: 503 });
      expect(proxy.requests.slice(-3).map((r) => [r.path, r.fault])).toEqual([
        ['/api/health', '503'],
        ['/api/health', '503'],
        ['/api/health', '503'],
      ]);
      proxy.faults.length = 0;
    } finally {
      await proxy.close();
    }
  });

  it('is imported by its package name, and covers the public operations and the sandbox', async () => {
    const byName = await import('@parley/client');
    const tenant = await makeSendingTenant(t.ctx);
    const client = byName.createClient({ baseUrl: t.url, apiKey: tenant.agentKey.key });
    expect(await client.health()).toMatchObject({ status: 'ok' });
    expect(await client.ready()).toMatchObject({ status: 'ready' });
    const doc = await client.openapi();
    expect(doc).toMatchObject({ openapi: expect.stringMatching(/^3\./), info: { version: '3.0.0' } });
    const from = randomPhone();
    const inbound = await client.sandbox.inbound({ from, text: 'hello from the sandbox' });
    expect(inbound).toMatchObject({ success: true, messageId: expect.any(String) });
    const conversations = await client.conversations.list({ agent: tenant.agent.id, status: 'open' });
    const opened = conversations.data[0];
    expect(opened).toBeDefined();
    const thread = await client.conversations.messages(opened?.id ?? '');
    expect(thread.data).toMatchObject([{ direction: 'inbound', text: 'hello from the sandbox' }]);
    // The agent has no hook, so people hold the conversation already; back to the bot, then handed over.
    const released = await client.conversations.release(opened?.id ?? '');
    expect(released).toMatchObject({ handler: 'bot', assignee: null, handoff: null });
    const handed = await client.conversations.handoff(opened?.id ?? '', { reason: 'asked for a human' });
    expect(handed).toMatchObject({ handler: 'human', handoff: { reason: 'asked for a human', by: 'agent' } });
    const bad = await client.sandbox.inbound({ from: 'not a phone', text: 'x' }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(byName.ParleyError);
    expect(bad).toMatchObject({ status: 400 });
  });
  it("media: uploads a file, sends it, downloads it back; marks the user's message read", async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const client = createClient({ baseUrl: t.url, apiKey: tenant.agentKey.key });
    const to = randomPhone();
    const inbound = await client.sandbox.inbound({ from: to, text: 'send me the label' });
    const png = pngOf(24, 24, [30, 60, 90]);
    const uploaded = await client.media.upload(new Blob([png], { type: 'image/png' }), { filename: 'label.png' });
    expect(uploaded).toEqual({
      id: expect.stringMatching(/^med_/),
      mimeType: 'image/png',
      size: png.length,
      sha256: sha256Of(png),
      filename: 'label.png',
    });
    expect(await client.messages.read(inbound.messageId, { typing: true })).toEqual({
      success: true,
      messageId: inbound.messageId,
      typing: true,
    });
    const sent = await client.channels.send({
      channel: 'msgapp',
      to,
      type: 'message',
      message: { text: 'Your label', media: { id: uploaded.id, kind: 'image' } },
    });
    expect(sent.success).toBe(true);
    const file = await client.media.download(uploaded.id);
    expect(file).toMatchObject({
      mimeType: 'image/png',
      size: png.length,
      sha256: sha256Of(png),
      filename: 'label.png',
    });
    expect(Buffer.from(await new Response(file.body).arrayBuffer()).equals(png)).toBe(true);
    const refused = await client.media.upload(png, { type: 'application/pdf' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ParleyError);
    expect(refused).toMatchObject({ status: 400 });
  });
});

describe.each(DIALECTS)(
  '@parley/client: a 429 is waited out and retried with the same Idempotency-Key (%s)',
  (dialect) => {
    it('retries after Retry-After (capped by maxDelayMs), once per logical call; off when asked', async () => {
      // One send per key per 2-second window: the client's capped wait (2.5 s) outlasts it.
      const t = await createMessagingApp(dialect, { env: { PARLEY_SEND_RATE_LIMIT: '1' }, rateLimitWindowSeconds: 2 });
      try {
        const tenant = await makeSendingTenant(t.ctx);
        const { calls, fetchImpl } = recordingFetch();
        const client = createClient({
          baseUrl: t.url,
          apiKey: tenant.agentKey.key,
          fetch: fetchImpl,
          retry: { maxDelayMs: 2500 },
        });
        const send = () =>
          client.channels.send({
            channel: 'msgapp',
            to: randomPhone(),
            type: 'template',
            template: { name: 'hello_world', language: 'en_US' },
          });
        await send();
        const second = await send();
        expect(second.success).toBe(true);
        const sends = calls.filter((c) => c.url.endsWith('/api/channels/send'));
        expect(sends.length).toBeGreaterThanOrEqual(3);
        const retried = sends.slice(1);
        expect(new Set(retried.map((c) => c.idempotencyKey)).size).toBe(1);
        expect(retried[0]?.idempotencyKey).not.toBe(sends[0]?.idempotencyKey);

        const noRetry = createClient({ baseUrl: t.url, apiKey: tenant.agentKey.key, retry: { retries: 0 } });
        const refused = await noRetry.channels
          .send({
            channel: 'msgapp',
            to: randomPhone(),
            type: 'template',
            template: { name: 'hello_world', language: 'en_US' },
          })
          .catch((e: unknown) => e);
        expect(refused).toBeInstanceOf(ParleyError);
        // The test's window is 2 seconds, so the API asks for at most that (60 in production).
        expect(refused).toMatchObject({ status: 429, retryAfter: expect.any(Number) });
        expect((refused as ParleyError).retryAfter).toBeGreaterThan(0);
      } finally {
        await t.close();
      }
    });
  },
);
