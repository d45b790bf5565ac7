/**
 * The hot statements of end users: the reads of `GET /api/end-users/<id>`. Each is declared with
 * `precompiled()` (src/db/precompiled.ts): built and compiled once per database; on SQLite a
 * prepared statement run directly (a write would join the group commit of that event-loop turn);
 * on PostgreSQL a named prepared statement (outside transactions).
 */
import type { Kysely, Transaction } from 'kysely';
import { byIdWithKeyEpoch } from '../db/by-id-with-key-epoch.js';
import { precompiled, slot } from '../db/precompiled.js';
import type { DB } from '../db/schema.js';
import type { EndUserTable } from './end-user.table.js';

type Db = Kysely<DB> | Transaction<DB>;

/**
 * The read of GET by ID, the hottest query: built and compiled once, and on SQLite a statement
 * prepared once (Kysely would build and prepare it again on every call).
 */
const endUserById = precompiled((db) =>
  db.selectFrom('end_users').selectAll().where('id', '=', slot<string>(0)).where('org_id', '=', slot<string>(1)),
);

export async function findEndUserById(db: Db, orgId: string, id: string): Promise<EndUserTable | undefined> {
  return (await endUserById(db, [id, orgId])).rows[0];
}

/** The key epoch and the end user (if any) in one statement: always one row, the epoch's. */
const endUserByIdWithKeyEpoch = precompiled((db) =>
  db
    .selectFrom('key_epoch')
    .leftJoin('end_users', (join) =>
      join.on('end_users.id', '=', slot<string>(0)).on('end_users.org_id', '=', slot<string>(1)),
    )
    .selectAll('end_users')
    .select('key_epoch.epoch as key_epoch')
    .where('key_epoch.id', '=', 1),
);

/** See `byIdWithKeyEpoch`: the reads of one turn of the event loop are taken together just after it. */
export const findEndUserByIdWithKeyEpoch = byIdWithKeyEpoch<EndUserTable>(
  'end_users',
  async (db, { orgId, id }) => (await endUserByIdWithKeyEpoch(db, [id, orgId])).rows[0],
);
