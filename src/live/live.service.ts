import { EventEmitter } from 'node:events';
import type { Kysely } from 'kysely';
import { afterCommit } from '../db/after-commit.js';
import { isPostgres } from '../db/precompiled.js';
import type { DB } from '../db/schema.js';
import { encodeChange, type LiveChange } from './live.model.js';
import { notifyLive } from './live.repository.js';

/**
 * SQLite: the changes of this process, told to its own open pages. The embedded default is one
 * process, so nothing crosses processes; several apps in one process (tests, regions) hear each
 * other's changes, which the pages filter by organization as they do all changes.
 */
export const localChanges = new EventEmitter();
localChanges.setMaxListeners(0);
export const LOCAL_CHANGE = 'change';

/**
 * Tells the open inbox pages of every node that these conversations changed, once `db`'s
 * transaction (if it is one) commits: through PostgreSQL's NOTIFY, or in this process on SQLite.
 */
export async function publishLive(db: Kysely<DB>, change: LiveChange): Promise<void> {
  if (change.conversationIds.length === 0 && change.kind !== 'resync') return;
  if (isPostgres(db)) {
    await notifyLive(db, encodeChange(change));
    return;
  }
  await afterCommit(db, () => localChanges.emit(LOCAL_CHANGE, { ...change, all: false }));
}
