/**
 * The hot statements of authentication. What this file promises: each is built once and prepared
 * once (`precompiled`: a named prepared statement on PostgreSQL, a prepared better-sqlite3
 * statement on SQLite) and run directly, on every request that is not answered from the key
 * cache. They only read.
 */
import { precompiled, slot } from '../db/precompiled.js';

/** The one query of every authenticated request the cache does not answer: the key and its organization's plan. */
export const keyByHash = precompiled((db) =>
  db
    .selectFrom('api_keys')
    .innerJoin('organizations', 'organizations.id', 'api_keys.org_id')
    .select([
      'api_keys.id',
      'api_keys.org_id',
      'api_keys.scope',
      'api_keys.agent_id',
      'api_keys.campaign_id',
      'api_keys.permissions',
      'api_keys.last_used_at',
      'api_keys.revoked_at',
      'organizations.plan',
    ])
    .where('api_keys.hash', '=', slot<string>(0)),
);

/** The key epoch (PostgreSQL: read on every request the cache answers; see key-cache.ts). */
export const epochQuery = precompiled((db) => db.selectFrom('key_epoch').select('epoch').where('id', '=', 1));
