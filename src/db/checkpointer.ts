import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type SQLite from 'better-sqlite3';
import type { Logger } from 'pino';

/**
 * WAL checkpoints of a server's SQLite database, on a worker thread of their own.
 *
 * In WAL mode every commit appends pages to the `-wal` file, and by default the connection that
 * commits the 1,000th page copies the whole log back into the database file and syncs it, on the
 * event loop, in the middle of someone's request. A server instead turns that off on its
 * connection and lets this worker, with its own connection to the same file, run a PASSIVE
 * checkpoint every `intervalMs`: it never waits for readers or writers and never blocks them, and
 * the log is reused from its start once a checkpoint has caught up. If the worker cannot start or
 * stops, the server's connection goes back to checkpointing itself, so the log never grows
 * without bound. Other processes on the file (the CLI) keep SQLite's default.
 */
export interface Checkpointer {
  stop(): Promise<void>;
}

/** The worker: plain CommonJS, so it runs the same from src/ (tsx, tests) and from dist/. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { timeout: 0 });
db.pragma('busy_timeout = 0');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
let timer;
const tick = () => {
  try {
    checkpoint.all();
  } catch (err) {
    // SQLITE_BUSY and friends: try again next time.
  }
  timer = setTimeout(tick, workerData.intervalMs);
};
timer = setTimeout(tick, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearTimeout(timer);
  db.close();
  parentPort.close();
});
`;

/** SQLite's own default, restored on the server's connection when the worker is gone. */
const DEFAULT_AUTOCHECKPOINT = 1000;

export function startCheckpointer(
  sqlite: SQLite.Database,
  options: { intervalMs?: number; logger?: Pick<Logger, 'warn'> } = {},
): Checkpointer | undefined {
  if (sqlite.memory) return undefined;
  let worker: Worker;
  try {
    worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        driver: createRequire(import.meta.url).resolve('better-sqlite3'),
        file: sqlite.name,
        intervalMs: options.intervalMs ?? 200,
      },
    });
  } catch (err) {
    options.logger?.warn({ err }, 'WAL checkpoints stay on the server connection: the checkpoint worker did not start');
    return undefined;
  }
  sqlite.pragma('wal_autocheckpoint = 0');
  let stopping = false;
  const fallBack = () => {
    if (sqlite.open) sqlite.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT}`);
  };
  worker.on('error', (err) => {
    options.logger?.warn({ err }, 'the WAL checkpoint worker failed; the server connection checkpoints again');
    fallBack();
  });
  const exited = new Promise<void>((resolve) => {
    worker.on('exit', () => {
      if (!stopping) fallBack();
      resolve();
    });
  });
  // The worker never keeps the process alive on its own.
  worker.unref();
  return {
    async stop() {
      if (stopping) return exited;
      stopping = true;
      fallBack();
      // Referenced again while it stops: an unreferenced worker would let the process end
      // (silently) while this very wait is the only thing left to do.
      worker.ref();
      worker.postMessage('stop');
      await exited;
    },
  };
}
