import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { createAgent } from '../../agents/agent.service.js';
import { CLI_ACTOR } from '../../audit/audit.service.js';
import { createCampaign } from '../../campaigns/campaign.service.js';
import { createUser } from '../../dashboard/user.service.js';
import { endpointAddressWarning } from '../../events/address-warning.service.js';
import { checkEndpointUrl, createEndpoint } from '../../events/endpoint.service.js';
import { allowPrivateForCommands } from '../../events/private-switch-file.js';
import { createKey } from '../../keys/key.service.js';
import { secretBoxOf } from '../../numbers/index.js';
import { createOrganization } from '../../orgs/org.service.js';
import { readAddress } from '../../shared/address-file.js';
import { isAppError } from '../../shared/errors.js';
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
  /** The dashboard's owner: its password is shown this once. */
  dashboard: { url: string; email: string; password: string };
  /** The Support agent's hook, with --hook-url (its signing secret is shown this once). */
  hook: { id: string; url: string; secret: string; warning?: string } | undefined;
  /** Where the curl lines point: the running server of the region, else its configured address. */
  baseUrl: string;
  /** Calls to try (the steps add theirs after the demo's own). */
  curl: string[];
  /** Sentences for people (not in --json). */
  notes: string[];
}

export function registerDemoCommand(program: Command): void {
  dbOptions(
    program
      .command('demo')
      .description('create a paid demo organization with agents, keys of each kind and a dashboard owner'),
  )
    .option('--hook-url <url>', "also register the Support agent's hook at this address (e.g. the echo bot's)")
    .action(
      action(async (flags: DbFlags & { hookUrl?: string }) => {
        await withAdmin(flags, async (admin) => {
          const { database, clock, region } = admin;
          const db = database.db;
          // Checked before anything is made: a refused address leaves no half-made demo behind.
          if (flags.hookUrl !== undefined) {
            checkEndpointUrl(flags.hookUrl, { allowPrivate: allowPrivateForCommands(admin.config, region.region) });
          }
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
            actor: CLI_ACTOR,
          });
          const orgKey = await createKey(db, clock, region.region, {
            orgId: org.id,
            label: 'demo organization key',
            scope: 'organization',
            permissions: ['channels', 'triggers', 'endusers'],
            actor: CLI_ACTOR,
          });
          const agentKey = await createKey(db, clock, region.region, {
            orgId: org.id,
            label: 'demo Support agent key',
            scope: 'agent',
            agentId: support.id,
            permissions: ['channels', 'triggers'],
            actor: CLI_ACTOR,
          });
          const campaignKey = await createKey(db, clock, region.region, {
            orgId: org.id,
            label: 'demo campaign key',
            scope: 'campaign',
            campaignId: campaign.id,
            actor: CLI_ACTOR,
          });
          // The running server's address when one runs on this data folder (its real port), else the configured one.
          const baseUrl = readAddress(admin.config.dataDir, 'server', region.region) ?? region.baseUrl;
          const owner = await createOwner(admin, org.id);
          const hook =
            flags.hookUrl === undefined ? undefined : await createHook(admin, org.id, support.id, flags.hookUrl);
          const demo: DemoData = {
            orgId: org.id,
            agents: [
              { id: support.id, name: support.name },
              { id: sales.id, name: sales.name },
            ],
            campaignId: campaign.id,
            keys: { organization: orgKey.key, agent: agentKey.key, campaign: campaignKey.key },
            dashboard: { url: `${baseUrl}/dashboard/login`, ...owner },
            hook,
            baseUrl,
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
          // What the client's README example starts: a shipping notice, with the template's parameters.
          await createTrigger(db, clock, {
            orgId: org.id,
            agentId: support.id,
            name: 'Order shipped',
            template: 'order_update',
            language: 'en_US',
            id: 'order_shipped',
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
          printDemo(demo, { region: region.region, running, campaignId: campaign.id });
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

/** A dashboard owner with a generated password: `owner@demo.example`, or `owner-N@` once that is taken. */
async function createOwner(admin: AdminContext, orgId: string): Promise<{ email: string; password: string }> {
  const password = randomBytes(12).toString('base64url');
  for (let n = 1; ; n++) {
    const email = n === 1 ? 'owner@demo.example' : `owner-${n}@demo.example`;
    try {
      await createUser(admin.database.db, admin.clock, { orgId, email, role: 'owner', password, actor: CLI_ACTOR });
      return { email, password };
    } catch (err) {
      // Another demo of this region has that address: the next one (a few hundred demos at most).
      if (!isAppError(err) || err.code !== 'CONFLICT' || n >= 1000) throw err;
    }
  }
}

/** The Support agent's hook, and the warning when the server will refuse its address. */
async function createHook(admin: AdminContext, orgId: string, agentId: string, url: string): Promise<DemoData['hook']> {
  const allowPrivate = allowPrivateForCommands(admin.config, admin.region.region);
  const deps = {
    db: admin.database.db,
    clock: admin.clock,
    messaging: { secrets: secretBoxOf(admin.config) },
    config: { events: { allowPrivate } },
  };
  const created = await createEndpoint(deps, { orgId, agentId, url, actor: CLI_ACTOR });
  const warning = await endpointAddressWarning(created.url, { allowPrivate });
  if (warning) process.stderr.write(`parley: warning: ${warning}\n`);
  return { id: created.id, url: created.url, secret: created.secret, ...(warning ? { warning } : {}) };
}

/** The demo for people: what was made, the secrets shown this once, what to try, and a line for the shell. */
function printDemo(demo: DemoData, facts: { region: string; running: boolean; campaignId: string }): void {
  const support = demo.agents[0];
  const base = demo.baseUrl;
  print(`Demo organization ${demo.orgId} (paid plan, region ${facts.region})`);
  for (const a of demo.agents) print(`  agent ${a.name}: ${a.id}`);
  print(`  campaign: ${facts.campaignId}`);
  print('Keys (shown this once):');
  print(`  organization (Channels, Triggers, End-users): ${demo.keys.organization}`);
  print(`  agent Support (Channels, Triggers):           ${demo.keys.agent}`);
  print(`  campaign (Campaigns):                         ${demo.keys.campaign}`);
  print(`Dashboard: ${demo.dashboard.url}`);
  print(`  sign in as ${demo.dashboard.email} with password ${demo.dashboard.password} (shown this once)`);
  if (demo.hook) {
    print(`Hook of agent Support: ${demo.hook.id} → ${demo.hook.url}`);
    print(`  signing secret (shown this once): ${demo.hook.secret}`);
  }
  for (const note of demo.notes) print(note);
  if (facts.running) print(`\nA server of region ${facts.region} answers at ${base}. Try:`);
  else {
    print(
      `\nNo Parley server of region ${facts.region} answers at ${base}: start one with ` +
        `\`npx parley serve --region ${facts.region}\` (same data folder), then try:`,
    );
  }
  for (const line of demo.curl) print(`  ${line}`);
  if (demo.hook && support) {
    const port = new URL(demo.hook.url).port || '80';
    print('\nRun the example bot on the hook, then write to the agent as a user would:');
    print(
      `  PARLEY_URL=${base} PARLEY_KEY=${demo.keys.agent} WEBHOOK_SECRET=${demo.hook.secret} PORT=${port} node examples/echo-bot.mjs &`,
    );
    print(`  npx parley sandbox inbound --agent ${support.id} --from +14155550100 --text "hello" --wait-reply`);
  }
  const vars = [
    `PARLEY_URL=${base}`,
    `ORG=${demo.orgId}`,
    `AGENT=${support?.id ?? ''}`,
    `CAMPAIGN=${facts.campaignId}`,
    `ORG_KEY=${demo.keys.organization}`,
    `AGENT_KEY=${demo.keys.agent}`,
    `CAMPAIGN_KEY=${demo.keys.campaign}`,
    ...(demo.hook ? [`WEBHOOK_SECRET=${demo.hook.secret}`] : []),
  ];
  print('\nFor the commands of the README and the guides, paste this line into your shell:');
  print(`  export ${vars.join(' ')}`);
}
