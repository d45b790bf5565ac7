/**
 * node-postgres over TCP against the same database over its Unix socket: prepared one-row
 * selects, `--concurrency` at a time through a pool of `--pool` connections, rounds alternating;
 * statements per second and the client's CPU per statement (process.cpuUsage), as a Markdown table.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --import tsx bench/pg-transport.ts
 *
 * The socket URL is DATABASE_URL with its host replaced by `--socket-dir` (the same user, port and
 * database). What it measures is the driver and the kernel's transport, not Parley.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';

const { values: args } = parseArgs({
  options: {
    'socket-dir': { type: 'string', default: '/var/run/postgresql' },
    rounds: { type: 'string', default: '4' },
    duration: { type: 'string', default: '4' },
    concurrency: { type: 'string', default: '50' },
    pool: { type: 'string', default: '10' },
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
console.log(
  `\n### node-postgres, TCP against Unix socket: ${args.concurrency} at a time, pool of ${args.pool}, ${args.duration} s a run\n`,
);
console.log('| round | transport | statements/s | client CPU µs per statement |\n| -: | - | -: | -: |');
for (const row of rows) console.log(row);
