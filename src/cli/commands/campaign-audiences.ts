import { once } from 'node:events';
import type { Command } from 'commander';
import { getCampaign } from '../../campaigns/campaign.service.js';
import { exportCampaignDeliveries } from '../../campaigns/delivery-export.service.js';
import type { SegmentSendResponse } from '../../campaigns/segment-send.schemas.js';
import { getSegmentSend, scheduleSegmentSend } from '../../campaigns/segment-send.service.js';
import type { JobRunner } from '../../jobs/job-runner.js';
import { type AdminContext, type DbFlags, withAdmin } from '../admin.js';
import { print, printJson } from '../output.js';
import { action, dbOptions, fail } from '../run.js';

type Flags = DbFlags & { org: string; id: string };

const line = (s: SegmentSendResponse) =>
  `${s.id} to segment ${s.segment} (${s.segmentName}) at ${new Date(s.at).toISOString()}: ${s.status}; ` +
  `members ${s.counts.members}, deliveries ${s.counts.accepted}, duplicates ${s.counts.duplicates}, ` +
  `opted out ${s.counts.optedOut}, no phone ${s.counts.skipped}`;

/** `campaign send` and `campaign send-show`: a campaign sent to a segment, as POST /api/campaigns/<id>/sends does. */
export function registerCampaignAudienceCommands(
  campaign: Command,
  withJobStore: <T>(admin: AdminContext, fn: (jobs: JobRunner) => Promise<T>) => Promise<T>,
): void {
  registerCampaignExportCommand(campaign);
  dbOptions(campaign.command('send').description('send the campaign to a segment, now or at a time (a server runs it)'))
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption('--id <id>', 'campaign ID')
    .requiredOption('--segment <id>', 'segment ID (seg_...)')
    .option('--at <time>', 'when, as an ISO 8601 time (2026-12-24T10:00:00Z); default now')
    .action(
      action(async (flags: Flags & { segment: string; at?: string }) => {
        let at: number | undefined;
        if (flags.at !== undefined) {
          at = Date.parse(flags.at);
          if (Number.isNaN(at)) fail(`--at must be an ISO 8601 time such as 2026-12-24T10:00:00Z, got "${flags.at}"`);
        }
        await withAdmin(flags, (admin) =>
          withJobStore(admin, async (jobs) => {
            const send = await scheduleSegmentSend(
              { db: admin.database.db, clock: admin.clock, jobs },
              flags.org,
              flags.id,
              { segment: flags.segment, ...(at !== undefined ? { at } : {}) },
            );
            if (flags.json) printJson(send);
            else print(`scheduled ${line(send)}`);
          }),
        );
      }),
    );

  dbOptions(campaign.command('send-show').description('a send of the campaign to a segment: status and counts'))
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption('--id <id>', 'campaign ID')
    .requiredOption('--send <id>', 'send ID (snd_...)')
    .action(
      action(async (flags: Flags & { send: string }) => {
        await withAdmin(flags, async ({ database }) => {
          const send = await getSegmentSend(database.db, flags.org, flags.id, flags.send);
          if (flags.json) printJson(send);
          else print(line(send));
        });
      }),
    );
}

/** `campaign export`: the campaign's deliveries as CSV on stdout, oldest first. */
export function registerCampaignExportCommand(campaign: Command): void {
  dbOptions(campaign.command('export').description("the campaign's deliveries as CSV on stdout, oldest first"))
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption('--id <id>', 'campaign ID')
    .action(
      action(async (flags: Flags) => {
        await withAdmin(flags, async ({ database }) => {
          await getCampaign(database.db, flags.org, flags.id);
          await exportCampaignDeliveries({ db: database.db }, flags.org, flags.id, async (chunk) => {
            if (!process.stdout.write(chunk)) await once(process.stdout, 'drain');
          });
        });
      }),
    );
}
