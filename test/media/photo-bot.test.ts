/**
 * examples/photo-bot.mjs, run as a process against a real server and its sandbox: a photo in, a
 * read receipt with typing and buttons quoting it out; a tap on a button, a text back. On SQLite
 * only: the bot speaks HTTP, and the database under it is the rest of the suite's business.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndpoint } from '../../src/events/endpoint.service.js';
import { call } from '../helpers/http.js';
import { pngOf } from '../helpers/media.js';
import {
  closedPort,
  createMessagingApp,
  type MessagingTestApp,
  makeSendingTenant,
  randomPhone,
} from '../helpers/messaging.js';
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
    const port = await closedPort();
    const hook = await createEndpoint(t.ctx, {
      orgId: x.org.id,
      url: `http://127.0.0.1:${port}/`,
      agentId: x.agent.id,
    });
    const bot: ChildProcess = spawn(
      process.execPath,
      [fileURLToPath(new URL('../../examples/photo-bot.mjs', import.meta.url))],
      {
        env: {
          ...process.env,
          PARLEY_URL: t.url,
          PARLEY_KEY: x.agentKey.key,
          WEBHOOK_SECRET: hook.secret,
          PORT: String(port),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    try {
      let out = '';
      bot.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
      });
      await until(() => out.includes('photo bot on'), 'the bot to listen');
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
      bot.kill();
    }
  });
});
