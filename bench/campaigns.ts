/**
 * Webhook campaigns: recipients accepted per second by POST /api/campaigns/<id>/webhook (batches of
 * 1,000), and deliveries per second with the pace raised (PARLEY_NUMBER_MPS=1000, a sandbox with no
 * throughput cap), beside sends per second through POST /api/channels/send on the same server. On
 * SQLite and (when DATABASE_URL is set) PostgreSQL.
 *
 *   npm run build && node --import tsx bench/campaigns.ts --dist
 *   node --import tsx bench/campaigns.ts --dist --duration 3 --deliveries 2000   # smoke run
 *   node --import tsx bench/campaigns.ts --cli /tmp/parley-before/dist/cli/main.js   # an earlier build
 *
 * Every process is separate, as in production: Parley (`parley serve`) and the sandbox standing in
 * for the provider (`parley sandbox`, answering at once, its status webhooks going to Parley). The
 * acceptance run paces deliveries at 1 per second so that it measures the endpoint (and the job
 * that queues each batch's deliveries), not the sends; the delivery run starts on fresh data.
 */
import type { ChildProcess } from 'node:child_process';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import {
  autocannon,
  entry,
  freePort,
  log,
  messagingBenchEnv,
  parleyJson,
  spawnNode,
  stopChild,
  waitUp,
} from './child-server.js';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '4' },
    deliveries: { type: 'string', default: '10000' },
    'send-connections': { type: 'string', default: '50' },
    dist: { type: 'boolean', default: false },
    cli: { type: 'string' },
  },
});
const DURATION = Number(args.duration);
const CONNECTIONS = Number(args.connections);
const DELIVERIES = Number(args.deliveries);
const SEND_CONNECTIONS = Number(args['send-connections']);
/** `--cli path/to/dist/cli/main.js`: serve (and seed with) another build, an earlier commit's say. */
const BUILD = args.cli ?? args.dist;
const ENTRY = entry(BUILD);
const BATCH = 1000;

const phone = (i: number) => `+1650${2 + Math.floor(i / 1_000_000)}${String(i % 1_000_000).padStart(6, '0')}`;

/** An organization, an agent with a sandbox number, a campaign of it and the keys. */
async function seed(env: Record<string, string>) {
  const org = await parleyJson<{ id: string }>(BUILD, ['org', 'create', '--name', 'Bench', '--plan', 'paid'], env);
  const number = phone(Math.floor(Math.random() * 7_000_000));
  const agent = await parleyJson<{ id: string }>(
    BUILD,
    ['agent', 'create', '--org', org.id, '--name', 'Bench', '--number', number],
    env,
  );
  const campaign = await parleyJson<{ id: string }>(
    BUILD,
    [
      ...['campaign', 'create', '--org', org.id, '--name', 'Bench', '--agent', agent.id],
      ...['--template', 'hello_world', '--language', 'en_US'],
    ],
    env,
  );
  const key = async (...scope: string[]) =>
    (await parleyJson<{ key: string }>(BUILD, ['key', 'create', '--org', org.id, '--label', 'bench', ...scope], env))
      .key;
  return {
    campaignId: campaign.id,
    campaignKey: await key('--scope', 'campaign', '--campaign', campaign.id),
    agentKey: await key('--scope', 'agent', '--agent', agent.id, '--permissions', 'channels'),
  };
}

async function startServers(env: Record<string, string>) {
  const sandboxPort = await freePort();
  const parleyPort = await freePort();
  const children: ChildProcess[] = [];
  const full = { ...env, PARLEY_PROVIDER_BASE_URL: `http://127.0.0.1:${sandboxPort}` };
  const sandbox = spawnNode(
    [
      ...ENTRY,
      'sandbox',
      '--port',
      String(sandboxPort),
      '--webhook-url',
      `http://127.0.0.1:${parleyPort}/webhooks/msgapp`,
    ],
    full,
  );
  children.push(sandbox);
  const parley = spawnNode([...ENTRY, 'serve', '--port', String(parleyPort)], full);
  children.push(parley);
  await waitUp(`http://127.0.0.1:${sandboxPort}/sandbox/health`, sandbox);
  await waitUp(`http://127.0.0.1:${parleyPort}/api/health`, parley);
  return {
    url: `http://127.0.0.1:${parleyPort}`,
    env: full,
    async stop() {
      for (const child of children.reverse()) await stopChild(child);
    },
  };
}

const batchBody = (from: number) =>
  JSON.stringify({ recipients: Array.from({ length: BATCH }, (_, i) => ({ to: phone(from + i) })) });

async function counts(url: string, campaignId: string, key: string) {
  const res = await request(`${url}/api/campaigns/${campaignId}`, { headers: { authorization: `Bearer ${key}` } });
  const body = (await res.body.json()) as { counts: Record<string, number> };
  return body.counts;
}

interface Row {
  dialect: string;
  acceptedPerSecond: number;
  acceptP50: number;
  acceptP99: number;
  deliveriesPerSecond: number;
  sendsPerSecond: number;
}

async function runDialect(dialect: 'sqlite' | 'postgres'): Promise<Row> {
  const limits = {
    PARLEY_CAMPAIGN_RATE_LIMIT: '1000000000',
    PARLEY_CAMPAIGN_RATE_LIMIT_ORG: '1000000000',
  };
  // 1. Acceptance: deliveries trickle at 1 per second, the endpoint takes batches of 1,000.
  const accept = messagingBenchEnv(dialect, 'campaigns', 'http://127.0.0.1:1');
  const acceptServers = await startServers({ ...accept.env, ...limits, PARLEY_NUMBER_MPS: '1' });
  let acceptedPerSecond = 0;
  let acceptP50 = 0;
  let acceptP99 = 0;
  try {
    log(`${dialect}: seeding; then ${DURATION} s of batches of ${BATCH} at ${CONNECTIONS} connections`);
    const s = await seed(acceptServers.env);
    const r = await autocannon({
      url: `${acceptServers.url}/api/campaigns/${s.campaignId}/webhook`,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${s.campaignKey}` },
      body: batchBody(0),
      connections: CONNECTIONS,
      duration: DURATION,
    });
    if (r.non2xx > 0 || r.errors > 0) log(`  warning: ${r.non2xx} non-2xx, ${r.errors} errors`);
    acceptedPerSecond = r.requests.average * BATCH;
    acceptP50 = r.latency.p50;
    acceptP99 = r.latency.p99;
  } finally {
    await acceptServers.stop();
    await accept.cleanup();
  }

  // 2. Delivery with the pace raised, then channel sends on the same server.
  const deliver = messagingBenchEnv(dialect, 'campaigns', 'http://127.0.0.1:1');
  const servers = await startServers({ ...deliver.env, ...limits, PARLEY_NUMBER_MPS: '1000' });
  try {
    const s = await seed(servers.env);
    log(`${dialect}: ${DELIVERIES} deliveries at up to 1,000 per second`);
    const started = Date.now();
    for (let from = 0; from < DELIVERIES; from += BATCH) {
      const res = await request(`${servers.url}/api/campaigns/${s.campaignId}/webhook`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${s.campaignKey}` },
        body: batchBody(from),
      });
      if (res.statusCode !== 202) throw new Error(`webhook answered ${res.statusCode}: ${await res.body.text()}`);
      await res.body.dump();
    }
    for (;;) {
      const n = await counts(servers.url, s.campaignId, s.campaignKey);
      const handed = (n.sending ?? 0) + (n.sent ?? 0) + (n.delivered ?? 0) + (n.read ?? 0) + (n.failed ?? 0);
      if (handed >= DELIVERIES) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const deliveriesPerSecond = DELIVERIES / ((Date.now() - started) / 1000);
    log(`${dialect}: ${DURATION} s of POST /api/channels/send at ${SEND_CONNECTIONS} connections`);
    const sends = await autocannon({
      url: `${servers.url}/api/channels/send`,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${s.agentKey}` },
      body: JSON.stringify({
        channel: 'msgapp',
        to: '+14155550100',
        type: 'template',
        template: { name: 'hello_world', language: 'en_US' },
      }),
      connections: SEND_CONNECTIONS,
      duration: DURATION,
    });
    if (sends.non2xx > 0 || sends.errors > 0) log(`  warning: ${sends.non2xx} non-2xx, ${sends.errors} errors`);
    return {
      dialect,
      acceptedPerSecond,
      acceptP50,
      acceptP99,
      deliveriesPerSecond,
      sendsPerSecond: sends.requests.average,
    };
  } finally {
    await servers.stop();
    await deliver.cleanup();
  }
}

const dialects: ('sqlite' | 'postgres')[] = process.env.DATABASE_URL ? ['sqlite', 'postgres'] : ['sqlite'];
const rows: Row[] = [];
for (const dialect of dialects) rows.push(await runDialect(dialect));

const f = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(2));
console.log(
  `\n### Campaigns: batches of ${BATCH} for ${DURATION} s at ${CONNECTIONS} connections; ${DELIVERIES} deliveries\n`,
);
console.log(
  '| database | recipients accepted/s | batch p50 ms | batch p99 ms | deliveries/s (pace 1,000) | POST /api/channels/send/s |',
);
console.log('| - | -: | -: | -: | -: | -: |');
for (const r of rows) {
  console.log(
    `| ${r.dialect} | ${f(r.acceptedPerSecond)} | ${f(r.acceptP50)} | ${f(r.acceptP99)} | ${f(r.deliveriesPerSecond)} | ${f(r.sendsPerSecond)} |`,
  );
}
