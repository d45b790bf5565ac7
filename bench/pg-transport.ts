/**
 * node-postgres over TCP against the same database over its Unix socket: prepared one-row
 * selects, `--concurrency` at a time through a pool of `--pool` connections, rounds alternating;
 * statements per second and the client's CPU per statement (process.cpuUsage), as a Markdown table.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --import tsx bench/pg-transport.ts
 *
 * Then, one statement at a time on one connection (`--sequential` of each, after a warm-up), the
 * latency of a prepared one-row select and of a one-row insert whose commit flushes the WAL
 * (`synchronous_commit` as the server has it): the floor under what a send one at a time adds,
 * which makes such round trips one after the other. The insert goes to a table of its own,
 * dropped at the end.
 *
 * The socket URL is DATABASE_URL with its host replaced by `--socket-dir` (the same user, port and
 * database). What it measures is the driver and the kernel's transport, not Parley. `--rounds 0`
 * skips the statements per second; `--json <file>` also writes the one-at-a-time figures (µs, by
 * transport: `tcp`, `socket`), which `bench/targets.ts` reads.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { type OneAtATimeFigures, quantile, writeJsonFigures } from './child-server.js';

const { values: args } = parseArgs({
  options: {
    'socket-dir': { type: 'string', default: '/var/run/postgresql' },
    rounds: { type: 'string', default: '4' },
    duration: { type: 'string', default: '4' },
    concurrency: { type: 'string', default: '50' },
    pool: { type: 'string', default: '10' },
    sequential: { type: 'string', default: '2000' },
    json: { type: 'string' },
  },
});
const tcpUrl = process.env.DATABASE_URL;
if (!tcpUrl) throw new Error('set DATABASE_URL (a TCP URL of the database to measure)');
const u = new URL(tcpUrl);
const socketUrl = `postgresql://${u.username || 'postgres'}@${encodeURIComponent(args['socket-dir'])}:${u.port || '5432'}${u.pathname}`;

async function measure(url: string, ms: number): Promise<{ qps: number; cpuUs: number }> {
  const pool = new pg.Pool({ connectionString: url, max: Number(args.pool) });
  await pool.query('select 1');
  let n = 0;
  const started = performance.now();
  const until = started + ms;
  const cpu0 = process.cpuUsage();
  await Promise.all(
    Array.from({ length: Number(args.concurrency) }, async () => {
      while (performance.now() < until) {
        await pool.query({ name: 'bench_one', text: 'select $1::int + 1 as x', values: [n] });
        n++;
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  const elapsed = performance.now() - started;
  await pool.end();
  return { qps: (n / elapsed) * 1000, cpuUs: (cpu.user + cpu.system) / n };
}

const rows: string[] = [];
for (let round = 1; round <= Number(args.rounds); round++) {
  for (const [transport, url] of [
    ['TCP (127.0.0.1)', tcpUrl],
    ['Unix socket', socketUrl],
  ] as const) {
    const r = await measure(url, Number(args.duration) * 1000);
    rows.push(`| ${round} | ${transport} | ${Math.round(r.qps).toLocaleString('en-US')} | ${r.cpuUs.toFixed(1)} |`);
    process.stderr.write(`[bench] round ${round} ${transport}: ${Math.round(r.qps)} statements/s\n`);
  }
}
if (rows.length > 0) {
  console.log(
    `\n### node-postgres, TCP against Unix socket: ${args.concurrency} at a time, pool of ${args.pool}, ${args.duration} s a run\n`,
  );
  console.log('| round | transport | statements/s | client CPU µs per statement |\n| -: | - | -: | -: |');
  for (const row of rows) console.log(row);
}

/** p50 and p99 (µs) of `n` statements one at a time on one connection, after n/10 unmeasured. */
async function oneAtATime(url: string, n: number): Promise<{ select: number[]; insert: number[] }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const table = `bench_pg_transport_${process.pid}`;
  await client.query(`create table if not exists ${table} (id bigint primary key, at timestamptz not null)`);
  const times = { select: [] as number[], insert: [] as number[] };
  try {
    for (const [kind, text] of [
      ['select', 'select $1::bigint + 1 as x'],
      ['insert', `insert into ${table} (id, at) values ($1, now())`],
    ] as const) {
      const warmup = Math.ceil(n / 10);
      for (let i = 0; i < warmup + n; i++) {
        const t0 = performance.now();
        await client.query({ name: `bench_${kind}`, text, values: [kind === 'insert' ? Date.now() * 1000 + i : i] });
        if (i >= warmup) times[kind].push((performance.now() - t0) * 1000);
      }
    }
  } finally {
    await client.query(`drop table if exists ${table}`);
    await client.end();
  }
  return times;
}

const pct = (xs: number[], q: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return Math.round(quantile(sorted, q));
};
const seqRows: string[] = [];
const figures: Record<string, OneAtATimeFigures> = {};
for (const [transport, key, url] of [
  ['TCP (127.0.0.1)', 'tcp', tcpUrl],
  ['Unix socket', 'socket', socketUrl],
] as const) {
  const t = await oneAtATime(url, Number(args.sequential));
  const f: OneAtATimeFigures = {
    selectP50: pct(t.select, 0.5),
    selectP99: pct(t.select, 0.99),
    insertP50: pct(t.insert, 0.5),
    insertP99: pct(t.insert, 0.99),
  };
  figures[key] = f;
  seqRows.push(`| ${transport} | ${f.selectP50} / ${f.selectP99} | ${f.insertP50} / ${f.insertP99} |`);
  process.stderr.write(`[bench] one at a time, ${transport}: select p50 ${f.selectP50} µs\n`);
}
console.log(`\n### node-postgres, one statement at a time on one connection (${args.sequential} of each)\n`);
console.log('| transport | select p50 / p99 µs | insert and commit p50 / p99 µs |\n| - | -: | -: |');
for (const row of seqRows) console.log(row);
writeJsonFigures(args.json, figures);
