/**
 * The performance targets in one command: runs `endusers.ts` (GET by ID only, with its reference
 * servers: no framework, and the leanest Fastify app), `reads.ts` (with theirs) and `send.ts`
 * (statuses off) against the built server, each beside its bare `node:http` server in the same
 * run, then prints one table of every target with the figure measured, the bare server's figure it
 * was compared with, and whether it is met, followed by the three benchmarks' own tables. SQLite,
 * and PostgreSQL when DATABASE_URL is set.
 *
 * On PostgreSQL it also runs `pg-transport.ts --rounds 0`: node-postgres alone, one statement at a
 * time, so that the table shows, beside the latency a send adds, the floor under it on this machine
 * (a send makes two writes with their commits, one after the other, before it answers).
 *
 * Sends are measured once per `--send-recipients` value: all to one recipient (every send of the
 * load in one conversation, the same row updated by each), and spread round 1,000 recipients (one
 * conversation each), as a tenant's traffic is.
 *
 *   npm run build && node --import tsx bench/targets.ts
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --import tsx bench/targets.ts
 *   node --import tsx bench/targets.ts --cli /tmp/before/dist/cli/main.js     # another build
 *
 * A measurement, not a test: it exits 0 whatever it finds (1 only if a benchmark fails to run).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { dialectsArg, type LoadFigures, log, type OneAtATimeFigures, ROOT } from './child-server.js';

/** The performance goals: a share of the bare server, p99, sends per second, added p50. */
const GOALS = {
  readShare: { sqlite: 0.5, postgres: 0.25 },
  readP99Ms: 10,
  sendsPerSecond: { sqlite: 2000, postgres: 1200 },
  addedP50Ms: 1,
} as const;

const { values: args } = parseArgs({
  options: {
    n: { type: 'string', default: '20000' },
    duration: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    'send-duration': { type: 'string', default: '10' },
    sequential: { type: 'string', default: '1000' },
    'send-recipients': { type: 'string', default: '1,1000' },
    connections: { type: 'string', default: '50' },
    dialects: { type: 'string' },
    cli: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (args.help) {
  console.log(`Runs every performance target (reads by ID, sends) against the built server and prints one table.

  npm run build && node --import tsx bench/targets.ts [options]
  DATABASE_URL=postgres://... node --import tsx bench/targets.ts   # PostgreSQL too

  --n 20000                end users seeded for GET /api/endusers/<id>
  --duration 5             seconds of each read round
  --rounds 3               alternating read rounds (the median is kept)
  --send-duration 10       seconds of each send load run
  --sequential 1000        sends timed one at a time
  --send-recipients 1,1000 one send run per count of recipients
  --connections 50         concurrent connections of the load
  --dialects sqlite,postgres   (default: sqlite, and postgres when DATABASE_URL is set)
  --cli path/to/dist/cli/main.js   serve another build (an earlier commit's)

Goals: reads at ${GOALS.readShare.sqlite}× (SQLite) / ${GOALS.readShare.postgres}× (PostgreSQL) of a bare node:http server, \
p99 < ${GOALS.readP99Ms} ms; sends/s ≥ ${GOALS.sendsPerSecond.sqlite} (SQLite) / ${GOALS.sendsPerSecond.postgres} (PostgreSQL); \
added p50 of a send < ${GOALS.addedP50Ms} ms. See bench/README.md.`);
  process.exit(0);
}
type Dialect = 'sqlite' | 'postgres';
const dialects = dialectsArg(args.dialects);
const build = args.cli ? ['--cli', args.cli] : ['--dist'];
const common = ['--connections', String(args.connections)];

type ReadFigures = { bare: LoadFigures; get: LoadFigures; reference?: LoadFigures; fastify?: LoadFigures };
type ReadsFigures = {
  bare: LoadFigures;
  message: LoadFigures;
  conversation: LoadFigures;
  referenceMessage?: LoadFigures;
  referenceConversation?: LoadFigures;
  fastifyMessage?: LoadFigures;
  fastifyConversation?: LoadFigures;
};
type SendFigures = {
  bare: LoadFigures;
  sandbox: LoadFigures & { oneAtATimeP50: number };
  parley: LoadFigures & { oneAtATimeP50: number };
  addedP50: number;
  /** The sandbox and Parley one request at a time, taking turns (what the added-p50 goal is judged on). */
  interleaved?: { sandboxP50: number; parleyP50: number; addedP50: number };
  /** PostgreSQL: the sandbox, the reference server for sends and Parley, the three taking turns. */
  reference?: {
    sandboxP50: number;
    referenceP50: number;
    parleyP50: number;
    referenceAddedP50: number;
    parleyAddedP50: number;
  };
};

const dir = mkdtempSync(join(tmpdir(), 'parley-targets-'));
const outputs: string[] = [];

/**
 * Runs one benchmark script; answers its `--json` figures (its Markdown goes to `outputs`). The
 * build and the connections are passed to scripts that serve Parley (`serves`).
 */
function run<T>(script: string, argv: string[], serves = true): Record<string, T> {
  const json = join(dir, `${script}.json`);
  const shared = serves ? [...build, ...common] : [];
  const command = ['--import', 'tsx', `bench/${script}.ts`, ...shared, ...argv, '--json', json];
  log(`targets: node ${command.join(' ')}`);
  const done = spawnSync(process.execPath, command, {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  if (done.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`bench/${script}.ts exited with ${done.status ?? done.signal}`);
  }
  outputs.push(`#### \`bench/${script}.ts ${[...shared, ...argv].join(' ')}\`\n\n${done.stdout.trim()}`);
  return JSON.parse(readFileSync(json, 'utf8')) as Record<string, T>;
}

const dialectArgs = ['--dialects', dialects.join(',')];
const endUsers = run<ReadFigures>('endusers', [
  '--n',
  String(args.n),
  '--duration',
  String(args.duration),
  '--get-rounds',
  String(args.rounds),
  '--only-get',
  '--ceiling',
  '--lean-fastify',
  ...dialectArgs,
]);
const reads = run<ReadsFigures>('reads', [
  '--ceiling',
  '--lean-fastify',
  '--rounds',
  String(args.rounds),
  '--duration',
  String(args.duration),
  ...dialectArgs,
]);
const recipientCounts = String(args['send-recipients'])
  .split(',')
  .map((n) => Number(n.trim()));
if (recipientCounts.some((n) => !Number.isInteger(n) || n < 1 || n > 9000)) {
  throw new Error('--send-recipients: a comma-separated list of whole numbers from 1 to 9,000');
}
const sendRuns = recipientCounts.map((recipients) => ({
  recipients,
  figures: run<SendFigures>('send', [
    '--no-statuses',
    '--duration',
    String(args['send-duration']),
    '--sequential',
    String(args.sequential),
    '--recipients',
    String(recipients),
    ...dialectArgs,
  ]),
}));
const transport = dialects.includes('postgres')
  ? run<OneAtATimeFigures>('pg-transport', ['--rounds', '0', '--sequential', String(args.sequential)], false).tcp
  : undefined;
rmSync(dir, { recursive: true, force: true });

const NAMES: Record<Dialect, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };
const f0 = (n: number) => Math.round(n).toLocaleString('en-US');
const f2 = (n: number) => n.toFixed(2);
const met = (ok: boolean) => (ok ? 'met' : '**not met**');
const rows: string[] = [];
let failed = 0;
let targets = 0;
const row = (target: string, dialect: Dialect, measured: string, bare: string, goal: string, ok: boolean) => {
  targets++;
  if (!ok) failed++;
  rows.push(`| ${target} | ${NAMES[dialect]} | ${measured} | ${bare} | ${goal} | ${met(ok)} |`);
};

for (const d of dialects) {
  const share = GOALS.readShare[d];
  const readRows: [string, LoadFigures | undefined, LoadFigures | undefined][] = [
    ['GET /api/endusers/<id>', endUsers[d]?.get, endUsers[d]?.bare],
    ['GET /api/messages/<id>', reads[d]?.message, reads[d]?.bare],
    ['GET /api/conversations/<id>', reads[d]?.conversation, reads[d]?.bare],
  ];
  for (const [route, r, bare] of readRows) {
    if (!r || !bare) continue;
    const ratio = r.rps / bare.rps;
    row(
      `${route}: share of bare`,
      d,
      `${ratio.toFixed(2)}× (${f0(r.rps)} req/s)`,
      `${f0(bare.rps)} req/s`,
      `≥ ${share}×`,
      ratio >= share,
    );
    row(`${route}: p99`, d, `${r.p99} ms`, `${bare.p99} ms`, `< ${GOALS.readP99Ms} ms`, r.p99 < GOALS.readP99Ms);
  }
  const references: [string, LoadFigures | undefined, LoadFigures | undefined][] = [
    ['reference server for GET /api/endusers/<id>, no framework', endUsers[d]?.reference, endUsers[d]?.bare],
    ['the leanest Fastify app for GET /api/endusers/<id>', endUsers[d]?.fastify, endUsers[d]?.bare],
    ['reference server for GET /api/messages/<id>, no framework', reads[d]?.referenceMessage, reads[d]?.bare],
    ['the leanest Fastify app for GET /api/messages/<id>', reads[d]?.fastifyMessage, reads[d]?.bare],
    ['reference server for GET /api/conversations/<id>, no framework', reads[d]?.referenceConversation, reads[d]?.bare],
    ['the leanest Fastify app for GET /api/conversations/<id>', reads[d]?.fastifyConversation, reads[d]?.bare],
  ];
  for (const [what, reference, bareOfReference] of references) {
    if (!reference || !bareOfReference) continue;
    rows.push(
      `| (${what}) | ${NAMES[d]} | ${(reference.rps / bareOfReference.rps).toFixed(2)}× (${f0(reference.rps)} req/s) | ${f0(bareOfReference.rps)} req/s | | |`,
    );
  }
  for (const { recipients, figures } of sendRuns) {
    const s = figures[d];
    if (!s) continue;
    const to = recipients === 1 ? 'one recipient' : `${f0(recipients)} recipients`;
    const goal = GOALS.sendsPerSecond[d];
    row(
      `POST /api/channels/send (${to}): sends/s`,
      d,
      f0(s.parley.rps),
      `${f0(s.bare.rps)} req/s`,
      `≥ ${f0(goal)}`,
      s.parley.rps >= goal,
    );
    const turns = s.interleaved;
    row(
      `POST /api/channels/send (${to}): added p50`,
      d,
      turns ? `${f2(turns.addedP50)} ms (apart: ${f2(s.addedP50)} ms)` : `${f2(s.addedP50)} ms`,
      turns
        ? `sandbox ${f2(turns.sandboxP50)} ms in turn (alone ${f2(s.sandbox.oneAtATimeP50)} ms)`
        : `sandbox alone ${f2(s.sandbox.oneAtATimeP50)} ms`,
      `< ${GOALS.addedP50Ms} ms`,
      (turns?.addedP50 ?? s.addedP50) < GOALS.addedP50Ms,
    );
    if (s.reference) {
      rows.push(
        `| (reference server for POST /api/channels/send (${to}), no framework, the same statements and provider call: added p50, with Parley's, the three taking turns) | ${NAMES[d]} | ${f2(s.reference.referenceAddedP50)} ms (Parley ${f2(s.reference.parleyAddedP50)} ms) | sandbox ${f2(s.reference.sandboxP50)} ms in turn | | |`,
      );
    }
  }
  if (d === 'postgres' && transport) {
    rows.push(
      `| (the floor under a send's added latency: two one-row inserts with their commits, one after the other, node-postgres alone) | ${NAMES[d]} | ${f2((2 * transport.insertP50) / 1000)} ms (2 × ${f0(transport.insertP50)} µs) | a select ${f0(transport.selectP50)} µs | | |`,
    );
  }
}

const cpu = cpus();
console.log(
  `\n### The targets, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC\n\n` +
    `${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; ` +
    `${args.connections} connections; reads: median of ${args.rounds} alternating rounds of ${args.duration} s ` +
    `(${f0(Number(args.n))} end users); sends: ${args['send-duration']} s, statuses off, ${args.sequential} one at a time, ` +
    `to ${recipientCounts.map((n) => (n === 1 ? 'one recipient' : `${f0(n)} recipients`)).join(' and to ')}\n`,
);
console.log('| target | database | measured | bare server (same run) | goal | |');
console.log('| - | - | -: | -: | -: | - |');
console.log(rows.join('\n'));
console.log(`\n${failed === 0 ? 'Every target met.' : `${failed} of ${targets} not met.`}\n`);
console.log(outputs.join('\n\n'));
