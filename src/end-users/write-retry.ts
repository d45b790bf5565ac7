import { codeOf, isRetryableWrite, isUniqueViolation } from '../db/db-errors.js';

/**
 * The database refused the row itself, for a reason other than a duplicate: a check, foreign key,
 * not-null or trigger constraint, or a value it cannot store. Retrying the same write cannot help.
 */
export function isRefusedWrite(err: unknown): boolean {
  const code = codeOf(err);
  if (code === undefined || isUniqueViolation(err)) return false;
  if (code.startsWith('SQLITE_CONSTRAINT') || code === 'SQLITE_MISMATCH' || code === 'SQLITE_TOOBIG') return true;
  // PostgreSQL SQLSTATE classes 22 (data exception) and 23 (integrity constraint), and P0001 (RAISE).
  return /^(22|23)[0-9A-Z]{3}$/.test(code) || code === 'P0001';
}

const WRITE_ATTEMPTS = 5;

/**
 * Runs a write (a whole transaction) again when PostgreSQL aborted it as a deadlock victim or a
 * serialization failure, a few times with a short random pause; the last error is thrown as is.
 * SQLite needs none of this: its one writer waits (busy_timeout) instead.
 */
export async function withWriteRetry<T>(write: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (attempt >= WRITE_ATTEMPTS || !isRetryableWrite(err)) throw err;
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20 * attempt));
    }
  }
}
