import { type Kysely, sql } from 'kysely';
import { AppError } from '../shared/errors.js';

/**
 * Storage that fails to write (a full disk, a read-only or failing file system): every write is a
 * 503 with Retry-After in the route's envelope, the log names the real cause, and `/api/ready`
 * reports this node unavailable until a write succeeds again, so a load balancer sends the work
 * to nodes that can store it. One record per process: the regions a process serves share its disk.
 */

/** Seconds a caller is told to wait when storage refuses writes. */
export const STORAGE_RETRY_AFTER_SECONDS = 30;

/** SQLite: disk or database full, I/O errors, read-only database or file system, file not openable. */
const SQLITE_STORAGE = /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN)/;
/** PostgreSQL: disk full, out of memory, insufficient resources, I/O error, read-only transaction (a standby). */
const PG_STORAGE = new Set(['53100', '53200', '53000', '58030', '25006']);
/** The file system itself (a file Parley writes beside the database). */
const FS_STORAGE = new Set(['ENOSPC', 'EROFS', 'EIO', 'EDQUOT']);

export function isStorageFailure(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code } = err as { code?: unknown };
  return typeof code === 'string' && (SQLITE_STORAGE.test(code) || PG_STORAGE.has(code) || FS_STORAGE.has(code));
}

let failure: { code: string; message: string; at: number } | undefined;

/** Records that storage refused a write (what /api/ready reports until a write succeeds). */
export function storageFailed(err: unknown): void {
  const { code, message } = err as { code?: unknown; message?: unknown };
  failure = { code: String(code), message: String(message), at: Date.now() };
}

/** The last storage failure not yet followed by a successful write, if any. */
export function storageFailure(): { code: string; message: string; at: number } | undefined {
  return failure;
}

/**
 * Tries real writes; when they succeed, storage is healthy again. Only called while a failure is
 * recorded. On SQLite a row larger than a page is stored and removed (two commits), so the probe
 * needs room to grow as a request's write would; on PostgreSQL every update writes a new row
 * version and its log. Both use Kysely's migration lock table, which every database of Parley has
 * and whose other rows nothing reads.
 */
export async function probeStorage<T>(db: Kysely<T>, dialect: 'sqlite' | 'postgres'): Promise<boolean> {
  try {
    if (dialect === 'sqlite') {
      const id = `~storage-probe ${'x'.repeat(16_384)}`;
      await sql`insert into kysely_migration_lock (id, is_locked) values (${id}, 0)`.execute(db);
      await sql`delete from kysely_migration_lock where id = ${id}`.execute(db);
    } else {
      await sql`update kysely_migration_lock set is_locked = is_locked where id = 'migration_lock'`.execute(db);
    }
    failure = undefined;
    return true;
  } catch (err) {
    if (isStorageFailure(err)) storageFailed(err);
    return false;
  }
}

/** The 503 a write gets while storage refuses it, in whichever envelope its route uses. */
export function storageUnavailable(): AppError {
  return new AppError('SERVICE_UNAVAILABLE', 'The server cannot store data right now; retry later.', {
    headers: { 'retry-after': String(STORAGE_RETRY_AFTER_SECONDS) },
  });
}
