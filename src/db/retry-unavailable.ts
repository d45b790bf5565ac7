import { isDatabaseUnavailable } from './db-errors.js';

/**
 * The waits between the attempts of a write that must not be lost to a passing fault: 8 attempts
 * over about 6 s, a fresh connection each time (a lost one is dropped from the pool,
 * lost-connections.ts). Long enough to outlast a backend terminated under it, a failover or a
 * restart's first seconds; short enough that the request it belongs to still answers promptly.
 */
export const RETRY_WAITS_MS: readonly number[] = [50, 100, 200, 400, 800, 1600, 3200];

/**
 * Runs `write`, again after each wait while the database cannot answer (a connection lost, the
 * server restarting, a lock or a statement held past its bound: `isDatabaseUnavailable`); any
 * other error, or the last one, is thrown. `write` must be safe to run twice: the connection may
 * have been lost after its commit, before its answer (a compare-and-set, an upsert, a delete by
 * key).
 */
export async function retryWhileUnavailable<T>(
  write: () => Promise<T>,
  waitsMs: readonly number[] = RETRY_WAITS_MS,
  onRetry?: (err: unknown, attempt: number) => void,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      const wait = waitsMs[attempt - 1];
      if (wait === undefined || !isDatabaseUnavailable(err)) throw err;
      onRetry?.(err, attempt);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}
