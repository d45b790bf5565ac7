/**
 * What each of Parley's own steps around a read by ID costs (`GET /api/endusers/<id>`, or with
 * `--read` `/api/messages/<id>` or `/api/conversations/<id>`; on SQLite, or with
 * `--dialect postgres` on a fresh schema of DATABASE_URL's database, dropped at the end):
 * copies of dist/, in a temporary folder, each with one step taken out, each measured against the
 * unchanged build in ABBA blocks (unchanged, changed, changed, unchanged; `--duration` seconds each
 * under the same load) by the ratio of the server's CPU time per request (from /proc), which a
 * shared machine moves far less than requests per second; the median of `--blocks` blocks and
 * their range. The leanest Fastify app serving the same read (`bench/ceiling-server.ts ... fastify`)
 * is measured the same way, for scale.
 *
 *   node --import tsx bench/ablation.ts [--blocks 8] [--duration 2] [--connections 50] [--n 20000]
 *                                       [--variants headers,request-hook,...] [--no-build]
 *                                       [--read endusers|messages|conversations] [--dialect sqlite|postgres]
 *
 * `--read messages` and `--read conversations` seed as `bench/reads.ts` does: `--n` templates
 * (1,000 unless given) sent through the unchanged build to as many recipients, each with its
 * three statuses from the sandbox, before anything is measured.
 *
 * A changed build is made by replacing exact text in dist/'s compiled files; a replacement that
 * does not match exactly once stops the benchmark (the code moved: update the text here). The
 * changed builds are not configurations anyone should run: each answers without something Parley
 * requires (headers, checks, logs, validation).
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import pg from 'pg';
import {
  type AutocannonRequest,
  autocannon,
  build,
  CLI,
  freePort,
  loadWithCpu,
  median,
  messagingBenchEnv,
  NODE_FLAGS,
  ROOT,
  seedSendingTenant,
  sendToRecipients,
  spawnNode,
  startReadReference,
  stopChild,
  waitUp,
} from './child-server.js';
import { seedEndUsers } from './seed-endusers.js';

const { values: opts } = parseArgs({
  options: {
    blocks: { type: 'string', default: '8' },
    duration: { type: 'string', default: '2' },
    connections: { type: 'string', default: '50' },
    n: { type: 'string' },
    read: { type: 'string', default: 'endusers' },
    dialect: { type: 'string', default: 'sqlite' },
    variants: { type: 'string' },
    'no-build': { type: 'boolean', default: false },
  },
});

const READS = ['endusers', 'messages', 'conversations'] as const;
type Read = (typeof READS)[number];
const READ = opts.read as Read;
if (!READS.includes(READ)) throw new Error(`--read: one of ${READS.join(', ')}, not '${opts.read}'`);
const DIALECT = opts.dialect as 'sqlite' | 'postgres';
if (DIALECT !== 'sqlite' && DIALECT !== 'postgres')
  throw new Error(`--dialect: sqlite or postgres, not '${opts.dialect}'`);
const PG_URL = process.env.DATABASE_URL;
if (DIALECT === 'postgres' && !PG_URL) throw new Error('--dialect postgres needs DATABASE_URL');
/** End users seeded, or messages sent (one recipient, so one conversation, each). */
const N = Number(opts.n ?? (READ === 'endusers' ? 20_000 : 1_000));

/** One replacement in one compiled file: [file under dist/, the exact text, what replaces it]. */
type Edit = readonly [file: string, from: string, to: string];

const APP = 'http/app.js';
/** Each read's route, without its params schema. */
const PARAMS_SCHEMA: Record<Read, Edit> = {
  endusers: [
    'end-users/end-user.routes.js',
    "params: EndUserIdParams,\n            response: { 200: EndUserSchema, ...endUserErrors('get'",
    "response: { 200: EndUserSchema, ...endUserErrors('get'",
  ],
  messages: [
    'messaging/message.routes.js',
    'params: Type.Object({ messageId: Type.String({ minLength: 1, maxLength: 512 }) }),\n            response:',
    'response:',
  ],
  conversations: [
    'conversations/conversation.routes.js',
    "params: ConversationIdParams,\n            response: { 200: ConversationSchema, ...errorResponses('channel', [400, 401, 403, 404]) },\n        },\n    }, async (request) => getConversation(",
    "response: { 200: ConversationSchema, ...errorResponses('channel', [400, 401, 403, 404]) },\n        },\n    }, async (request) => getConversation(",
  ],
};
const SKIPPED_ON_SEND = "if (false) app.addHook('onSend', (request, reply, payload, done) => {";
const SKIPPED_ON_REQUEST = "if (false) app.addHook('onRequest', (request, reply, done) => {";

const VARIANTS: Record<string, { what: string; edits: readonly Edit[] }> = {
  headers: {
    what: "the app's onSend hook: the six security headers and X-Request-Id",
    edits: [[APP, "app.addHook('onSend', (request, reply, payload, done) => {", SKIPPED_ON_SEND]],
  },
  'headers-early': {
    what: "the app's onSend hook, its headers set in the app's onRequest hook instead (none taken out)",
    edits: [
      [APP, "app.addHook('onSend', (request, reply, payload, done) => {", SKIPPED_ON_SEND],
      [
        APP,
        "app.addHook('onRequest', (request, reply, done) => {",
        "app.addHook('onRequest', (request, reply, done) => { reply.headers(SECURITY_HEADERS); reply.header('x-request-id', request.id);",
      ],
    ],
  },
  'request-hook': {
    what: "the app's onRequest hook: shutdown, Host and NUL checks",
    edits: [[APP, "app.addHook('onRequest', (request, reply, done) => {", SKIPPED_ON_REQUEST]],
  },
  logger: {
    what: "Fastify's logger (`logger: false`: no request log controller, no request child loggers)",
    edits: [
      [APP, 'loggerInstance: logger,', 'logger: false,'],
      [APP, 'logController: new RequestLogController(logger),', ''],
      [APP, 'childLoggerFactory: lazyChildLogger,', ''],
    ],
  },
  params: {
    what: "the route's params schema (the ID's validation)",
    edits: [PARAMS_SCHEMA[READ]],
  },
  'request-id': {
    what: 'request IDs from a counter instead of `randomUUID()`',
    edits: [
      [
        APP,
        "return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();",
        "return 'r' + (globalThis.__requests = (globalThis.__requests ?? 0) + 1);",
      ],
    ],
  },
};
VARIANTS.all = {
  what: 'all of the above but `headers-early`',
  edits: Object.entries(VARIANTS).flatMap(([name, v]) => (name === 'headers-early' ? [] : v.edits)),
};

const names = opts.variants?.split(',') ?? [...Object.keys(VARIANTS), 'lean-fastify'];
for (const name of names) {
  if (!VARIANTS[name] && name !== 'lean-fastify') throw new Error(`--variants: unknown '${name}'`);
}
const BLOCKS = Number(opts.blocks);
const DURATION = Number(opts.duration);
const CONNECTIONS = Number(opts.connections);

const log = (line: string) => process.stderr.write(`[ablation] ${line}\n`);

/** A copy of dist/ with the variant's replacements, under `dir`; its CLI's path. */
function makeBuild(dir: string, name: string, edits: readonly Edit[]): string {
  const root = join(dir, name);
  cpSync(join(ROOT, 'dist'), join(root, 'dist'), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(root, 'package.json'));
  symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'));
  for (const [file, from, to] of edits) {
    const path = join(root, 'dist', file);
    const text = readFileSync(path, 'utf8');
    const found = text.split(from).length - 1;
    if (found !== 1) throw new Error(`${name}: dist/${file} holds ${JSON.stringify(from)} ${found} times, not once`);
    writeFileSync(path, text.replace(from, to));
  }
  return join(root, CLI);
}

interface Server {
  readonly url: string;
  readonly pid: number | undefined;
  stop(): Promise<void>;
}

async function main(): Promise<void> {
  build(opts['no-build']);
  const dir = mkdtempSync(join(tmpdir(), 'parley-ablation-'));
  const servers = new Map<string, Server>();
  let bench: ReturnType<typeof messagingBenchEnv> | undefined;
  try {
    const sandboxPort = await freePort();
    // A fresh data folder and, on PostgreSQL, a fresh schema; the sandbox as the provider.
    bench = messagingBenchEnv(DIALECT, 'ablation', `http://127.0.0.1:${sandboxPort}`);
    const { env } = bench;
    // What the lean Fastify app serves: a copy of the SQLite file, or Parley's PostgreSQL schema.
    const database = DIALECT === 'sqlite' ? join(env.PARLEY_DATA_DIR ?? '', 'parley-us.db') : 'postgres';
    let key: string;
    let ids: string[] = [];
    if (READ === 'endusers') {
      log(`seeding ${N} end users`);
      key = (await seedEndUsers(env, N)).key;
      ids = await sampleEndUserIds(database, env.PARLEY_PG_SCHEMA);
      // The tables as a live database's autovacuum would leave them (see analyzePostgresSchema).
      await bench.analyze();
    } else {
      log('seeding an organization, an agent with a number and an agent key');
      key = (await seedSendingTenant(true, env)).key;
    }

    for (const name of ['unchanged', ...names.filter((n) => n !== 'lean-fastify')]) {
      const cli = makeBuild(dir, name, VARIANTS[name]?.edits ?? []);
      const port = await freePort();
      const child = spawnNode([...NODE_FLAGS, cli, 'serve', '--port', String(port)], env);
      const url = `http://127.0.0.1:${port}`;
      servers.set(name, { url, pid: child.pid, stop: () => stopChild(child) });
      await waitUp(`${url}/api/health`, child);
    }
    const unchanged = servers.get('unchanged');
    if (READ !== 'endusers' && unchanged) {
      log(`${N} sends through the unchanged build to as many recipients, each with its three statuses`);
      const sandbox = spawnNode(
        [
          ...NODE_FLAGS,
          join(ROOT, CLI),
          'sandbox',
          '--port',
          String(sandboxPort),
          '--webhook-url',
          `${unchanged.url}/webhooks/msgapp`,
        ],
        env,
      );
      try {
        await waitUp(`http://127.0.0.1:${sandboxPort}/sandbox/health`, sandbox);
        const sent = await sendToRecipients(unchanged.url, key, N);
        ids = READ === 'messages' ? sent.messageIds : sent.conversationIds;
      } finally {
        await stopChild(sandbox);
      }
      await bench.analyze();
    }
    // Started once the database holds everything: on SQLite it serves a copy made as it starts.
    if (names.includes('lean-fastify')) {
      const lean = await startReadReference(database, READ, 'fastify', env);
      servers.set('lean-fastify', { url: lean.url, pid: lean.child.pid, stop: () => stopChild(lean.child) });
    }

    const headers = { authorization: `Bearer ${key}` };
    const measure = async (name: string) => {
      const server = servers.get(name);
      if (!server) throw new Error(name);
      let next = 0;
      const r = await loadWithCpu(server.pid, () =>
        autocannon({
          url: `${server.url}/`,
          connections: CONNECTIONS,
          duration: DURATION,
          headers,
          requests: [
            {
              setupRequest: (req: AutocannonRequest) => ({ ...req, path: `/api/${READ}/${ids[next++ % ids.length]}` }),
            },
          ],
        }),
      );
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`${name}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
      return { cpuUs: r.cpuUs, rps: r.requests.average };
    };

    log('warming up every server');
    for (const name of servers.keys()) await measure(name);
    const rows: string[] = [];
    for (const name of names) {
      const cpu: number[] = [];
      const rps: number[] = [];
      const baseCpu: number[] = [];
      for (let block = 1; block <= BLOCKS; block++) {
        const a1 = await measure('unchanged');
        const b1 = await measure(name);
        const b2 = await measure(name);
        const a2 = await measure('unchanged');
        cpu.push((b1.cpuUs + b2.cpuUs) / (a1.cpuUs + a2.cpuUs));
        rps.push((b1.rps + b2.rps) / (a1.rps + a2.rps));
        baseCpu.push((a1.cpuUs + a2.cpuUs) / 2);
        log(
          `${name}, block ${block}: CPU per request ×${cpu.at(-1)?.toFixed(3)}, requests/s ×${rps.at(-1)?.toFixed(3)}`,
        );
      }
      const what = VARIANTS[name]?.what ?? 'the leanest Fastify app serving the same read (for scale)';
      rows.push(
        `| ${name} | ${what} | ×${median(cpu).toFixed(3)} (${Math.min(...cpu).toFixed(2)}–${Math.max(...cpu).toFixed(2)}) | ` +
          `${median(baseCpu).toFixed(1)} | ×${median(rps).toFixed(3)} |`,
      );
    }
    process.stdout.write(
      `GET /api/${READ}/<id>, ${DIALECT === 'sqlite' ? 'SQLite' : 'PostgreSQL'}, ${READ === 'endusers' ? `${N} end users` : `${N} messages (a conversation each, three statuses each)`}, ` +
        `${CONNECTIONS} connections; ` +
        `${BLOCKS} ABBA blocks of ${DURATION} s runs against the unchanged build\n\n` +
        '| build | taken out | CPU per request against the unchanged build: median (range) | ' +
        'unchanged build: CPU µs per request (median) | requests/s against the unchanged build (median) |\n' +
        '| - | - | -: | -: | -: |\n' +
        `${rows.join('\n')}\n`,
    );
  } finally {
    for (const server of servers.values()) await server.stop();
    await bench?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** 1,000 end-user IDs in random order, from the SQLite file or the PostgreSQL schema. */
async function sampleEndUserIds(database: string, schema: string | undefined): Promise<string[]> {
  if (database !== 'postgres') {
    const db = new Database(database, { readonly: true });
    try {
      return (db.prepare('SELECT id FROM end_users ORDER BY random() LIMIT 1000').all() as { id: string }[]).map(
        (r) => r.id,
      );
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string }>(
      `SELECT id FROM "${(schema ?? '').replaceAll('"', '""')}".end_users ORDER BY random() LIMIT 1000`,
    );
    return rows.map((r) => r.id);
  } finally {
    await client.end();
  }
}

await main();
