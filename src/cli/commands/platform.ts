import type { Command } from 'commander';
import { createAgent, listAgents, setHoldingText } from '../../agents/agent.service.js';
import { CLI_ACTOR } from '../../audit/audit.service.js';
import { migrateToLatest } from '../../db/database.js';
import { PERMISSION_LABELS, SCOPE_LABELS } from '../../keys/index.js';
import { createKey, listKeys, revokeKey } from '../../keys/key.service.js';
import { secretBoxOf } from '../../numbers/index.js';
import {
  createOrganization,
  listOrganizations,
  setOrganizationCountry,
  setOrganizationPlan,
} from '../../orgs/org.service.js';
import { type DbFlags, withAdmin } from '../admin.js';
import { formatDate, formatTable, print, printJson } from '../output.js';
import { action, dbOptions, fail, parseList } from '../run.js';
import { registerOrgUpdateCommand } from './org-update.js';

export function registerPlatformCommands(program: Command): void {
  dbOptions(program.command('migrate').description('bring the region database up to date')).action(
    action(async (flags: DbFlags) => {
      await withAdmin(
        flags,
        async ({ config, database, region }) => {
          const applied = await migrateToLatest(database.db, { secrets: () => secretBoxOf(config) });
          if (flags.json) printJson({ region: region.region, applied });
          else if (applied.length === 0) print(`region ${region.region}: database is up to date (nothing to apply)`);
          else print(`region ${region.region}: applied ${applied.length} migrations: ${applied.join(', ')}`);
        },
        { migrate: false },
      );
    }),
  );

  const org = program.command('org').description('organizations');
  dbOptions(org.command('create').description('create an organization'))
    .requiredOption('--name <name>', 'display name')
    .option('--plan <plan>', 'free or paid', 'free')
    .option('--country <iso2>', 'default country for phone numbers written without +, e.g. US')
    .action(
      action(async (flags: DbFlags & { name: string; plan: string; country?: string }) => {
        await withAdmin(flags, async ({ database, clock }) => {
          const created = await createOrganization(database.db, clock, {
            name: flags.name,
            plan: flags.plan,
            ...(flags.country ? { defaultCountry: flags.country } : {}),
          });
          if (flags.json) printJson({ id: created.id, name: created.name, plan: created.plan });
          else print(`created organization ${created.id} (${created.name}, ${created.plan} plan)`);
        });
      }),
    );
  dbOptions(org.command('list').description("list the region's organizations")).action(
    action(async (flags: DbFlags) => {
      await withAdmin(flags, async ({ database }) => {
        const orgs = await listOrganizations(database.db);
        if (flags.json) {
          printJson(
            orgs.map((o) => ({
              id: o.id,
              name: o.name,
              plan: o.plan,
              defaultCountry: o.defaultCountry,
              createdAt: o.createdAt,
            })),
          );
        } else if (orgs.length === 0) print('no organizations');
        else {
          print(
            formatTable(
              ['ID', 'NAME', 'PLAN', 'COUNTRY', 'CREATED'],
              orgs.map((o) => [o.id, o.name, o.plan, o.defaultCountry ?? '-', formatDate(o.createdAt)]),
            ),
          );
        }
      });
    }),
  );
  dbOptions(org.command('plan').description("change an organization's plan"))
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption('--plan <plan>', 'free or paid')
    .action(
      action(async (flags: DbFlags & { org: string; plan: string }) => {
        await withAdmin(flags, async ({ database, clock }) => {
          const updated = await setOrganizationPlan(database.db, flags.org, flags.plan, { actor: CLI_ACTOR, clock });
          if (flags.json) printJson({ id: updated.id, plan: updated.plan });
          else print(`organization ${updated.id} is now on the ${updated.plan} plan`);
        });
      }),
    );
  dbOptions(org.command('country').description("set an organization's default phone country"))
    .requiredOption('--org <id>', 'organization ID')
    .option('--country <iso2>', 'two-letter country code; omit to clear')
    .action(
      action(async (flags: DbFlags & { org: string; country?: string }) => {
        await withAdmin(flags, async ({ database }) => {
          const updated = await setOrganizationCountry(database.db, flags.org, flags.country);
          if (flags.json) printJson({ id: updated.id, defaultCountry: updated.defaultCountry });
          else print(`organization ${updated.id} default country: ${updated.defaultCountry ?? 'none'}`);
        });
      }),
    );

  registerOrgUpdateCommand(org);

  const agent = program.command('agent').description('AI agents');
  dbOptions(agent.command('create').description('create an agent; prints its public ID (convId)'))
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption('--name <name>', 'display name')
    .option('--number <e164>', 'messaging number to send from; added as a sandbox number when the org has none such')
    .action(
      action(async (flags: DbFlags & { org: string; name: string; number?: string }) => {
        await withAdmin(flags, async (admin) => {
          const { database, clock } = admin;
          // With --number: the agent and its number in one transaction (nothing stored on refusal).
          const { agent: created, number } = flags.number
            ? // Loaded only here: the numbers commands import the webhook processing, which no other command here needs.
              await (await import('./numbers.js')).createAgentWithNumber(admin, {
                orgId: flags.org,
                name: flags.name,
                phone: flags.number,
              })
            : {
                agent: await createAgent(database.db, clock, { orgId: flags.org, name: flags.name }),
                number: undefined,
              };
          if (flags.json)
            printJson({ id: created.id, name: created.name, ...(number ? { number: number.phone } : {}) });
          else print(`created agent ${created.id} (${created.name})${number ? ` sending from ${number.phone}` : ''}`);
        });
      }),
    );
  dbOptions(agent.command('list').description("list an organization's agents"))
    .requiredOption('--org <id>', 'organization ID')
    .action(
      action(async (flags: DbFlags & { org: string }) => {
        await withAdmin(flags, async ({ database }) => {
          const agents = await listAgents(database.db, flags.org);
          if (flags.json) printJson(agents.map((a) => ({ id: a.id, name: a.name, numberId: a.numberId })));
          else
            print(
              formatTable(
                ['ID', 'NAME'],
                agents.map((a) => [a.id, a.name]),
              ),
            );
        });
      }),
    );

  dbOptions(agent.command('update').description("change an agent's settings"))
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption('--id <id>', 'agent ID')
    .option(
      '--holding-text <text>',
      'free text sent to the end user when Parley hands a conversation to people (the agent has no hook, or its hook does not answer); "" removes it',
    )
    .action(
      action(async (flags: DbFlags & { org: string; id: string; holdingText?: string }) => {
        if (flags.holdingText === undefined) fail('nothing to change: give --holding-text');
        await withAdmin(flags, async ({ database }) => {
          const updated = await setHoldingText(database.db, flags.org, flags.id, flags.holdingText ?? null);
          if (flags.json) printJson({ id: updated.id, name: updated.name, holdingText: updated.holdingText });
          else
            print(
              updated.holdingText === null
                ? `agent ${updated.id} has no holding text`
                : `agent ${updated.id} holding text: ${updated.holdingText}`,
            );
        });
      }),
    );

  // Campaigns: src/cli/commands/campaigns.ts.

  const key = program.command('key').description('API keys');
  dbOptions(key.command('create').description('create an API key; the key is shown this once'))
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption('--label <label>', 'a name for the key')
    .requiredOption('--scope <scope>', 'organization, agent or campaign')
    .option('--agent <id>', 'the agent of an agent-scoped key')
    .option('--campaign <id>', 'the campaign of a campaign key')
    .option('--permissions <list>', 'comma-separated: triggers,channels,endusers,campaigns')
    .action(
      action(
        async (
          flags: DbFlags & {
            org: string;
            label: string;
            scope: string;
            agent?: string;
            campaign?: string;
            permissions?: string;
          },
        ) => {
          await withAdmin(flags, async ({ database, clock, region }) => {
            const { apiKey, key: secret } = await createKey(database.db, clock, region.region, {
              orgId: flags.org,
              label: flags.label,
              scope: flags.scope.toLowerCase(),
              actor: CLI_ACTOR,
              ...(flags.agent ? { agentId: flags.agent } : {}),
              ...(flags.campaign ? { campaignId: flags.campaign } : {}),
              // "End-users", "end_users" and "endusers" all name the same permission.
              ...(flags.permissions !== undefined
                ? { permissions: parseList(flags.permissions).map((p) => p.replace(/[-_ ]/g, '')) }
                : {}),
            });
            if (flags.json) {
              printJson({ id: apiKey.id, key: secret, prefix: apiKey.prefix, region: region.region });
            } else {
              print(`created key ${apiKey.id} (${apiKey.label})`);
              print(`  ${secret}`);
              print('Copy it now: it is shown this once and cannot be recovered.');
            }
          });
        },
      ),
    );
  dbOptions(key.command('list').description("list an organization's keys"))
    .requiredOption('--org <id>', 'organization ID')
    .action(
      action(async (flags: DbFlags & { org: string }) => {
        await withAdmin(flags, async ({ database }) => {
          const keys = await listKeys(database.db, flags.org);
          if (flags.json) {
            printJson(
              keys.map((k) => ({
                id: k.id,
                label: k.label,
                prefix: k.prefix,
                scope: k.scope,
                agentId: k.agentId,
                campaignId: k.campaignId,
                permissions: k.permissions,
                createdAt: k.createdAt,
                lastUsedAt: k.lastUsedAt,
                revokedAt: k.revokedAt,
              })),
            );
            return;
          }
          print(
            formatTable(
              ['ID', 'LABEL', 'PREFIX', 'SCOPE', 'AGENT', 'PERMISSIONS', 'CREATED', 'LAST USED', 'STATUS'],
              keys.map((k) => [
                k.id,
                k.label,
                k.prefix,
                SCOPE_LABELS[k.scope] + (k.campaignId ? ` (${k.campaignId})` : ''),
                k.agentId ?? '-',
                k.permissions.map((p) => PERMISSION_LABELS[p]).join(', '),
                formatDate(k.createdAt),
                formatDate(k.lastUsedAt),
                k.revokedAt === null ? 'active' : `revoked ${formatDate(k.revokedAt)}`,
              ]),
            ),
          );
        });
      }),
    );
  dbOptions(key.command('revoke').description('revoke a key at once and for ever'))
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption('--id <keyId>', 'key ID (from key list)')
    .action(
      action(async (flags: DbFlags & { org: string; id: string }) => {
        await withAdmin(flags, async ({ database, clock }) => {
          const revoked = await revokeKey(database.db, clock, flags.org, flags.id, CLI_ACTOR);
          if (flags.json) printJson({ id: revoked.id, revokedAt: revoked.revokedAt });
          else print(`revoked key ${revoked.id} (${revoked.label}); it fails with 401 from now on`);
        });
      }),
    );
}
