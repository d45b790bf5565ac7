import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { startCheckpointer, WAL_SIZE_LIMIT } from '../../src/db/checkpointer.js';
import { openDatabase } from '../../src/db/database.js';
import { ROOT } from '../helpers/cli.js';
import { until } from '../helpers/wait.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function open(backgroundCheckpoints: boolean) {
  const dir = mkdtempSync(join(tmpdir(), 'parley-checkpoint-'));
  dirs.push(dir);
  const file = join(dir, 'test.db');
  const database = await openDatabase({ kind: 'sqlite', file, busyTimeoutMs: 5_000 }, { backgroundCheckpoints });
  const sqlite = database.sqlite;
  if (!sqlite) throw new Error('expected SQLite');
  sqlite.exec('CREATE TABLE pages (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
  return { database, sqlite, file };
}

/** 300 commits of about 4 KiB each: over a megabyte of WAL frames. */
async function write(database: Awaited<ReturnType<typeof open>>['database']) {
  const body = 'x'.repeat(4000);
  for (let i = 0; i < 300; i++) {
    await sql`INSERT INTO pages (body) VALUES (${body})`.execute(database.db);
  }
}

describe('WAL checkpoints of a server (SQLite)', () => {
  it('run on a worker thread: the server connection never checkpoints, yet the database file catches up', async () => {
    const { database, sqlite, file } = await open(true);
    expect(sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    const before = statSync(file).size;
    await write(database);
    // Only the worker can copy the log into the database file: this connection does not.
    await until(() => statSync(file).size >= before + 300 * 4000, 'the worker to checkpoint the WAL');
    expect((await sql<{ n: number }>`SELECT count(*) AS n FROM pages`.execute(database.db)).rows[0]?.n).toBe(300);
    await database.close();
  });

  it('under a load that never pauses, the log is still started again from its start, and the file cut back', async () => {
    const { database, sqlite, file } = await open(false);
    expect(sqlite.pragma('journal_size_limit', { simple: true })).toBe(WAL_SIZE_LIMIT);
    // Small sizes, so that a few seconds of writes outgrow them many times: the server finishes a
    // checkpoint past 256 frames (1 MiB), and each time the log starts again the file is cut back
    // to 256 KiB, which this test sees as the file shrinking.
    sqlite.pragma('journal_size_limit = 262144');
    const warnings: unknown[] = [];
    const checkpointer = startCheckpointer(sqlite, {
      intervalMs: 10,
      tailFrames: 256,
      logger: { warn: (...args: unknown[]) => warnings.push(args) },
    });
    expect(checkpointer).toBeDefined();
    const wal = `${file}-wal`;
    const insert = sqlite.prepare('INSERT INTO pages (body) VALUES (?)');
    const body = 'x'.repeat(4000);
    // One commit after another, each turn of the event loop: the worker never finds a moment
    // without a newer commit to catch up on, so only the server's own checkpoint lets the log start
    // again. Without it the file would only grow (over 160 MB in 40,000 commits).
    let commits = 0;
    let restarts = 0;
    let previous = 0;
    while (restarts < 5 && commits < 40_000) {
      insert.run(body);
      commits++;
      const size = statSync(wal).size;
      if (size < previous) restarts++;
      previous = size;
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(restarts, `times the log started again in ${commits} commits`).toBe(5);
    expect(warnings).toEqual([]);
    expect(sqlite.prepare('SELECT count(*) AS n FROM pages').get()).toEqual({ n: commits });
    await checkpointer?.stop();
    await database.close();
  });

  it('a connection without the worker keeps SQLite default of checkpointing itself', async () => {
    const { database, sqlite } = await open(false);
    expect(sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    await database.close();
  });

  it('closing the database stops the worker first, then closes the connection', async () => {
    const { database, sqlite } = await open(true);
    await write(database);
    await database.close();
    expect(sqlite.open).toBe(false);
  });

  it('closing finishes in a process with nothing else to do (the wait for the worker keeps it alive)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-checkpoint-'));
    dirs.push(dir);
    const script = `
      import { openDatabase } from './dist/db/database.js';
      const database = await openDatabase({ kind: 'sqlite', file: ${JSON.stringify(join(dir, 'x.db'))}, busyTimeoutMs: 1000 }, { backgroundCheckpoints: true });
      await database.close();
      console.log('closed');
    `;
    // The build (test/global-setup.ts makes it): compiling the sources in the child costs seconds.
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(child.stderr).toBe('');
    expect(child.stdout.trim()).toBe('closed');
    expect(child.status).toBe(0);
  });
});
