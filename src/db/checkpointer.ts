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
 * checkpoint every `intervalMs`: it never waits for readers or writers and never blocks them.
 *
 * The log is reused from its start only by a write that begins once every frame in it has been
 * copied, and under a steady load the server commits new frames while the worker copies the old
 * ones: the log would never be reused, and would grow for as long as the load lasts (1.5 GB in
 * 40 s of sends). So once the log holds `tailFrames` frames, the worker tells the server, which
 * copies the frames the worker has not yet reached itself, between two requests: nothing can
 * commit meanwhile, so its next write starts the log again from its start (and `journal_size_limit`,
 * set on every connection, cuts the file back). If the worker cannot start or stops, the server's
 * connection goes back to checkpointing itself, so the log never grows without bound. Other
 * processes on the file (the CLI) keep SQLite's default.
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
    // { busy, log, checkpointed }: log is the number of frames in the log, -1 when not in WAL mode.
    const { log } = checkpoint.get();
    if (log >= workerData.tailFrames) parentPort.postMessage(log);
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

/** The size (bytes) a SQLite `-wal` file is cut back to when the log is reused (every connection's). */
export const WAL_SIZE_LIMIT = 64 * 1024 * 1024;

/**
 * Frames in the log (of 4 KiB pages: as many as the file is cut back to) past which the server
 * finishes a checkpoint itself. Under sends that saturate the machine that is a pause of the event
 * loop of 10 to 40 ms (copying what the worker has not reached, and syncing the database file)
 * every second or two; under a lighter load the worker catches up by itself and it never happens.
 */
export const TAIL_FRAMES = WAL_SIZE_LIMIT / 4096;

export function startCheckpointer(
  sqlite: SQLite.Database,
  options: { intervalMs?: number; tailFrames?: number; logger?: Pick<Logger, 'warn'> } = {},
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
        tailFrames: options.tailFrames ?? TAIL_FRAMES,
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
  // Only frames committed since the worker's checkpoint began are left to copy (then the database
  // file is synced). Not inside a transaction of this connection: SQLite refuses that; the worker
  // asks again next time.
  const finishCheckpoint = sqlite.prepare('PRAGMA wal_checkpoint(PASSIVE)');
  worker.on('message', () => {
    if (stopping || !sqlite.open || sqlite.inTransaction) return;
    try {
      finishCheckpoint.get();
    } catch (err) {
      options.logger?.warn({ err }, 'a WAL checkpoint on the server connection failed; the worker asks again');
    }
  });
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
