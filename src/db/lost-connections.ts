import type { PostgresPool, PostgresPoolClient } from 'kysely';
import type pgTypes from 'pg';
import { isConnectionLost } from './db-errors.js';

/**
 * The pool as Kysely sees it, but a connection on which a statement failed because the connection
 * itself was lost goes back to the pool with that error, so the pool drops it. Kysely gives every
 * connection back without its error, and node-postgres reads the server's "terminating connection"
 * (a terminated backend, a restart) before it sees the socket close: given back at once, the dead
 * connection still looks usable and the pool hands it to the next statement, which fails too (the
 * next write of a request that is already recovering, the rollback of its transaction).
 */
export function droppingLostConnections(pool: pgTypes.Pool): PostgresPool {
  const wrappers = new WeakMap<pgTypes.PoolClient, PostgresPoolClient>();
  return {
    async connect() {
      const client = await pool.connect();
      let wrapper = wrappers.get(client);
      if (!wrapper) {
        wrapper = dropWhenLost(client);
        wrappers.set(client, wrapper);
      }
      return wrapper;
    },
    end: () => pool.end(),
  };
}

function dropWhenLost(client: pgTypes.PoolClient): PostgresPoolClient {
  let lost: Error | undefined;
  const query = (...args: unknown[]): unknown => {
    const result = (client.query as (...a: unknown[]) => unknown)(...args);
    if (result instanceof Promise) {
      // Runs before the caller hears of the failure, so before it gives the connection back.
      result.then(undefined, (err: unknown) => {
        if (isConnectionLost(err)) lost = err instanceof Error ? err : new Error(String(err));
      });
    }
    return result;
  };
  return {
    query: query as PostgresPoolClient['query'],
    release() {
      const err = lost;
      lost = undefined;
      client.release(err);
    },
  };
}
