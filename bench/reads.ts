/**
 * Authenticated reads by ID of what sends make: `GET /api/messages/<id>` (a message with its three
 * statuses) and `GET /api/conversations/<id>`, side by side with a bare node:http server in the same
 * run, on SQLite and (when DATABASE_URL is set) PostgreSQL.
 *
 *   node --import tsx bench/reads.ts --dist                  # 5 s per run, 50 connections, 3 rounds
 *   node --import tsx bench/reads.ts --dist --duration 2 --rounds 1 --messages 200   # smoke run
 *   node --import tsx bench/reads.ts --dist --dialects postgres                   # one database
 *   node --import tsx bench/reads.ts --cli /tmp/parley-<commit>/dist/cli/main.js       # another build
 *
 * Seeding: an agent with a sandbox number sends `--messages` templates to as many recipients (so
 * as many conversations), and the sandbox reports sent, delivered and read for each, as the
 * provider would; the benchmark waits until the last message reads `read`. Then the bare server,
 * the message read and the conversation read alternate `--rounds` times (IDs rotate over all of
 * them); the median round of each is reported, with the server's CPU time per request.
 *
 * `--ceiling`: each round also loads, just before each of Parley's reads, a reference server doing
 * only that read's own work without a framework (`bench/ceiling-server.ts messages` and
 * `conversations`: Parley's own reads and answers, on a copy of the database on SQLite, on Parley's
 * schema on PostgreSQL), under the same load: how near Parley is to the most a Node server can be
 * expected to reach for that read. `--lean-fastify` adds the same reads served by the leanest
 * Fastify app (`ceiling-server.ts ... fastify`): what the framework alone costs.
 */
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  type AutocannonRequest,
  type AutocannonResult,
  autocannon,
  dialectsArg,
  entry,
  freePort,
  type LoadFigures,
  loadFigures,
  loadWithCpu,
  log,
  medianRate,
  messagingBenchEnv,
  seedSendingTenant,
  sendToRecipients,
  spawnNode,
  startBaseline,
  startReadReference,
  stopChild,
  waitUp,
  writeJsonFigures,
} from './child-server.js';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' },
    messages: { type: 'string', default: '1000' },
    dist: { type: 'boolean', default: false },
    cli: { type: 'string' },
    dialects: { type: 'string' },
    'no-analyze': { type: 'boolean', default: false },
    ceiling: { type: 'boolean', default: false },
    'lean-fastify': { type: 'boolean', default: false },
    'log-level': { type: 'string', default: 'warn' },
    json: { type: 'string' },
  },
});
const DURATION = Number(args.duration);
const CONNECTIONS = Number(args.connections);
const ROUNDS = Math.max(1, Number(args.rounds));
const MESSAGES = Math.max(1, Number(args.messages));
const BUILD = args.cli ?? args.dist;
const ENTRY = entry(BUILD);

async function load(url: string, options: Partial<Parameters<typeof autocannon>[0]> = {}): Promise<AutocannonResult> {
  const r = await autocannon({ url, connections: CONNECTIONS, duration: DURATION, ...options });
  if (r.non2xx > 0 || r.errors > 0) log(`  warning: ${r.non2xx} non-2xx, ${r.errors} errors on ${url}`);
  return r;
}

type Measured = AutocannonResult & { cpuUs: number; pgUs: number };

type ReadName = 'message' | 'conversation';
/** `bench/ceiling-server.ts`'s two servers: `node` (--ceiling) and `fastify` (--lean-fastify). */
type ReferenceKind = 'node' | 'fastify';

interface Figures {
  readonly bare: Measured;
  readonly message: Measured;
  readonly conversation: Measured;
  /** The reference servers' median rounds (--ceiling, --lean-fastify). */
  readonly references: readonly { read: ReadName; kind: ReferenceKind; measured: Measured }[];
}

/** The name of a reference's figures in the JSON: `referenceMessage`, `fastifyConversation`... */
const figuresName = (read: ReadName, kind: ReferenceKind) =>
  `${kind === 'node' ? 'reference' : 'fastify'}${read[0]?.toUpperCase()}${read.slice(1)}`;

async function runDialect(dialect: 'sqlite' | 'postgres'): Promise<Figures> {
  const sandboxPort = await freePort();
  const parleyPort = await freePort();
  const base = `http://127.0.0.1:${parleyPort}`;
  const { env, cleanup, analyze } = messagingBenchEnv(dialect, 'reads', `http://127.0.0.1:${sandboxPort}`);
  const children: ChildProcess[] = [];
  try {
    log(`${dialect}: seeding an organization, an agent with a number and a key`);
    const { key } = await seedSendingTenant(BUILD, env);
    const sandbox = spawnNode(
      [...ENTRY, 'sandbox', '--port', String(sandboxPort), '--webhook-url', `${base}/webhooks/msgapp`],
      env,
    );
    children.push(sandbox);
    const parley = spawnNode([...ENTRY, 'serve', '--port', String(parleyPort)], {
      ...env,
      LOG_LEVEL: args['log-level'],
    });
    children.push(parley);
    const baseline = await startBaseline();
    children.push(baseline.child);
    await waitUp(`http://127.0.0.1:${sandboxPort}/sandbox/health`, sandbox);
    await waitUp(`${base}/api/health`, parley);

    log(`${dialect}: ${MESSAGES} sends to as many recipients`);
    const { messageIds, conversationIds } = await sendToRecipients(base, key, MESSAGES);
    await stopChild(sandbox);
    // The tables as a live database's autovacuum would leave them (see analyzePostgresSchema).
    if (!args['no-analyze']) await analyze();

    const rotate = (prefix: string, ids: readonly string[]) => {
      let next = 0;
      return [{ setupRequest: (req: AutocannonRequest) => ({ ...req, path: `${prefix}${ids[next++ % ids.length]}` }) }];
    };
    const auth = { authorization: `Bearer ${key}` };
    // Started once the database holds everything: on SQLite each serves a copy of it made as it starts.
    const kinds: ReferenceKind[] = [
      ...(args.ceiling ? (['node'] as const) : []),
      ...(args['lean-fastify'] ? (['fastify'] as const) : []),
    ];
    const routes = [
      { read: 'message', prefix: '/api/messages/', ids: messageIds },
      { read: 'conversation', prefix: '/api/conversations/', ids: conversationIds },
    ] as const;
    const references: {
      read: ReadName;
      kind: ReferenceKind;
      url: string;
      pid: number | undefined;
      runs: Measured[];
    }[] = [];
    const database = dialect === 'sqlite' ? join(env.PARLEY_DATA_DIR ?? '', 'parley-us.db') : 'postgres';
    for (const { read, prefix, ids } of routes) {
      for (const kind of kinds) {
        const { child, url } = await startReadReference(database, `${read}s`, kind, env);
        children.push(child);
        // A reference answers as Parley does, or it measures something else.
        const [ours, theirs] = await Promise.all(
          [base, url].map(async (server) => {
            const res = await fetch(`${server}${prefix}${ids[0]}`, { headers: auth });
            return `${res.status} ${JSON.stringify(await res.json())}`;
          }),
        );
        if (ours !== theirs)
          throw new Error(`${prefix}${ids[0]}: Parley answered ${ours}, the ${kind} reference ${theirs}`);
        references.push({ read, kind, url, pid: child.pid, runs: [] });
      }
    }
    const bares: Measured[] = [];
    const parleys: Record<ReadName, Measured[]> = { message: [], conversation: [] };
    for (let round = 1; round <= ROUNDS; round++) {
      log(`${dialect}: round ${round}: bare, GET /api/messages/<id>, GET /api/conversations/<id>`);
      bares.push(await loadWithCpu(baseline.child.pid, () => load(`${baseline.url}/`)));
      for (const { read, prefix, ids } of routes) {
        for (const ref of references.filter((r) => r.read === read)) {
          ref.runs.push(
            await loadWithCpu(ref.pid, () =>
              load(`${ref.url}${prefix}x`, { headers: auth, requests: rotate(prefix, ids) }),
            ),
          );
        }
        parleys[read].push(
          await loadWithCpu(parley.pid, () =>
            load(`${base}${prefix}x`, { headers: auth, requests: rotate(prefix, ids) }),
          ),
        );
      }
      const [b, m, c] = [bares.at(-1), parleys.message.at(-1), parleys.conversation.at(-1)];
      log(
        `${dialect}:   bare ${Math.round(b?.requests.average ?? 0)} req/s, message ${Math.round(m?.requests.average ?? 0)} ` +
          `(p99 ${m?.latency.p99} ms, ${Math.round(m?.cpuUs ?? 0)}/${Math.round(m?.pgUs ?? 0)} µs CPU Parley/PostgreSQL), ` +
          `conversation ${Math.round(c?.requests.average ?? 0)} (p99 ${c?.latency.p99} ms, ` +
          `${Math.round(c?.cpuUs ?? 0)}/${Math.round(c?.pgUs ?? 0)} µs)`,
      );
      for (const { read, kind, runs } of references) {
        const last = runs.at(-1);
        log(
          `${dialect}:   reference (${read}, ${kind}): ${Math.round(last?.requests.average ?? 0)} req/s (${Math.round(last?.cpuUs ?? 0)} µs CPU)`,
        );
      }
    }
    return {
      bare: medianRate(bares),
      message: medianRate(parleys.message),
      conversation: medianRate(parleys.conversation),
      references: references.map(({ read, kind, runs }) => ({ read, kind, measured: medianRate(runs) })),
    };
  } finally {
    for (const child of children.reverse()) await stopChild(child);
    await cleanup();
  }
}

const results: [string, Figures][] = [];
const byDialect: Record<string, Record<string, LoadFigures>> = {};
for (const d of dialectsArg(args.dialects)) {
  const figures = await runDialect(d);
  results.push([d === 'sqlite' ? 'SQLite' : 'PostgreSQL', figures]);
  byDialect[d] = {
    bare: loadFigures(figures.bare),
    message: loadFigures(figures.message),
    conversation: loadFigures(figures.conversation),
    ...Object.fromEntries(
      figures.references.map(({ read, kind, measured }) => [figuresName(read, kind), loadFigures(measured)]),
    ),
  };
}
writeJsonFigures(args.json, byDialect);

const f0 = (n: number) => Math.round(n).toLocaleString('en-US');
console.log(
  `\nReads by ID: ${MESSAGES} messages and conversations, ${CONNECTIONS} connections, ${DURATION} s a run, ` +
    `median of ${ROUNDS} alternating rounds, LOG_LEVEL=${args['log-level']}\n`,
);
console.log(
  '| database | route | req/s | share of bare | p50 / p99 ms | CPU µs per request (bare / Parley) | PostgreSQL CPU µs per request | share of the reference |',
);
console.log('| - | - | -: | -: | -: | -: | -: | -: |');
for (const [name, f] of results) {
  console.log(
    `| ${name} | bare node:http | ${f0(f.bare.requests.average)} | | ${f.bare.latency.p50} / ${f.bare.latency.p99} | ${f0(f.bare.cpuUs)} | | |`,
  );
  for (const [read, route, r] of [
    ['message', 'GET /api/messages/<id>', f.message],
    ['conversation', 'GET /api/conversations/<id>', f.conversation],
  ] as const) {
    const share = (m: Measured) => Math.round((100 * m.requests.average) / f.bare.requests.average);
    const references = f.references.filter((ref) => ref.read === read);
    for (const { kind, measured } of references) {
      const what = kind === 'node' ? 'reference server' : 'the leanest Fastify app';
      console.log(
        `| ${name} | (${what} for ${route}, ${kind === 'node' ? 'no framework' : 'no hooks, no logger'}) | ${f0(measured.requests.average)} | ${share(measured)} % | ${measured.latency.p50} / ${measured.latency.p99} | ${f0(f.bare.cpuUs)} / ${f0(measured.cpuUs)} | ${name === 'SQLite' ? '' : f0(measured.pgUs)} | |`,
      );
    }
    const node = references.find((ref) => ref.kind === 'node')?.measured;
    const ofReference = node ? `${Math.round((100 * r.requests.average) / node.requests.average)} %` : '';
    console.log(
      `| ${name} | ${route} | ${f0(r.requests.average)} | ${share(r)} % | ${r.latency.p50} / ${r.latency.p99} | ${f0(f.bare.cpuUs)} / ${f0(r.cpuUs)} | ${name === 'SQLite' ? '' : f0(r.pgUs)} | ${ofReference} |`,
    );
  }
}
