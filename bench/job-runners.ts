/**
 * Job engines on this machine: a trivial job's throughput and latency with Graphile Worker and
 * pg-boss (the two engines considered for PostgreSQL), and with Parley's job runner on pg-boss and
 * on its SQLite table, in one run. Needs DATABASE_URL (a database it may create schemas in).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node --import tsx bench/job-runners.ts
 *   ... --jobs 500 --rounds 50                  # smoke run
 *
 * Throughput: `--jobs` jobs are stored first (the time is reported), then counted until all ran,
 * at concurrency 10. Latency: `--rounds` jobs one at a time, from the call that stores a job to
 * the start of its handler.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { makeWorkerUtils, run } from 'graphile-worker';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { pino } from 'pino';
import { log, quantile } from './child-server.js';
import { createJobRunner, loadConfig, openDatabase, systemClock } from './internals.js';

const { values: args } = parseArgs({
  options: { jobs: { type: 'string', default: '2000' }, rounds: { type: 'string', default: '200' } },
});
const JOBS = Number(args.jobs);
const ROUNDS = Number(args.rounds);
const CONCURRENCY = 10;
const url = process.env.DATABASE_URL;
if (!url) throw new Error('set DATABASE_URL');

interface Engine {
  name: string;
  /** Stores one job; `onRun` is called when its handler starts. */
  add(i: number): Promise<void>;
  stop(): Promise<void>;
}

interface Row {
  engine: string;
  enqueuePerSecond: number;
  runPerSecond: number;
  p50: number;
  p99: number;
}

async function measure(name: string, make: (onRun: (i: number) => void) => Promise<Engine>): Promise<Row> {
  const seen = new Map<number, () => void>();
  let ran = 0;
  const engine = await make((i) => {
    ran++;
    seen.get(i)?.();
  });
  try {
    log(`${name}: storing ${JOBS} jobs`);
    const t0 = performance.now();
    for (let i = 0; i < JOBS; i += 50) {
      await Promise.all(Array.from({ length: Math.min(50, JOBS - i) }, (_, k) => engine.add(i + k)));
    }
    const stored = performance.now();
    while (ran < JOBS) await new Promise((r) => setTimeout(r, 5));
    const done = performance.now();
    log(`${name}: ${ROUNDS} jobs one at a time`);
    const latencies: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const i = 1_000_000 + r;
      const started = new Promise<void>((resolve) => seen.set(i, resolve));
      const at = performance.now();
      await engine.add(i);
      await started;
      latencies.push(performance.now() - at);
    }
    latencies.sort((a, b) => a - b);
    return {
      engine: name,
      enqueuePerSecond: JOBS / ((stored - t0) / 1000),
      runPerSecond: JOBS / ((done - t0) / 1000),
      p50: quantile(latencies, 0.5),
      p99: quantile(latencies, 0.99),
    };
  } finally {
    await engine.stop();
  }
}

async function freshSchema(name: string): Promise<string> {
  const schema = `bench_${name}_${Date.now().toString(36)}`;
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query(`create schema ${schema}`);
  await c.end();
  return schema;
}
async function dropSchema(schema: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query(`drop schema if exists ${schema} cascade`);
  await c.end();
}

const rows: Row[] = [];

rows.push(
  await measure('Graphile Worker 0.16 (LISTEN/NOTIFY)', async (onRun) => {
    const schema = await freshSchema('gw');
    const pool = new pg.Pool({ connectionString: url, max: 12 });
    const runner = await run({
      pgPool: pool,
      schema,
      concurrency: CONCURRENCY,
      noHandleSignals: true,
      pollInterval: 2000,
      logger: new (await import('graphile-worker')).Logger(() => () => {}),
      taskList: {
        trivial: async (payload) => {
          onRun((payload as { i: number }).i);
        },
      },
    });
    const utils = await makeWorkerUtils({ pgPool: pool, schema });
    return {
      name: 'graphile',
      add: async (i) => {
        await utils.addJob('trivial', { i });
      },
      stop: async () => {
        await utils.release();
        await runner.stop();
        await pool.end();
        await dropSchema(schema);
      },
    };
  }),
);

rows.push(
  await measure('pg-boss 10 (polling every 0.5 s, batch of 10)', async (onRun) => {
    const schema = await freshSchema('pgb');
    const boss = new PgBoss({ connectionString: url, schema, max: 12, supervise: false, schedule: false });
    boss.on('error', () => undefined);
    await boss.start();
    await boss.createQueue('trivial');
    await boss.work<{ i: number }>('trivial', { batchSize: CONCURRENCY, pollingIntervalSeconds: 0.5 }, async (jobs) => {
      for (const job of jobs) onRun(job.data.i);
    });
    return {
      name: 'pg-boss',
      add: async (i) => {
        await boss.send('trivial', { i });
      },
      stop: async () => {
        await boss.stop({ graceful: false, wait: true });
        await dropSchema(schema);
      },
    };
  }),
);

for (const dialect of ['postgres', 'sqlite'] as const) {
  rows.push(
    await measure(
      `Parley's runner on ${dialect === 'postgres' ? 'pg-boss' : 'SQLite'} (concurrency 10)`,
      async (onRun) => {
        const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-jobs-'));
        const schema = `bench_parley_${Date.now().toString(36)}`;
        const config = loadConfig(
          {},
          {
            PARLEY_DATA_DIR: dataDir,
            ...(dialect === 'postgres'
              ? {
                  DATABASE_URL: url,
                  PARLEY_PG_SCHEMA: schema,
                  PARLEY_SECRET_KEY: 'x'.repeat(44),
                  PARLEY_WEBHOOK_APP_SECRET: 'x',
                }
              : {}),
          },
        );
        const region = config.regions[0];
        if (!region) throw new Error('no region');
        const database = await openDatabase(region.database);
        const { migrateToLatest } = await import('./internals.js');
        await migrateToLatest(database.db);
        const jobs = await createJobRunner(config, region.database, database, systemClock, pino({ level: 'silent' }));
        jobs.define<{ i: number }>({
          name: 'trivial',
          concurrency: CONCURRENCY,
          handler: async (payload) => {
            onRun(payload.i);
          },
        });
        await jobs.init();
        jobs.start();
        return {
          name: dialect,
          add: async (i) => {
            await jobs.enqueue('trivial', { i });
          },
          stop: async () => {
            await jobs.stop();
            await database.close();
            if (dialect === 'postgres') await dropSchema(schema);
            rmSync(dataDir, { recursive: true, force: true });
          },
        };
      },
    ),
  );
}

const f = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));
console.log(`\n### Job engines: ${JOBS} trivial jobs at concurrency ${CONCURRENCY}; ${ROUNDS} one at a time\n`);
console.log('| engine | stored/s | run/s (store + run all) | latency p50 ms | p99 ms |');
console.log('| - | -: | -: | -: | -: |');
for (const r of rows) {
  console.log(`| ${r.engine} | ${f(r.enqueuePerSecond)} | ${f(r.runPerSecond)} | ${f(r.p50)} | ${f(r.p99)} |`);
}
