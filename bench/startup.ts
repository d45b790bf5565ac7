/**
 * Start-up time: from spawning `node dist/cli/main.js serve` to the first 200 of GET /api/health.
 * Median of several runs, on a fresh data folder (migrations run) and on an existing one.
 *
 *   node --import tsx bench/startup.ts [--runs 7] [--no-build]
 *
 * SQLite by default; PostgreSQL (fresh schemas, dropped afterwards) when DATABASE_URL is set.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
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
    runs: { type: 'string', default: '7' },
    'no-build': { type: 'boolean', default: false },
  },
});
const runs = Number(opts.runs);
const usesPg = Boolean(process.env.DATABASE_URL);
const schemas: string[] = [];
const dirs: string[] = [];

async function startOnce(dataDir: string, schema: string): Promise<number> {
  const port = await freePort();
  const started = performance.now();
  const child = startChild(
    [...NODE_FLAGS, CLI, 'serve', '--port', String(port)],
    serverEnv({ PARLEY_DATA_DIR: dataDir, LOG_LEVEL: 'warn', ...(usesPg ? { PARLEY_PG_SCHEMA: schema } : {}) }),
  );
  try {
    return await waitFor200(`http://127.0.0.1:${port}/api/health`, started, 30_000, 2);
  } finally {
    await stopChild(child);
  }
}

function freshPlace(): { dataDir: string; schema: string } {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-startup-'));
  const schema = `bench_${Date.now().toString(36)}_${schemas.length}`;
  dirs.push(dataDir);
  schemas.push(schema);
  return { dataDir, schema };
}

async function main(): Promise<void> {
  build(opts['no-build']);
  try {
    const fresh: number[] = [];
    for (let i = 0; i < runs; i++) {
      const place = freshPlace();
      fresh.push(await startOnce(place.dataDir, place.schema));
    }
    const existing: number[] = [];
    const place = freshPlace();
    await startOnce(place.dataDir, place.schema); // creates and migrates it
    for (let i = 0; i < runs; i++) existing.push(await startOnce(place.dataDir, place.schema));

    console.log(
      `\nSpawn → first 200 of GET /api/health, ${runs} runs each; Node ${process.version}, ` +
        `${usesPg ? 'PostgreSQL' : 'SQLite'}\n`,
    );
    console.log('| data | median (ms) | min (ms) | max (ms) |');
    console.log('| - | -: | -: | -: |');
    for (const [name, xs] of [
      ['fresh (migrations run)', fresh],
      ['existing', existing],
    ] as const) {
      console.log(`| ${name} | ${fmt(median(xs))} | ${fmt(Math.min(...xs))} | ${fmt(Math.max(...xs))} |`);
    }
  } finally {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    if (usesPg && process.env.DATABASE_URL) {
      const { dropPostgresSchema } = await import('./internals.js');
      for (const s of schemas) await dropPostgresSchema(process.env.DATABASE_URL, s);
    }
  }
}

await main();
