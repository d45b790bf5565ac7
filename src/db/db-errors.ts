import { AppError } from '../shared/errors.js';

/** Seconds a caller is told to wait when the database cannot answer now. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

const SQLITE_UNAVAILABLE = new Set(['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_TIMEOUT', 'SQLITE_LOCKED']);
/**
 * PostgreSQL: query canceled (statement_timeout), admin or crash shutdown, cannot connect now, too
 * many connections, lock_timeout, idle-in-transaction timeout, and the connection exceptions.
 */
const PG_UNAVAILABLE = new Set(['57014', '57P01', '57P02', '57P03', '57P05', '53300', '55P03', '25P03']);
const NETWORK = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
/** What node-postgres says when a connection is lost, or cannot be had in time. */
const PG_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Query read timeout',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'Connection terminated unexpectedly',
];

/**
 * True when `err` says the database cannot answer now (down, restarting, a connection lost, a lock
 * or a statement held past its bound), as opposed to a refused query: the caller should retry.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    if (SQLITE_UNAVAILABLE.has(code) || PG_UNAVAILABLE.has(code) || NETWORK.has(code)) return true;
    // SQLSTATE class 08: connection exception.
    if (/^08[0-9A-Z]{3}$/.test(code)) return true;
  }
  return typeof message === 'string' && PG_MESSAGES.some((m) => message.includes(m));
}

/**
 * True when `err` says the connection a statement ran on is gone or unusable (the server ended it:
 * a terminated backend, a restart, a failover; the socket failed; no answer in time, so the
 * connection is still busy with the statement): the connection must not run another.
 */
export function isConnectionLost(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code, message, severity } = err as { code?: unknown; message?: unknown; severity?: unknown };
  if (severity === 'FATAL' || severity === 'PANIC') return true;
  if (typeof code === 'string') {
    if (code === '57P01' || code === '57P02' || code === '57P03' || NETWORK.has(code)) return true;
    if (/^08[0-9A-Z]{3}$/.test(code)) return true;
  }
  return typeof message === 'string' && PG_MESSAGES.some((m) => message.includes(m));
}

/** The 503 a request gets while the database cannot answer, in whichever envelope its route uses. */
export function databaseUnavailable(): AppError {
  return new AppError('SERVICE_UNAVAILABLE', 'The database is unavailable right now; retry in a few seconds.', {
    headers: { 'retry-after': String(DATABASE_RETRY_AFTER_SECONDS) },
  });
}

/** Duplicate key: SQLite SQLITE_CONSTRAINT_UNIQUE / _PRIMARYKEY, PostgreSQL 23505. */
export function isUniqueViolation(err: unknown): boolean {
  if (typeof err !== 'object' || err === null || !('code' in err)) return false;
  const code = (err as { code: unknown }).code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** The error's `code` when it is a string (a SQLite or PostgreSQL error code). */
export const codeOf = (err: unknown): string | undefined => {
  if (typeof err !== 'object' || err === null || !('code' in err)) return undefined;
  const code = (err as { code: unknown }).code;
  return typeof code === 'string' ? code : undefined;
};

/** PostgreSQL gave up on the transaction so that another could go on: a deadlock or a serialization failure. */
export function isRetryableWrite(err: unknown): boolean {
  const code = codeOf(err);
  return code === '40P01' || code === '40001';
}
