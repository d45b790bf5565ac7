import closeWithGrace from 'close-with-grace';
import type { Command } from 'commander';
import { request } from 'undici';
import { loadConfig } from '../../config.js';
import { createLogger } from '../../context.js';
import { webhookAppSecretOf } from '../../numbers/secret-box.js';
import { startSandbox } from '../../sandbox/sandbox.js';
import { readSandboxAddress } from '../../sandbox/sandbox-address.js';
import { systemClock } from '../../shared/clock.js';
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
    .action(
      action(
        async (flags: DbFlags & { agent: string; from: string; text: string; name?: string; sandboxUrl?: string }) => {
          // `sandbox` itself takes --data too, and commander hands it to the parent wherever it stands.
          const parentData = (sandbox.opts() as { data?: string }).data;
          const adminFlags = { ...flags, ...(flags.data || !parentData ? {} : { data: parentData }) };
          await withAdmin(adminFlags, async ({ database, config, region }) => {
            const row = await database.db
              .selectFrom('agents')
              .leftJoin('messaging_numbers', 'messaging_numbers.id', 'agents.number_id')
              .select(['agents.id', 'messaging_numbers.phone', 'messaging_numbers.phone_number_id'])
              .where('agents.id', '=', flags.agent)
              .executeTakeFirst();
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
                  from: flags.from,
                  text: flags.text,
                  ...(flags.name ? { name: flags.name } : {}),
                }),
              });
            } catch {
              fail(`the sandbox at ${url} cannot be reached; is \`npx parley serve\` running?`);
            }
            const answer = (await res.body.json()) as { messageId?: string; error?: string };
            if (res.statusCode !== 200) fail(`the sandbox refused: ${answer.error ?? res.statusCode}`);
            if (flags.json) printJson({ messageId: answer.messageId, from: flags.from, to: row.phone });
            else print(`delivered ${answer.messageId} from ${flags.from} to ${row.phone}; the 24-hour window is open`);
          });
        },
      ),
    );
}
