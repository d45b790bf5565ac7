/**
 * Sends per second through POST /api/channels/send, side by side with a bare node:http server and
 * with the sandbox called directly, on SQLite and (when DATABASE_URL is set) PostgreSQL.
 *
 *   node --import tsx bench/send.ts                      # 10 s per run, 50 connections
 *   node --import tsx bench/send.ts --duration 3         # smoke run
 *   npm run build && node --import tsx bench/send.ts --dist
 *   node --import tsx bench/send.ts --cli /tmp/parley-before/dist/cli/main.js   # an earlier build
 *
 * Every process is separate, as in production: Parley (`parley serve`), the sandbox standing in
 * for the provider (`parley sandbox`, answering at once) and the baseline. Sends are templates, so
 * the 24-hour window does not matter, and the rate limits are raised out of the way. The sandbox's
 * status webhooks go to Parley (three per send, as the provider would) unless `--no-statuses`
 * (then no sandbox sends any: PARLEY_SANDBOX_STATUSES=false); the sandbox measured directly is a
 * second process whose webhooks go to the baseline. With statuses on, the time from the end of
 * Parley's load run until every message sent has its three statuses applied is reported too (the
 * backlog a burst of sends leaves, read from Parley's database, up to 5 minutes).
 * "Added by Parley" is Parley's latency minus the sandbox's, measured one request at a time, after
 * the load run (so on servers whose code is compiled, as they are after their first minute).
 * On PostgreSQL a reference server for sends (bench/send-reference-server.ts: no framework, the
 * same two statements and provider call as Parley) is then timed with the sandbox and Parley, the
 * three taking turns: the latency any server adds on this machine under the same rules.
 */
import type { ChildProcess } from 'node:child_process';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import {
  type AutocannonOptions,
  type AutocannonResult,
  autocannon,
  cpuMs,
  dialectsArg,
  entry,
  freePort,
  log,
  messagingBenchEnv,
  NODE_FLAGS,
  postgresCpuMs,
  quantile,
  seedSendingTenant,
  spawnNode,
  startBaseline,
  startListening,
  stopChild,
  waitUp,
  writeJsonFigures,
} from './child-server.js';
import { loadConfig, openDatabase, sql } from './internals.js';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    sequential: { type: 'string', default: '1000' },
    dist: { type: 'boolean', default: false },
    'no-statuses': { type: 'boolean', default: false },
    'no-analyze': { type: 'boolean', default: false },
    recipients: { type: 'string', default: '1' },
    cli: { type: 'string' },
    // sqlite,postgres: which to run (postgres needs DATABASE_URL); both when DATABASE_URL is set.
    dialects: { type: 'string' },
    json: { type: 'string' },
  },
});
const DURATION = Number(args.duration);
const CONNECTIONS = Number(args.connections);
const SEQUENTIAL = Number(args.sequential);
/** `--recipients N`: Parley's sends go round N recipients (each one conversation) instead of one. */
const RECIPIENTS = Number(args.recipients);
const recipient = (i: number) => (RECIPIENTS === 1 ? '+14155550100' : `+1415555${String(1000 + (i % RECIPIENTS))}`);
/** `--cli path/to/dist/cli/main.js`: serve (and seed with) another build, an earlier commit's say. */
const BUILD = args.cli ?? args.dist;
const ENTRY = entry(BUILD);

async function load(url: string, options: Partial<AutocannonOptions> = {}): Promise<AutocannonResult> {
  const r = await autocannon({ url, connections: CONNECTIONS, duration: DURATION, ...options });
  if (r.non2xx > 0 || r.errors > 0) log(`  warning: ${r.non2xx} non-2xx, ${r.errors} errors on ${url}`);
  return r;
}

/** One request at a time, timed with hrtime: latency without queueing. */
async function sequential(url: string, init: { headers: Record<string, string>; bodies: readonly string[] }) {
  const times: number[] = [];
  for (let i = 0; i < SEQUENTIAL; i++) {
    const t0 = process.hrtime.bigint();
    const body = init.bodies[i % init.bodies.length];
    const res = await request(url, { method: 'POST', headers: init.headers, body });
    await res.body.dump();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}`);
  }
  times.sort((a, b) => a - b);
  return { p50: quantile(times, 0.5), p99: quantile(times, 0.99) };
}

type Target = { url: string; headers: Record<string, string>; bodies: readonly string[] };

/**
 * One request at a time to each server in turn, the first of each round moving round them (a, b;
 * b, a for two), so that all are timed in the same moments of a machine whose speed drifts: the
 * p50 of each, in the order given.
 */
async function takingTurns(targets: readonly Target[]): Promise<number[]> {
  const times = targets.map(() => [] as number[]);
  const once = async (t: Target, i: number, into: number[]) => {
    const t0 = process.hrtime.bigint();
    const res = await request(t.url, { method: 'POST', headers: t.headers, body: t.bodies[i % t.bodies.length] });
    await res.body.dump();
    into.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (res.statusCode !== 200) throw new Error(`${t.url} answered ${res.statusCode}`);
  };
  for (let i = 0; i < SEQUENTIAL; i++) {
    for (let k = 0; k < targets.length; k++) {
      const j = (i + k) % targets.length;
      const target = targets[j];
      const into = times[j];
      if (target && into) await once(target, i, into);
    }
  }
  return times.map((xs) =>
    quantile(
      [...xs].sort((x, y) => x - y),
      0.5,
    ),
  );
}

interface Row {
  target: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  seqP50: number;
  seqP99: number;
  /** CPU µs per request during the load run: the server measured, and PostgreSQL's processes. */
  cpuUs: number;
  pgCpuUs: number;
  /** Statuses on, Parley: when the statuses of every message sent so far were applied. */
  statuses?: StatusDrain;
  /** Parley's row: its p50 one at a time and the sandbox's, the two taking turns. */
  interleaved?: { parley: number; sandbox: number };
  /** Parley's row, PostgreSQL: the sandbox, the reference server for sends and Parley, taking turns. */
  reference?: { sandbox: number; reference: number; parley: number };
}

interface StatusDrain {
  readonly messages: number;
  readonly statuses: number;
  /** Seconds from the end of the load run until all were applied; undefined when not in 5 minutes. */
  readonly afterS: number | undefined;
}

/**
 * Statuses on: waits (up to 5 minutes, reading Parley's database) until every message the provider
 * accepted has its three statuses, the sandbox having posted them and Parley applied them.
 */
async function waitForStatuses(env: Record<string, string>): Promise<StatusDrain> {
  const region = loadConfig({}, env).regions[0];
  if (!region) throw new Error('no region');
  const database = await openDatabase(region.database, { poolSize: 1 });
  const started = Date.now();
  try {
    for (;;) {
      const { rows } = await sql<{ messages: number | string; statuses: number | string }>`
        select (select count(*) from messages where provider_message_id is not null) as messages,
          (select count(*) from message_statuses) as statuses`.execute(database.db);
      const messages = Number(rows[0]?.messages ?? 0);
      const statuses = Number(rows[0]?.statuses ?? 0);
      const waited = (Date.now() - started) / 1000;
      if (statuses >= 3 * messages) return { messages, statuses, afterS: waited };
      if (waited > 300) return { messages, statuses, afterS: undefined };
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await database.close();
  }
}

async function runDialect(dialect: 'sqlite' | 'postgres'): Promise<Row[]> {
  const sandboxPort = await freePort();
  const directPort = await freePort();
  const parleyPort = await freePort();
  const { env, cleanup, analyze } = messagingBenchEnv(dialect, 'send', `http://127.0.0.1:${sandboxPort}`);
  const children: ChildProcess[] = [];
  try {
    log(`${dialect}: seeding an organization, an agent with a number and a key`);
    const { key, phoneNumberId } = await seedSendingTenant(BUILD, env);

    const baseline = await startBaseline();
    children.push(baseline.child);
    const baselineUrl = baseline.url;
    // --no-statuses: the sandboxes send no status webhooks at all (PARLEY_SANDBOX_STATUSES=false),
    // so neither Parley nor the machine's two cores spend anything on them.
    const noStatuses: Record<string, string> = args['no-statuses'] ? { PARLEY_SANDBOX_STATUSES: 'false' } : {};
    const webhookUrl = `http://127.0.0.1:${parleyPort}/webhooks/msgapp`;
    const sandbox = spawnNode([...ENTRY, 'sandbox', '--port', String(sandboxPort), '--webhook-url', webhookUrl], {
      ...env,
      ...noStatuses,
    });
    children.push(sandbox);
    // A second sandbox for the direct measurement, so its status webhooks do not load Parley.
    const direct = spawnNode([...ENTRY, 'sandbox', '--port', String(directPort), '--webhook-url', `${baselineUrl}/`], {
      ...env,
      ...noStatuses,
    });
    children.push(direct);
    const parley = spawnNode([...ENTRY, 'serve', '--port', String(parleyPort)], env);
    children.push(parley);
    await waitUp(`http://127.0.0.1:${sandboxPort}/sandbox/health`, sandbox);
    await waitUp(`http://127.0.0.1:${directPort}/sandbox/health`, direct);
    await waitUp(`http://127.0.0.1:${parleyPort}/api/health`, parley);
    // PostgreSQL: beside Parley, on its schema and its sandbox, the least a server can do for a send
    // under the same rules (bench/send-reference-server.ts), timed with it one send at a time.
    const reference =
      dialect === 'postgres'
        ? await startListening(
            [...NODE_FLAGS, '--import', 'tsx', 'bench/send-reference-server.ts', '0'],
            'the reference server for sends',
            env,
          )
        : undefined;
    if (reference) children.push(reference.child);

    const json = { 'content-type': 'application/json' };
    const sendBodies = Array.from({ length: RECIPIENTS }, (_, i) =>
      JSON.stringify({
        channel: 'msgapp',
        to: recipient(i),
        type: 'template',
        template: { name: 'order_update', language: 'en_US', parameters: { header: ['Hi'], body: ['Ada', 'A1'] } },
      }),
    );
    const sendHeaders = { ...json, authorization: `Bearer ${key}` };
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
      { target: 'node:http baseline', url: `${baselineUrl}/`, headers: json, bodies: ['{}'], pid: baseline.child.pid },
      {
        target: 'sandbox, called directly',
        url: sandboxUrl,
        headers: wireHeaders,
        bodies: [wireBody],
        pid: direct.pid,
      },
      {
        target: `Parley POST /api/channels/send (${dialect})`,
        url: sendUrl,
        headers: sendHeaders,
        bodies: sendBodies,
        pid: parley.pid,
      },
    ];
    const rows: Row[] = [];
    for (const t of targets) {
      log(
        `${dialect}: ${t.target}: ${DURATION} s at ${CONNECTIONS} connections, then ${SEQUENTIAL} sequential requests`,
      );
      if (t.bodies.length > 1) {
        // Each recipient once first, so what is measured is the send to someone known.
        log(`${dialect}: a first send to each of the ${t.bodies.length} recipients`);
        for (const body of t.bodies) {
          const res = await request(t.url, { method: 'POST', headers: t.headers, body });
          await res.body.dump();
          if (res.statusCode !== 200) throw new Error(`${t.url} answered ${res.statusCode}`);
        }
      }
      // The tables as a live database's autovacuum would leave them (see analyzePostgresSchema).
      if (t.target.startsWith('Parley') && !args['no-analyze']) await analyze();
      let next = 0;
      const cpu0 = { server: cpuMs(t.pid), pg: postgresCpuMs() };
      const r = await load(t.url, {
        method: 'POST',
        headers: t.headers,
        body: t.bodies[0],
        ...(t.bodies.length > 1
          ? { requests: [{ setupRequest: (req) => ({ ...req, body: t.bodies[next++ % t.bodies.length] }) }] }
          : {}),
      });
      const perRequest = (ms: number) => (ms * 1000) / Math.max(1, r.requests.total);
      const cpu = { server: perRequest(cpuMs(t.pid) - cpu0.server), pg: perRequest(postgresCpuMs() - cpu0.pg) };
      const statuses = t.target.startsWith('Parley') && !args['no-statuses'] ? await waitForStatuses(env) : undefined;
      // One at a time after the load, on a warm server (its code compiled), as a server runs for days.
      const seq = await sequential(t.url, { headers: t.headers, bodies: t.bodies });
      rows.push({
        target: t.target,
        rps: r.requests.average,
        p50: r.latency.p50,
        p99: r.latency.p99,
        non2xx: r.non2xx + r.errors,
        seqP50: seq.p50,
        seqP99: seq.p99,
        cpuUs: cpu.server,
        pgCpuUs: cpu.pg,
        ...(statuses ? { statuses } : {}),
      });
    }
    // The latency Parley adds: it and the sandbox one request at a time, taking turns.
    log(`${dialect}: ${SEQUENTIAL} sends one at a time to the sandbox and to Parley, taking turns`);
    const [, sandboxTarget, parleyTarget] = targets;
    const parleyRow = rows[2];
    if (sandboxTarget && parleyTarget && parleyRow) {
      const [sandboxP50 = 0, parleyP50 = 0] = await takingTurns([sandboxTarget, parleyTarget]);
      parleyRow.interleaved = { sandbox: sandboxP50, parley: parleyP50 };
      if (reference) {
        // The reference's code compiled first, as Parley's is by its load run; then the three in turn.
        log(`${dialect}: the reference server for sends: ${SEQUENTIAL} sends to warm it, then the three taking turns`);
        const referenceTarget = { ...parleyTarget, url: `${reference.url}/api/channels/send` };
        await takingTurns([referenceTarget]);
        const [s = 0, r = 0, p = 0] = await takingTurns([sandboxTarget, referenceTarget, parleyTarget]);
        parleyRow.reference = { sandbox: s, reference: r, parley: p };
      }
    }
    return rows;
  } finally {
    for (const child of children.reverse()) await stopChild(child);
    await cleanup();
  }
}

const dialects = dialectsArg(args.dialects);
const all: Row[][] = [];
for (const dialect of dialects) all.push(await runDialect(dialect));

const f = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(2));
console.log(
  `\n### Channel send: ${DURATION} s per run, ${CONNECTIONS} connections, statuses ${args['no-statuses'] ? 'off' : 'on (3 webhooks per send)'}\n`,
);
console.log(
  '| target | req/s | p50 ms | p99 ms | non-2xx | one at a time p50 ms | p99 ms | CPU µs per request: server / PostgreSQL |',
);
console.log('| - | -: | -: | -: | -: | -: | -: | -: |');
for (const [i, rows] of all.entries()) {
  for (const r of rows) {
    const pgCpu = dialects[i] === 'postgres' && r.target.startsWith('Parley') ? ` / ${r.pgCpuUs.toFixed(0)}` : '';
    console.log(
      `| ${r.target} | ${f(r.rps)} | ${f(r.p50)} | ${f(r.p99)} | ${r.non2xx} | ${f(r.seqP50)} | ${f(r.seqP99)} | ${r.cpuUs.toFixed(0)}${pgCpu} |`,
    );
  }
}
console.log(
  '\n| database | sends/s | share of the sandbox | added by Parley p50 ms | p99 ms | taking turns: sandbox p50 / Parley p50 / added ms |',
);
console.log('| - | -: | -: | -: | -: | -: |');
for (const [i, rows] of all.entries()) {
  const sandbox = rows[1];
  const parley = rows[2];
  if (!sandbox || !parley) continue;
  const turns = parley.interleaved;
  const taking = turns ? `${f(turns.sandbox)} / ${f(turns.parley)} / ${f(turns.parley - turns.sandbox)}` : '-';
  console.log(
    `| ${dialects[i]} | ${f(parley.rps)} | ${((100 * parley.rps) / sandbox.rps).toFixed(0)} % | ${f(parley.seqP50 - sandbox.seqP50)} | ${f(parley.seqP99 - sandbox.seqP99)} | ${taking} |`,
  );
}
const withReference = all.flatMap((rows, i) => {
  const reference = rows[2]?.reference;
  return reference ? [{ dialect: dialects[i], ...reference }] : [];
});
if (withReference.length > 0) {
  console.log(
    '\n| database | taking turns with the reference server for sends: sandbox / reference / Parley p50 ms | added: reference / Parley ms |',
  );
  console.log('| - | -: | -: |');
  for (const r of withReference) {
    console.log(
      `| ${r.dialect} | ${f(r.sandbox)} / ${f(r.reference)} / ${f(r.parley)} | ${f(r.reference - r.sandbox)} / ${f(r.parley - r.sandbox)} |`,
    );
  }
}
const asFigures = (r: Row) => ({
  rps: r.rps,
  p50: r.p50,
  p99: r.p99,
  cpuUs: r.cpuUs,
  oneAtATimeP50: r.seqP50,
  oneAtATimeP99: r.seqP99,
});
writeJsonFigures(
  args.json,
  Object.fromEntries(
    all.flatMap((rows, i) => {
      const [bare, sandbox, parley] = rows;
      if (!bare || !sandbox || !parley) return [];
      return [
        [
          dialects[i],
          {
            statuses: !args['no-statuses'],
            bare: asFigures(bare),
            sandbox: asFigures(sandbox),
            parley: asFigures(parley),
            addedP50: parley.seqP50 - sandbox.seqP50,
            addedP99: parley.seqP99 - sandbox.seqP99,
            ...(parley.interleaved
              ? {
                  interleaved: {
                    sandboxP50: parley.interleaved.sandbox,
                    parleyP50: parley.interleaved.parley,
                    addedP50: parley.interleaved.parley - parley.interleaved.sandbox,
                  },
                }
              : {}),
            ...(parley.reference
              ? {
                  reference: {
                    sandboxP50: parley.reference.sandbox,
                    referenceP50: parley.reference.reference,
                    parleyP50: parley.reference.parley,
                    referenceAddedP50: parley.reference.reference - parley.reference.sandbox,
                    parleyAddedP50: parley.reference.parley - parley.reference.sandbox,
                  },
                }
              : {}),
          },
        ],
      ];
    }),
  ),
);
if (!args['no-statuses']) {
  console.log('\n| database | messages accepted | statuses applied | all applied after the run |');
  console.log('| - | -: | -: | -: |');
  for (const [i, rows] of all.entries()) {
    const drain = rows[2]?.statuses;
    if (!drain) continue;
    const after = drain.afterS === undefined ? 'not in 5 minutes' : `${drain.afterS.toFixed(1)} s`;
    console.log(`| ${dialects[i]} | ${drain.messages} | ${drain.statuses} | ${after} |`);
  }
}
