import { join } from 'node:path';
import closeWithGrace from 'close-with-grace';
import type { Command } from 'commander';
import { request } from 'undici';
import { loadConfig } from '../../config.js';
import type { Database } from '../../db/database.js';
import { listEndpoints } from '../../events/endpoint.service.js';
import { SANDBOX_MEDIA_DIR, SANDBOX_STATE_FILE } from '../../messaging/messaging.js';
import { webhookAppSecretOf } from '../../numbers/index.js';
import { readSandboxAddress, startSandbox } from '../../sandbox/index.js';
import { type HookDelivery, waitForHandOff, waitForReply } from '../../sandbox/reply.service.js';
import { findAgentNumber, waitForInbound } from '../../sandbox/sandbox.service.js';
import { readSentLogFile } from '../../sandbox/sandbox-sent-log.js';
import { sentQueryOf, toSentItem } from '../../sandbox/sent-log.service.js';
import { summarizePayload } from '../../sandbox/sent-summary.js';
import { systemClock } from '../../shared/clock.js';
import { createLogger } from '../../shared/logger.js';
import { parseInternationalPhone } from '../../shared/phone.js';
import { type DbFlags, withAdmin } from '../admin.js';
import { formatDate, formatTable, print, printJson } from '../output.js';
import { action, dbOptions, fail } from '../run.js';
import { registerSandboxAccountCommands } from './sandbox-account.js';
import { type InboundKindFlags, inboundBodyOf } from './sandbox-inbound-flags.js';

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
          mediaDir: join(config.dataDir, SANDBOX_MEDIA_DIR),
          ...(config.media.sandboxBytesPerSecond ? { mediaBytesPerSecond: config.media.sandboxBytesPerSecond } : {}),
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

  registerSandboxAccountCommands(sandbox);
  dbOptions(
    sandbox
      .command('inbound')
      .description("make the sandbox deliver an inbound message from a user to an agent's number"),
  )
    .requiredOption('--agent <id>', 'the agent whose number receives the message')
    .requiredOption('--from <e164>', 'the user writing in, e.g. +14155550100')
    .option('--text <text>', 'a text message')
    .option('--image <file>', 'a photo (.jpg, .png)')
    .option('--audio <file>', 'a voice note or audio (.ogg, .mp3, .m4a, .aac, .amr)')
    .option('--video <file>', 'a video (.mp4, .3gp)')
    .option('--document <file>', 'a document (.pdf, .txt, Office files)')
    .option('--location <lat,lng>', 'a shared location, e.g. 38.7223,-9.1393')
    .option('--button <id:title>', 'a tap on a reply button the agent sent, e.g. refund:Refund')
    .option('--caption <text>', 'the caption of --image, --video or --document')
    .option('--name <name>', "the user's profile name")
    .option('--sandbox-url <url>', 'sandbox address (default: the one `parley serve` started for this region)')
    .option('--wait <seconds>', 'how long to wait for Parley to apply the webhook', '10')
    .option('--wait-reply', "wait for the agent's answer (the next message sent in the conversation) and print it")
    .option('--timeout <seconds>', 'with --wait-reply: how long to wait for the answer', '30')
    .action(
      action(
        async (
          flags: DbFlags &
            InboundKindFlags & {
              agent: string;
              from: string;
              name?: string;
              sandboxUrl?: string;
              wait: string;
              waitReply?: boolean;
              timeout: string;
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
          const message = inboundBodyOf(flags);
          const waitSeconds = Number(flags.wait);
          if (!Number.isFinite(waitSeconds) || waitSeconds <= 0 || waitSeconds > 600) {
            fail(`--wait must be a number of seconds between 0 and 600, got "${flags.wait}"`);
          }
          const replySeconds = Number(flags.timeout);
          if (!Number.isFinite(replySeconds) || replySeconds <= 0 || replySeconds > 3600) {
            fail(`--timeout must be a number of seconds between 0 and 3600, got "${flags.timeout}"`);
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
                  ...message,
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
            // Who heard it: the message's `message.received` deliveries, recorded once it joins its conversation.
            const handOff = await waitForHandOff(database.db, answer.messageId, waitSeconds * 1000);
            const delivered =
              `delivered ${answer.messageId} from ${from.e164} to ${row.phone}; the 24-hour window is open` +
              (handOff.conversationId ? ` (conversation ${handOff.conversationId})` : '');
            const unheard =
              handOff.hooks.length > 0
                ? undefined
                : handOff.conversationId === null
                  ? `Parley has not joined it to a conversation within ${waitSeconds} s, so no bot was told of it`
                  : await noHookSentence(database.db, row.org_id, flags.agent);
            const result = {
              messageId: answer.messageId,
              from: from.e164,
              to: row.phone,
              windowOpen: true,
              conversationId: handOff.conversationId,
              hooks: handOff.hooks,
            };
            if (!flags.waitReply) {
              if (flags.json) printJson(result);
              else {
                print(delivered);
                print(unheard ?? `told ${hookList(handOff.hooks)}`);
              }
              return;
            }
            if (unheard) fail(`${delivered}, but no answer can come: ${unheard}`);
            const waited = await waitForReply(database.db, row.org_id, answer.messageId, handOff, replySeconds * 1000);
            if (!waited.reply) {
              const told = waited.hooks.some((h) => h.status !== 'failed');
              fail(
                `${told ? `no answer from the agent within ${replySeconds} s` : 'no bot was told of the message, so no answer can come'}: ${waited.hooks.map(hookProblem).join('; ')}`,
              );
            }
            const reply = waited.reply;
            if (flags.json) printJson({ ...result, hooks: waited.hooks, reply });
            else {
              print(delivered);
              print(`told ${hookList(waited.hooks)}`);
              const what = reply.type === 'template' ? `template ${reply.template ?? ''}` : (reply.text ?? '');
              const refused = reply.status === 'rejected' || reply.status === 'failed';
              print(
                `the agent answered: ${what}${refused ? ` (${reply.status}: ${reply.error ?? 'no reason given'})` : ''}`,
              );
            }
          });
        },
      ),
    );

  registerSentCommand(sandbox);
}

/** `parley sandbox sent`: the sandbox's log of what it was sent from an agent's number, read from its state file. */
function registerSentCommand(sandbox: Command): void {
  dbOptions(sandbox.command('sent').description("what the sandbox was sent from an agent's number, newest first"))
    .requiredOption('--agent <id>', 'the agent whose number sent the messages')
    .option('--to <e164>', 'only messages to this recipient')
    .option('--limit <n>', 'how many, 1 to 200', '20')
    .action(
      action(async (flags: DbFlags & { agent: string; to?: string; limit: string }) => {
        const limit = Number(flags.limit);
        if (!Number.isInteger(limit) || limit < 1 || limit > 200) {
          fail(`--limit must be a whole number from 1 to 200, got "${flags.limit}"`);
        }
        if (flags.to !== undefined && !parseInternationalPhone(flags.to).ok) {
          fail(
            `--to must be a phone number in international format, e.g. +14155550100; got "${flags.to.slice(0, 40)}"`,
          );
        }
        const parentData = (sandbox.opts() as { data?: string }).data;
        const adminFlags = { ...flags, ...(flags.data || !parentData ? {} : { data: parentData }) };
        await withAdmin(adminFlags, async ({ database, config }) => {
          const row = await findAgentNumber(database.db, flags.agent);
          if (!row) fail(`unknown agent "${flags.agent}"`);
          if (!row.phone || !row.phone_number_id) fail(`agent ${flags.agent} has no messaging number assigned`);
          const numbers = new Map([[row.phone_number_id, row.phone]]);
          const query = sentQueryOf(numbers, { limit, ...(flags.to !== undefined ? { to: flags.to } : {}) });
          const items = readSentLogFile(join(config.dataDir, SANDBOX_STATE_FILE), query).map((e) =>
            toSentItem(numbers, e),
          );
          if (flags.json) return printJson(items);
          if (items.length === 0) {
            print(
              `the sandbox of this data folder was sent nothing from ${row.phone}${flags.to ? ` to ${flags.to}` : ''}`,
            );
            return;
          }
          print(
            formatTable(
              ['received', 'type', 'to', 'message ID', 'what'],
              items.map((i) => [
                formatDate(i.receivedAt),
                i.type,
                i.to ?? '-',
                i.messageId ?? `refused (${i.error?.code ?? ''})`,
                i.error ? `${summarizePayload(i.payload)}: ${i.error.message}` : summarizePayload(i.payload),
              ]),
            ),
          );
        });
      }),
    );
}

const hookList = (hooks: readonly HookDelivery[]) =>
  `${hooks.length === 1 ? 'its hook' : `${hooks.length} hooks`}: ${hooks.map((h) => `${h.url} (delivery ${h.deliveryId})`).join(', ')}`;

/** Why a hook's delivery brought no answer, in words. */
function hookProblem(h: HookDelivery): string {
  if (h.status === 'failed')
    return `the delivery ${h.deliveryId} to ${h.url} failed: ${h.lastError ?? 'no reason recorded'}`;
  if (h.status === 'delivered')
    return `${h.url} acknowledged the event (delivery ${h.deliveryId}), but the agent sent nothing in the conversation`;
  if (h.attempts === 0)
    return `the delivery ${h.deliveryId} to ${h.url} has not been attempted yet (is \`npx parley serve\` running?)`;
  return `the delivery ${h.deliveryId} to ${h.url} is not delivered after ${h.attempts} attempts (retried later): ${h.lastError ?? ''}`;
}

/** Why no hook heard a message of `agentId`: its hooks are disabled, want other events, or it has none. */
async function noHookSentence(db: Database['db'], orgId: string, agentId: string): Promise<string> {
  const hooks = (await listEndpoints(db, orgId)).filter((e) => e.agentId === null || e.agentId === agentId);
  const [disabled] = hooks.filter((e) => e.disabledAt !== null);
  if (disabled) {
    return `no bot heard it: the hook ${disabled.id} (${disabled.url}) is disabled (${disabled.disabledReason ?? 'no reason given'}); turn it back on with \`npx parley endpoint enable --id ${disabled.id}\``;
  }
  const [other] = hooks;
  if (other)
    return `no bot heard it: the hook ${other.id} (${other.url}) receives ${other.events.join(', ')}, not message.received`;
  return `no bot heard it: agent ${agentId} has no hook. Make one with \`npx parley endpoint create --org ${orgId} --agent ${agentId} --url http://127.0.0.1:4000/\` (it prints the signing secret for your bot)`;
}
