/**
 * POST /api/messages/{messageId}/read through real HTTP on each database: the Cloud API's
 * read request (and typing indicator) in the sandbox's log, and the agent rules of a send.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS } from '../helpers/app.js';
import { expectMatchesContract } from '../helpers/contract.js';
import { call } from '../helpers/http.js';
import {
  createMessagingApp,
  type MessagingTestApp,
  makeSendingTenant,
  randomPhone,
  sandboxInbound,
  textSend,
} from '../helpers/messaging.js';
import { sandboxLog } from '../helpers/sandbox-log.js';

describe.each(DIALECTS)('read receipts (%s)', (dialect) => {
  let t: MessagingTestApp;
  let x: Awaited<ReturnType<typeof makeSendingTenant>>;
  const user = randomPhone();
  let inboundId: string;

  beforeAll(async () => {
    t = await createMessagingApp(dialect);
    x = await makeSendingTenant(t.ctx);
    const res = await sandboxInbound(t, x.agentKey.auth, user, 'Are you there?');
    expect(res.statusCode, res.body).toBe(200);
    inboundId = res.json().messageId;
    await t.settle();
  });
  afterAll(async () => {
    await t?.close();
  });

  const read = (id: string, auth: Record<string, string>, payload?: unknown) =>
    call(t, { method: 'POST', url: `/api/messages/${encodeURIComponent(id)}/read`, headers: auth, payload });

  it('marks a received message read: the Cloud API read request, logged with type "read"', async () => {
    const res = await read(inboundId, x.agentKey.auth);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ success: true, messageId: inboundId, typing: false });
    expectMatchesContract(t.app, 'POST', '/api/messages/{messageId}/read', res);
    const [entry] = await sandboxLog(t, x.agentKey.auth, { to: user, limit: 1 });
    expect(entry).toMatchObject({ messageId: inboundId, to: user, type: 'read', error: null });
    expect(entry?.payload).toEqual({ messaging_product: 'whatsapp', status: 'read', message_id: inboundId });
  });

  it('with typing: the typing indicator goes with it', async () => {
    const res = await read(inboundId, x.orgKey.auth, { typing: true });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().typing).toBe(true);
    const [entry] = await sandboxLog(t, x.orgKey.auth, { to: user, limit: 1 });
    expect(entry?.payload).toEqual({
      messaging_product: 'whatsapp',
      status: 'read',
      message_id: inboundId,
      typing_indicator: { type: 'text' },
    });
  });

  it("another agent's message is 404, a sent message 400, an unknown one 404, a bad body 400: nothing reaches the provider", async () => {
    const before = (await sandboxLog(t, x.orgKey.auth, { limit: 200 })).length;
    const other = await read(inboundId, x.otherKey.auth);
    expect(other.statusCode).toBe(404);
    expect(other.json()).toEqual({
      success: false,
      error: `No received message with ID '${inboundId}' in this organization.`,
    });
    const sent = await call(t, {
      method: 'POST',
      url: '/api/channels/send',
      headers: x.agentKey.auth,
      payload: textSend(undefined, user, 'Yes, here'),
    });
    expect(sent.statusCode, sent.body).toBe(200);
    const own = await read(sent.json().messageId, x.agentKey.auth);
    expect(own.statusCode).toBe(400);
    expect(own.json().error).toBe(
      `'${sent.json().messageId}' is a message this organization sent; only a received message can be marked read.`,
    );
    expect((await read('wamid.unknown', x.orgKey.auth)).statusCode).toBe(404);
    const bad = await read(inboundId, x.orgKey.auth, { typing: 'yes' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toBe("Invalid body: 'typing' must be a boolean.");
    // Only the send went out.
    expect((await sandboxLog(t, x.orgKey.auth, { limit: 200 })).length).toBe(before + 1);
  });

  it('the sandbox refuses a read request without a message ID (131009)', async () => {
    const res = await fetch(`${t.sandbox.url}/v21.0/${x.number.phoneNumberId}/messages`, {
      method: 'POST',
      headers: { authorization: 'Bearer sandbox', 'content-type': 'application/json' },
      body: JSON.stringify({ messaging_product: 'whatsapp', status: 'read' }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(131009);
  });
});
