/**
 * End-user benchmarks, side by side with a bare node:http server answering a fixed JSON, in one run:
 *   - authenticated GET /api/endusers/<id> at 50 connections, IDs in turn from a list of 1,000;
 *     with --ceiling also a reference server doing only that read's own work without a framework
 *     (bench/ceiling-server.ts; on SQLite on a copy of the database, on PostgreSQL on Parley's
 *     schema), under the same load; with --lean-fastify, the same read in the leanest Fastify app
 *     (ceiling-server.ts ... fastify: no hooks, no logger);
 *   - list page 1 against list page ~5,000 (cursors walked first), with the server's CPU per request;
 *   - POST /api/endusers/batch of 1,000 new records, several runs: median and p95;
 *   - the server's RSS under load (peak, sampled from /proc).
 * The server runs as a child process (so the load generator does not share its event loop), on
 * SQLite and, when DATABASE_URL is set, on PostgreSQL (a fresh schema, dropped afterwards).
 *
 *   npm run build && node --import tsx bench/endusers.ts --n 1000000 --duration 10 --dist
 *   node --import tsx bench/endusers.ts --n 20000 --duration 3          # smoke run, server from src/
 *
 * Options: --n rows to seed (1,000,000), --duration seconds per load run (10), --connections (50),
 * --batch-runs (15), --page target list page (5,000), --list-rounds alternating runs of page 1 and
 * the deep page (3; the median p99 run of each is reported), --dist (serve from dist/, else src/ via tsx),
 * --cli another compiled dist/cli/main.js to serve (a build of an earlier commit, to compare),
 * --get-rounds alternating runs of the bare server and GET by id (1; the median of each reported),
 * --only-get (skip the list and batch runs), --log-level of the server (warn), --ceiling (the
 * reference server too, in the same alternating rounds), --lean-fastify (the lean Fastify app too,
 * likewise), --requests how GET by id's requests are made:
 * `rotate` (each built anew with the next ID as it is sent; the bare server gets a fixed `GET /`) or
 * `list` (the 1,000 requests built once, and the same list sent to the bare server too).
 * Prints a Markdown table on stdout; progress on stderr.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  type AutocannonOptions,
  type AutocannonRequest,
  type AutocannonResult,
  analyzePostgresSchema,
  autocannon,
  dialectsArg,
  entry,
  freePort,
  loadFigures,
  loadWithCpu,
  log,
  median,
  medianRate,
  NODE_FLAGS,
  PG_BENCH_SECRETS,
  quantile,
  spawnNode,
  startBaseline,
  startReadReference,
  stopChild,
  waitUp,
  writeJsonFigures,
} from './child-server.js';
import { dropPostgresSchema } from './internals.js';
import { seedEndUsers } from './seed-endusers.js';

const { values: args } = parseArgs({
  options: {
    n: { type: 'string', default: '1000000' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    'batch-runs': { type: 'string', default: '15' },
    page: { type: 'string', default: '5000' },
    'list-rounds': { type: 'string', default: '3' },
    dist: { type: 'boolean', default: false },
    cli: { type: 'string' },
    'get-rounds': { type: 'string', default: '1' },
    'only-get': { type: 'boolean', default: false },
    'log-level': { type: 'string', default: 'warn' },
    ceiling: { type: 'boolean', default: false },
    'lean-fastify': { type: 'boolean', default: false },
    requests: { type: 'string', default: 'rotate' },
    'no-analyze': { type: 'boolean', default: false },
    json: { type: 'string' },
    dialects: { type: 'string' },
  },
});
const N = Number(args.n);
const DURATION = Number(args.duration);
const CONNECTIONS = Number(args.connections);
const BATCH_RUNS = Number(args['batch-runs']);
const PAGE_SIZE = 50;
const LIST_ROUNDS = Math.max(1, Number(args['list-rounds']));
const GET_ROUNDS = Math.max(1, Number(args['get-rounds']));
const ONLY_GET = args['only-get'];
if (args.requests !== 'rotate' && args.requests !== 'list') throw new Error('--requests takes rotate or list');
const LISTED = args.requests === 'list';

/** The run whose p99 is the median of the runs. */
function medianRun(runs: AutocannonResult[]): AutocannonResult {
  const sorted = [...runs].sort((a, b) => a.latency.p99 - b.latency.p99);
  const run = sorted[Math.floor((sorted.length - 1) / 2)];
  if (!run) throw new Error('no run');
  return run;
}
const TARGET_PAGE = Math.max(2, Math.min(Number(args.page), Math.floor(N / PAGE_SIZE) - 1));

async function startParley(env: Record<string, string>): Promise<{ child: ChildProcess; base: string }> {
  const port = await freePort();
  const argv = args.cli ? [...NODE_FLAGS, args.cli] : entry(args.dist);
  const child = spawnNode([...argv, 'serve', '--port', String(port)], { LOG_LEVEL: args['log-level'], ...env });
  const base = `http://127.0.0.1:${port}`;
  await waitUp(`${base}/api/health`, child);
  return { child, base };
}

/** Peak resident memory of a process while fn runs, in MB (Linux /proc). */
async function peakRss<T>(pid: number | undefined, fn: () => Promise<T>): Promise<{ result: T; peakMb: number }> {
  let peak = 0;
  const sample = () => {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (m) peak = Math.max(peak, Number(m[1]) / 1024);
    } catch {
      // not on Linux, or gone
    }
  };
  const timer = setInterval(sample, 200);
  try {
    const result = await fn();
    sample();
    return { result, peakMb: peak };
  } finally {
    clearInterval(timer);
  }
}

async function load(url: string, options: Partial<AutocannonOptions> = {}): Promise<AutocannonResult> {
  const r = await autocannon({ url, connections: CONNECTIONS, duration: DURATION, ...options });
  if (r.non2xx > 0 || r.errors > 0) log(`  warning: ${r.non2xx} non-2xx, ${r.errors} errors on ${url}`);
  return r;
}

interface Figures {
  seedMs: number;
  baseline: AutocannonResult;
  getById: AutocannonResult;
  /** Median CPU µs per request: the bare server, GET by id. */
  baselineCpuUs: number;
  getCpuUs: number;
  /** --ceiling: the reference server's median run and CPU µs per request. */
  ceiling?: AutocannonResult & { cpuUs: number };
  /** --lean-fastify: the same read in the leanest Fastify app, its median run. */
  fastify?: AutocannonResult & { cpuUs: number };
  page1: AutocannonResult;
  pageN: AutocannonResult;
  /** Median CPU µs per request of the list runs: page 1, the deep page. */
  listCpuUs?: readonly [number, number];
  walkMs: number;
  batchMedian: number;
  batchP95: number;
  batchRuns: number;
  rssMb: number;
}

async function runDialect(dialect: 'sqlite' | 'postgres'): Promise<Figures> {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-'));
  const schema = `bench_${Date.now().toString(36)}`;
  const env: Record<string, string> = { PARLEY_DATA_DIR: dataDir, PARLEY_REGION: 'us' };
  if (dialect === 'postgres' && process.env.DATABASE_URL) {
    Object.assign(env, { DATABASE_URL: process.env.DATABASE_URL, PARLEY_PG_SCHEMA: schema }, PG_BENCH_SECRETS);
  }
  const children: ChildProcess[] = [];
  try {
    log(`${dialect}: seeding ${N} end users`);
    if (args.cli) {
      // Another build's migrations (an earlier commit has fewer): it migrates, the seed does not.
      const migrate = spawnNode([...NODE_FLAGS, args.cli, 'migrate'], env);
      const code = await new Promise<number | null>((resolve) => migrate.on('exit', resolve));
      if (code !== 0) throw new Error(`${args.cli} migrate failed`);
    }
    const seed = await seedEndUsers(env, N, !args.cli);
    log(`${dialect}: seeded in ${seed.ms} ms`);
    // The tables as a live database's autovacuum would leave them (see analyzePostgresSchema).
    if (dialect === 'postgres' && process.env.DATABASE_URL && !args['no-analyze']) {
      await analyzePostgresSchema(process.env.DATABASE_URL, schema);
    }
    const headers = { authorization: `Bearer ${seed.key}` };

    const parley = await startParley(env);
    children.push(parley.child);
    const baseline = await startBaseline();
    children.push(baseline.child);

    // Sample IDs for GET by id, and the cursor of page TARGET_PAGE, walked through the API.
    log(`${dialect}: walking ${TARGET_PAGE} list pages`);
    const ids: string[] = [];
    let cursor: string | null = null;
    const walkStart = Date.now();
    for (let page = 1; page < TARGET_PAGE; page++) {
      const res = await fetch(`${parley.base}/api/endusers?limit=${PAGE_SIZE}${cursor ? `&cursor=${cursor}` : ''}`, {
        headers,
      });
      const body = (await res.json()) as { data: { _id: string }[]; nextCursor: string | null };
      if (page % Math.max(1, Math.floor(TARGET_PAGE / 20)) === 0) ids.push(...body.data.map((u) => u._id));
      cursor = body.nextCursor;
      if (!cursor) throw new Error(`ran out of pages at page ${page}`);
    }
    const walkMs = Date.now() - walkStart;
    // `rotate`: each request made again with the next ID (in the load generator's process, on the
    // same two cores), the bare server answering a fixed `GET /`. `list`: every request built once
    // and the same list sent to each server, the bare one included, so that the generator does the
    // same work for each.
    let next = 0;
    const byId = LISTED
      ? { headers, requests: ids.map((id) => ({ path: `/api/endusers/${id}` })) }
      : {
          headers,
          requests: [
            {
              setupRequest: (req: AutocannonRequest) => ({ ...req, path: `/api/endusers/${ids[next++ % ids.length]}` }),
            },
          ],
        };
    const reference = async (wanted: boolean | undefined, kind: 'node' | 'fastify') => {
      if (!wanted) return undefined;
      const database = dialect === 'sqlite' ? join(dataDir, 'parley-us.db') : 'postgres';
      const started = await startReadReference(database, 'endusers', kind, env);
      children.push(started.child);
      return started;
    };
    const ceiling = await reference(args.ceiling, 'node');
    const fastify = await reference(args['lean-fastify'], 'fastify');

    // The bare server and GET by id alternate, GET_ROUNDS times each; the median rate of each stands.
    const baselines: (AutocannonResult & { cpuUs: number })[] = [];
    const gets: (AutocannonResult & { cpuUs: number })[] = [];
    const ceilings: (AutocannonResult & { cpuUs: number })[] = [];
    const fastifies: (AutocannonResult & { cpuUs: number })[] = [];
    const measured = await peakRss(parley.child.pid, async () => {
      for (let round = 1; round <= GET_ROUNDS; round++) {
        log(`${dialect}: baseline (round ${round})`);
        baselines.push(await loadWithCpu(baseline.child.pid, () => load(`${baseline.url}/`, LISTED ? byId : {})));
        if (ceiling) {
          log(`${dialect}: reference server (round ${round})`);
          ceilings.push(await loadWithCpu(ceiling.child.pid, () => load(`${ceiling.url}/`, byId)));
        }
        if (fastify) {
          log(`${dialect}: lean Fastify app (round ${round})`);
          fastifies.push(await loadWithCpu(fastify.child.pid, () => load(`${fastify.url}/`, byId)));
        }
        log(`${dialect}: GET /api/endusers/<id> (round ${round})`);
        gets.push(await loadWithCpu(parley.child.pid, () => load(`${parley.base}/`, byId)));
        const [b, c, l, g] = [baselines.at(-1), ceilings.at(-1), fastifies.at(-1), gets.at(-1)];
        const figures = (r: (AutocannonResult & { cpuUs: number }) | undefined) =>
          `${Math.round(r?.requests.average ?? 0)} req/s (${Math.round(r?.cpuUs ?? 0)} µs CPU each)`;
        log(
          `${dialect}:   bare ${figures(b)}, ${c ? `reference ${figures(c)}, ` : ''}${l ? `lean Fastify ${figures(l)}, ` : ''}` +
            `GET by id ${figures(g)}, p99 ${g?.latency.p99} ms`,
        );
      }
      const getById = medianRate(gets);
      if (ONLY_GET) return { getById, page1: getById, pageN: getById };
      // Page 1 and the deep page alternate, LIST_ROUNDS times each; the run with the median p99
      // of each stands for it, so a slow moment of the machine does not land on one side only.
      const firsts: (AutocannonResult & { cpuUs: number })[] = [];
      const deeps: (AutocannonResult & { cpuUs: number })[] = [];
      const list = (url: string) => loadWithCpu(parley.child.pid, () => load(url, { headers }));
      for (let round = 1; round <= LIST_ROUNDS; round++) {
        log(`${dialect}: list page 1 (round ${round})`);
        firsts.push(await list(`${parley.base}/api/endusers?limit=${PAGE_SIZE}`));
        log(`${dialect}: list page ${TARGET_PAGE} (round ${round})`);
        deeps.push(await list(`${parley.base}/api/endusers?limit=${PAGE_SIZE}&cursor=${cursor}`));
      }
      return {
        getById,
        page1: medianRun(firsts),
        pageN: medianRun(deeps),
        listCpuUs: [median(firsts.map((r) => r.cpuUs)), median(deeps.map((r) => r.cpuUs))] as const,
      };
    });

    const baselineResult = medianRate(baselines);
    const times: number[] = [];
    if (!ONLY_GET) log(`${dialect}: ${BATCH_RUNS} batches of 1,000`);
    for (let run = 0; run < (ONLY_GET ? 0 : BATCH_RUNS); run++) {
      const endUsers = Array.from({ length: 1000 }, (_, i) => ({
        name: `Batch ${run} ${i}`,
        email: `batch.${run}.${i}.${Date.now()}@bench.example.com`,
        phone: `+1415${String(5000000 + run * 1000 + i).padStart(7, '0')}`,
        tags: ['batch'],
      }));
      const body = JSON.stringify({ origin: 'imported', endUsers });
      const t0 = performance.now();
      const res = await fetch(`${parley.base}/api/endusers/batch`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body,
      });
      const json = (await res.json()) as { created: number };
      times.push(performance.now() - t0);
      if (json.created !== 1000) log(`  warning: batch ${run} created ${json.created}`);
    }
    times.sort((a, b) => a - b);
    return {
      seedMs: seed.ms,
      baseline: baselineResult,
      baselineCpuUs: median(baselines.map((r) => r.cpuUs)),
      getCpuUs: median(gets.map((r) => r.cpuUs)),
      ...(ceilings.length ? { ceiling: { ...medianRate(ceilings), cpuUs: median(ceilings.map((r) => r.cpuUs)) } } : {}),
      ...(fastifies.length
        ? { fastify: { ...medianRate(fastifies), cpuUs: median(fastifies.map((r) => r.cpuUs)) } }
        : {}),
      ...measured.result,
      walkMs,
      batchMedian: quantile(times, 0.5),
      batchP95: quantile(times, 0.95),
      batchRuns: times.length,
      rssMb: measured.peakMb,
    };
  } finally {
    for (const c of children) await stopChild(c);
    if (dialect === 'postgres' && process.env.DATABASE_URL) await dropPostgresSchema(process.env.DATABASE_URL, schema);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const dialects = dialectsArg(args.dialects);
const results = new Map<string, Figures>();
for (const d of dialects) results.set(d, await runDialect(d));

const f0 = (x: number) => x.toLocaleString('en-US', { maximumFractionDigits: 0 });
const f1 = (x: number) => x.toLocaleString('en-US', { maximumFractionDigits: 1 });
const rows: [string, (f: Figures) => string][] = [
  ['seed (rows / s)', (f) => f0((N / f.seedMs) * 1000)],
  ['bare node:http: req/s', (f) => f0(f.baseline.requests.average)],
  ['bare node:http: p50 / p99 ms', (f) => `${f.baseline.latency.p50} / ${f.baseline.latency.p99}`],
  ['GET /api/endusers/<id>: req/s', (f) => f0(f.getById.requests.average)],
  ['GET by id: share of bare req/s', (f) => `${f0((100 * f.getById.requests.average) / f.baseline.requests.average)}%`],
  ['GET by id: p50 / p99 ms', (f) => `${f.getById.latency.p50} / ${f.getById.latency.p99}`],
  ['GET by id: server CPU µs per request (bare / Parley)', (f) => `${f0(f.baselineCpuUs)} / ${f0(f.getCpuUs)}`],
  ['GET by id: CPU share (bare µs / Parley µs)', (f) => `${f0((100 * f.baselineCpuUs) / f.getCpuUs)}%`],
  ['reference server: req/s', (f) => (f.ceiling ? f0(f.ceiling.requests.average) : '-')],
  [
    'reference server: share of bare req/s',
    (f) => (f.ceiling ? `${f0((100 * f.ceiling.requests.average) / f.baseline.requests.average)}%` : '-'),
  ],
  [
    'reference server: p50 / p99 ms, CPU µs per request',
    (f) => (f.ceiling ? `${f.ceiling.latency.p50} / ${f.ceiling.latency.p99}, ${f0(f.ceiling.cpuUs)}` : '-'),
  ],
  [
    'GET by id: share of the reference req/s',
    (f) => (f.ceiling ? `${f0((100 * f.getById.requests.average) / f.ceiling.requests.average)}%` : '-'),
  ],
  [
    'lean Fastify app (no hooks, no logger): req/s, share of bare',
    (f) =>
      f.fastify
        ? `${f0(f.fastify.requests.average)}, ${f0((100 * f.fastify.requests.average) / f.baseline.requests.average)}%`
        : '-',
  ],
  [
    'lean Fastify app: p50 / p99 ms, CPU µs per request',
    (f) => (f.fastify ? `${f.fastify.latency.p50} / ${f.fastify.latency.p99}, ${f0(f.fastify.cpuUs)}` : '-'),
  ],
  [
    'GET by id: share of the lean Fastify app req/s',
    (f) => (f.fastify ? `${f0((100 * f.getById.requests.average) / f.fastify.requests.average)}%` : '-'),
  ],
  ['list page 1: req/s', (f) => f0(f.page1.requests.average)],
  ['list page 1: p50 / p99 ms', (f) => `${f.page1.latency.p50} / ${f.page1.latency.p99}`],
  [`list page ${f0(TARGET_PAGE)}: req/s`, (f) => f0(f.pageN.requests.average)],
  [`list page ${f0(TARGET_PAGE)}: p50 / p99 ms`, (f) => `${f.pageN.latency.p50} / ${f.pageN.latency.p99}`],
  [
    `list page 1 / ${f0(TARGET_PAGE)}: server CPU µs per request`,
    (f) => (f.listCpuUs ? `${f0(f.listCpuUs[0])} / ${f0(f.listCpuUs[1])}` : '-'),
  ],
  ['list p99, deep / page 1', (f) => `${f1(f.pageN.latency.p99 / Math.max(f.page1.latency.p99, 1))}x`],
  [`walk to page ${f0(TARGET_PAGE)} (ms)`, (f) => f0(f.walkMs)],
  ['batch of 1,000: median / p95 ms', (f) => `${f1(f.batchMedian)} / ${f1(f.batchP95)} (${f.batchRuns} runs)`],
  ['server peak RSS under load (MB)', (f) => f0(f.rssMb)],
  [
    'non-2xx / errors during load',
    (f) => {
      const all = [f.getById, f.page1, f.pageN];
      return `${all.reduce((n, r) => n + r.non2xx, 0)} / ${all.reduce((n, r) => n + r.errors + r.timeouts, 0)}`;
    },
  ],
];
// With --only-get, the list and batch rows measured nothing.
const listed = rows.filter(
  ([label]) => (args.ceiling || !/reference/.test(label)) && (args['lean-fastify'] || !/lean Fastify/.test(label)),
);
const shown = ONLY_GET
  ? listed.filter(([label]) => /^(seed|bare|GET|reference|lean Fastify|server peak)/.test(label))
  : listed;
const header = ['metric', ...dialects.map((d) => (d === 'sqlite' ? 'SQLite' : 'PostgreSQL'))];
const lines = [
  `End users: ${f0(N)} seeded, ${CONNECTIONS} connections, ${DURATION} s a run, server from ${args.cli ?? (args.dist ? 'dist/' : 'src/ (tsx)')}, requests ${args.requests}, LOG_LEVEL=${args['log-level']}, median of ${GET_ROUNDS} alternating rounds`,
  '',
  `| ${header.join(' | ')} |`,
  `| ${header.map(() => '-').join(' | ')} |`,
  ...shown.map(
    ([label, get]) =>
      `| ${label} | ${dialects
        .map((d) => {
          const f = results.get(d);
          return f ? get(f) : '-';
        })
        .join(' | ')} |`,
  ),
];
console.log(lines.join('\n'));
writeJsonFigures(
  args.json,
  Object.fromEntries(
    [...results].map(([d, f]) => [
      d,
      {
        bare: loadFigures({ ...f.baseline, cpuUs: f.baselineCpuUs }),
        get: loadFigures({ ...f.getById, cpuUs: f.getCpuUs }),
        ...(f.ceiling ? { reference: loadFigures(f.ceiling) } : {}),
        ...(f.fastify ? { fastify: loadFigures(f.fastify) } : {}),
      },
    ]),
  ),
);
