import type { DatabaseConnection, Kysely } from 'kysely';
import type { DB } from './schema.js';

/**
 * Work to do once a transaction has committed (waking the job runner's workers of a queue that a
 * job was stored in, say: inside the transaction the job is not visible yet). Kept per connection,
 * which a transaction holds from its begin to its end; the drivers of `database.ts` run the
 * callbacks just after the commit and drop them on a rollback, so nothing runs for work undone.
 */
const pending = new WeakMap<DatabaseConnection, (() => void)[]>();

/**
 * Runs `fn` once `db`'s transaction has committed, or at once when `db` is not a transaction (its
 * writes are committed already). `fn` runs synchronously just after the commit and before the
 * transaction's caller resumes; it must not throw (an error is dropped, the commit stands).
 */
export async function afterCommit(db: Kysely<DB>, fn: () => void): Promise<void> {
  if (!db.isTransaction) {
    fn();
    return;
  }
  await db.getExecutor().provideConnection(async (connection) => {
    const list = pending.get(connection);
    if (list) list.push(fn);
    else pending.set(connection, [fn]);
  });
}

/** For a driver: the transaction on `connection` committed. */
export function transactionCommitted(connection: DatabaseConnection): void {
  const list = pending.get(connection);
  if (!list) return;
  pending.delete(connection);
  for (const fn of list) {
    try {
      fn();
    } catch {
      // The commit stands whatever a callback does.
    }
  }
}

/** For a driver: the transaction on `connection` rolled back (or its commit failed). */
export function transactionRolledBack(connection: DatabaseConnection): void {
  pending.delete(connection);
}
