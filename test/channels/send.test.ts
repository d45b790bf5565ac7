import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWindow } from '../../src/messaging/index.js';
import { addNumber, assignNumber } from '../../src/numbers/number.service.js';
import { DIALECTS, type TestApp } from '../helpers/app.js';
import { runCli } from '../helpers/cli.js';
import { expectMatchesContract } from '../helpers/contract.js';
import { makeAgent, makeKey, makeTenant } from '../helpers/factories.js';
import {
  closedPort,
  createMessagingApp,
  createQuietTestApp,
  failWrites,
  type MessagingTestApp,
  makeNumber,
  makeSendingTenant,
  postWebhook,
  randomPhone,
  sandboxInbound,
  startFakeProvider,
  statusPayload,
  templateSend,
  textSend,
} from '../helpers/messaging.js';

type Tenant = Awaited<ReturnType<typeof makeSendingTenant>>;

describe.each(DIALECTS)('POST /api/channels/send (%s)', (dialect) => {
  let t: MessagingTestApp;
  let tenant: Tenant;
  beforeAll(async () => {
    t = await createMessagingApp(dialect);
    tenant = await makeSendingTenant(t.ctx);
  });
  afterAll(async () => {
    await t.close();
  });

  const send = (payload: unknown, headers: Record<string, string> = tenant.agentKey.auth) =>
    t.app.inject({ method: 'POST', url: '/api/channels/send', headers, payload: payload as Record<string, unknown> });

  const expectError = (res: Awaited<ReturnType<typeof send>>, status: number, error: string | RegExp) => {
    expect(res.statusCode).toBe(status);
    const body = res.json();
    expect(body.success).toBe(false);
    if (typeof error === 'string') expect(body.error).toBe(error);
    else expect(body.error).toMatch(error);
    expect(Object.keys(body).sort()).toEqual(['error', 'success']);
    expectMatchesContract(t.app, 'POST', '/api/channels/send', res);
  };

  it('sends a template from the agent number and answers with the provider message ID', async () => {
    const res = await send(templateSend());
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      success: true,
      messageType: 'template',
      channel: 'msgapp',
      messageId: expect.stringMatching(/^wamid\./),
      conversationId: expect.stringMatching(/^cnv_/),
    });
    expectMatchesContract(t.app, 'POST', '/api/channels/send', res);
  });

  it('a known recipient: the send joins their live conversation; one idle past the limit (not yet swept) is left for a new one', async () => {
    const to = randomPhone();
    const payload = {
      ...templateSend(undefined, to),
      template: { name: 'order_update', language: 'en_US', parameters: { header: ['Hi'], body: ['Ada', '42'] } },
    };
    const sent: { messageId: string; conversationId: string }[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await send(payload);
      expect(res.statusCode, res.body).toBe(200);
      sent.push(res.json());
    }
    expect(sent[1]?.conversationId).toBe(sent[0]?.conversationId);
    // The conversation's last message a day and a second ago: idle, though the sweep has not run.
    await t.ctx.db
      .updateTable('conversations')
      .set({ last_message_at: Date.now() - 24 * 3600_000 - 1000 })
      .where('id', '=', sent[0]?.conversationId ?? '')
      .execute();
    const third = await send(payload);
    expect(third.statusCode, third.body).toBe(200);
    sent.push(third.json());
    expect(sent[2]?.conversationId).not.toBe(sent[0]?.conversationId);

    // Each message stored once, whole, in the conversation its send answered with.
    const rows = await t.ctx.db
      .selectFrom('messages')
      .select(['provider_message_id', 'conversation_id', 'to_phone', 'type', 'template_name', 'template_language'])
      .select(['template_parameters', 'status', 'status_rank', 'error_code', 'created_at', 'updated_at', 'agent_id'])
      .where('to_phone', '=', to)
      .orderBy('created_at')
      .execute();
    expect(rows).toHaveLength(3);
    rows.forEach((row, i) => {
      expect(row).toEqual({
        provider_message_id: sent[i]?.messageId,
        conversation_id: sent[i]?.conversationId,
        to_phone: to,
        type: 'template',
        template_name: 'order_update',
        template_language: 'en_US',
        template_parameters: JSON.stringify({ body: ['Ada', '42'], header: ['Hi'] }),
        status: expect.stringMatching(/^(accepted|sent|delivered|read)$/),
        status_rank: expect.any(Number),
        error_code: null,
        created_at: expect.any(Number),
        updated_at: expect.any(Number),
        agent_id: tenant.agent.id,
      });
      expect(Number(row.created_at)).toBeGreaterThan(Date.now() - 60_000);
    });
    const thread = await t.app.inject({
      method: 'GET',
      url: `/api/conversations/${sent[0]?.conversationId}/messages`,
      headers: tenant.orgKey.auth,
    });
    expect(thread.statusCode).toBe(200);
    expect(JSON.stringify(thread.json())).toContain(sent[1]?.messageId);
  });

  it('maps template parameters to provider components and normalizes `to` to E.164', async () => {
    const res = await send({
      channel: 'msgapp',
      to: '+1 (650) 555-0123',
      type: 'template',
      template: {
        name: 'order_update',
        language: 'en_US',
        parameters: { header: ['Hi Alex'], body: ['Alex', 'A12345'] },
      },
    });
    expect(res.statusCode).toBe(200);
    const wire = t.sandbox.received.at(-1);
    expect(wire?.path).toBe(`/v25.0/${tenant.number.phoneNumberId}/messages`);
    expect(wire?.authorization).toMatch(/^Bearer \S+/);
    expect(wire?.body).toMatchObject({
      messaging_product: 'whatsapp',
      to: '+16505550123',
      type: 'template',
      biz_opaque_callback_data: expect.stringMatching(/^msg_/),
      template: {
        name: 'order_update',
        language: { code: 'en_US' },
        components: [
          { type: 'header', parameters: [{ type: 'text', text: 'Hi Alex' }] },
          {
            type: 'body',
            parameters: [
              { type: 'text', text: 'Alex' },
              { type: 'text', text: 'A12345' },
            ],
          },
        ],
      },
    });
    const stored = await t.ctx.db
      .selectFrom('messages')
      .selectAll()
      .where('provider_message_id', '=', res.json().messageId)
      .executeTakeFirstOrThrow();
    expect(stored).toMatchObject({
      org_id: tenant.org.id,
      agent_id: tenant.agent.id,
      number_id: tenant.number.id,
      to_phone: '+16505550123',
      type: 'template',
      template_name: 'order_update',
    });
  });

  it('rule 6: an agent key without convId uses its own agent; with its own convId too', async () => {
    expect((await send(templateSend(tenant.agent.id))).statusCode).toBe(200);
  });

  it('an organization key with convId sends', async () => {
    expect((await send(templateSend(tenant.agent.id), tenant.orgKey.auth)).statusCode).toBe(200);
  });

  it('rule 1: an agent without a messaging number is 400', async () => {
    const bare = await makeAgent(t.ctx, tenant.org.id);
    expectError(
      await send(templateSend(bare.id), tenant.orgKey.auth),
      400,
      `Agent '${bare.id}' has no messaging number assigned, so it cannot send messages.`,
    );
  });

  it('a number assigned by `parley number assign` in another process is what the very next send goes out from', async () => {
    const agent = await makeAgent(t.ctx, tenant.org.id);
    const numberOf = async (messageId: string) =>
      (
        await t.ctx.db
          .selectFrom('messages')
          .select('number_id')
          .where('provider_message_id', '=', messageId)
          .executeTakeFirstOrThrow()
      ).number_id;
    const sendAs = async () => send(templateSend(agent.id), tenant.orgKey.auth);
    // No number yet: refused (and this answer is what the server now keeps in memory).
    expect((await sendAs()).statusCode).toBe(400);
    expect((await sendAs()).statusCode).toBe(400);
    const cli = async (...args: string[]) => {
      const r = await runCli([...args, '--json'], t.env);
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as { id?: string; number?: { id: string } };
    };
    const phone = randomPhone();
    const first = await cli('number', 'add', '--org', tenant.org.id, '--phone', phone);
    const assigned = await cli('number', 'assign', '--org', tenant.org.id, '--agent', agent.id, '--phone', phone);
    expect(assigned.number?.id).toBe(first.id);
    const one = await sendAs();
    expect(one.statusCode).toBe(200);
    expect(await numberOf(one.json().messageId)).toBe(first.id);
    expect(await numberOf((await sendAs()).json().messageId)).toBe(first.id);

    const second = await makeNumber(t.ctx, tenant.org.id);
    await cli('number', 'assign', '--org', tenant.org.id, '--agent', agent.id, '--phone', second.phone);
    const two = await sendAs();
    expect(two.statusCode).toBe(200);
    expect(await numberOf(two.json().messageId)).toBe(second.id);
  });

  it('rule 2: a channel other than msgapp is 400', async () => {
    expectError(
      await send({ ...templateSend(), channel: 'sms' }),
      400,
      "Unsupported channel 'sms'; the only allowed value is 'msgapp'.",
    );
    expectError(await send({ ...templateSend(), channel: 'MSGAPP' }), 400, /only allowed value is 'msgapp'/);
  });

  it('rule 3: missing or invalid fields are 400, each with a sentence naming the field', async () => {
    const { to: _to, ...noTo } = templateSend();
    expectError(await send(noTo), 400, "Invalid body: 'to' is required.");
    const { channel: _c, ...noChannel } = templateSend();
    expectError(await send(noChannel), 400, "Invalid body: 'channel' is required.");
    const { type: _t, ...noType } = templateSend();
    expectError(await send(noType), 400, "Invalid body: 'type' is required.");
    expectError(await send({ ...templateSend(), type: 'sms' }), 400, /'type' must be/);
    expectError(await send({ ...templateSend(), to: 14155550100 }), 400, "Invalid body: 'to' must be a string.");
    expectError(await send({ ...templateSend(), extra: 1 }), 400, "Invalid body: unknown field 'extra'.");
    expectError(
      await send({ ...templateSend(), to: '4155550100' }),
      400,
      /'to' must be a valid phone number in international format/,
    );
    expectError(await send({ ...templateSend(), to: '+1555' }), 400, /'to' must be a valid phone number/);
    expectError(
      await send({ ...templateSend(), template: { name: 'hello_world', language: 'en' } }),
      400,
      "'template.language' must be a language code of the form xx_XX, such as en_US; got 'en'.",
    );
    expectError(
      await send({ ...templateSend(), template: { language: 'en_US' } }),
      400,
      "Invalid body: 'template.name' is required.",
    );
    expectError(
      await send({
        ...templateSend(),
        template: { name: 'hello_world', language: 'en_US', parameters: { body: [1] } },
      }),
      400,
      "Invalid body: 'template.parameters.body.0' must be a string.",
    );
    expectError(await send(textSend(undefined, randomPhone(), '')), 400, "'message.text' must not be empty.");
    expectError(
      await send(textSend(undefined, randomPhone(), 'x'.repeat(4097))),
      400,
      "Invalid body: 'message.text' must NOT have more than 4096 characters.",
    );
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/channels/send',
      headers: { ...tenant.agentKey.auth, 'content-type': 'application/json' },
      payload: '{"channel":',
    });
    expectError(res, 400, 'The request body is not valid JSON.');
  });

  it('bounds every field and never echoes more than a short piece of what was sent', async () => {
    const huge = '+1'.padEnd(900_000, '5');
    const longTo = await send({ ...templateSend(), to: huge });
    expectError(longTo, 400, "Invalid body: 'to' must NOT have more than 32 characters.");
    expect(longTo.body.length).toBeLessThan(300);
    const longName = await send({ ...templateSend(), template: { name: 'n'.repeat(513), language: 'en_US' } });
    expectError(longName, 400, "Invalid body: 'template.name' must NOT have more than 512 characters.");
    expectError(
      await send({ ...templateSend(), template: { name: 'hello_world', language: 'e'.repeat(17) } }),
      400,
      "Invalid body: 'template.language' must NOT have more than 16 characters.",
    );
    expectError(
      await send({ ...templateSend(), template: { name: 'hello_world', language: 'english_US' } }),
      400,
      "'template.language' must be a language code of the form xx_XX, such as en_US; got 'english_US'.",
    );
    expectError(
      await send({ ...templateSend(), convId: `agt_${'x'.repeat(61)}` }),
      400,
      "Invalid body: 'convId' must NOT have more than 64 characters.",
    );
    expectError(
      await send({
        ...templateSend(),
        template: { name: 'order_update', language: 'en_US', parameters: { header: ['h'.repeat(61)] } },
      }),
      400,
      "Invalid body: 'template.parameters.header.0' must NOT have more than 60 characters.",
    );
    expectError(
      await send({
        ...templateSend(),
        template: { name: 'order_update', language: 'en_US', parameters: { body: ['b'.repeat(1025)] } },
      }),
      400,
      "Invalid body: 'template.parameters.body.0' must NOT have more than 1024 characters.",
    );
    expectError(
      await send({
        ...templateSend(),
        template: { name: 'order_update', language: 'en_US', parameters: { body: ['b'.repeat(600), 'c'.repeat(600)] } },
      }),
      400,
      "'template.parameters.body' holds 1200 characters in all; the most is 1024.",
    );
    expectError(
      await send({
        ...templateSend(),
        template: { name: 'order_update', language: 'en_US', parameters: { header: ['a'.repeat(40), 'b'.repeat(21)] } },
      }),
      400,
      "'template.parameters.header' holds 61 characters in all; the most is 60.",
    );
    // An echoed value is at most 40 characters: `to` (at most 32) whole, a long channel clipped.
    expectError(
      await send({ ...templateSend(), to: `+${'9'.repeat(31)}` }),
      400,
      `'to' must be a valid phone number in international format, such as +14155550100; got '+${'9'.repeat(31)}'.`,
    );
    expectError(
      await send({ ...templateSend(), channel: 'c'.repeat(64) }),
      400,
      `Unsupported channel '${'c'.repeat(40)}...'; the only allowed value is 'msgapp'.`,
    );
    // Nothing of these reached the provider or was stored.
    const names = t.sandbox.received.map((r) => (r.body as { template?: { name?: string } }).template?.name ?? '');
    expect(names.some((n) => n.length > 100)).toBe(false);
    const stored = await t.ctx.db
      .selectFrom('messages')
      .select('template_name')
      .where('org_id', '=', tenant.org.id)
      .execute();
    expect(stored.some((m) => (m.template_name ?? '').length > 100)).toBe(false);
  });

  it('refuses what the provider would refuse, and says which object belongs to which type', async () => {
    const user = randomPhone();
    expectError(
      await send(textSend(undefined, user, ' \n\t ')),
      400,
      "'message.text' must not be blank: the provider refuses a text of only spaces.",
    );
    expectError(
      await send({
        ...templateSend(),
        template: { name: 'order_update', language: 'en_US', parameters: { header: ['Hi'], body: ['Ada', ' '] } },
      }),
      400,
      "'template.parameters.body.1' must not be empty.",
    );
    expectError(
      await send({
        ...templateSend(),
        template: { name: 'order_update', language: 'en_US', parameters: { header: [''], body: ['Ada', 'A1'] } },
      }),
      400,
      "'template.parameters.header.0' must not be empty.",
    );
    for (const to of ['+14155550100 ext. 5', '+14155550100 x5', '+14155550100;ext=5', '+14155550100#5']) {
      expectError(
        await send({ ...templateSend(), to }),
        400,
        `'to' must be a phone number without an extension; got '${to}'.`,
      );
    }
    expectError(
      await send({ ...templateSend(), message: { text: 'hi' } }),
      400,
      "A send with type 'template' takes a 'template' object only; remove 'message'.",
    );
    expectError(
      await send({ ...textSend(undefined, user), template: { name: 'hello_world', language: 'en_US' } }),
      400,
      "A send with type 'message' takes a 'message' object only; remove 'template'.",
    );
    expectError(
      await send({ ...templateSend(), convId: '' }),
      400,
      "Invalid body: 'convId' must NOT have fewer than 1 characters.",
    );
    expectError(
      await send({ ...templateSend(), type: 'sms' }),
      400,
      'Invalid body: \'type\' must be one of "template", "message".',
    );
    const before = t.sandbox.received.length;
    // 4,096 characters of emoji are 8,192 UTF-16 units: allowed, as the provider counts characters.
    await openWindow(t.ctx.db, tenant.number.id, user, t.ctx.clock.now());
    expect((await sandboxInbound(t, tenant.agentKey.auth, user)).statusCode).toBe(200);
    const emoji = await send(textSend(undefined, user, '👋'.repeat(4096)));
    expect(emoji.statusCode).toBe(200);
    expectError(
      await send(textSend(undefined, user, '👋'.repeat(4097))),
      400,
      "Invalid body: 'message.text' must NOT have more than 4096 characters.",
    );
    expect(t.sandbox.received.length).toBe(before + 1);
    await t.settle();
  });

  it('rule 4: a type without its matching object is 400', async () => {
    expectError(
      await send({ channel: 'msgapp', to: randomPhone(), type: 'template' }),
      400,
      "A send with type 'template' needs a 'template' object with 'name' and 'language'.",
    );
    expectError(
      await send({ channel: 'msgapp', to: randomPhone(), type: 'message' }),
      400,
      "A send with type 'message' needs a 'message' object with 'text'.",
    );
    expectError(
      await send({
        channel: 'msgapp',
        to: randomPhone(),
        type: 'message',
        template: { name: 'hello_world', language: 'en_US' },
      }),
      400,
      /needs a 'message' object/,
    );
  });

  it('rule 5: an organization key without convId is 400', async () => {
    expectError(
      await send(templateSend(), tenant.orgKey.auth),
      400,
      "'convId' is required with an organization key: name the agent whose number sends the message.",
    );
  });

  it("rule 6: an agent key naming another agent is 403, even one that doesn't exist", async () => {
    expectError(await send(templateSend(tenant.other.id)), 403, 'This API key is bound to another agent.');
    expectError(await send(templateSend('agt_doesnotexist')), 403, 'This API key is bound to another agent.');
  });

  it("rule 7: no agent in the organization matching convId is 404 (another organization's agent too)", async () => {
    expectError(
      await send(templateSend('agt_doesnotexist'), tenant.orgKey.auth),
      404,
      "No agent with ID 'agt_doesnotexist' in this organization.",
    );
    const stranger = await makeSendingTenant(t.ctx);
    expectError(await send(templateSend(stranger.agent.id), tenant.orgKey.auth), 404, /No agent with ID/);
  });

  it('authentication and permission come first: 401 without a key, 403 without Channels', async () => {
    expectError(await send(templateSend(), {}), 401, /Missing Authorization header/);
    const noChannels = await makeKey(t.ctx, tenant.org.id, { permissions: ['triggers'] });
    expectError(
      await send(templateSend(tenant.agent.id), noChannels.auth),
      403,
      'This API key lacks the Channels permission.',
    );
  });

  it('rule 8: provider rejections are 400 with a sentence saying why', async () => {
    expectError(
      await send({ ...templateSend(), template: { name: 'no_such_template', language: 'en_US' } }),
      400,
      "The provider rejected the message: template 'no_such_template' does not exist in language 'en_US' or is not approved.",
    );
    expectError(
      await send({ ...templateSend(), template: { name: 'hello_world', language: 'fr_FR' } }),
      400,
      /template 'hello_world' does not exist in language 'fr_FR'/,
    );
    expectError(
      await send({
        ...templateSend(),
        template: { name: 'order_update', language: 'en_US', parameters: { header: ['Hi'], body: ['only one'] } },
      }),
      400,
      /^The provider rejected the message: the number of template parameters does not match the template \(body: number of localizable_params \(1\) does not match the expected number of params \(2\)\)\.$/,
    );
    expectError(
      await send(templateSend(undefined, '+15005550001')),
      400,
      'The provider rejected the message: +15005550001 cannot receive it, it is not a user of the messaging app.',
    );
    expectError(
      await send(templateSend(undefined, '+15005550002')),
      400,
      'The provider refused the message because a sending rate limit was reached (code 130429); retry later with backoff.',
    );
  });

  it("rule 8: the sandbox's own window check (131047) is a 400 too", async () => {
    // Parley believes the window is open; the provider does not.
    const to = randomPhone();
    await openWindow(t.ctx.db, tenant.number.id, to, t.ctx.clock.now());
    expectError(
      await send(textSend(undefined, to)),
      400,
      `The provider rejected the message: more than 24 hours have passed since ${to} last wrote to this number; send a template instead.`,
    );
  });

  it('a provider answering HTTP 500 is 502, and the send is made exactly once', async () => {
    const before = t.sandbox.received.filter((r) => (r.body as { to?: string }).to === '+15005550003').length;
    expectError(
      await send(templateSend(undefined, '+15005550003')),
      502,
      /^The messaging provider could not be reached or failed \(HTTP 500, code 1\); the message was not sent and was not retried\.$/,
    );
    const after = t.sandbox.received.filter((r) => (r.body as { to?: string }).to === '+15005550003').length;
    expect(after - before).toBe(1);
  });

  it('rejected and failed sends are stored with why, and a status is never invented for them', async () => {
    const rows = await t.ctx.db
      .selectFrom('messages')
      .select(['status', 'error_code', 'provider_message_id'])
      .where('org_id', '=', tenant.org.id)
      .where('to_phone', 'in', ['+15005550001', '+15005550003'])
      .execute();
    expect(rows).toEqual(
      expect.arrayContaining([
        { status: 'rejected', error_code: 131026, provider_message_id: null },
        { status: 'unconfirmed', error_code: 1, provider_message_id: null },
      ]),
    );
  });
});

describe.each(DIALECTS)('POST /api/channels/send against other providers (%s)', (dialect) => {
  /** The message a 502 of unknown outcome names is stored as unconfirmed, with that sentence; its ID. */
  async function expectStoredUnconfirmed(t: TestApp, error: string): Promise<string> {
    const ownId = /\/api\/messages\/(msg_\w+)/.exec(error)?.[1] ?? '';
    const stored = await t.ctx.db.selectFrom('messages').selectAll().where('id', '=', ownId).executeTakeFirstOrThrow();
    expect(stored).toMatchObject({ status: 'unconfirmed', provider_message_id: null, error_message: error });
    return ownId;
  }

  async function appWithProvider(baseUrl: string, extraEnv: Record<string, string> = {}) {
    const t = await createQuietTestApp(dialect, { env: { PARLEY_PROVIDER_BASE_URL: baseUrl, ...extraEnv } });
    const tenant = await makeTenant(t.ctx);
    const number = await addNumber(t.ctx.db, t.ctx.clock, t.ctx.messaging.secrets, {
      orgId: tenant.org.id,
      phone: randomPhone(),
      provider: 'cloud',
      phoneNumberId: '106540352242922',
      accessToken: 'EAAG-secret-token',
    });
    await assignNumber(t.ctx.db, tenant.org.id, tenant.agent.id, number.phone);
    return { t, tenant, number };
  }
  const sendWith = (t: TestApp, auth: Record<string, string>, payload: unknown) =>
    t.app.inject({
      method: 'POST',
      url: '/api/channels/send',
      headers: auth,
      payload: payload as Record<string, unknown>,
    });

  it('speaks the Cloud API: version in the path, the decrypted token as Bearer, the message ID back', async () => {
    const provider = await startFakeProvider(() => ({
      status: 200,
      body: {
        messaging_product: 'whatsapp',
        contacts: [{ input: '+1', wa_id: '1' }],
        messages: [{ id: 'wamid.FIXED1' }],
      },
    }));
    const { t, tenant } = await appWithProvider(provider.url, { PARLEY_PROVIDER_API_VERSION: 'v21.0' });
    try {
      expect(t.ctx.messaging.sandbox).toBeUndefined();
      const res = await sendWith(t, tenant.agentKey.auth, templateSend());
      expect(res.statusCode).toBe(200);
      expect(res.json().messageId).toBe('wamid.FIXED1');
      expect(provider.requests[0]?.authorization).toBe('Bearer EAAG-secret-token');
      const stored = await t.ctx.db
        .selectFrom('messaging_numbers')
        .select('access_token_enc')
        .executeTakeFirstOrThrow();
      expect(stored.access_token_enc).not.toContain('EAAG');
      // Only the sandbox offers the inbound helper.
      const inbound = await t.app.inject({
        method: 'POST',
        url: '/api/sandbox/inbound',
        headers: tenant.agentKey.auth,
        payload: { from: '+14155550100', text: 'hi' },
      });
      expect(inbound.statusCode).toBe(404);
    } finally {
      await t.close();
      await provider.close();
    }
  });

  it('classifies by error.code, not HTTP status: a throttle in a 400 is a rejection; a bad token is 502', async () => {
    let code = 131056;
    const provider = await startFakeProvider(() => ({
      status: code === 190 ? 401 : 400,
      body: { error: { message: 'x', type: 'OAuthException', code } },
    }));
    const { t, tenant } = await appWithProvider(provider.url);
    try {
      const throttled = await sendWith(t, tenant.agentKey.auth, templateSend());
      expect(throttled.statusCode).toBe(400);
      expect(throttled.json().error).toMatch(/rate limit was reached \(code 131056\)/);
      code = 190;
      const badToken = await sendWith(t, tenant.agentKey.auth, templateSend());
      expect(badToken.statusCode).toBe(502);
      expect(badToken.json()).toEqual({
        success: false,
        error:
          "The messaging provider refused this number's credentials; an administrator must check its access token.",
      });
      expect(badToken.body).not.toContain('EAAG');
    } finally {
      await t.close();
      await provider.close();
    }
  });

  it('an access token that no longer opens (secret key changed) is 502, and the provider is not called', async () => {
    const provider = await startFakeProvider(() => ({ status: 200, body: { messages: [{ id: 'wamid.X' }] } }));
    const { t, tenant, number } = await appWithProvider(provider.url);
    try {
      await t.ctx.db
        .updateTable('messaging_numbers')
        .set({ access_token_enc: 'v1.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA.AAAA' })
        .where('id', '=', number.id)
        .execute();
      const res = await sendWith(t, tenant.agentKey.auth, templateSend());
      expect(res.statusCode).toBe(502);
      expect(res.json().error).toMatch(/unusable credentials/);
      expect(provider.requests).toHaveLength(0);
    } finally {
      await t.close();
      await provider.close();
    }
  });

  it('an unreachable provider is 502', async () => {
    const { t, tenant } = await appWithProvider(`http://127.0.0.1:${await closedPort()}`);
    try {
      const res = await sendWith(t, tenant.agentKey.auth, templateSend());
      expect(res.statusCode).toBe(502);
      expect(res.json()).toEqual({
        success: false,
        error:
          'The messaging provider could not be reached or failed (could not be reached); the message was not sent and was not retried.',
      });
    } finally {
      await t.close();
    }
  });

  it('a timeout is a 502 saying the outcome is unknown; its key keeps that answer; a later status proves the send', async () => {
    let hang = true;
    const provider = await startFakeProvider(() =>
      hang ? 'hang' : { status: 200, body: { messaging_product: 'whatsapp', messages: [{ id: 'wamid.OTHER' }] } },
    );
    const { t, tenant, number } = await appWithProvider(provider.url, { PARLEY_PROVIDER_TIMEOUT_MS: '300' });
    try {
      const started = Date.now();
      const key = `timeout-${Date.now()}`;
      const body = templateSend();
      const res = await sendWith(t, { ...tenant.agentKey.auth, 'idempotency-key': key }, body);
      expect(res.statusCode).toBe(502);
      const error: string = res.json().error;
      expect(error).toMatch(
        /^The messaging provider's answer is missing \(no answer within 300 ms\), so whether it accepted the message is unknown; it was not retried\. GET \/api\/messages\/msg_\w+ shows the message's status once the provider reports on it; send again \(with a new Idempotency-Key\) only if it never does\.$/,
      );
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(provider.requests).toHaveLength(1);
      const ownId = await expectStoredUnconfirmed(t, error);

      // The same key does not send again, even once the provider answers: the stored 502 comes back.
      hang = false;
      const retry = await sendWith(t, { ...tenant.agentKey.auth, 'idempotency-key': key }, body);
      expect(retry.statusCode).toBe(502);
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(retry.json()).toEqual(res.json());
      expect(provider.requests).toHaveLength(1);

      // The provider did take it: its statuses carry our callback data and its real ID.
      const delivered = await postWebhook(
        t,
        statusPayload(number.phoneNumberId, [
          { id: 'wamid.LATE1', status: 'delivered', timestamp: Date.now(), callback: ownId },
        ]),
      );
      expect(delivered.statusCode).toBe(200);
      const got = await t.app.inject({
        method: 'GET',
        url: '/api/messages/wamid.LATE1',
        headers: tenant.agentKey.auth,
      });
      expect(got.statusCode).toBe(200);
      expect(got.json().message).toMatchObject({ messageId: 'wamid.LATE1', id: ownId, status: 'delivered' });
      expect(got.json().message.error).toBeUndefined();
      const row = await t.ctx.db.selectFrom('messages').selectAll().where('id', '=', ownId).executeTakeFirstOrThrow();
      expect(row).toMatchObject({
        provider_message_id: 'wamid.LATE1',
        status: 'delivered',
        error_code: null,
        error_message: null,
      });
    } finally {
      await t.close();
      await provider.close();
    }
  });

  it('an answer whose body never ends is a timeout too: a 502 saying the outcome is unknown, stored as unconfirmed', async () => {
    const provider = await startFakeProvider(() => 'drip');
    const { t, tenant } = await appWithProvider(provider.url, { PARLEY_PROVIDER_TIMEOUT_MS: '300' });
    try {
      const started = Date.now();
      const res = await sendWith(t, tenant.agentKey.auth, templateSend());
      expect(res.statusCode).toBe(502);
      const error: string = res.json().error;
      expect(error).toMatch(
        /^The messaging provider's answer is missing \(no answer within 300 ms\), so whether it accepted/,
      );
      // A byte every 100 ms never trips the pause timeout; the whole body is what is bounded.
      expect(Date.now() - started).toBeLessThan(5_000);
      await expectStoredUnconfirmed(t, error);
    } finally {
      await t.close();
      await provider.close();
    }
  });

  it('a provider that cannot be reached did not get the message: the key is released and a retry sends', async () => {
    const port = await closedPort();
    const { t, tenant } = await appWithProvider(`http://127.0.0.1:${port}`);
    try {
      const key = `refused-${Date.now()}`;
      const body = templateSend();
      const first = await sendWith(t, { ...tenant.agentKey.auth, 'idempotency-key': key }, body);
      expect(first.statusCode).toBe(502);
      expect(await t.ctx.db.selectFrom('idempotency_keys').selectAll().where('key', '=', key).execute()).toEqual([]);
      const again = await sendWith(t, { ...tenant.agentKey.auth, 'idempotency-key': key }, body);
      expect(again.statusCode).toBe(502);
      expect(again.headers['idempotent-replayed']).toBeUndefined();
    } finally {
      await t.close();
    }
  });

  it('once the provider accepted, failing bookkeeping still answers 200, and the key keeps that 200', async () => {
    const provider = await startFakeProvider(() => ({
      status: 200,
      body: { messaging_product: 'whatsapp', messages: [{ id: 'wamid.KEPT1' }] },
    }));
    const { t, tenant, number } = await appWithProvider(provider.url);
    const to = randomPhone();
    // The database refuses to record the acceptance of this one message.
    const restore = await failWrites(t, 'messages', 'UPDATE', { column: 'to_phone', value: to });
    try {
      const key = `kept-${Date.now()}`;
      const body = templateSend(undefined, to);
      const res = await sendWith(t, { ...tenant.agentKey.auth, 'idempotency-key': key }, body);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({
        success: true,
        messageType: 'template',
        channel: 'msgapp',
        messageId: 'wamid.KEPT1',
        conversationId: expect.stringMatching(/^cnv_/),
      });
      const row = await t.ctx.db
        .selectFrom('messages')
        .selectAll()
        .where('to_phone', '=', to)
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({ status: 'pending', provider_message_id: null });
      const replay = await sendWith(t, { ...tenant.agentKey.auth, 'idempotency-key': key }, body);
      expect(replay.statusCode).toBe(200);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.json()).toEqual(res.json());
      expect(provider.requests).toHaveLength(1);
      await restore();
      // Until a status comes, the message reads as pending by its own ID, and the provider's finds nothing.
      const ours = await t.app.inject({ method: 'GET', url: `/api/messages/${row.id}`, headers: tenant.agentKey.auth });
      expect(ours.statusCode).toBe(200);
      expect(ours.json().message).toMatchObject({ id: row.id, messageId: null, status: 'pending', statuses: [] });
      const theirs = await t.app.inject({
        method: 'GET',
        url: '/api/messages/wamid.KEPT1',
        headers: tenant.agentKey.auth,
      });
      expect(theirs.statusCode).toBe(404);
      // Statuses still find the message by its callback data and record its provider ID.
      await postWebhook(
        t,
        statusPayload(number.phoneNumberId, [
          { id: 'wamid.KEPT1', status: 'sent', timestamp: Date.now(), callback: row.id },
        ]),
      );
      const got = await t.app.inject({
        method: 'GET',
        url: '/api/messages/wamid.KEPT1',
        headers: tenant.agentKey.auth,
      });
      expect(got.statusCode).toBe(200);
      expect(got.json().message).toMatchObject({ id: row.id, status: 'sent' });
    } finally {
      await t.close();
      await provider.close();
    }
  });
});
