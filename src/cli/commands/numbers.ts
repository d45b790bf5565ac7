import type { Command } from 'commander';
import type { Agent } from '../../agents/agent.service.js';
import { WebhookProcessor } from '../../messaging/webhook.service.js';
import { secretBoxOf } from '../../numbers/index.js';
import {
  addNumber,
  assignNumber,
  createAgentWithNumber as createAgentWithNumberIn,
  findNumberByPhone,
  isPhoneRegistered,
  listNumbers,
  type MessagingNumber,
} from '../../numbers/number.service.js';
import { storedHealth } from '../../policies/number-health.service.js';
import { setNumberAccount } from '../../policies/template-sync.service.js';
import { createLogger } from '../../shared/logger.js';
import type { AdminContext, DbFlags } from '../admin.js';
import { withAdmin } from '../admin.js';
import { formatDate, formatTable, print, printJson } from '../output.js';
import { action, dbOptions, fail } from '../run.js';
import { type DemoStep, demoSteps } from './demo.js';
import { syncFromCli, syncSentence } from './template-sync.js';

const boxOf = (admin: AdminContext) => secretBoxOf(admin.config);

const numberJson = (n: MessagingNumber) => ({
  id: n.id,
  orgId: n.orgId,
  phone: n.phone,
  provider: n.provider,
  phoneNumberId: n.phoneNumberId,
  createdAt: n.createdAt,
});

/**
 * Gives an agent a number: an existing number of its organization, or, when the organization has
 * none with that phone, a new sandbox number (registered with the built-in sandbox).
 */
export async function assignAgentNumber(
  admin: AdminContext,
  orgId: string,
  agentId: string,
  phone: string,
): Promise<MessagingNumber> {
  const db = admin.database.db;
  if (!(await findNumberByPhone(db, orgId, phone))) {
    const created = await addNumber(db, admin.clock, boxOf(admin), { orgId, phone });
    await syncNewNumber(admin, created.id);
  }
  return assignNumber(db, orgId, agentId, phone);
}

/**
 * A number just added reads its templates at once when the sandbox `parley serve` runs can be
 * reached (as `number add` does), so its sends and the opt-out rule know each template's category;
 * otherwise the scheduled sync reads them later.
 */
async function syncNewNumber(admin: AdminContext, numberId: string): Promise<void> {
  await syncFromCli(admin, { numberId }).catch(() => undefined);
}

/** `agent create --number`: the agent and its number (existing or a new sandbox one) in one transaction. */
export async function createAgentWithNumber(
  admin: AdminContext,
  input: { orgId: string; name: string; phone: string },
): Promise<{ agent: Agent; number: MessagingNumber }> {
  const created = await createAgentWithNumberIn(admin.database.db, admin.clock, boxOf(admin), input);
  await syncNewNumber(admin, created.number.id);
  return created;
}

/**
 * Applies the webhooks kept as unrouted for a phone number ID that now has a number (inbound
 * messages that arrived before the number was added); returns how many were applied.
 */
export async function replayUnroutedFor(admin: AdminContext, phoneNumberId: string): Promise<number> {
  const processor = new WebhookProcessor(admin.database.db, admin.clock, createLogger(admin.config), {
    retryDelaysMs: CLI_RETRY_DELAYS_MS,
  });
  const results = await processor.replayStored({ phoneNumberId });
  await processor.close();
  return results.filter((r) => r.outcome === 'applied').length;
}

/** A command replaying webhooks waits for its retries: short ones. */
export const CLI_RETRY_DELAYS_MS = [200, 1000];

/** The demo's agents get sandbox numbers, so its printed send works at once. */
const demoNumbers: DemoStep = async (admin, demo) => {
  for (const agent of demo.agents) {
    let number: MessagingNumber | undefined;
    for (let attempt = 0; attempt < 5 && !number; attempt++) {
      const phone = `+1650${2 + Math.floor(Math.random() * 8)}${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}`;
      if (await isPhoneRegistered(admin.database.db, phone)) continue;
      number = await assignAgentNumber(admin, demo.orgId, agent.id, phone);
    }
    if (number) demo.notes.push(`  agent ${agent.name} sends from sandbox number ${number.phone}`);
  }
  const base = demo.baseUrl;
  demo.notes.push(
    '\nSimulate a user writing in (opens the 24-hour window for free text), then answer with the last curl line:',
    `  npx parley sandbox inbound --agent ${demo.agents[0]?.id ?? 'AGENT'} --from +14155550100 --text "Hi"`,
  );
  demo.curl.push(
    `curl -s -X POST -H "Authorization: Bearer ${demo.keys.agent}" -H "Content-Type: application/json" ` +
      `-d '{"channel":"msgapp","to":"+14155550100","type":"message","message":{"text":"Hello!"}}' ${base}/api/channels/send`,
  );
};

// Loading this file gives the demo its numbers step (commands.ts loads it with `demo`).
demoSteps.push(demoNumbers);

export function registerNumberCommands(program: Command): void {
  const number = program.command('number').description('messaging numbers of an organization');
  dbOptions(number.command('add').description('add a messaging number (a sandbox number unless --provider cloud)'))
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption('--phone <e164>', 'the number, international format, e.g. +14155550100')
    .option('--provider <provider>', 'sandbox or cloud', 'sandbox')
    .option('--phone-number-id <id>', "the provider's numeric phone number ID (cloud)")
    .option('--access-token-env <var>', 'name of the environment variable holding the access token (cloud)')
    .option('--waba-id <id>', "the provider's business account ID, whose templates the number sends (cloud)")
    .option('--sandbox-url <url>', 'sandbox to read its templates from (default: the one `parley serve` started)')
    .action(
      action(
        async (
          flags: DbFlags & {
            org: string;
            phone: string;
            provider: string;
            phoneNumberId?: string;
            accessTokenEnv?: string;
            wabaId?: string;
            sandboxUrl?: string;
          },
        ) => {
          const provider = flags.provider.toLowerCase();
          if (provider !== 'cloud' && (flags.phoneNumberId !== undefined || flags.accessTokenEnv !== undefined)) {
            fail('--phone-number-id and --access-token-env are only for a cloud number: add --provider cloud');
          }
          // The token comes from the environment, never from argv (which other users can read).
          let accessToken: string | undefined;
          if (flags.accessTokenEnv) {
            accessToken = process.env[flags.accessTokenEnv];
            if (!accessToken) fail(`environment variable ${flags.accessTokenEnv} is not set or empty`);
          }
          await withAdmin(flags, async (admin) => {
            const created = await addNumber(admin.database.db, admin.clock, boxOf(admin), {
              orgId: flags.org,
              phone: flags.phone,
              provider,
              ...(flags.phoneNumberId !== undefined ? { phoneNumberId: flags.phoneNumberId } : {}),
              ...(accessToken ? { accessToken } : {}),
            });
            if (flags.wabaId !== undefined) {
              await setNumberAccount(admin.database.db, {
                numberId: created.id,
                orgId: flags.org,
                wabaId: flags.wabaId,
              });
            }
            // Inbound messages that came for this phone number ID before it had a number.
            const replayed = await replayUnroutedFor(admin, created.phoneNumberId);
            // Its templates, read at once when the provider (or the running sandbox) can be reached.
            const sync = (await syncFromCli(admin, { numberId: created.id }, flags.sandboxUrl))?.[0];
            if (flags.json) {
              printJson({
                ...numberJson(created),
                replayedWebhooks: replayed,
                templates: sync ? { synced: sync.synced, count: sync.templates, error: sync.error ?? null } : null,
              });
            } else {
              print(
                `added ${created.provider} number ${created.phone} (${created.id}, phone number ID ${created.phoneNumberId})`,
              );
              if (replayed > 0) print(`applied ${replayed} stored webhooks that were waiting for this number`);
              print(
                sync
                  ? syncSentence(sync, 'templates')
                  : 'templates: not read yet (no provider or running sandbox); Parley reads them on its next sync',
              );
            }
          });
        },
      ),
    );
  dbOptions(number.command('list').description("list an organization's messaging numbers"))
    .requiredOption('--org <id>', 'organization ID')
    .action(
      action(async (flags: DbFlags & { org: string }) => {
        await withAdmin(flags, async ({ database }) => {
          const numbers = await listNumbers(database.db, flags.org);
          // Its health as the provider last rated it (src/policies/): null until read.
          const health = await storedHealth(
            database.db,
            numbers.map((n) => n.id),
          );
          const healthOf = (id: string) => ({
            quality: health.get(id)?.quality ?? null,
            messagingLimit: health.get(id)?.messagingLimit ?? null,
          });
          if (flags.json) printJson(numbers.map((n) => ({ ...numberJson(n), ...healthOf(n.id) })));
          else
            print(
              formatTable(
                ['ID', 'PHONE', 'PROVIDER', 'PHONE NUMBER ID', 'QUALITY', 'LIMIT', 'CREATED'],
                numbers.map((n) => [
                  n.id,
                  n.phone,
                  n.provider,
                  n.phoneNumberId,
                  healthOf(n.id).quality ?? 'unknown',
                  healthOf(n.id).messagingLimit ?? 'unknown',
                  formatDate(n.createdAt),
                ]),
              ),
            );
        });
      }),
    );
  dbOptions(number.command('assign').description('assign a messaging number to an agent'))
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption('--agent <id>', 'agent ID')
    .requiredOption('--phone <e164>', 'the number')
    .action(
      action(async (flags: DbFlags & { org: string; agent: string; phone: string }) => {
        await withAdmin(flags, async ({ database }) => {
          const assigned = await assignNumber(database.db, flags.org, flags.agent, flags.phone);
          if (flags.json) printJson({ agentId: flags.agent, number: numberJson(assigned) });
          else print(`agent ${flags.agent} now sends from ${assigned.phone}`);
        });
      }),
    );
}
