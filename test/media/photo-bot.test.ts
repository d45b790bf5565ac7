import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExampleBot } from '../helpers/example-bot.js';
import { call } from '../helpers/http.js';
import { pngOf } from '../helpers/media.js';
import { createMessagingApp, type MessagingTestApp, makeSendingTenant, randomPhone } from '../helpers/messaging.js';
import { sandboxLog } from '../helpers/sandbox-log.js';
import { until } from '../helpers/wait.js';

describe('the example photo bot (sqlite)', () => {
  let t: MessagingTestApp;
  beforeAll(async () => {
    t = await createMessagingApp('sqlite', {
      env: { PARLEY_WEBHOOK_ALLOW_PRIVATE: 'true', PARLEY_JOB_POLL_MS: '20' },
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers a photo with buttons quoting it, and a button tap with a text', async () => {
    const x = await makeSendingTenant(t.ctx);
    const { stop } = await startExampleBot(t, x, 'photo-bot.mjs', 'photo bot on');
    try {
      const user = randomPhone();
      const inbound = async (body: Record<string, unknown>) => {
        const res = await call(t, {
          method: 'POST',
          url: '/api/sandbox/inbound',
          headers: x.agentKey.auth,
          payload: { from: user, ...body },
        });
        expect(res.statusCode, res.body).toBe(200);
        return res.json<{ messageId: string }>().messageId;
      };
      const png = pngOf(200, 150, [180, 120, 60]);
      const photo = await inbound({ image: { data: png.toString('base64'), mimeType: 'image/png' }, text: 'Broken' });
      const log = () => sandboxLog(t, x.agentKey.auth, { to: user, limit: 10 });
      await until(async () => (await log()).some((e) => e.type === 'interactive'), "the bot's buttons");
      const [buttons, read] = await log();
      expect(read).toMatchObject({
        type: 'read',
        payload: { status: 'read', message_id: photo, typing_indicator: { type: 'text' } },
      });
      expect(buttons?.payload).toMatchObject({
        context: { message_id: photo },
        type: 'interactive',
        interactive: {
          type: 'button',
          body: {
            text: `Thanks, we got your photo (${Math.ceil(png.length / 1024)} KB). What would you like us to do?`,
          },
          action: {
            buttons: [
              { type: 'reply', reply: { id: 'refund', title: 'Refund' } },
              { type: 'reply', reply: { id: 'replace', title: 'Send a new one' } },
            ],
          },
        },
      });
      await inbound({ buttonReply: { id: 'refund', title: 'Refund' } });
      await until(async () => (await log()).some((e) => e.type === 'text'), "the bot's text");
      const [text] = await log();
      expect(text?.payload).toMatchObject({ type: 'text', text: { body: 'You chose: Refund. We are on it.' } });
    } finally {
      stop();
    }
  });
});
