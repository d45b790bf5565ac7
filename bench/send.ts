/**
 * Sends per second through POST /api/channels/send, side by side with a bare node:http server and
 * with the sandbox called directly, on SQLite and (when DATABASE_URL is set) PostgreSQL.
 *
 *   node --import tsx bench/send.ts                      # 10 s per run, 50 connections
 *   node --import tsx bench/send.ts --duration 3         # smoke run
 *   npm run build && node --import tsx bench/send.ts --dist
 *
 * Every process is separate, as in production: Parley (`parley serve`), the sandbox standing in
 * for the provider (`parley sandbox`, answering at once) and the baseline. Sends are templates, so
 * the 24-hour window does not matter, and the rate limits are raised out of the way. The sandbox's
 * status webhooks go to Parley (three per send, as the provider would) unless `--no-statuses`; the
 * sandbox measured directly is a second process whose webhooks go to the baseline.
 * "Added by Parley" is Parley's latency minus the sandbox's, measured one request at a time.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { dropPostgresSchema } from '../src/db/database.js';

interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; average: number; max: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}
interface AutocannonOptions {
  url: string;
  connections: number;
  duration: number;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}
// autocannon ships no types; this is the part of its programmatic API used here.
const autocannon = createRequire(import.meta.url)('autocannon') as (o: AutocannonOptions) => Promise<AutocannonResult>;

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    sequential: { type: 'string', default: '1000' },
    dist: { type: 'boolean', default: false },
    'no-statuses': { type: 'boolean', default: false },
  },
});
const DURATION = Number(args.duration);
const CONNECTIONS = Number(args.connections);
const SEQUENTIAL = Number(args.sequential);
const APP_SECRET = 'bench-app-secret';
const ENTRY = args.dist ? ['dist/cli/main.js'] : ['--import', 'tsx', 'src/cli/main.ts'];

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(base)) if (/^(DATABASE_URL|PARLEY_|PORT$|LOG_LEVEL$)/.test(name)) delete base[name];
  return { ...base, NODE_NO_WARNINGS: '1', LOG_LEVEL: 'warn', ...env };
}

function start(argv: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, argv, { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'inherit'] });
}

async function waitFor(url: string, child: ChildProcess, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`${url}: process exited with ${child.exitCode}`);
    try {
      const res = await request(url);
      await res.body.dump();
      if (res.statusCode < 500) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up`);
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
  });
}

async function cli(argv: string[], env: Record<string, string>): Promise<Record<string, string>> {
  const child = start([...ENTRY, ...argv, '--json'], env);
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`parley ${argv.join(' ')} failed`);
  return JSON.parse(out) as Record<string, string>;
}

async function load(url: string, options: Partial<AutocannonOptions> = {}): Promise<AutocannonResult> {
  const r = await autocannon({ url, connections: CONNECTIONS, duration: DURATION, ...options });
  if (r.non2xx > 0 || r.errors > 0) log(`  warning: ${r.non2xx} non-2xx, ${r.errors} errors on ${url}`);
  return r;
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;

/** One request at a time, timed with hrtime: latency without queueing. */
async function sequential(url: string, init: { headers: Record<string, string>; body: string }) {
  const times: number[] = [];
  for (let i = 0; i < SEQUENTIAL; i++) {
    const t0 = process.hrtime.bigint();
    const res = await request(url, { method: 'POST', headers: init.headers, body: init.body });
    await res.body.dump();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}`);
  }
  times.sort((a, b) => a - b);
  return { p50: quantile(times, 0.5), p99: quantile(times, 0.99) };
}

interface Row {
  target: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  seqP50: number;
  seqP99: number;
}

async function runDialect(dialect: 'sqlite' | 'postgres'): Promise<Row[]> {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-send-'));
  const schema = `bench_send_${Date.now().toString(36)}`;
  const sandboxPort = await freePort();
  const directPort = await freePort();
  const parleyPort = await freePort();
  const env: Record<string, string> = {
    PARLEY_DATA_DIR: dataDir,
    PARLEY_REGION: 'us',
    PARLEY_WEBHOOK_APP_SECRET: APP_SECRET,
    PARLEY_PROVIDER_BASE_URL: `http://127.0.0.1:${sandboxPort}`,
    PARLEY_SEND_RATE_LIMIT: '1000000000',
    PARLEY_SEND_RATE_LIMIT_ORG: '1000000000',
  };
  if (dialect === 'postgres' && process.env.DATABASE_URL) {
    env.DATABASE_URL = process.env.DATABASE_URL;
    env.PARLEY_PG_SCHEMA = schema;
  }
  const children: ChildProcess[] = [];
  try {
    log(`${dialect}: seeding an organization, an agent with a number and a key`);
    const org = await cli(['org', 'create', '--name', 'Bench', '--plan', 'paid'], env);
    const phone = `+1650${2 + Math.floor(Math.random() * 8)}${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}`;
    const agent = await cli(['agent', 'create', '--org', org.id ?? '', '--name', 'Bench', '--number', phone], env);
    const key = await cli(
      [
        'key',
        'create',
        '--org',
        org.id ?? '',
        '--label',
        'bench',
        '--scope',
        'agent',
        '--agent',
        agent.id ?? '',
        '--permissions',
        'channels',
      ],
      env,
    );
    const numbers = (await cli(['number', 'list', '--org', org.id ?? ''], env)) as unknown as {
      phoneNumberId: string;
    }[];
    const phoneNumberId = numbers[0]?.phoneNumberId ?? '';

    const baseline = start(['--import', 'tsx', 'bench/baseline-server.ts', '0'], {});
    children.push(baseline);
    const baselinePort = await new Promise<number>((resolve, reject) => {
      baseline.stdout?.on('data', (d: Buffer) => {
        const m = /listening (\d+)/.exec(d.toString());
        if (m) resolve(Number(m[1]));
      });
      baseline.once('exit', (code) => reject(new Error(`baseline exited with ${code}`)));
    });
    const baselineUrl = `http://127.0.0.1:${baselinePort}`;
    const webhookUrl = args['no-statuses'] ? `${baselineUrl}/` : `http://127.0.0.1:${parleyPort}/webhooks/msgapp`;
    const sandbox = start([...ENTRY, 'sandbox', '--port', String(sandboxPort), '--webhook-url', webhookUrl], env);
    children.push(sandbox);
    // A second sandbox for the direct measurement, so its status webhooks do not load Parley.
    const direct = start([...ENTRY, 'sandbox', '--port', String(directPort), '--webhook-url', `${baselineUrl}/`], env);
    children.push(direct);
    const parley = start([...ENTRY, 'serve', '--port', String(parleyPort)], env);
    children.push(parley);
    await waitFor(`http://127.0.0.1:${sandboxPort}/sandbox/health`, sandbox);
    await waitFor(`http://127.0.0.1:${directPort}/sandbox/health`, direct);
    await waitFor(`http://127.0.0.1:${parleyPort}/api/health`, parley);

    const json = { 'content-type': 'application/json' };
    const sendBody = JSON.stringify({
      channel: 'msgapp',
      to: '+14155550100',
      type: 'template',
      template: { name: 'order_update', language: 'en_US', parameters: { header: ['Hi'], body: ['Ada', 'A1'] } },
    });
    const sendHeaders = { ...json, authorization: `Bearer ${key.key}` };
    const wireBody = JSON.stringify({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '+14155550100',
      type: 'template',
      template: {
        name: 'order_update',
        language: { code: 'en_US' },
        components: [
          { type: 'header', parameters: [{ type: 'text', text: 'Hi' }] },
          {
            type: 'body',
            parameters: [
              { type: 'text', text: 'Ada' },
              { type: 'text', text: 'A1' },
            ],
          },
        ],
      },
    });
    const wireHeaders = { ...json, authorization: 'Bearer sandbox' };
    const sandboxUrl = `http://127.0.0.1:${directPort}/v25.0/${phoneNumberId}/messages`;
    const sendUrl = `http://127.0.0.1:${parleyPort}/api/channels/send`;

    const targets = [
      { target: 'node:http baseline', url: `${baselineUrl}/`, headers: json, body: '{}' },
      { target: 'sandbox, called directly', url: sandboxUrl, headers: wireHeaders, body: wireBody },
      { target: `Parley POST /api/channels/send (${dialect})`, url: sendUrl, headers: sendHeaders, body: sendBody },
    ];
    const rows: Row[] = [];
    for (const t of targets) {
      log(
        `${dialect}: ${t.target}: ${SEQUENTIAL} sequential requests, then ${DURATION} s at ${CONNECTIONS} connections`,
      );
      const seq = await sequential(t.url, { headers: t.headers, body: t.body });
      const r = await load(t.url, { method: 'POST', headers: t.headers, body: t.body });
      rows.push({
        target: t.target,
        rps: r.requests.average,
        p50: r.latency.p50,
        p99: r.latency.p99,
        non2xx: r.non2xx + r.errors,
        seqP50: seq.p50,
        seqP99: seq.p99,
      });
    }
    return rows;
  } finally {
    for (const child of children.reverse()) await stop(child);
    if (dialect === 'postgres' && process.env.DATABASE_URL) await dropPostgresSchema(process.env.DATABASE_URL, schema);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const dialects: ('sqlite' | 'postgres')[] = process.env.DATABASE_URL ? ['sqlite', 'postgres'] : ['sqlite'];
const all: Row[][] = [];
for (const dialect of dialects) all.push(await runDialect(dialect));

const f = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(2));
console.log(
  `\n### Channel send: ${DURATION} s per run, ${CONNECTIONS} connections, statuses ${args['no-statuses'] ? 'off' : 'on (3 webhooks per send)'}\n`,
);
console.log('| target | req/s | p50 ms | p99 ms | non-2xx | one at a time p50 ms | p99 ms |');
console.log('| - | -: | -: | -: | -: | -: | -: |');
for (const rows of all) {
  for (const r of rows) {
    console.log(
      `| ${r.target} | ${f(r.rps)} | ${f(r.p50)} | ${f(r.p99)} | ${r.non2xx} | ${f(r.seqP50)} | ${f(r.seqP99)} |`,
    );
  }
}
console.log('\n| database | sends/s | share of the sandbox | added by Parley p50 ms | p99 ms |');
console.log('| - | -: | -: | -: | -: |');
for (const [i, rows] of all.entries()) {
  const sandbox = rows[1];
  const parley = rows[2];
  if (!sandbox || !parley) continue;
  console.log(
    `| ${dialects[i]} | ${f(parley.rps)} | ${((100 * parley.rps) / sandbox.rps).toFixed(0)} % | ${f(parley.seqP50 - sandbox.seqP50)} | ${f(parley.seqP99 - sandbox.seqP99)} |`,
  );
}
