import type { Command } from 'commander';
import { findAgent } from '../../agents/agent.service.js';
import { listNumbers } from '../../numbers/number.service.js';
import { type DbFlags, withAdmin } from '../admin.js';
import { formatTable, print, printJson } from '../output.js';
import { action, dbOptions, fail } from '../run.js';
import { syncFromCli, syncSentence } from './template-sync.js';

export function registerTemplateCommands(program: Command): void {
  const template = program.command('template').description("templates of an organization's numbers");
  dbOptions(
    template
      .command('sync')
      .description(
        "read the numbers' templates from the provider now (Parley also does every PARLEY_TEMPLATE_SYNC_MS)",
      ),
  )
    .requiredOption('--org <id>', 'organization ID')
    .option('--agent <id>', "only this agent's number")
    .option('--sandbox-url <url>', 'sandbox address (default: the one `parley serve` started for this region)')
    .action(
      action(async (flags: DbFlags & { org: string; agent?: string; sandboxUrl?: string }) => {
        await withAdmin(flags, async (admin) => {
          const numbers = await listNumbers(admin.database.db, flags.org);
          let numberId: string | undefined;
          if (flags.agent) {
            const agent = await findAgent(admin.database.db, flags.org, flags.agent);
            if (!agent) fail(`unknown agent "${flags.agent}" in organization ${flags.org}`);
            if (!agent.numberId) fail(`agent ${flags.agent} has no messaging number assigned`);
            numberId = agent.numberId;
          }
          const results = await syncFromCli(
            admin,
            { orgId: flags.org, ...(numberId ? { numberId } : {}) },
            flags.sandboxUrl,
          );
          if (!results) {
            fail(
              'no provider is configured (PARLEY_PROVIDER_BASE_URL) and no running sandbox was found; start `npx parley serve` or pass --sandbox-url',
            );
          }
          const phoneOf = (id: string) => numbers.find((n) => n.id === id)?.phone ?? id;
          if (flags.json) {
            printJson(results.map((r) => ({ ...r, phone: phoneOf(r.numberId) })));
          } else if (results.length === 0) {
            print(`organization ${flags.org} has no messaging numbers`);
          } else {
            print(
              formatTable(
                ['NUMBER', 'SYNCED', 'TEMPLATES', 'CHANGED', 'ERROR'],
                results.map((r) => [
                  phoneOf(r.numberId),
                  r.synced ? 'yes' : 'no',
                  String(r.templates),
                  String(r.changed),
                  r.error ?? '',
                ]),
              ),
            );
          }
          if (results.some((r) => !r.synced)) {
            fail(
              results
                .filter((r) => !r.synced)
                .map((r) => syncSentence(r, phoneOf(r.numberId)))
                .join('; '),
            );
          }
        });
      }),
    );
}
