import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndpoint } from '../../src/events/endpoint.service.js';
import { waitForHandOff, waitForReply } from '../../src/sandbox/reply.service.js';
import { DIALECTS } from '../helpers/app.js';
import { createMessagingApp, type MessagingTestApp, makeSendingTenant, randomPhone } from '../helpers/messaging.js';
import { startReceiver } from '../helpers/receiver.js';

/**
 * What `parley sandbox inbound` reads after a user wrote in: who was told (the message's
 * `message.received` deliveries) and the agent's answer (the next message sent in that
 * conversation). On both databases: these are queries of their own.
 */
describe.each(DIALECTS)('sandbox inbound: the hand-off and the answer (%s)', (dialect) => {
  let t: MessagingTestApp;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    receiver = await startReceiver();
    t = await createMessagingApp(dialect, { env: { PARLEY_WEBHOOK_ALLOW_PRIVATE: 'true', PARLEY_JOB_POLL_MS: '20' } });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  const inbound = async (auth: Record<string, string>, from: string, text: string) => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/sandbox/inbound',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: { from, text },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ messageId: string }>().messageId;
  };

  it('names the hook told of the message, and the first message the agent sent after it', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const hook = await createEndpoint(t.ctx, {
      orgId: tenant.org.id,
      agentId: tenant.agent.id,
      url: `${receiver.url}/reply-hook`,
    });
    const user = randomPhone();
    const messageId = await inbound(tenant.agentKey.auth, user, 'hello');

    const handOff = await waitForHandOff(t.ctx.db, messageId, 10_000);
    expect(handOff.conversationId).toMatch(/^cnv_/);
    expect(handOff.hooks).toEqual([
      expect.objectContaining({
        endpointId: hook.id,
        url: `${receiver.url}/reply-hook`,
        deliveryId: expect.any(String),
      }),
    ]);

    // Nothing sent yet: no answer within the time, and the hook's delivery as it stands.
    const before = await waitForReply(t.ctx.db, tenant.org.id, messageId, handOff, 300);
    expect(before.reply).toBeUndefined();
    expect(before.hooks).toHaveLength(1);

    const sent = await t.app.inject({
      method: 'POST',
      url: '/api/channels/send',
      headers: { ...tenant.agentKey.auth, 'content-type': 'application/json' },
      payload: { channel: 'msgapp', to: user, type: 'message', message: { text: 'You said: hello' } },
    });
    expect(sent.statusCode, sent.body).toBe(200);
    const answer = await waitForReply(t.ctx.db, tenant.org.id, messageId, handOff, 10_000);
    expect(answer.reply).toMatchObject({
      messageId: sent.json<{ messageId: string }>().messageId,
      type: 'message',
      text: 'You said: hello',
      template: null,
    });
    expect(answer.reply?.status).not.toBe('pending');
  });

  it('a message whose agent has no hook is told to nobody', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const messageId = await inbound(tenant.agentKey.auth, randomPhone(), 'anyone?');
    const handOff = await waitForHandOff(t.ctx.db, messageId, 10_000);
    expect(handOff.conversationId).toMatch(/^cnv_/);
    expect(handOff.hooks).toEqual([]);
  });
});
