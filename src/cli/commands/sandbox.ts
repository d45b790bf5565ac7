import { join } from 'node:path';
import closeWithGrace from 'close-with-grace';
import type { Command } from 'commander';
import { request } from 'undici';
import { loadConfig } from '../../config.js';
import { SANDBOX_STATE_FILE } from '../../messaging/messaging.js';
import { webhookAppSecretOf } from '../../numbers/index.js';
import { readSandboxAddress, startSandbox } from '../../sandbox/index.js';
import { findAgentNumber, waitForInbound } from '../../sandbox/sandbox.service.js';
import { systemClock } from '../../shared/clock.js';
import { createLogger } from '../../shared/logger.js';
import { parseInternationalPhone } from '../../shared/phone.js';
import { type DbFlags, withAdmin } from '../admin.js';
import { print, printJson } from '../output.js';
import { action, dbOptions, fail } from '../run.js';

export function registerSandboxCommands(program: Command): void {
  const sandbox = program
    .command('sandbox')
    .description('run the messaging provider sandbox alone (parley serve starts one itself when no provider is set)')
    .option('--port <port>', 'port to listen on', '4010')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--webhook-url <url>', "Parley's webhook address", 'http://127.0.0.1:3000/webhooks/msgapp')
    .option('--data <dir>', 'data folder holding the generated webhook app secret (env PARLEY_DATA_DIR)')
    .action(
      action(async (flags: { port: string; host: string; webhookUrl: string; data?: string }) => {
        const config = loadConfig(flags.data ? { data: flags.data } : {});
        const logger = createLogger(config, { component: 'sandbox' });
        const port = Number(flags.port);
        if (!Number.isInteger(port) || port < 0 || port > 65535)
          fail(`--port must be a port number, got "${flags.port}"`);
        const running = await startSandbox({
          clock: systemClock,
          appSecret: webhookAppSecretOf(config.messaging.webhookAppSecret, config.dataDir),
          templates: config.messaging.sandboxTemplates,
          statusDelayMs: config.messaging.sandboxStatusDelayMs,
          statuses: config.messaging.sandboxStatuses,
          ...(config.messaging.sandboxMps !== undefined ? { mps: config.messaging.sandboxMps } : {}),
          stateFile: join(config.dataDir, SANDBOX_STATE_FILE),
          webhookUrl: flags.webhookUrl,
          port,
          host: flags.host,
          onError: (err, what) => logger.warn({ err, what }, 'sandbox could not deliver a webhook'),
        });
        logger.info({ url: running.url, webhookUrl: flags.webhookUrl }, 'sandbox ready');
        print(`sandbox listening on ${running.url}; webhooks go to ${flags.webhookUrl}`);
        print(`point Parley at it with PARLEY_PROVIDER_BASE_URL=${running.url}`);
        closeWithGrace({ delay: 5_000 }, async () => {
          await running.close();
        });
      }),
    );

  dbOptions(
    sandbox
      .command('inbound')
      .description("make the sandbox deliver an inbound message from a user to an agent's number"),
  )
    .requiredOption('--agent <id>', 'the agent whose number receives the message')
    .requiredOption('--from <e164>', 'the user writing in, e.g. +14155550100')
    .requiredOption('--text <text>', 'the message text')
    .option('--name <name>', "the user's profile name")
    .option('--sandbox-url <url>', 'sandbox address (default: the one `parley serve` started for this region)')
    .option('--wait <seconds>', 'how long to wait for Parley to apply the webhook', '10')
    .action(
      action(
        async (
          flags: DbFlags & {
            agent: string;
            from: string;
            text: string;
            name?: string;
            sandboxUrl?: string;
            wait: string;
          },
        ) => {
          // Checked before anything is sent: a user the provider could report, in international format.
          const from = parseInternationalPhone(flags.from);
          if (!from.ok) {
            fail(
              from.problem === 'extension'
                ? `--from must be a phone number without an extension, got "${flags.from.slice(0, 40)}"`
                : `--from must be a phone number in international format (+ and country code), e.g. +14155550100; got "${flags.from.slice(0, 40)}"`,
            );
          }
          if (!flags.text.trim()) fail('--text must not be empty');
          const waitSeconds = Number(flags.wait);
          if (!Number.isFinite(waitSeconds) || waitSeconds <= 0 || waitSeconds > 600) {
            fail(`--wait must be a number of seconds between 0 and 600, got "${flags.wait}"`);
          }
          // `sandbox` itself takes --data too, and commander hands it to the parent wherever it stands.
          const parentData = (sandbox.opts() as { data?: string }).data;
          const adminFlags = { ...flags, ...(flags.data || !parentData ? {} : { data: parentData }) };
          await withAdmin(adminFlags, async ({ database, config, region }) => {
            const row = await findAgentNumber(database.db, flags.agent);
            if (!row) fail(`unknown agent "${flags.agent}"`);
            if (!row.phone || !row.phone_number_id) fail(`agent ${flags.agent} has no messaging number assigned`);
            const url = flags.sandboxUrl ?? readSandboxAddress(config.dataDir, region.region);
            if (!url) fail('no running sandbox found for this region; start `npx parley serve` or pass --sandbox-url');
            let res: Awaited<ReturnType<typeof request>>;
            try {
              res = await request(`${url.replace(/\/$/, '')}/sandbox/inbound`, {
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify({
                  phone_number_id: row.phone_number_id,
                  display_phone_number: row.phone,
                  from: from.e164,
                  text: flags.text,
                  ...(flags.name ? { name: flags.name } : {}),
                }),
              });
            } catch {
              fail(`the sandbox at ${url} cannot be reached; is \`npx parley serve\` running?`);
            }
            const answer = (await res.body.json().catch(() => ({}))) as { messageId?: string; error?: string };
            if (res.statusCode !== 200 || !answer.messageId) {
              fail(`the sandbox refused: ${answer.error ?? res.statusCode}`);
            }
            // Parley acknowledged the webhook; the window is open once it has applied it. Its own
            // database says when (or that the webhook was kept as failed or unrouted).
            const applied = await waitForInbound(database.db, answer.messageId, waitSeconds * 1000);
            if (applied !== 'applied') {
              fail(
                applied === 'pending'
                  ? `the sandbox delivered ${answer.messageId} and Parley acknowledged it, but has not applied it within ${waitSeconds} s; the 24-hour window is not open yet`
                  : `the sandbox delivered ${answer.messageId}, but Parley could not apply it (kept as ${applied === 'unrouted' ? 'an unrouted' : 'a failed'} webhook: see \`npx parley webhooks failed\`); the 24-hour window is not open`,
              );
            }
            if (flags.json)
              printJson({ messageId: answer.messageId, from: from.e164, to: row.phone, windowOpen: true });
            else print(`delivered ${answer.messageId} from ${from.e164} to ${row.phone}; the 24-hour window is open`);
          });
        },
      ),
    );
}
