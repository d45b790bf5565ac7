/**
 * Status webhook intake: signed `POST /webhooks/msgapp` bodies per second and the time to answer
 * them, side by side with a bare node:http server, on SQLite and (when DATABASE_URL is set)
 * PostgreSQL. Target: at least 3,000 webhooks/s with a median answer under 20 ms.
 *
 *   node --import tsx bench/webhooks.ts                  # 10 s per run, 50 connections
 *   node --import tsx bench/webhooks.ts --duration 3     # smoke run
 *   npm run build && node --import tsx bench/webhooks.ts --dist
 *   node --import tsx bench/webhooks.ts --dist --dialects postgres --event-endpoint
 *
 * Parley (`parley serve`) sends `--messages` templates through a separate sandbox first, whose
 * own status webhooks are discarded; the load then posts sent, delivered and read statuses of
 * those messages, each signed with the app secret, cycling through them (after the first pass
 * they are duplicates, which Parley must also acknowledge and ignore). Afterwards a sample of the
 * messages is read back through GET /api/messages to check the statuses were applied, waiting (up
 * to 2 minutes) for the job runner to work off what the run acknowledged; how long that took is
 * reported too, as is the time until no job is left at all (`parley jobs list`). With
 * `--event-endpoint` the agent has an endpoint for `message.status` (a receiver in this process),
 * so each status applied also records an event delivery, which counts as a job until delivered;
 * the events received are counted (one per message and status: 3 × `--messages`). While the backlog
 * is applied, a message is read through GET /api/messages/<id> one request at a time, back to back,
 * and each read timed: how long any other request waits while bodies are applied.
 */
import type { ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import {
  type AutocannonRequest,
  autocannon,
  BENCH_APP_SECRET,
  dialectsArg,
  entry,
  freePort,
  log,
  messagingBenchEnv,
  parleyJson,
  quantile,
  seedSendingTenant,
  spawnNode,
  startBaseline,
  stopChild,
  waitUp,
} from './child-server.js';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    messages: { type: 'string', default: '1000' },
    dist: { type: 'boolean', default: false },
    cli: { type: 'string' },
    dialects: { type: 'string' },
    'event-endpoint': { type: 'boolean', default: false },
  },
});
const DURATION = Number(args.duration);
const CONNECTIONS = Number(args.connections);
const MESSAGES = Number(args.messages);
/** `--cli path/to/dist/cli/main.js`: serve (and seed with) another build, an earlier commit's say. */
const BUILD = args.cli ?? args.dist;
const ENTRY = entry(BUILD);
const TARGET_RPS = 3000;
const TARGET_P50_MS = 20;

function statusBody(phoneNumberId: string, wamid: string, status: string, at: number): string {
  return JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: 'bench-waba',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '16505550000', phone_number_id: phoneNumberId },
              statuses: [
                {
                  id: wamid,
                  status,
                  timestamp: String(Math.floor(at / 1000)),
                  recipient_id: '14155550100',
                  conversation: { id: 'c1', origin: { type: 'utility' } },
                  pricing: { billable: true, pricing_model: 'PMP', category: 'utility' },
                },
              ],
            },
          },
        ],
      },
    ],
  });
}

/** A node:http receiver of event deliveries: answers 200, notes each event's ID once. */
async function startEventReceiver(): Promise<{ url: string; ids: Set<string>; close: () => Promise<void> }> {
  const ids = new Set<string>();
  const server = createServer((req, res) => {
    const id = req.headers['webhook-id'];
    if (typeof id === 'string') ids.add(id);
    req.resume();
    req.on('end', () => res.writeHead(200).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/events`,
    ids,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface Row {
  target: string;
  rps: number;
  p50: number;
  p99: number;
  failures: number;
}

/** Reads `url` one request at a time, back to back, until stopped; answers each read's time in ms. */
function readOneAtATime(url: string, headers: Record<string, string>): { stop: () => Promise<number[]> } {
  const times: number[] = [];
  let stopping = false;
  const loop = (async () => {
    while (!stopping) {
      const t0 = process.hrtime.bigint();
      const res = await request(url, { headers });
      await res.body.dump();
      if (res.statusCode !== 200) throw new Error(`GET ${url} answered ${res.statusCode}`);
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  })();
  return {
    stop: async () => {
      stopping = true;
      await loop;
      return times;
    },
  };
}

interface Probe {
  reads: number;
  p50: number;
  p99: number;
  max: number;
}

async function runDialect(dialect: 'sqlite' | 'postgres'): Promise<{ rows: Row[]; applied: string; probe: Probe }> {
  const sandboxPort = await freePort();
  const parleyPort = await freePort();
  const { env, cleanup } = messagingBenchEnv(dialect, 'wh', `http://127.0.0.1:${sandboxPort}`);
  const children: ChildProcess[] = [];
  // --event-endpoint: the agent's endpoint for message.status, a receiver in this process.
  const receiver = args['event-endpoint'] ? await startEventReceiver() : undefined;
  try {
    log(`${dialect}: seeding an organization, an agent with a number and a key`);
    const { key, phoneNumberId, orgId, agentId } = await seedSendingTenant(BUILD, env);
    if (receiver) {
      env.PARLEY_WEBHOOK_ALLOW_PRIVATE = 'true';
      await parleyJson(
        BUILD,
        ['endpoint', 'create', '--org', orgId, '--agent', agentId, '--url', receiver.url, '--events', 'message.status'],
        env,
      );
    }

    const baseline = await startBaseline();
    children.push(baseline.child);
    const baselineUrl = `${baseline.url}/`;
    // The sandbox's own statuses are discarded: the load below posts them.
    const sandbox = spawnNode([...ENTRY, 'sandbox', '--port', String(sandboxPort), '--webhook-url', baselineUrl], env);
    children.push(sandbox);
    const parley = spawnNode([...ENTRY, 'serve', '--port', String(parleyPort)], env);
    children.push(parley);
    await waitUp(`http://127.0.0.1:${sandboxPort}/sandbox/health`, sandbox);
    const base = `http://127.0.0.1:${parleyPort}`;
    await waitUp(`${base}/api/health`, parley);

    log(`${dialect}: sending ${MESSAGES} templates to have messages to report on`);
    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const body = JSON.stringify({
      channel: 'msgapp',
      to: '+14155550100',
      type: 'template',
      template: { name: 'hello_world', language: 'en_US' },
    });
    const wamids: string[] = [];
    const sendOne = async () => {
      const res = await request(`${base}/api/channels/send`, { method: 'POST', headers: auth, body });
      const json = (await res.body.json()) as { messageId?: string };
      if (res.statusCode !== 200 || !json.messageId) throw new Error(`send answered ${res.statusCode}`);
      wamids.push(json.messageId);
    };
    for (let i = 0; i < MESSAGES; i += 20) {
      await Promise.all(Array.from({ length: Math.min(20, MESSAGES - i) }, sendOne));
    }

    const now = Date.now();
    const bodies: { body: string; signature: string }[] = [];
    for (const [i, status] of ['sent', 'delivered', 'read'].entries()) {
      for (const wamid of wamids) {
        const b = statusBody(phoneNumberId, wamid, status, now + i * 1000);
        bodies.push({ body: b, signature: `sha256=${createHmac('sha256', BENCH_APP_SECRET).update(b).digest('hex')}` });
      }
    }
    let next = 0;
    const signedRequests = [
      {
        setupRequest: (req: AutocannonRequest): AutocannonRequest => {
          const b = bodies[next++ % bodies.length] ?? { body: '{}', signature: '' };
          return {
            ...req,
            method: 'POST',
            body: b.body,
            headers: { 'content-type': 'application/json', 'x-hub-signature-256': b.signature },
          };
        },
      },
    ];

    const rows: Row[] = [];
    log(`${dialect}: node:http baseline, ${DURATION} s at ${CONNECTIONS} connections`);
    const bl = await autocannon({
      url: baselineUrl,
      connections: CONNECTIONS,
      duration: DURATION,
      requests: signedRequests,
    });
    rows.push({
      target: 'node:http baseline (same bodies)',
      rps: bl.requests.average,
      p50: bl.latency.p50,
      p99: bl.latency.p99,
      failures: bl.non2xx + bl.errors,
    });
    next = 0;
    log(`${dialect}: Parley POST /webhooks/msgapp, ${DURATION} s at ${CONNECTIONS} connections`);
    const r = await autocannon({
      url: `${base}/webhooks/msgapp`,
      connections: CONNECTIONS,
      duration: DURATION,
      requests: signedRequests,
    });
    rows.push({
      target: `Parley POST /webhooks/msgapp (${dialect})`,
      rps: r.requests.average,
      p50: r.latency.p50,
      p99: r.latency.p99,
      failures: r.non2xx + r.errors,
    });

    // Acknowledged bodies are applied by the job runner afterwards: wait for a sample, through the API,
    // while another message is read one request at a time.
    const reads = readOneAtATime(`${base}/api/messages/${wamids[wamids.length - 1]}`, auth);
    let applied = 0;
    const sample = wamids.slice(0, Math.min(50, Math.floor(next / 3)));
    const waitStart = Date.now();
    while (Date.now() - waitStart < 120_000) {
      applied = 0;
      for (const wamid of sample) {
        const res = await request(`${base}/api/messages/${wamid}`, { headers: auth });
        const json = (await res.body.json()) as { message?: { status?: string } };
        if (json.message?.status === 'read') applied++;
      }
      if (applied === sample.length) break;
      await new Promise((res) => setTimeout(res, 200));
    }
    const waited = ((Date.now() - waitStart) / 1000).toFixed(1);
    // And the whole backlog: until no job is queued or running (`parley jobs list`), up to 5 minutes.
    type QueueRow = { queue: string; queued: number; running: number };
    let left = Number.POSITIVE_INFINITY;
    while (Date.now() - waitStart < 300_000) {
      const queues = await parleyJson<QueueRow[]>(BUILD, ['jobs', 'list'], env);
      left = queues.reduce((n, q) => n + q.queued + q.running, 0);
      if (left === 0) break;
      await new Promise((res) => setTimeout(res, 500));
    }
    const drained = ((Date.now() - waitStart) / 1000).toFixed(1);
    const times = (await reads.stop()).sort((a, b) => a - b);
    const probe = {
      reads: times.length,
      p50: quantile(times, 0.5),
      p99: quantile(times, 0.99),
      max: times[times.length - 1] ?? Number.NaN,
    };
    const backlog =
      left === 0
        ? `the ${r.requests.total} acknowledged applied ${drained} s after the run`
        : `${left} jobs left after ${drained} s`;
    const events = receiver ? `; ${receiver.ids.size} message.status events received by the agent's endpoint` : '';
    return { rows, applied: `${applied}/${sample.length} after ${waited} s; ${backlog}${events}`, probe };
  } finally {
    for (const child of children.reverse()) await stopChild(child);
    await receiver?.close();
    await cleanup();
  }
}

const dialects = dialectsArg(args.dialects);
const results: { dialect: string; rows: Row[]; applied: string; probe: Probe }[] = [];
for (const dialect of dialects) results.push({ dialect, ...(await runDialect(dialect)) });

const f = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(2));
console.log(`\n### Status webhook intake: ${DURATION} s per run, ${CONNECTIONS} connections, ${MESSAGES} messages\n`);
console.log('| target | webhooks/s | p50 ms | p99 ms | failures |');
console.log('| - | -: | -: | -: | -: |');
for (const { rows } of results) {
  for (const r of rows) console.log(`| ${r.target} | ${f(r.rps)} | ${f(r.p50)} | ${f(r.p99)} | ${r.failures} |`);
}
console.log(
  `\n| database | webhooks/s | p50 ms | target (≥ ${TARGET_RPS}/s, p50 < ${TARGET_P50_MS} ms) | sample read back as 'read', after the run |`,
);
console.log('| - | -: | -: | - | -: |');
for (const { dialect, rows, applied } of results) {
  const p = rows[1];
  if (!p) continue;
  const met = p.rps >= TARGET_RPS && p.p50 < TARGET_P50_MS && p.failures === 0;
  console.log(`| ${dialect} | ${f(p.rps)} | ${f(p.p50)} | ${met ? 'met' : 'not met'} | ${applied} |`);
}
console.log(
  '\n| database | GET /api/messages/<id> one at a time while the backlog was applied | p50 ms | p99 ms | max ms |',
);
console.log('| - | -: | -: | -: | -: |');
for (const { dialect, probe } of results) {
  console.log(`| ${dialect} | ${probe.reads} | ${f(probe.p50)} | ${f(probe.p99)} | ${f(probe.max)} |`);
}
