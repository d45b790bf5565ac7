import { isDatabaseUnavailable } from './db-errors.js';
import { isStorageFailure } from './storage-health.js';

/**
 * True for a fault that passes while the process lives: the database cannot answer now (a
 * connection lost, the server restarting, a lock or a statement held past its bound) or its
 * storage refuses writes (a full disk). A write that failed so may succeed when tried again; a
 * refused statement (a constraint, bad SQL) never will.
 */
export function isPassingFault(err: unknown): boolean {
  return isDatabaseUnavailable(err) || isStorageFailure(err);
}

/** Quick retries: 5 more attempts over about 1.5 s (a lost connection costs a few milliseconds). */
export const QUICK_WAITS_MS: readonly number[] = [50, 100, 200, 400, 800];

export interface RetryOptions {
  /** The waits between attempts: one attempt more than there are waits. */
  readonly waitsMs: readonly number[];
  /** Which errors are worth another attempt (default: `isPassingFault`). */
  readonly retryable?: (err: unknown) => boolean;
  readonly onRetry?: (err: unknown, attempt: number) => void;
}

/**
 * Runs `write`, again after each wait while it fails with a retryable error; any other error, or
 * the last one, is thrown. Each attempt runs on a fresh connection (a lost one is dropped from the
 * pool, lost-connections.ts). `write` must be safe to run twice: its connection may have been lost
 * after its commit, before its answer (a compare-and-set, an upsert, a delete by key).
 */
export async function retrying<T>(write: () => Promise<T>, options: RetryOptions): Promise<T> {
  const retryable = options.retryable ?? isPassingFault;
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      const wait = options.waitsMs[attempt - 1];
      if (wait === undefined || !retryable(err)) throw err;
      options.onRetry?.(err, attempt);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}
