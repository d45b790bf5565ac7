import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setHoldingText } from '../../src/agents/agent.service.js';
import { createEndpoint } from '../../src/events/endpoint.service.js';
import { EVENT_DELIVERY_QUEUE } from '../../src/events/event.service.js';
import { BOT_FALLBACK_QUEUE, HOLDING_TEXT_QUEUE } from '../../src/jobs/queues.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { DIALECTS } from '../helpers/app.js';
import { makeKey, makeOrg, makeTrigger } from '../helpers/factories.js';
import { call } from '../helpers/http.js';
import {
  createMessagingApp,
  type MessagingTestApp,
  makeSendingTenant,
  randomPhone,
  sandboxInbound,
  textSend,
} from '../helpers/messaging.js';
import { startReceiver } from '../helpers/receiver.js';
import { until } from '../helpers/wait.js';

/** Long enough for a working hook to answer on a busy machine; short enough to wait out in a test. */
const FALLBACK_MS = 2_500;

const ENV = {
  PARLEY_WEBHOOK_ALLOW_PRIVATE: 'true',
  PARLEY_EVENT_RETRY_DELAYS_MS: '50,50,50',
  PARLEY_JOB_POLL_MS: '20',
  PARLEY_BOT_FALLBACK_MS: String(FALLBACK_MS),
};

interface Event {
  type: string;
  data: Record<string, unknown>;
}

describe.each(DIALECTS)('people in the loop: handoff, release, fallback (%s)', (dialect) => {
  let t: MessagingTestApp;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    receiver = await startReceiver();
    t = await createMessagingApp(dialect, { env: ENV });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  const events = (where: string): Event[] =>
    receiver.received.filter((r) => r.path === where).map((r) => JSON.parse(r.body) as Event);
  const eventsOf = (where: string, type: string, conversationId: string) =>
    events(where).filter((e) => e.type === type && e.data.conversationId === conversationId);
  const post = (auth: Record<string, string>, url: string, payload?: unknown) =>
    call(t, { method: 'POST', url, headers: auth, ...(payload !== undefined ? { payload } : {}) });
  const get = (auth: Record<string, string>, url: string) => call(t, { method: 'GET', url, headers: auth });
  /** Texts the sandbox (the provider) received for this phone. */
  const textsTo = (phone: string) =>
    t.sandbox.received
      .map((r) => r.body as { to?: string; type?: string; text?: { body?: string } })
      .filter((b) => b.to === phone && b.type === 'text')
      .map((b) => b.text?.body);

  /**
   * A tenant whose agent has a number, a trigger, the agent's own hook (unless `hook` is false,
   * or answering with `hookStatus`) and an endpoint of the whole organization.
   */
  async function tenant(options: { hook?: boolean; hookStatus?: number } = {}) {
    const x = await makeSendingTenant(t.ctx);
    await makeTrigger(t.ctx, x.org.id, x.agent.id, 'order_shipped');
    const hookPath = `/hook-${randomBase62(8)}`;
    const orgPath = `/org-${randomBase62(8)}`;
    if (options.hook !== false) {
      await createEndpoint(t.ctx, { orgId: x.org.id, url: `${receiver.url}${hookPath}`, agentId: x.agent.id });
      if (options.hookStatus) receiver.script(hookPath, [options.hookStatus]);
    }
    await createEndpoint(t.ctx, { orgId: x.org.id, url: `${receiver.url}${orgPath}` });
    return { ...x, hookPath, orgPath };
  }

  /** A conversation the business opened with a trigger (the bot holds it). */
  async function opened(x: Awaited<ReturnType<typeof tenant>>) {
    const to = randomPhone();
    const res = await post(x.agentKey.auth, `/api/triggers/${x.agent.id}/order_shipped`, { to });
    expect(res.statusCode, res.body).toBe(200);
    return { to, conversationId: res.json().conversationId as string, endUserId: res.json().endUserId as string };
  }

  it('handoff gives the conversation to people with its event; again is 200 unchanged; release gives it back', async () => {
    const x = await tenant();
    const { conversationId, endUserId } = await opened(x);
    const before = await get(x.orgKey.auth, `/api/conversations/${conversationId}`);
    expect(before.json()).toMatchObject({ handler: 'bot', assignee: null, handoff: null });

    const res = await post(x.agentKey.auth, `/api/conversations/${conversationId}/handoff`, {
      reason: 'asked for a human',
      note: 'Wants to change the delivery address.',
    });
    expect(res.statusCode, res.body).toBe(200);
    const handoff = { reason: 'asked for a human', note: 'Wants to change the delivery address.', by: 'agent' };
    expect(res.json()).toMatchObject({
      id: conversationId,
      status: 'open',
      handler: 'human',
      assignee: null,
      handoff: { ...handoff, at: expect.any(Number) },
    });
    const at = res.json().handoff.at as number;
    // Already with people: 200, unchanged (the same handoff), and no second event.
    const again = await post(x.orgKey.auth, `/api/conversations/${conversationId}/handoff`, { reason: 'other' });
    expect(again.statusCode).toBe(200);
    expect(again.json().handoff).toEqual({ ...handoff, at });
    expect((await get(x.agentKey.auth, `/api/conversations/${conversationId}`)).json()).toEqual(res.json());

    // Both the agent's hook and the organization's endpoint hear it, with who handles it.
    for (const where of [x.hookPath, x.orgPath]) {
      await until(() => eventsOf(where, 'conversation.handoff', conversationId).length === 1, 'conversation.handoff');
      expect(eventsOf(where, 'conversation.handoff', conversationId)[0]?.data).toEqual({
        conversationId,
        agentId: x.agent.id,
        endUserId,
        handler: 'human',
        assignee: null,
        handoff: { ...handoff, at },
        by: { type: 'agent' },
      });
    }

    // The list filters by handler and by assignee.
    const humans = await get(x.orgKey.auth, `/api/conversations?handler=human&assignee=none`);
    expect(humans.statusCode, humans.body).toBe(200);
    expect(humans.json().data.map((c: { id: string }) => c.id)).toEqual([conversationId]);
    const bots = await get(x.orgKey.auth, `/api/conversations?handler=bot`);
    expect(bots.json().data).toEqual([]);
    const assigned = await get(x.orgKey.auth, `/api/conversations?assignee=usr_nobody`);
    expect(assigned.json().data).toEqual([]);
    expect((await get(x.orgKey.auth, `/api/conversations?handler=people`)).statusCode).toBe(400);

    const released = await post(x.agentKey.auth, `/api/conversations/${conversationId}/release`);
    expect(released.statusCode, released.body).toBe(200);
    expect(released.json()).toMatchObject({ handler: 'bot', assignee: null, handoff: null });
    await until(() => eventsOf(x.orgPath, 'conversation.released', conversationId).length === 1, 'released');
    expect(eventsOf(x.orgPath, 'conversation.released', conversationId)[0]?.data).toMatchObject({
      handler: 'bot',
      handoff: null,
      by: { type: 'agent' },
    });
    // Released already: 200, as it is.
    const twice = await post(x.agentKey.auth, `/api/conversations/${conversationId}/release`);
    expect(twice.statusCode).toBe(200);
    expect(twice.json()).toEqual(released.json());
    // A handoff with no body at all is a handoff with no reason.
    const bare = await post(x.agentKey.auth, `/api/conversations/${conversationId}/handoff`);
    expect(bare.statusCode, bare.body).toBe(200);
    expect(bare.json().handoff).toMatchObject({ reason: null, note: null, by: 'agent' });
  });

  it("while people hold it, the agent's hook hears no message.received (the organization's endpoint does); after release it does again", async () => {
    const x = await tenant();
    const { to, conversationId } = await opened(x);
    expect((await post(x.agentKey.auth, `/api/conversations/${conversationId}/handoff`, {})).statusCode).toBe(200);

    const first = await sandboxInbound(t, x.agentKey.auth, to, 'Can a person help me?');
    expect(first.statusCode, first.body).toBe(200);
    await until(() => eventsOf(x.orgPath, 'message.received', conversationId).length === 1, 'org hears it');
    await t.ctx.jobs.drained([EVENT_DELIVERY_QUEUE]);
    expect(eventsOf(x.hookPath, 'message.received', conversationId)).toEqual([]);
    // The agent's key can still send.
    const sent = await post(x.agentKey.auth, '/api/channels/send', textSend(undefined, to, 'A person is coming.'));
    expect(sent.statusCode, sent.body).toBe(200);

    expect((await post(x.agentKey.auth, `/api/conversations/${conversationId}/release`)).statusCode).toBe(200);
    const second = await sandboxInbound(t, x.agentKey.auth, to, 'Thanks!');
    expect(second.statusCode).toBe(200);
    await until(() => eventsOf(x.hookPath, 'message.received', conversationId).length === 1, 'the hook hears it again');
    expect(eventsOf(x.hookPath, 'message.received', conversationId)[0]?.data).toMatchObject({ text: 'Thanks!' });
    await until(() => eventsOf(x.orgPath, 'message.received', conversationId).length >= 2, 'the org hears it too');
    expect(eventsOf(x.orgPath, 'message.received', conversationId)).toHaveLength(2);
  });

  it('bad input, closed conversations, permissions and other agents are refused in the channel envelope', async () => {
    const x = await tenant();
    const { conversationId } = await opened(x);
    const url = `/api/conversations/${conversationId}/handoff`;
    const long = await post(x.agentKey.auth, url, { reason: 'x'.repeat(201) });
    expect(long.statusCode).toBe(400);
    expect(long.json()).toEqual({ success: false, error: expect.stringContaining('reason') });
    expect((await post(x.agentKey.auth, url, { note: 'x'.repeat(2001) })).statusCode).toBe(400);
    expect((await post(x.agentKey.auth, url, { reason: 'ok', extra: 1 })).statusCode).toBe(400);
    expect((await post(x.agentKey.auth, url, { reason: 42 })).statusCode).toBe(400);
    // Nothing was handed over by the refused requests.
    expect((await get(x.orgKey.auth, `/api/conversations/${conversationId}`)).json().handler).toBe('bot');

    // Another agent's key: as if absent. Another organization's key: the same.
    const other = await post(x.otherKey.auth, url, {});
    expect(other.statusCode).toBe(404);
    expect(other.json()).toEqual({ success: false, error: expect.stringContaining(conversationId) });
    expect((await post(x.otherKey.auth, `/api/conversations/${conversationId}/release`)).statusCode).toBe(404);
    const stranger = await makeKey(t.ctx, (await makeOrg(t.ctx)).id, { permissions: ['channels'] });
    expect((await post(stranger.auth, url, {})).statusCode).toBe(404);
    // A key without Channels or Triggers, and no key at all.
    const endUsersOnly = await makeKey(t.ctx, x.org.id, { permissions: ['endusers'] });
    expect((await post(endUsersOnly.auth, url, {})).statusCode).toBe(403);
    expect((await post({}, url, {})).statusCode).toBe(401);
    expect((await get(x.orgKey.auth, `/api/conversations/${conversationId}`)).json().handler).toBe('bot');

    const closed = await post(x.orgKey.auth, `/api/conversations/${conversationId}/close`);
    expect(closed.statusCode).toBe(200);
    const late = await post(x.agentKey.auth, url, {});
    expect(late.statusCode).toBe(400);
    expect(late.json().error).toMatch(/closed/);
    expect((await post(x.agentKey.auth, `/api/conversations/${conversationId}/release`)).statusCode).toBe(400);
  });

  it('an agent with no hook: a conversation the business opened stays with the bot until the customer writes, then goes to people with the holding text, once', async () => {
    const x = await tenant({ hook: false });
    await setHoldingText(t.ctx.db, x.org.id, x.agent.id, 'Thanks! A person will answer you shortly.');
    const { to, conversationId } = await opened(x);
    await t.ctx.jobs.drained([EVENT_DELIVERY_QUEUE]);
    expect((await get(x.orgKey.auth, `/api/conversations/${conversationId}`)).json().handler).toBe('bot');

    expect((await sandboxInbound(t, x.agentKey.auth, to, 'Hello?')).statusCode).toBe(200);
    await until(
      async () => (await get(x.orgKey.auth, `/api/conversations/${conversationId}`)).json().handler === 'human',
      'the conversation with people',
    );
    const read = (await get(x.orgKey.auth, `/api/conversations/${conversationId}`)).json();
    expect(read.handoff).toEqual({ reason: 'no_bot', note: null, by: 'parley', at: expect.any(Number) });
    await until(() => textsTo(to).length === 1, 'the holding text at the provider');
    expect(textsTo(to)).toEqual(['Thanks! A person will answer you shortly.']);
    await until(() => eventsOf(x.orgPath, 'conversation.handoff', conversationId).length === 1, 'conversation.handoff');
    expect(eventsOf(x.orgPath, 'conversation.handoff', conversationId)[0]?.data).toMatchObject({
      handoff: { reason: 'no_bot', by: 'parley' },
      by: { type: 'parley' },
    });
    // message.sent tells the organization Parley sent it; the thread shows it as Parley's.
    await until(() => eventsOf(x.orgPath, 'message.sent', conversationId).length === 1, 'message.sent');
    expect(eventsOf(x.orgPath, 'message.sent', conversationId)[0]?.data).toMatchObject({
      text: 'Thanks! A person will answer you shortly.',
      sentBy: { type: 'parley' },
    });
    const thread = (await get(x.orgKey.auth, `/api/conversations/${conversationId}/messages`)).json().data as {
      text?: string;
      sentBy?: { type: string };
    }[];
    expect(thread.find((m) => m.text === 'Thanks! A person will answer you shortly.')?.sentBy).toEqual({
      type: 'parley',
    });

    // The customer writes again: still with people, no second holding text.
    expect((await sandboxInbound(t, x.agentKey.auth, to, 'Anyone?')).statusCode).toBe(200);
    await until(() => eventsOf(x.orgPath, 'message.received', conversationId).length === 2, 'second message');
    await t.ctx.jobs.drained([HOLDING_TEXT_QUEUE, EVENT_DELIVERY_QUEUE]);
    expect(textsTo(to)).toHaveLength(1);
    expect(eventsOf(x.orgPath, 'conversation.handoff', conversationId)).toHaveLength(1);
  });

  it('a hook that does not answer: the conversation goes to people after PARLEY_BOT_FALLBACK_MS (bot_unreachable), the delivery still retried; a hook that answers keeps it', async () => {
    const down = await tenant({ hookStatus: 500 });
    await setHoldingText(t.ctx.db, down.org.id, down.agent.id, 'One moment, please.');
    const up = await tenant();
    const a = await opened(down);
    const b = await opened(up);
    const sentAt = Date.now();
    expect((await sandboxInbound(t, down.agentKey.auth, a.to, 'Hello?')).statusCode).toBe(200);
    expect((await sandboxInbound(t, up.agentKey.auth, b.to, 'Hello?')).statusCode).toBe(200);
    await until(
      async () => (await get(down.orgKey.auth, `/api/conversations/${a.conversationId}`)).json().handler === 'human',
      'the fallback to people',
      30_000,
    );
    // Not before its time.
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(FALLBACK_MS);
    const read = (await get(down.orgKey.auth, `/api/conversations/${a.conversationId}`)).json();
    expect(read.handoff).toEqual({ reason: 'bot_unreachable', note: null, by: 'parley', at: expect.any(Number) });
    await until(() => textsTo(a.to).length === 1, 'the holding text');
    expect(textsTo(a.to)).toEqual(['One moment, please.']);
    // The failing hook was tried more than once for that message.
    await until(
      () => eventsOf(down.hookPath, 'message.received', a.conversationId).length >= 2,
      'the delivery retried',
    );

    // The working hook acknowledged in time: once its check has run, the bot still holds it.
    await t.ctx.jobs.drained([BOT_FALLBACK_QUEUE]);
    const kept = (await get(up.orgKey.auth, `/api/conversations/${b.conversationId}`)).json();
    expect(kept).toMatchObject({ handler: 'bot', handoff: null });
    expect(textsTo(b.to)).toEqual([]);
  });
});
