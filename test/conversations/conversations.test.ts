import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndpoint } from '../../src/events/endpoint.service.js';
import { EVENT_DELIVERY_QUEUE } from '../../src/events/event.service.js';
import { assignNumber } from '../../src/numbers/number.service.js';
import { MAGIC_NUMBERS } from '../../src/sandbox/index.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { DIALECTS } from '../helpers/app.js';
import { runCli } from '../helpers/cli.js';
import { startExampleBot } from '../helpers/example-bot.js';
import { makeKey, makeTrigger } from '../helpers/factories.js';
import { call } from '../helpers/http.js';
import {
  createMessagingApp,
  endUsersWithPhone,
  type MessagingTestApp,
  makeNumber,
  makeSendingTenant,
  postWebhook,
  randomPhone,
  sandboxInbound,
  statusPayload,
  templateSend,
  textSend,
} from '../helpers/messaging.js';
import { startReceiver } from '../helpers/receiver.js';
import { until } from '../helpers/wait.js';

const FAST = {
  PARLEY_WEBHOOK_ALLOW_PRIVATE: 'true',
  PARLEY_EVENT_RETRY_DELAYS_MS: '50,50,50',
  PARLEY_JOB_POLL_MS: '20',
};

interface Event {
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

describe.each(DIALECTS)('triggers, conversations and their events (%s)', (dialect) => {
  let t: MessagingTestApp;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    receiver = await startReceiver();
    t = await createMessagingApp(dialect, { env: FAST });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  /** A tenant whose agent has a number, a trigger `order_shipped` and a hook (an endpoint bound to the agent). */
  async function tenantWithHook() {
    const tenant = await makeSendingTenant(t.ctx);
    const trigger = await makeTrigger(t.ctx, tenant.org.id, tenant.agent.id, 'order_shipped');
    const where = `/hook-${randomBase62(8)}`;
    const hook = await createEndpoint(t.ctx, {
      orgId: tenant.org.id,
      url: `${receiver.url}${where}`,
      agentId: tenant.agent.id,
    });
    return { ...tenant, trigger, where, hook };
  }

  const events = (where: string): Event[] =>
    receiver.received.filter((r) => r.path === where).map((r) => JSON.parse(r.body) as Event);
  const eventsOf = (where: string, type: string, conversationId?: string) =>
    events(where).filter((e) => e.type === type && (!conversationId || e.data.conversationId === conversationId));

  const start = (
    auth: Record<string, string>,
    agentId: string,
    triggerId: string,
    payload: unknown,
    headers: Record<string, string> = {},
  ) =>
    call(t, {
      method: 'POST',
      url: `/api/triggers/${agentId}/${triggerId}`,
      headers: { ...auth, ...headers },
      payload: payload as Record<string, unknown>,
    });
  const get = (auth: Record<string, string>, url: string) => call(t, { method: 'GET', url, headers: auth });

  it('a trigger opens a conversation, makes the end user from endUser, keeps the context, and tells the hook (signed)', async () => {
    const x = await tenantWithHook();
    const to = randomPhone();
    const email = `ada-${randomBase62(6).toLowerCase()}@example.com`;
    const res = await start(x.orgKey.auth, x.agent.id, 'order_shipped', {
      to,
      endUser: { name: 'Ada Lovelace', email, tags: ['vip'] },
      context: { orderId: 'A-1042', items: [1, 2] },
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toEqual({
      success: true,
      conversationId: expect.stringMatching(/^cnv_/),
      endUserId: expect.stringMatching(/^eu_/),
      messageId: expect.stringMatching(/^wamid\./),
      created: true,
    });
    expect(res.headers.ratelimit).toBeDefined();

    const endUser = await get(x.orgKey.auth, `/api/endusers/${body.endUserId}`);
    expect(endUser.json()).toMatchObject({ name: 'Ada Lovelace', email, phone: to, tags: ['vip'], origin: 'manual' });

    const conversation = await get(x.orgKey.auth, `/api/conversations/${body.conversationId}`);
    expect(conversation.statusCode).toBe(200);
    expect(conversation.json()).toEqual({
      id: body.conversationId,
      agentId: x.agent.id,
      endUserId: body.endUserId,
      triggerId: 'order_shipped',
      campaignId: null,
      status: 'open',
      context: { orderId: 'A-1042', items: [1, 2] },
      startedAt: expect.any(Number),
      lastMessageAt: expect.any(Number),
      closedAt: null,
      handler: 'bot',
      assignee: null,
      handoff: null,
    });

    await until(() => eventsOf(x.where, 'conversation.started').length === 1, 'conversation.started at the hook');
    const delivered = receiver.received.find(
      (r) => r.path === x.where && (JSON.parse(r.body) as Event).type === 'conversation.started',
    );
    const verified = new Webhook(x.hook.secret).verify(delivered?.body ?? '', {
      'webhook-id': String(delivered?.headers['webhook-id']),
      'webhook-timestamp': String(delivered?.headers['webhook-timestamp']),
      'webhook-signature': String(delivered?.headers['webhook-signature']),
    }) as Event;
    expect(verified.data).toEqual({
      conversationId: body.conversationId,
      agentId: x.agent.id,
      triggerId: 'order_shipped',
      campaignId: null,
      endUser: { id: body.endUserId, name: 'Ada Lovelace', phone: to, email },
      context: { orderId: 'A-1042', items: [1, 2] },
      messageId: body.messageId,
      handler: 'bot',
      assignee: null,
      handoff: null,
    });

    // Again for the same phone: the open conversation is reused, the record is not overwritten.
    const again = await start(x.agentKey.auth, x.agent.id, 'order_shipped', { to, endUser: { name: 'Someone Else' } });
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json()).toMatchObject({
      conversationId: body.conversationId,
      endUserId: body.endUserId,
      created: false,
    });
    expect(again.json().messageId).not.toBe(body.messageId);
    expect((await endUsersWithPhone(t, x.org.id, to, ['name'])).map((u) => u.name)).toEqual(['Ada Lovelace']);
    await t.ctx.jobs.drained([EVENT_DELIVERY_QUEUE]);
    expect(eventsOf(x.where, 'conversation.started', body.conversationId)).toHaveLength(1);
  });

  it('the loop: started, the user replies, the hook hears it, the agent answers, the thread reads back in order', async () => {
    const x = await tenantWithHook();
    const to = randomPhone();
    const started = await start(x.agentKey.auth, x.agent.id, 'order_shipped', { to });
    expect(started.statusCode, started.body).toBe(200);
    const { conversationId, endUserId, messageId: openingId } = started.json();

    const inbound = await sandboxInbound(t, x.agentKey.auth, to, 'Where is my order?');
    expect(inbound.statusCode, inbound.body).toBe(200);
    await until(() => eventsOf(x.where, 'message.received', conversationId).length === 1, 'message.received');
    const [received] = eventsOf(x.where, 'message.received', conversationId);
    expect(received?.data).toEqual({
      conversationId,
      agentId: x.agent.id,
      endUserId,
      from: to,
      messageId: inbound.json().messageId,
      type: 'text',
      text: 'Where is my order?',
    });

    const answer = await call(t, {
      method: 'POST',
      url: '/api/channels/send',
      headers: x.agentKey.auth,
      payload: textSend(undefined, to, 'It ships today'),
    });
    expect(answer.statusCode, answer.body).toBe(200);
    expect(answer.json().conversationId).toBe(conversationId);
    await t.settle();

    const thread = await get(x.agentKey.auth, `/api/conversations/${conversationId}/messages`);
    expect(thread.statusCode, thread.body).toBe(200);
    expect(thread.json()).toEqual({
      data: [
        {
          id: expect.stringMatching(/^msg_/),
          direction: 'outbound',
          type: 'template',
          template: { name: 'hello_world', language: 'en_US' },
          messageId: openingId,
          status: 'read',
          sentBy: { type: 'agent' },
          createdAt: expect.any(Number),
        },
        {
          id: inbound.json().messageId,
          direction: 'inbound',
          type: 'message',
          text: 'Where is my order?',
          inboundType: 'text',
          messageId: inbound.json().messageId,
          createdAt: expect.any(Number),
        },
        {
          id: expect.stringMatching(/^msg_/),
          direction: 'outbound',
          type: 'message',
          text: 'It ships today',
          messageId: answer.json().messageId,
          status: 'read',
          sentBy: { type: 'agent' },
          createdAt: expect.any(Number),
        },
      ],
      nextCursor: null,
    });
    // Page by page, one at a time: the same messages in the same order.
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = cursor ? `&cursor=${cursor}` : '';
      const page = await get(x.orgKey.auth, `/api/conversations/${conversationId}/messages?limit=1${q}`);
      expect(page.statusCode, page.body).toBe(200);
      ids.push(...page.json().data.map((m: { id: string }) => m.id));
      cursor = page.json().nextCursor;
    } while (cursor);
    expect(ids).toEqual(thread.json().data.map((m: { id: string }) => m.id));

    // Every status of the agent's messages reached the hook, with the conversation.
    await until(
      () => eventsOf(x.where, 'message.status', conversationId).length === 6,
      'three statuses of each of the two outbound messages',
    );
    expect(
      eventsOf(x.where, 'message.status', conversationId)
        .filter((e) => e.data.messageId === openingId)
        .map((e) => e.data.status)
        .sort(),
    ).toEqual(['delivered', 'read', 'sent']);
  });

  it('message.status reaches the hook with the provider’s error when a message fails; updatedSince filters the list', async () => {
    const x = await tenantWithHook();
    const to = randomPhone();
    const started = await start(x.orgKey.auth, x.agent.id, 'order_shipped', { to });
    expect(started.statusCode, started.body).toBe(200);
    const { conversationId, messageId } = started.json() as { conversationId: string; messageId: string };
    const failed = await postWebhook(
      t,
      statusPayload(x.number.phoneNumberId, [
        {
          id: messageId,
          status: 'failed',
          timestamp: Date.now(),
          errors: [{ code: 131026, title: 'Message undeliverable', message: 'Message undeliverable' }],
        },
      ]),
    );
    expect(failed.statusCode).toBe(200);
    await until(
      () => eventsOf(x.where, 'message.status', conversationId).some((e) => e.data.status === 'failed'),
      'the failed status at the hook',
    );
    const event = eventsOf(x.where, 'message.status', conversationId).find((e) => e.data.status === 'failed');
    expect(event?.data).toMatchObject({
      conversationId,
      agentId: x.agent.id,
      messageId,
      status: 'failed',
      error: { code: 131026, message: expect.stringMatching(/undeliverable/) },
    });

    // updatedSince: conversations touched at or after the time; later ones only.
    const conversation = await get(x.orgKey.auth, `/api/conversations/${conversationId}`);
    const lastMessageAt = conversation.json().lastMessageAt as number;
    const list = (since: number) =>
      get(x.orgKey.auth, `/api/conversations?agent=${x.agent.id}&updatedSince=${since}&limit=100`);
    const before = await list(lastMessageAt - 1);
    expect(before.statusCode, before.body).toBe(200);
    expect(before.json().data.map((c: { id: string }) => c.id)).toContain(conversationId);
    const after = await list(Date.now() + 60_000);
    expect(after.statusCode).toBe(200);
    expect(after.json().data).toEqual([]);
    const bad = await get(x.orgKey.auth, '/api/conversations?updatedSince=yesterday');
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ success: false, error: expect.stringMatching(/updatedSince/) });
  });

  it('the example echo bot answers every message, verified with standardwebhooks, through the sandbox', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    await makeTrigger(t.ctx, tenant.org.id, tenant.agent.id, 'hello');
    const { stop } = await startExampleBot(t, tenant, 'echo-bot.mjs', 'echo bot on');
    try {
      const to = randomPhone();
      const started = await start(tenant.agentKey.auth, tenant.agent.id, 'hello', { to });
      expect(started.statusCode, started.body).toBe(200);
      const inbound = await sandboxInbound(t, tenant.agentKey.auth, to, 'ping');
      expect(inbound.statusCode, inbound.body).toBe(200);
      const { conversationId } = started.json();
      await until(async () => {
        const thread = await get(tenant.agentKey.auth, `/api/conversations/${conversationId}/messages`);
        return thread.json().data.some((m: { text?: string }) => m.text === 'You said: ping');
      }, "the bot's answer in the thread");
      const thread = await get(tenant.agentKey.auth, `/api/conversations/${conversationId}/messages`);
      expect(
        thread.json().data.map((m: { direction: string; text?: string }) => [m.direction, m.text ?? null]),
      ).toEqual([
        ['outbound', null],
        ['inbound', 'ping'],
        ['outbound', 'You said: ping'],
      ]);
    } finally {
      stop();
    }
  });

  it('the error table of a trigger, each in the {"success": false, "error"} envelope; nothing left behind', async () => {
    const x = await tenantWithHook();
    const expectError = (
      res: { statusCode: number; json(): unknown; body: string },
      status: number,
      match?: RegExp,
    ) => {
      expect(res.statusCode, res.body).toBe(status);
      expect(res.json()).toEqual({ success: false, error: match ? expect.stringMatching(match) : expect.any(String) });
    };
    const to = randomPhone();
    const channelsOnly = await makeKey(t.ctx, x.org.id, { permissions: ['channels'] });
    expectError(await start(channelsOnly.auth, x.agent.id, 'order_shipped', { to }), 403, /Triggers/);
    const otherAgentKey = await makeKey(t.ctx, x.org.id, {
      scope: 'agent',
      agentId: x.other.id,
      permissions: ['triggers'],
    });
    expectError(await start(otherAgentKey.auth, x.agent.id, 'order_shipped', { to }), 403, /another agent/);
    expectError(await start(x.orgKey.auth, `agt_${randomBase62(22)}`, 'order_shipped', { to }), 404, /No agent/);
    expectError(await start(x.orgKey.auth, x.agent.id, 'no_such_trigger', { to }), 404, /no trigger/);
    // A trigger of another agent is not this agent's.
    await makeTrigger(t.ctx, x.org.id, x.other.id, 'other_only');
    expectError(await start(x.orgKey.auth, x.agent.id, 'other_only', { to }), 404, /no trigger/);
    // Bad bodies.
    expectError(await start(x.orgKey.auth, x.agent.id, 'order_shipped', {}), 400, /to/);
    expectError(await start(x.orgKey.auth, x.agent.id, 'order_shipped', { to: 'not a phone' }), 400, /'to'/);
    expectError(await start(x.orgKey.auth, x.agent.id, 'order_shipped', { to, channel: 'sms' }), 400, /channel/);
    expectError(await start(x.orgKey.auth, x.agent.id, 'order_shipped', { to, extra: 1 }), 400);
    expectError(
      await start(x.orgKey.auth, x.agent.id, 'order_shipped', { to, parameters: { body: [' '] } }),
      400,
      /parameters\.body\.0/,
    );
    expectError(
      await start(x.orgKey.auth, x.agent.id, 'order_shipped', { to, context: { blob: 'x'.repeat(17 * 1024) } }),
      400,
      /16 KB/,
    );
    expectError(await start(x.orgKey.auth, x.agent.id, 'order_shipped', { to, context: [1] }), 400);
    // Disabled, then enabled again (CLI).
    const disable = await runCli(
      ['trigger', 'disable', '--org', x.org.id, '--agent', x.agent.id, '--id', 'order_shipped', '--json'],
      t.env,
    );
    expect(disable.code, disable.stderr).toBe(0);
    expect(disable.json()).toMatchObject({ id: 'order_shipped', enabled: false });
    expectError(await start(x.orgKey.auth, x.agent.id, 'order_shipped', { to }), 400, /disabled/);
    expect(
      (await runCli(['trigger', 'enable', '--org', x.org.id, '--agent', x.agent.id, '--id', 'order_shipped'], t.env))
        .code,
    ).toBe(0);
    // The other agent has no number.
    expectError(await start(x.orgKey.auth, x.other.id, 'other_only', { to }), 400, /no messaging number/);
    // Provider rejections: 400; provider failing: 502.
    await makeTrigger(t.ctx, x.org.id, x.agent.id, 'bad_template', 'no_such_template');
    expectError(await start(x.orgKey.auth, x.agent.id, 'bad_template', { to }), 400, /does not exist/);
    expectError(
      await start(x.orgKey.auth, x.agent.id, 'order_shipped', { to: MAGIC_NUMBERS.notOnApp }),
      400,
      /not a user/,
    );
    expectError(await start(x.orgKey.auth, x.agent.id, 'order_shipped', { to: MAGIC_NUMBERS.serverError }), 502);
    // None of the failed starts left an end user or a conversation behind.
    for (const phone of [to, MAGIC_NUMBERS.notOnApp, MAGIC_NUMBERS.serverError]) {
      expect(await endUsersWithPhone(t, x.org.id, phone, ['id'])).toEqual([]);
    }
    const list = await get(x.orgKey.auth, '/api/conversations');
    expect(list.json().data).toEqual([]);
    // And the trigger works.
    expect((await start(x.orgKey.auth, x.agent.id, 'order_shipped', { to })).statusCode).toBe(200);
  });

  it('a thread pages in one order however PostgreSQL collates text: messages of one millisecond, both directions', async () => {
    const x = await tenantWithHook();
    const to = randomPhone();
    const started = await start(x.orgKey.auth, x.agent.id, 'order_shipped', { to });
    expect(started.statusCode, started.body).toBe(200);
    const { conversationId } = started.json();
    // Copied without its status history: a jsonb array read back by node-pg would be written back
    // as a PostgreSQL array literal, and the copies take the column's default instead.
    const { status_history: _history, ...opening } = await t.ctx.db
      .selectFrom('messages')
      .selectAll()
      .where('conversation_id', '=', conversationId)
      .executeTakeFirstOrThrow();
    // Four messages of one millisecond whose IDs a linguistic collation orders otherwise than bytes
    // do (`msg_a…` before `msg_B…` in en-US, after it in byte order).
    const at = Number(opening.created_at) + 1000;
    const r = randomBase62(6).toLowerCase();
    const outIds = [`msg_a${r}`, `msg_B${r}`];
    const inIds = [`wamid.c${r}`, `wamid.D${r}`];
    await t.ctx.db
      .insertInto('messages')
      .values(
        outIds.map((id) => ({
          ...opening,
          id,
          provider_message_id: `wamid.out-${id}`,
          created_at: at,
          updated_at: at,
        })),
      )
      .execute();
    await t.ctx.db
      .insertInto('inbound_messages')
      .values(
        inIds.map((id) => ({
          provider_message_id: id,
          org_id: x.org.id,
          number_id: opening.number_id ?? '',
          from_phone: to,
          text: 'same millisecond',
          sent_at: at,
          received_at: at,
          conversation_id: conversationId,
          type: 'text',
        })),
      )
      .execute();
    const collate = async (collation: string) => {
      if (dialect !== 'postgres') return;
      await sql`alter table messages alter column id type text collate ${sql.id(collation)}`.execute(t.ctx.db);
      await sql`alter table inbound_messages alter column provider_message_id type text collate ${sql.id(collation)}`.execute(
        t.ctx.db,
      );
    };
    await collate('en-US-x-icu');
    try {
      const url = `/api/conversations/${conversationId}/messages`;
      const whole = await get(x.orgKey.auth, url);
      expect(whole.statusCode, whole.body).toBe(200);
      const expected = [opening.id, `msg_B${r}`, `msg_a${r}`, `wamid.D${r}`, `wamid.c${r}`];
      expect(whole.json().data.map((m: { id: string }) => m.id)).toEqual(expected);
      for (const limit of [1, 2, 3]) {
        const ids: string[] = [];
        let cursor: string | null = null;
        do {
          const q: string = cursor ? `&cursor=${cursor}` : '';
          const page = await get(x.orgKey.auth, `${url}?limit=${limit}${q}`);
          expect(page.statusCode, page.body).toBe(200);
          ids.push(...page.json().data.map((m: { id: string }) => m.id));
          cursor = page.json().nextCursor;
        } while (cursor && ids.length < 20);
        expect(ids, `pages of ${limit}`).toEqual(expected);
      }
    } finally {
      await collate('default');
    }
  });

  it('Idempotency-Key: a retried start answers the first answer and sends once', async () => {
    const x = await tenantWithHook();
    const to = randomPhone();
    const key = { 'idempotency-key': `start-${randomBase62(8)}` };
    const first = await start(x.orgKey.auth, x.agent.id, 'order_shipped', { to }, key);
    const second = await start(x.orgKey.auth, x.agent.id, 'order_shipped', { to }, key);
    expect(first.statusCode, first.body).toBe(200);
    expect(second.statusCode).toBe(200);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.json()).toEqual(first.json());
    const sent = await t.ctx.db.selectFrom('messages').select('id').where('to_phone', '=', to).execute();
    expect(sent).toHaveLength(1);
  });

  it('closing: 200 with the closed conversation, conversation.closed raised, the next message opens a new one', async () => {
    const x = await tenantWithHook();
    const to = randomPhone();
    const { conversationId } = (await start(x.orgKey.auth, x.agent.id, 'order_shipped', { to })).json();
    const closed = await call(t, {
      method: 'POST',
      url: `/api/conversations/${conversationId}/close`,
      headers: x.agentKey.auth,
    });
    expect(closed.statusCode, closed.body).toBe(200);
    expect(closed.json()).toMatchObject({ id: conversationId, status: 'closed', closedAt: expect.any(Number) });
    const again = await call(t, {
      method: 'POST',
      url: `/api/conversations/${conversationId}/close`,
      headers: x.orgKey.auth,
    });
    expect(again.json()).toEqual(closed.json());
    await until(() => eventsOf(x.where, 'conversation.closed', conversationId).length === 1, 'conversation.closed');
    expect(eventsOf(x.where, 'conversation.closed', conversationId)[0]?.data).toMatchObject({
      conversationId,
      agentId: x.agent.id,
      reason: 'closed',
    });
    // The user writes again: a new conversation, opened by the inbound message.
    const inbound = await sandboxInbound(t, x.agentKey.auth, to, 'hello again');
    expect(inbound.statusCode, inbound.body).toBe(200);
    await until(
      () =>
        eventsOf(x.where, 'conversation.started').some(
          (e) => e.data.messageId === inbound.json().messageId && e.data.conversationId !== conversationId,
        ),
      'a new conversation.started for the inbound message',
    );
    const open = await get(x.orgKey.auth, `/api/conversations?status=open&agent=${x.agent.id}`);
    expect(open.json().data).toHaveLength(1);
    expect(open.json().data[0]).toMatchObject({ triggerId: null, status: 'open' });
    expect(open.json().data[0].id).not.toBe(conversationId);
  });

  it('an agent key sees only its own agent’s conversations; another agent’s hook hears nothing of them', async () => {
    const x = await tenantWithHook();
    // The other agent gets a number, a trigger and a hook of its own.
    const number = await makeNumber(t.ctx, x.org.id);
    await assignNumber(t.ctx.db, x.org.id, x.other.id, number.phone);
    await makeTrigger(t.ctx, x.org.id, x.other.id, 'welcome');
    const otherHook = `/hook-${randomBase62(8)}`;
    await createEndpoint(t.ctx, {
      orgId: x.org.id,
      url: `${receiver.url}${otherHook}`,
      agentId: x.other.id,
    });
    const otherKey = await makeKey(t.ctx, x.org.id, {
      scope: 'agent',
      agentId: x.other.id,
      permissions: ['triggers'],
    });
    const mine = (await start(x.agentKey.auth, x.agent.id, 'order_shipped', { to: randomPhone() })).json();
    const theirs = (await start(otherKey.auth, x.other.id, 'welcome', { to: randomPhone() })).json();
    await t.ctx.jobs.drained([EVENT_DELIVERY_QUEUE]);
    expect(eventsOf(x.where, 'conversation.started').map((e) => e.data.conversationId)).toEqual([mine.conversationId]);
    expect(eventsOf(otherHook, 'conversation.started').map((e) => e.data.conversationId)).toEqual([
      theirs.conversationId,
    ]);

    expect((await get(x.agentKey.auth, `/api/conversations/${mine.conversationId}`)).statusCode).toBe(200);
    const hidden = await get(x.agentKey.auth, `/api/conversations/${theirs.conversationId}`);
    expect(hidden.statusCode).toBe(404);
    expect(hidden.json()).toEqual({ success: false, error: expect.any(String) });
    expect((await get(x.agentKey.auth, `/api/conversations/${theirs.conversationId}/messages`)).statusCode).toBe(404);
    const listed = await get(x.agentKey.auth, '/api/conversations');
    expect(listed.json().data.map((c: { id: string }) => c.id)).toEqual([mine.conversationId]);
    expect((await get(x.agentKey.auth, `/api/conversations?agent=${x.other.id}`)).statusCode).toBe(403);
    // The organization key sees both, and filters.
    const all = await get(x.orgKey.auth, '/api/conversations');
    expect(
      all
        .json()
        .data.map((c: { id: string }) => c.id)
        .sort(),
    ).toEqual([mine.conversationId, theirs.conversationId].sort());
    const byUser = await get(x.orgKey.auth, `/api/conversations?endUser=${theirs.endUserId}`);
    expect(byUser.json().data.map((c: { id: string }) => c.id)).toEqual([theirs.conversationId]);
    expect((await get(x.orgKey.auth, '/api/conversations?status=closed')).json().data).toEqual([]);
    const page = await get(x.orgKey.auth, '/api/conversations?limit=1');
    expect(page.json().data).toHaveLength(1);
    const next = await get(x.orgKey.auth, `/api/conversations?limit=1&cursor=${page.json().nextCursor}`);
    expect(next.json().data).toHaveLength(1);
    expect(next.json().nextCursor).toBeNull();
    expect(next.json().data[0].id).not.toBe(page.json().data[0].id);
    const bad = await get(x.orgKey.auth, '/api/conversations?cursor=nonsense');
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ success: false, error: expect.stringMatching(/cursor/) });
  });

  it('trigger CLI: create (with and without --id), list, refuses a bad slug and a duplicate', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const made = await runCli(
      [
        'trigger',
        'create',
        '--org',
        tenant.org.id,
        '--agent',
        tenant.agent.id,
        '--name',
        'Order shipped',
        '--template',
        'hello_world',
        '--language',
        'en_US',
        '--id',
        'order_shipped',
        '--json',
      ],
      t.env,
    );
    expect(made.code, made.stderr).toBe(0);
    expect(made.json()).toEqual({
      id: 'order_shipped',
      agentId: tenant.agent.id,
      name: 'Order shipped',
      template: 'hello_world',
      language: 'en_US',
      enabled: true,
    });
    const base = ['trigger', 'create', '--org', tenant.org.id, '--agent', tenant.agent.id, '--name', 'N'];
    // These four at once: each needs only the first trigger, and the list below comes after them all.
    const [auto, badSlug, dup, badLanguage] = await Promise.all([
      runCli([...base, '--template', 'hello_world', '--language', 'en_US', '--json'], t.env),
      runCli([...base, '--template', 'hello_world', '--language', 'en_US', '--id', 'Not OK'], t.env),
      runCli([...base, '--template', 'x', '--language', 'en_US', '--id', 'order_shipped'], t.env),
      runCli([...base, '--template', 'x', '--language', 'english'], t.env),
    ]);
    expect(auto.code, auto.stderr).toBe(0);
    expect(auto.json<{ id: string }>().id).toMatch(/^[a-z0-9_-]{1,64}$/);
    expect(badSlug.code).not.toBe(0);
    expect(badSlug.stderr).toMatch(/a-z, 0-9/);
    expect(dup.code).not.toBe(0);
    expect(dup.stderr).toMatch(/already has a trigger/);
    expect(badLanguage.stderr).toMatch(/xx_XX/);
    const list = await runCli(['trigger', 'list', '--org', tenant.org.id, '--agent', tenant.agent.id, '--json'], t.env);
    expect(list.code, list.stderr).toBe(0);
    expect(list.json<{ id: string }[]>().map((x) => x.id)).toEqual(['order_shipped', auto.json<{ id: string }>().id]);
  });
});

describe.each(DIALECTS)('conversations: idle close, limits and restarts (%s)', (dialect) => {
  it('a conversation idle past PARLEY_CONVERSATION_IDLE_MS is closed by the sweep, with conversation.closed', async () => {
    const receiver = await startReceiver();
    const t = await createMessagingApp(dialect, {
      env: { ...FAST, PARLEY_CONVERSATION_IDLE_MS: '1500', PARLEY_CONVERSATION_SWEEP_MS: '100' },
    });
    try {
      const tenant = await makeSendingTenant(t.ctx);
      await makeTrigger(t.ctx, tenant.org.id, tenant.agent.id, 'hi');
      await createEndpoint(t.ctx, {
        orgId: tenant.org.id,
        url: `${receiver.url}/idle`,
        events: 'conversation.closed',
      });
      const res = await call(t, {
        method: 'POST',
        url: `/api/triggers/${tenant.agent.id}/hi`,
        headers: tenant.orgKey.auth,
        payload: { to: randomPhone() },
      });
      expect(res.statusCode, res.body).toBe(200);
      const { conversationId } = res.json();
      await until(() => receiver.received.some((r) => r.path === '/idle'), 'conversation.closed for idleness');
      const event = JSON.parse(receiver.received.find((r) => r.path === '/idle')?.body ?? '{}') as Event;
      expect(event).toMatchObject({ type: 'conversation.closed', data: { conversationId, reason: 'idle' } });
      const got = await call(t, {
        method: 'GET',
        url: `/api/conversations/${conversationId}`,
        headers: tenant.orgKey.auth,
      });
      expect(got.json()).toMatchObject({ status: 'closed', closedAt: expect.any(Number) });
    } finally {
      await t.close();
      await receiver.close();
    }
  });

  it('the trigger endpoint shares the per-key limit of the send endpoint: 429 with Retry-After: 60', async () => {
    const t = await createMessagingApp(dialect, { env: { ...FAST, PARLEY_SEND_RATE_LIMIT: '2' } });
    try {
      const tenant = await makeSendingTenant(t.ctx);
      await makeTrigger(t.ctx, tenant.org.id, tenant.agent.id, 'hi');
      const send = await call(t, {
        method: 'POST',
        url: '/api/channels/send',
        headers: tenant.agentKey.auth,
        payload: {
          channel: 'msgapp',
          to: randomPhone(),
          type: 'template',
          template: { name: 'hello_world', language: 'en_US' },
        },
      });
      expect(send.statusCode, send.body).toBe(200);
      const trigger = () =>
        call(t, {
          method: 'POST',
          url: `/api/triggers/${tenant.agent.id}/hi`,
          headers: tenant.agentKey.auth,
          payload: { to: randomPhone() },
        });
      expect((await trigger()).statusCode).toBe(200);
      const refused = await trigger();
      expect(refused.statusCode).toBe(429);
      expect(refused.headers['retry-after']).toBe('60');
      expect(refused.json()).toEqual({ success: false, error: expect.stringMatching(/Rate limit/) });
    } finally {
      await t.close();
    }
  });

  it('the trigger endpoint counts against the per-organization limit too, across the organization’s keys', async () => {
    const t = await createMessagingApp(dialect, {
      env: { ...FAST, PARLEY_SEND_RATE_LIMIT: '50', PARLEY_SEND_RATE_LIMIT_ORG: '3' },
    });
    try {
      const tenant = await makeSendingTenant(t.ctx);
      await makeTrigger(t.ctx, tenant.org.id, tenant.agent.id, 'hi');
      const trigger = (auth: Record<string, string>) =>
        call(t, {
          method: 'POST',
          url: `/api/triggers/${tenant.agent.id}/hi`,
          headers: auth,
          payload: { to: randomPhone() },
        });
      const send = await call(t, {
        method: 'POST',
        url: '/api/channels/send',
        headers: tenant.orgKey.auth,
        payload: templateSend(tenant.agent.id),
      });
      expect(send.statusCode, send.body).toBe(200);
      expect((await trigger(tenant.orgKey.auth)).statusCode).toBe(200);
      expect((await trigger(tenant.agentKey.auth)).statusCode).toBe(200);
      // The organization's fourth request in the window, on a key that made only one.
      const refused = await trigger(tenant.agentKey.auth);
      expect(refused.statusCode, refused.body).toBe(429);
      expect(refused.headers['retry-after']).toBe('60');
      expect(refused.json()).toEqual({ success: false, error: expect.stringMatching(/Rate limit/) });
      // Another organization is not held back.
      const stranger = await makeSendingTenant(t.ctx);
      await makeTrigger(t.ctx, stranger.org.id, stranger.agent.id, 'hi');
      const theirs = await call(t, {
        method: 'POST',
        url: `/api/triggers/${stranger.agent.id}/hi`,
        headers: stranger.agentKey.auth,
        payload: { to: randomPhone() },
      });
      expect(theirs.statusCode, theirs.body).toBe(200);
    } finally {
      await t.close();
    }
  });

  it('a restart between a trigger and the delivery of conversation.started loses nothing', async () => {
    const receiver = await startReceiver();
    const first = await createMessagingApp(dialect, { env: FAST, workJobs: false, webhooks: false });
    const tenant = await makeSendingTenant(first.ctx);
    await makeTrigger(first.ctx, tenant.org.id, tenant.agent.id, 'hi');
    await createEndpoint(first.ctx, { orgId: tenant.org.id, url: `${receiver.url}/restart` });
    const res = await call(first, {
      method: 'POST',
      url: `/api/triggers/${tenant.agent.id}/hi`,
      headers: tenant.orgKey.auth,
      payload: { to: randomPhone() },
    });
    expect(res.statusCode, res.body).toBe(200);
    // This process stops before delivering anything; the next one delivers.
    const second = await createMessagingApp(dialect, { env: FAST, shareWith: first });
    try {
      await until(() => receiver.received.some((r) => r.path === '/restart'), 'the delivery after the restart');
      const event = JSON.parse(receiver.received.find((r) => r.path === '/restart')?.body ?? '{}') as Event;
      expect(event).toMatchObject({
        type: 'conversation.started',
        data: { conversationId: res.json().conversationId, messageId: res.json().messageId },
      });
    } finally {
      await second.close();
      await first.close();
      await receiver.close();
    }
  });
});
