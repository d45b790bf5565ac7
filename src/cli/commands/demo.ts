import type { Command } from 'commander';
import { createAgent } from '../../agents/agent.service.js';
import { createCampaign } from '../../campaigns/campaign.service.js';
import { createKey } from '../../keys/key.service.js';
import { createOrganization } from '../../orgs/org.service.js';
import { readAddress } from '../../shared/address-file.js';
import { createTrigger } from '../../triggers/trigger.service.js';
import { type AdminContext, type DbFlags, withAdmin } from '../admin.js';
import { print, printJson } from '../output.js';
import { action, dbOptions } from '../run.js';

/** Hooks later features use to enrich the demo (e.g. give the agents a messaging number). */
export type DemoStep = (admin: AdminContext, demo: DemoData) => Promise<void>;
export const demoSteps: DemoStep[] = [];

export interface DemoData {
  orgId: string;
  agents: { id: string; name: string }[];
  campaignId: string;
  keys: { organization: string; agent: string; campaign: string };
  /** Where the curl lines point: the running server of the region, else its configured address. */
  baseUrl: string;
  /** Calls to try (the steps add theirs after the demo's own). */
  curl: string[];
  /** Sentences for people (not in --json). */
  notes: string[];
}

export function registerDemoCommand(program: Command): void {
  dbOptions(
    program.command('demo').description('create a paid demo organization with agents and keys of each kind'),
  ).action(
    action(async (flags: DbFlags) => {
      await withAdmin(flags, async (admin) => {
        const { database, clock, region } = admin;
        const db = database.db;
        const org = await createOrganization(db, clock, { name: 'Demo Co', plan: 'paid', defaultCountry: 'US' });
        const support = await createAgent(db, clock, { orgId: org.id, name: 'Support' });
        const sales = await createAgent(db, clock, { orgId: org.id, name: 'Sales' });
        // Sent from Support's number, so that its key has something to do.
        const campaign = await createCampaign(db, clock, {
          orgId: org.id,
          name: 'Spring launch',
          agentId: support.id,
          template: 'hello_world',
          language: 'en_US',
        });
        const orgKey = await createKey(db, clock, region.region, {
          orgId: org.id,
          label: 'demo organization key',
          scope: 'organization',
          permissions: ['channels', 'triggers', 'endusers'],
        });
        const agentKey = await createKey(db, clock, region.region, {
          orgId: org.id,
          label: 'demo Support agent key',
          scope: 'agent',
          agentId: support.id,
          permissions: ['channels', 'triggers'],
        });
        const campaignKey = await createKey(db, clock, region.region, {
          orgId: org.id,
          label: 'demo campaign key',
          scope: 'campaign',
          campaignId: campaign.id,
        });
        const demo: DemoData = {
          orgId: org.id,
          agents: [
            { id: support.id, name: support.name },
            { id: sales.id, name: sales.name },
          ],
          campaignId: campaign.id,
          keys: { organization: orgKey.key, agent: agentKey.key, campaign: campaignKey.key },
          // The running server's address when one runs on this data folder (its real port), else the configured one.
          baseUrl: readAddress(admin.config.dataDir, 'server', region.region) ?? region.baseUrl,
          curl: [],
          notes: [],
        };
        const trigger = await createTrigger(db, clock, {
          orgId: org.id,
          agentId: support.id,
          name: 'Welcome',
          template: 'hello_world',
          language: 'en_US',
          id: 'welcome',
        });
        const base = demo.baseUrl;
        demo.curl.push(
          `curl -s ${base}/api/health`,
          `curl -s -H "Authorization: Bearer ${orgKey.key}" ${base}/api/endusers`,
          `curl -s -X POST -H "Authorization: Bearer ${orgKey.key}" -H "Content-Type: application/json" ` +
            `-d '{"origin":"manual","name":"Ada","email":"ada@example.com","phone":"+14155550100"}' ${base}/api/endusers`,
          `curl -s -X POST -H "Authorization: Bearer ${agentKey.key}" -H "Content-Type: application/json" ` +
            `-d '{"channel":"msgapp","to":"+14155550100","type":"template","template":{"name":"hello_world","language":"en_US"}}' ` +
            `${base}/api/channels/send`,
          `curl -s -X POST -H "Authorization: Bearer ${orgKey.key}" -H "Content-Type: application/json" ` +
            `-d '{"to":"+14155550111","context":{"source":"demo"}}' ${base}/api/triggers/${support.id}/${trigger.id}`,
          `curl -s -H "Authorization: Bearer ${agentKey.key}" ${base}/api/conversations`,
          `curl -s -X POST -H "Authorization: Bearer ${campaignKey.key}" -H "Content-Type: application/json" ` +
            `-d '{"recipients":[{"to":"+14155550122"},{"to":"+14155550123"}]}' ${base}/api/campaigns/${campaign.id}/webhook`,
          `curl -s -H "Authorization: Bearer ${campaignKey.key}" ${base}/api/campaigns/${campaign.id}`,
        );
        for (const step of demoSteps) await step(admin, demo);
        const curl = demo.curl;
        const running = await serverAnswers(base, region.region);
        if (flags.json) {
          // Machine-only: the notes are for people.
          const { notes: _notes, ...data } = demo;
          printJson({ ...data, region: region.region, serverRunning: running, curl });
          return;
        }
        print(`Demo organization ${org.id} (paid plan, region ${region.region})`);
        for (const a of demo.agents) print(`  agent ${a.name}: ${a.id}`);
        print(`  campaign: ${campaign.id}`);
        print('Keys (shown this once):');
        print(`  organization (Channels, Triggers, End-users): ${orgKey.key}`);
        print(`  agent Support (Channels, Triggers):           ${agentKey.key}`);
        print(`  campaign (Campaigns):                         ${campaignKey.key}`);
        for (const note of demo.notes) print(note);
        if (running) print(`\nA server of region ${region.region} answers at ${base}. Try:`);
        else {
          print(
            `\nNo Parley server of region ${region.region} answers at ${base}: start one with ` +
              `\`npx parley serve --region ${region.region}\` (same data folder), then try:`,
          );
        }
        for (const line of curl) print(`  ${line}`);
      });
    }),
  );
}

/** Whether a Parley server of `region` answers at `base` (its health check, within 2 seconds). */
async function serverAnswers(base: string, region: string): Promise<boolean> {
  try {
    const res = await fetch(`${base}/api/health`, { signal: AbortSignal.timeout(2000) });
    if (!res.ok) return false;
    const body = (await res.json()) as { status?: unknown; region?: unknown };
    return body.status === 'ok' && body.region === region;
  } catch {
    return false;
  }
}
