/**
 * Event webhooks: how fast an inbound message reaches the agent's hook, and how many event
 * deliveries per second Parley makes to a local receiver, side by side with the same receiver
 * called directly (the ceiling of the machine), on SQLite and (when DATABASE_URL is set)
 * PostgreSQL.
 *
 *   node --import tsx bench/events.ts                    # 200 latency rounds, 2,000 deliveries
 *   node --import tsx bench/events.ts --rounds 50 --events 500   # smoke run
 *   npm run build && node --import tsx bench/events.ts --dist
 *
 * The benchmark posts signed provider webhooks (one inbound message each) to `POST
 * /webhooks/msgapp`; Parley stores each as a job, applies it (message, window, end user,
 * conversation) and raises `message.received`, which it delivers, signed, to an endpoint bound to
 * the agent: a node:http receiver in this process that notes when each event arrives.
 */
import type { ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { Pool } from 'undici';
import {
  BENCH_APP_SECRET,
  entry,
  freePort,
  log,
  messagingBenchEnv,
  parleyJson,
  quantile,
  spawnNode,
  stopChild,
  waitUp,
} from './child-server.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '200' },
    events: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '20' },
    dist: { type: 'boolean', default: false },
  },
});
const ROUNDS = Number(args.rounds);
const EVENTS = Number(args.events);
const CONCURRENCY = Number(args.concurrency);
const ENTRY = entry(args.dist);

function inboundBody(phoneNumberId: string, wamid: string, i: number): string {
  const from = `1415555${String(i % 10_000).padStart(4, '0')}`;
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
              contacts: [{ profile: { name: `User ${i}` }, wa_id: from }],
              messages: [
                {
                  from,
                  id: wamid,
                  timestamp: String(Math.floor(Date.now() / 1000)),
                  type: 'text',
                  text: { body: 'hi' },
                },
              ],
            },
          },
        ],
      },
    ],
  });
}

/** The agent's hook: verifies nothing (the suite does), notes when each message's event arrives. */
async function startReceiver() {
  const arrived = new Map<string, number>();
  const waiters = new Map<string, () => void>();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => {
      body += d.toString();
    });
    req.on('end', () => {
      res.writeHead(204).end();
      try {
        const event = JSON.parse(body) as { data?: { messageId?: string } };
        const id = event.data?.messageId;
        if (!id) return;
        arrived.set(id, performance.now());
        waiters.get(id)?.();
      } catch {
        // the direct baseline posts the same bodies; nothing to note
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    arrived,
    waitFor: (id: string) =>
      new Promise<void>((resolve) => {
        if (arrived.has(id)) return resolve();
        waiters.set(id, () => {
          waiters.delete(id);
          resolve();
        });
      }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

interface Result {
  dialect: string;
  p50: number;
  p99: number;
  parleyPerSecond: number;
  directPerSecond: number;
  delivered: number;
}

async function runDialect(dialect: 'sqlite' | 'postgres'): Promise<Result> {
  const parleyPort = await freePort();
  const { env, cleanup } = messagingBenchEnv(dialect, 'ev', `http://127.0.0.1:${await freePort()}`);
  env.PARLEY_WEBHOOK_ALLOW_PRIVATE = 'true';
  const receiver = await startReceiver();
  const children: ChildProcess[] = [];
  try {
    log(`${dialect}: seeding an organization, an agent with a number and its hook`);
    const org = await parleyJson<{ id: string }>(
      args.dist,
      ['org', 'create', '--name', 'Bench', '--plan', 'paid'],
      env,
    );
    const agent = await parleyJson<{ id: string }>(
      args.dist,
      ['agent', 'create', '--org', org.id, '--name', 'Bench', '--number', '+16505550142'],
      env,
    );
    const numbers = await parleyJson<{ phoneNumberId: string }[]>(args.dist, ['number', 'list', '--org', org.id], env);
    const phoneNumberId = numbers[0]?.phoneNumberId ?? '';
    const endpoint = await parleyJson<{ secret: string }>(
      args.dist,
      ['endpoint', 'create', '--org', org.id, '--agent', agent.id, '--url', receiver.url],
      env,
    );
    const parley = spawnNode([...ENTRY, 'serve', '--port', String(parleyPort)], env);
    children.push(parley);
    const base = `http://127.0.0.1:${parleyPort}`;
    await waitUp(`${base}/api/health`, parley);
    const pool = new Pool(base, { connections: CONCURRENCY });
    let n = 0;
    const post = async () => {
      const i = n++;
      const wamid = `wamid.bench${dialect}${i}`;
      const body = inboundBody(phoneNumberId, wamid, i);
      const signature = `sha256=${createHmac('sha256', BENCH_APP_SECRET).update(body).digest('hex')}`;
      const res = await pool.request({
        path: '/webhooks/msgapp',
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature },
        body,
      });
      await res.body.dump();
      if (res.statusCode !== 200) throw new Error(`webhook answered ${res.statusCode}`);
      return wamid;
    };

    log(`${dialect}: ${ROUNDS} inbound messages one at a time, provider webhook → agent's hook`);
    const latencies: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const started = performance.now();
      const wamid = await post();
      await receiver.waitFor(wamid);
      latencies.push((receiver.arrived.get(wamid) ?? started) - started);
    }
    latencies.sort((a, b) => a - b);

    log(`${dialect}: ${EVENTS} inbound messages, ${CONCURRENCY} at a time; deliveries until the last arrives`);
    const before = receiver.arrived.size;
    const started = performance.now();
    const ids: string[] = [];
    let sent = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (sent < EVENTS) {
          sent++;
          ids.push(await post());
        }
      }),
    );
    await Promise.all(ids.map((id) => receiver.waitFor(id)));
    const parleySeconds = (performance.now() - started) / 1000;
    const delivered = receiver.arrived.size - before;
    await pool.close();

    log(`${dialect}: the same number of signed events posted straight to the receiver (the ceiling)`);
    const direct = new Pool(new URL(receiver.url).origin, { connections: CONCURRENCY });
    const hook = new Webhook(endpoint.secret);
    const directStarted = performance.now();
    let d = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (d < EVENTS) {
          const id = `evt_direct${d++}`;
          const body = JSON.stringify({ type: 'message.received', timestamp: new Date().toISOString(), data: {} });
          const at = new Date();
          const res = await direct.request({
            path: '/hook',
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'webhook-id': id,
              'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
              'webhook-signature': hook.sign(id, at, body),
            },
            body,
          });
          await res.body.dump();
        }
      }),
    );
    const directSeconds = (performance.now() - directStarted) / 1000;
    await direct.close();
    return {
      dialect,
      p50: quantile(latencies, 0.5),
      p99: quantile(latencies, 0.99),
      parleyPerSecond: delivered / parleySeconds,
      directPerSecond: EVENTS / directSeconds,
      delivered,
    };
  } finally {
    for (const child of children.reverse()) await stopChild(child);
    await receiver.close();
    await cleanup();
  }
}

const dialects: ('sqlite' | 'postgres')[] = process.env.DATABASE_URL ? ['sqlite', 'postgres'] : ['sqlite'];
const results: Result[] = [];
for (const dialect of dialects) results.push(await runDialect(dialect));

const f = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
console.log(`\n### Event webhooks: ${ROUNDS} latency rounds; ${EVENTS} events at ${CONCURRENCY} at a time\n`);
console.log(
  '| database | provider webhook → hook p50 ms | p99 ms | deliveries/s (Parley, end to end) | events/s posted straight to the receiver | delivered |',
);
console.log('| - | -: | -: | -: | -: | -: |');
for (const r of results) {
  console.log(
    `| ${r.dialect} | ${f(r.p50)} | ${f(r.p99)} | ${f(r.parleyPerSecond)} | ${f(r.directPerSecond)} | ${r.delivered}/${EVENTS} |`,
  );
}
