/**
 * GET /api/health throughput of Parley against a bare node:http server answering a fixed JSON, in
 * the same run, with the same load (autocannon, programmatic). Both run as child processes.
 *
 *   node --import tsx bench/health.ts [--connections 50] [--duration 10] [--warmup 3] [--rounds 1]
 *                                     [--pipelining 1] [--no-build] [--log-level warn]
 *
 * Parley runs from dist/ (built first, unless --no-build) on a fresh SQLite data folder, or on
 * PostgreSQL (a fresh schema) when DATABASE_URL is set. Rounds alternate the two servers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  autocannon,
  build,
  CLI,
  fmt,
  freePort,
  median,
  NODE_FLAGS,
  serverEnv,
  startChild,
  stopChild,
  waitFor200,
} from './child-server.js';

const { values: opts } = parseArgs({
  options: {
    connections: { type: 'string', default: '50' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '1' },
    pipelining: { type: 'string', default: '1' },
    'log-level': { type: 'string', default: 'warn' },
    'no-build': { type: 'boolean', default: false },
  },
});

const connections = Number(opts.connections);
const duration = Number(opts.duration);
const warmup = Number(opts.warmup);
const rounds = Number(opts.rounds);
const pipelining = Number(opts.pipelining);

interface Sample {
  reqPerSec: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

async function load(url: string, seconds: number): Promise<Sample> {
  const result = await autocannon({ url, connections, pipelining, duration: seconds });
  return {
    reqPerSec: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

async function main(): Promise<void> {
  build(opts['no-build']);
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-'));
  const schema = `bench_${Date.now().toString(36)}`;
  const parleyPort = await freePort();
  const basePort = await freePort();
  const usesPg = Boolean(process.env.DATABASE_URL);
  const parley = startChild(
    [...NODE_FLAGS, CLI, 'serve', '--port', String(parleyPort)],
    serverEnv({
      PARLEY_DATA_DIR: dataDir,
      LOG_LEVEL: opts['log-level'],
      ...(usesPg ? { PARLEY_PG_SCHEMA: schema } : {}),
    }),
  );
  const baseline = startChild(['--import', 'tsx', 'bench/baseline-server.ts', String(basePort)], serverEnv({}));
  const targets = [
    { name: 'Parley GET /api/health', url: `http://127.0.0.1:${parleyPort}/api/health` },
    { name: 'bare node:http', url: `http://127.0.0.1:${basePort}/` },
  ];
  try {
    const t0 = performance.now();
    await Promise.all(targets.map((t) => waitFor200(t.url, t0)));
    const samples: Sample[][] = targets.map(() => []);
    for (const t of targets) if (warmup > 0) await load(t.url, warmup);
    for (let round = 0; round < rounds; round++) {
      // Alternate the order so neither server always runs on a warmer machine.
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const i of order) {
        const target = targets[i];
        if (!target) continue;
        samples[i]?.push(await load(target.url, duration));
      }
    }
    const summary = samples.map((s) => ({
      reqPerSec: median(s.map((x) => x.reqPerSec)),
      p50: median(s.map((x) => x.p50)),
      p99: median(s.map((x) => x.p99)),
      errors: s.reduce((a, x) => a + x.errors + x.non2xx, 0),
    }));
    const [p, b] = summary;
    if (!p || !b) throw new Error('no samples');
    const cpu = cpus()[0]?.model ?? 'unknown CPU';
    console.log(
      `\nGET /api/health, ${connections} connections × ${duration} s (pipelining ${pipelining}), ` +
        `${warmup} s warm-up, ${rounds} round(s), median; Node ${process.version}, ${cpus().length} × ${cpu}; ` +
        `Parley on ${usesPg ? 'PostgreSQL' : 'SQLite'}, LOG_LEVEL=${opts['log-level']}\n`,
    );
    console.log('| server | req/s | p50 latency (ms) | p99 latency (ms) | errors |');
    console.log('| - | -: | -: | -: | -: |');
    targets.forEach((t, i) => {
      const s = summary[i];
      if (s) console.log(`| ${t.name} | ${fmt(s.reqPerSec)} | ${fmt(s.p50, 1)} | ${fmt(s.p99, 1)} | ${s.errors} |`);
    });
    console.log(`\nParley / bare node:http throughput: ${fmt((p.reqPerSec / b.reqPerSec) * 100, 1)} %`);
  } finally {
    await Promise.all([stopChild(parley), stopChild(baseline)]);
    rmSync(dataDir, { recursive: true, force: true });
    if (usesPg && process.env.DATABASE_URL) {
      const { dropPostgresSchema } = await import('./internals.js');
      await dropPostgresSchema(process.env.DATABASE_URL, schema);
    }
  }
}

await main();
