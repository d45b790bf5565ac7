/** Helpers shared by the benchmarks: building, spawning servers, waiting for them. */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dropPostgresSchema } from './internals.js';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const CLI = 'dist/cli/main.js';

/** Builds dist/ (unless told not to), so the benchmark measures what `npm start` runs. */
export function build(skip: boolean): void {
  if (skip) {
    if (!existsSync(`${ROOT}/${CLI}`)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);
    return;
  }
  const res = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (res.status !== 0) throw new Error('npm run build failed');
}

/**
 * A port for a child server: outside the kernel's range for ephemeral ports (where any client
 * connection of the run could take it first) and never handed out twice in one run.
 */
export { freePort } from './internals.js';

/** The shared secrets Parley requires on PostgreSQL (fixed values: benchmarks seal nothing real). */
export const PG_BENCH_SECRETS = {
  PARLEY_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
  PARLEY_WEBHOOK_APP_SECRET: 'bench-app-secret',
};

/** Environment for a child server: inherited, minus any Parley setting the caller did not ask for. */
export function serverEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) {
    if (/^(PARLEY_|PORT$)/.test(name)) delete env[name];
  }
  const pg = env.DATABASE_URL ?? extra.DATABASE_URL;
  return { ...env, NODE_ENV: 'production', ...(pg ? PG_BENCH_SECRETS : {}), ...extra };
}

export function startChild(args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (d: Buffer) => {
    output = (output + d.toString()).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.on('exit', (code, signal) => {
    if (code !== 0 && code !== null && signal === null) {
      process.stderr.write(`${args.join(' ')} exited with ${code}:\n${output}\n`);
    }
  });
  return child;
}

/** Polls a URL until it answers 200; resolves with the time it took, in ms. */
export async function waitFor200(url: string, started: number, timeoutMs = 30_000, everyMs = 5): Promise<number> {
  for (;;) {
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status === 200) return performance.now() - started;
    } catch {
      // not listening yet
    }
    if (performance.now() - started > timeoutMs) throw new Error(`${url} did not answer 200 in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
};

export const fmt = (n: number, digits = 0): string =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

// autocannon ships no types; this is the part of its programmatic API the benchmarks use.
export interface AutocannonRequest {
  path?: string;
  method?: string;
  body?: string;
  headers?: Record<string, string>;
}
export interface AutocannonOptions {
  url: string;
  connections: number;
  duration: number;
  pipelining?: number;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /**
   * Requests taken in turn by each connection. Give fixed ones (`path`, `headers`...) where they can
   * be listed: autocannon builds those once, while a `setupRequest` is built again for every request,
   * in the load generator's own process, which shares this machine's two cores with the server.
   */
  requests?: (AutocannonRequest & { setupRequest?: (req: AutocannonRequest) => AutocannonRequest })[];
}
export interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; average: number; max: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}
export const autocannon = createRequire(import.meta.url)('autocannon') as (
  o: AutocannonOptions,
) => Promise<AutocannonResult>;

export const log = (msg: string): void => {
  process.stderr.write(`[bench] ${msg}\n`);
};

export const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;

/** Node flags of the `parley` command: those on the first line of cli/parley.js (`#!/usr/bin/env -S node ...`). */
export const NODE_FLAGS: string[] = (readFileSync(`${ROOT}/cli/parley.js`, 'utf8').split('\n')[0] ?? '')
  .replace(/^#!\S*env -S node/, '')
  .trim()
  .split(/\s+/)
  .filter((flag) => flag.startsWith('--'));

/**
 * How to run the CLI: the build (`--dist`, as `npm start` runs it), the sources through tsx, or
 * (a path) another build's `dist/cli/main.js`, an earlier commit's say, to compare with.
 */
export const entry = (dist: boolean | string): string[] =>
  typeof dist === 'string'
    ? [...NODE_FLAGS, dist]
    : dist
      ? [...NODE_FLAGS, CLI]
      : [...NODE_FLAGS, '--import', 'tsx', 'src/cli/main.ts'];

/** Environment of a benchmark's child: no database or Parley setting but those given; logs at warn. */
export function benchEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(base)) if (/^(DATABASE_URL|PARLEY_|PORT$|LOG_LEVEL$)/.test(name)) delete base[name];
  return { ...base, NODE_NO_WARNINGS: '1', LOG_LEVEL: 'warn', ...(env.DATABASE_URL ? PG_BENCH_SECRETS : {}), ...env };
}

/** A node child with the benchmark environment; stdout piped (for ports and JSON), stderr shown. */
export function spawnNode(argv: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, argv, { cwd: ROOT, env: benchEnv(env), stdio: ['ignore', 'pipe', 'inherit'] });
}

/** Polls a URL every 100 ms until it answers 2xx (its health check); fails if the child exits first. */
export async function waitUp(url: string, child: ChildProcess, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`${url}: process exited with ${child.exitCode}`);
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      // Only the health check's own answer: a 404 is another server on the port (one that took it first).
      if (res.ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up`);
}

/** The bare node:http baseline as a child process, on a port of its choosing. */
export function startBaseline(): Promise<{ child: ChildProcess; url: string }> {
  return startListening(['--import', 'tsx', 'bench/baseline-server.ts', '0'], 'baseline');
}

/** A child that prints `listening <port>` once ready (the bare server, the reference servers). */
export async function startListening(
  argv: string[],
  name: string,
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; url: string }> {
  const child = spawnNode(argv, env);
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      const m = /listening (\d+)/.exec(d.toString());
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}`)));
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

/**
 * A reference server for a read by ID (`bench/ceiling-server.ts`): with no framework (`node`) or
 * the leanest Fastify app (`fastify`). On SQLite (`database` the file) it serves a copy of the file
 * it makes as it starts, so start it once the database holds everything; on PostgreSQL
 * (`database` is `postgres`, `env` Parley's `DATABASE_URL` and `PARLEY_PG_SCHEMA`) Parley's schema.
 */
export function startReadReference(
  database: string,
  read: 'endusers' | 'messages' | 'conversations',
  kind: 'node' | 'fastify',
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; url: string }> {
  return startListening(
    [...NODE_FLAGS, '--import', 'tsx', 'bench/ceiling-server.ts', database, '0', read, kind],
    `reference server (${read}, ${kind})`,
    env,
  );
}

/** Runs `parley <argv> --json` to completion and parses what it prints. */
export async function parleyJson<T>(dist: boolean | string, argv: string[], env: Record<string, string>): Promise<T> {
  const child = spawnNode([...entry(dist), ...argv, '--json'], env);
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`parley ${argv.join(' ')} failed`);
  return JSON.parse(out) as T;
}

/** A paid organization, an agent with a sandbox number, and an agent key holding Channels. */
export async function seedSendingTenant(
  dist: boolean | string,
  env: Record<string, string>,
): Promise<{ key: string; phoneNumberId: string; orgId: string; agentId: string }> {
  const org = await parleyJson<{ id: string }>(dist, ['org', 'create', '--name', 'Bench', '--plan', 'paid'], env);
  const phone = `+1650${2 + Math.floor(Math.random() * 8)}${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}`;
  const agent = await parleyJson<{ id: string }>(
    dist,
    ['agent', 'create', '--org', org.id, '--name', 'Bench', '--number', phone],
    env,
  );
  const created = await parleyJson<{ key: string }>(
    dist,
    [
      'key',
      'create',
      '--org',
      org.id,
      '--label',
      'bench',
      '--scope',
      'agent',
      '--agent',
      agent.id,
      '--permissions',
      'channels',
    ],
    env,
  );
  const numbers = await parleyJson<{ phoneNumberId: string }[]>(dist, ['number', 'list', '--org', org.id], env);
  return { key: created.key, phoneNumberId: numbers[0]?.phoneNumberId ?? '', orgId: org.id, agentId: agent.id };
}

/**
 * What the reads benchmarks read: `n` templates sent through Parley at `base` to as many recipients
 * (so as many conversations), 8 at a time; the sandbox reports sent, delivered and read for each, as
 * the provider would, and this returns once the last message sent reads `read`. The message and
 * conversation IDs, in the order the sends were answered.
 */
export async function sendToRecipients(
  base: string,
  key: string,
  n: number,
): Promise<{ messageIds: string[]; conversationIds: string[] }> {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const messageIds: string[] = [];
  const conversationIds: string[] = [];
  const WORKERS = 8;
  let nextSend = 0;
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      for (let i = nextSend++; i < n; i = nextSend++) {
        const res = await fetch(`${base}/api/channels/send`, {
          method: 'POST',
          headers,
          body: JSON.stringify({
            channel: 'msgapp',
            to: `+1415${String(5_000_000 + i).padStart(7, '0')}`,
            type: 'template',
            template: { name: 'hello_world', language: 'en_US' },
          }),
        });
        const body = (await res.json()) as { messageId?: string; conversationId?: string };
        if (res.status !== 200 || !body.messageId || !body.conversationId) {
          throw new Error(`send answered ${res.status}: ${JSON.stringify(body)}`);
        }
        messageIds.push(body.messageId);
        conversationIds.push(body.conversationId);
      }
    }),
  );
  // Every message has its three statuses once the last one sent reads `read`.
  const last = messageIds.at(-1);
  for (let tries = 0; ; tries++) {
    const res = await fetch(`${base}/api/messages/${last}`, { headers });
    const body = (await res.json()) as { message?: { status?: string } };
    if (body.message?.status === 'read') break;
    if (tries > 600) throw new Error(`message ${last} never reached read: ${JSON.stringify(body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { messageIds, conversationIds };
}

/** The webhook app secret the messaging benchmarks give Parley, so they can sign bodies themselves. */
export const BENCH_APP_SECRET = PG_BENCH_SECRETS.PARLEY_WEBHOOK_APP_SECRET;

/**
 * Settings of a messaging benchmark's processes: a fresh data folder (and, for PostgreSQL, a fresh
 * schema), the sandbox at `providerUrl` as the provider, a known app secret, rate limits out of the
 * way; `cleanup` removes the folder and drops the schema.
 */
export function messagingBenchEnv(
  dialect: 'sqlite' | 'postgres',
  name: string,
  providerUrl: string,
): { env: Record<string, string>; cleanup: () => Promise<void>; analyze: () => Promise<void> } {
  const dataDir = mkdtempSync(join(tmpdir(), `parley-bench-${name}-`));
  const schema = `bench_${name}_${Date.now().toString(36)}`;
  const env: Record<string, string> = {
    PARLEY_DATA_DIR: dataDir,
    PARLEY_REGION: 'us',
    PARLEY_WEBHOOK_APP_SECRET: BENCH_APP_SECRET,
    PARLEY_PROVIDER_BASE_URL: providerUrl,
    PARLEY_SEND_RATE_LIMIT: '1000000000',
    PARLEY_SEND_RATE_LIMIT_ORG: '1000000000',
  };
  const pgUrl = dialect === 'postgres' ? process.env.DATABASE_URL : undefined;
  // The secrets too, so that code in the benchmark's own process (a seed) loads the same settings.
  if (pgUrl) Object.assign(env, { DATABASE_URL: pgUrl, PARLEY_PG_SCHEMA: schema }, PG_BENCH_SECRETS);
  return {
    env,
    async cleanup() {
      if (pgUrl) await dropPostgresSchema(pgUrl, schema);
      rmSync(dataDir, { recursive: true, force: true });
    },
    analyze: () => (pgUrl ? analyzePostgresSchema(pgUrl, schema) : Promise.resolve()),
  };
}

/**
 * ANALYZE of every table of a benchmark's schema, once it is seeded: what autovacuum does on a live
 * database within a minute of a table's growth (this machine's PostgreSQL runs with autovacuum
 * off). Without statistics PostgreSQL plans the prepared statements as if the tables were empty,
 * and keeps those plans. Each benchmark's `--no-analyze` leaves the schema as seeded.
 */
export async function analyzePostgresSchema(url: string, schema: string): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(
      'select tablename as name from pg_tables where schemaname = $1',
      [schema],
    );
    for (const { name } of rows) await client.query(`ANALYZE "${schema}"."${name.replaceAll('"', '""')}"`);
  } finally {
    await client.end();
  }
}

/** The run whose request rate is the median of the runs. */
export function medianRate<T extends AutocannonResult>(runs: T[]): T {
  const sorted = [...runs].sort((a, b) => a.requests.average - b.requests.average);
  const run = sorted[Math.floor((sorted.length - 1) / 2)];
  if (!run) throw new Error('no run');
  return run;
}

/**
 * CPU time (user + system) a process has used, in ms (Linux /proc; clock ticks of 10 ms); with
 * `children`, also that of its children it has waited for (those that exited).
 */
export function cpuMs(pid: number | undefined, children = false): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    const own = Number(fields[11]) + Number(fields[12]);
    return (children ? own + Number(fields[13]) + Number(fields[14]) : own) * 10;
  } catch {
    return Number.NaN;
  }
}

/**
 * CPU time of every PostgreSQL process on this machine, in ms (0 without any): /proc, Linux. A
 * backend that exits (a connection closed) moves its time to the postmaster's children's time,
 * counted here too, so the total never goes back.
 */
export function postgresCpuMs(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (!stat.includes('(postgres)')) continue;
      // NaN: it exited between the two reads (a pool closing an idle connection, say).
      const ms = cpuMs(Number(entry), true);
      if (Number.isFinite(ms)) total += ms;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

/**
 * A load run and the server's CPU time per request it answered, in µs: unlike requests per second,
 * this hardly moves when other work shares the machine's cores. `pgUs`: the same for every
 * PostgreSQL process on the machine (0 on SQLite).
 */
export async function loadWithCpu(
  pid: number | undefined,
  load: () => Promise<AutocannonResult>,
): Promise<AutocannonResult & { cpuUs: number; pgUs: number }> {
  const before = cpuMs(pid);
  const pgBefore = postgresCpuMs();
  const r = await load();
  const perRequest = (ms: number) => (ms * 1000) / Math.max(1, r.requests.total);
  return { ...r, cpuUs: perRequest(cpuMs(pid) - before), pgUs: perRequest(postgresCpuMs() - pgBefore) };
}

/** The `--dialects` option of a benchmark: by default SQLite, and PostgreSQL when DATABASE_URL is set. */
export function dialectsArg(value: string | undefined): ('sqlite' | 'postgres')[] {
  return (value?.split(',') ?? (process.env.DATABASE_URL ? ['sqlite', 'postgres'] : ['sqlite'])).map((d) => {
    if (d !== 'sqlite' && d !== 'postgres') throw new Error(`--dialects: unknown '${d}' (sqlite, postgres)`);
    if (d === 'postgres' && !process.env.DATABASE_URL) throw new Error('--dialects postgres needs DATABASE_URL');
    return d;
  });
}

/** A load run as `--json` writes it (see `bench/targets.ts`): req/s, latency in ms, CPU µs per request. */
export interface LoadFigures {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly cpuUs?: number;
}

/** `bench/pg-transport.ts`: one statement at a time on one connection, p50 and p99 in µs. */
export interface OneAtATimeFigures {
  readonly selectP50: number;
  readonly selectP99: number;
  readonly insertP50: number;
  readonly insertP99: number;
}

export const loadFigures = (r: AutocannonResult & { cpuUs?: number }): LoadFigures => ({
  rps: r.requests.average,
  p50: r.latency.p50,
  p99: r.latency.p99,
  ...(r.cpuUs === undefined ? {} : { cpuUs: r.cpuUs }),
});

/** `--json <file>`: the run's figures, by database, for `bench/targets.ts` (nothing without a file). */
export function writeJsonFigures(file: string | undefined, figures: unknown): void {
  if (file) writeFileSync(file, `${JSON.stringify(figures, null, 2)}\n`);
}
