import type { Command } from 'commander';
import { CLI_ACTOR } from '../../audit/audit.service.js';
import type { DeliveryCounts } from '../../campaigns/campaign.service.js';
import {
  type Campaign,
  campaignWithCounts,
  createCampaign,
  listCampaigns,
  pauseCampaign,
  removeCampaign,
  resumeCampaign,
} from '../../campaigns/campaign.service.js';
import { defineCampaignQueues } from '../../campaigns/campaign-tasks.js';
import { createJobRunner } from '../../jobs/jobs.js';
import { createLogger } from '../../shared/logger.js';
import { type AdminContext, type DbFlags, withAdmin } from '../admin.js';
import { formatTable, print, printJson } from '../output.js';
import { action, dbOptions } from '../run.js';
import { registerCampaignAudienceCommands } from './campaign-audiences.js';

type Flags = DbFlags & { org: string };

/** The fields `campaign create --json` prints. */
const publicFields = (c: Campaign) => ({
  id: c.id,
  name: c.name,
  agentId: c.agentId,
  template: c.template,
  language: c.language,
  status: c.status,
});

const describe = (c: Campaign) =>
  `${c.id} (${c.name}): agent ${c.agentId ?? 'none'}, template ${c.template ?? 'none'} ${c.language ?? ''}, ${c.status}`;

const countsLine = (n: DeliveryCounts) =>
  `queued ${n.queued}, sending ${n.sending}, sent ${n.sent}, delivered ${n.delivered}, read ${n.read}, failed ${n.failed}`;

/** A job runner that only writes jobs for the servers (its queues are defined so the store knows them). */
async function withJobStore<T>(
  admin: AdminContext,
  fn: (jobs: Awaited<ReturnType<typeof createJobRunner>>) => Promise<T>,
) {
  const logger = createLogger({ ...admin.config, logLevel: 'warn' });
  const jobs = await createJobRunner(admin.config, admin.region.database, admin.database, admin.clock, logger);
  defineCampaignQueues(jobs);
  await jobs.init();
  try {
    return await fn(jobs);
  } finally {
    await jobs.stop();
  }
}

/** Webhook campaigns: a template sent from an agent's number to the recipients posted to its endpoint. */
export function registerCampaignCommands(program: Command): void {
  const campaign = program
    .command('campaign')
    .description('webhook campaigns (POST /api/campaigns/<id>/webhook with the campaign key)');

  dbOptions(campaign.command('create').description('create a webhook campaign'))
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption('--name <name>', 'a name for people')
    .requiredOption('--agent <id>', "the agent whose messaging number sends (replies reach the agent's hook)")
    .requiredOption('--template <name>', 'the template to send (an approved template name)')
    .requiredOption('--language <code>', 'the template language, xx_XX (such as en_US)')
    .option('--body <json>', 'default body parameters, a JSON array of strings, for recipients given none')
    .option('--header <json>', 'default header parameters, a JSON array of strings')
    .action(
      action(
        async (
          flags: Flags & {
            name: string;
            agent: string;
            template: string;
            language: string;
            body?: string;
            header?: string;
          },
        ) => {
          const list = (name: string, text: string | undefined) => {
            if (text === undefined) return undefined;
            const value: unknown = JSON.parse(text);
            if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) {
              throw new Error(`--${name} must be a JSON array of strings`);
            }
            return value as string[];
          };
          const body = list('body', flags.body);
          const header = list('header', flags.header);
          await withAdmin(flags, async ({ database, clock }) => {
            const created = await createCampaign(database.db, clock, {
              orgId: flags.org,
              name: flags.name,
              agentId: flags.agent,
              template: flags.template,
              language: flags.language,
              actor: CLI_ACTOR,
              ...(body || header ? { parameters: { ...(body ? { body } : {}), ...(header ? { header } : {}) } } : {}),
            });
            if (flags.json) printJson(publicFields(created));
            else {
              print(`created campaign ${describe(created)}`);
              print(`  its key: parley key create --org ${created.orgId} --scope campaign --campaign ${created.id}`);
              print(`  its endpoint: POST /api/campaigns/${created.id}/webhook`);
            }
          });
        },
      ),
    );

  dbOptions(campaign.command('list').description("list an organization's campaigns"))
    .requiredOption('--org <id>', 'organization ID')
    .action(
      action(async (flags: Flags) => {
        await withAdmin(flags, async ({ database }) => {
          const campaigns = await listCampaigns(database.db, flags.org);
          if (flags.json) printJson(campaigns.map(publicFields));
          else if (campaigns.length === 0) print('no campaigns');
          else {
            print(
              formatTable(
                ['ID', 'NAME', 'AGENT', 'TEMPLATE', 'LANGUAGE', 'STATUS'],
                campaigns.map((c) => [c.id, c.name, c.agentId ?? '-', c.template ?? '-', c.language ?? '-', c.status]),
              ),
            );
          }
        });
      }),
    );

  dbOptions(campaign.command('show').description('a campaign with its deliveries by status'))
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption('--id <id>', 'campaign ID')
    .action(
      action(async (flags: Flags & { id: string }) => {
        await withAdmin(flags, async ({ database }) => {
          const shown = await campaignWithCounts(database.db, flags.org, flags.id);
          if (flags.json) printJson({ ...publicFields(shown), counts: shown.counts });
          else {
            print(describe(shown));
            print(`  deliveries: ${countsLine(shown.counts)}`);
          }
        });
      }),
    );

  dbOptions(campaign.command('pause').description('stop sending (within a second); the endpoint answers 409'))
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption('--id <id>', 'campaign ID')
    .action(
      action(async (flags: Flags & { id: string }) => {
        await withAdmin(flags, async ({ database, clock }) => {
          const paused = await pauseCampaign(database.db, clock, flags.org, flags.id, CLI_ACTOR);
          if (flags.json) printJson(publicFields(paused));
          else print(`paused campaign ${describe(paused)}`);
        });
      }),
    );

  dbOptions(
    campaign
      .command('remove')
      .description('remove a campaign for good: its keys stop working at once, queued deliveries are never sent'),
  )
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption('--id <id>', 'campaign ID')
    .action(
      action(async (flags: Flags & { id: string }) => {
        await withAdmin(flags, async ({ database, clock }) => {
          const removed = await removeCampaign(database.db, clock, {
            orgId: flags.org,
            campaignId: flags.id,
            actor: CLI_ACTOR,
          });
          if (flags.json) printJson(removed);
          else {
            print(`removed campaign ${removed.id} (${removed.name})`);
            print(
              `  ${removed.keys} key(s) deleted, ${removed.unsent} queued deliver${removed.unsent === 1 ? 'y' : 'ies'} not sent`,
            );
          }
        });
      }),
    );

  dbOptions(campaign.command('resume').description('send again, from where it stopped'))
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption('--id <id>', 'campaign ID')
    .action(
      action(async (flags: Flags & { id: string }) => {
        await withAdmin(flags, (admin) =>
          withJobStore(admin, async (jobs) => {
            const resumed = await resumeCampaign(admin.database.db, jobs, admin.clock, flags.org, flags.id, CLI_ACTOR);
            if (flags.json) printJson(publicFields(resumed));
            else print(`resumed campaign ${describe(resumed)}`);
          }),
        );
      }),
    );

  registerCampaignAudienceCommands(campaign, withJobStore);
}
