import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { type Media, toMedia } from './media.model.js';
import type { MediaTable } from './media.tables.js';

/** Rows of the `media` table. */

export type NewMedia = Omit<MediaTable, 'stored_at' | 'deleted_at' | 'unavailable_reason'> &
  Partial<Pick<MediaTable, 'stored_at' | 'unavailable_reason'>>;

export async function insertMedia(db: Kysely<DB>, row: NewMedia): Promise<void> {
  await db
    .insertInto('media')
    .values({ stored_at: null, unavailable_reason: null, ...row, deleted_at: null })
    .execute();
}

/** A file of the organization, whatever its state. */
export async function findMedia(db: Kysely<DB>, orgId: string, id: string): Promise<Media | undefined> {
  const row = await db
    .selectFrom('media')
    .selectAll()
    .where('id', '=', id)
    .where('org_id', '=', orgId)
    .executeTakeFirst();
  return row ? toMedia(row) : undefined;
}

/** A file by ID alone (the download job, which knows it from its own payload). */
export async function findMediaById(db: Kysely<DB>, id: string): Promise<Media | undefined> {
  const row = await db.selectFrom('media').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toMedia(row) : undefined;
}

/** Files by ID (a page of messages), in one statement. */
export async function findMediaByIds(db: Kysely<DB>, orgId: string, ids: readonly string[]): Promise<Media[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('media')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('id', 'in', [...ids])
    .execute();
  return rows.map(toMedia);
}

/** Records the bytes stored; only a file still pending (or stored again by a second run) changes. */
export async function markStored(
  db: Kysely<DB>,
  id: string,
  stored: { store: 'folder' | 's3'; storageKey: string; size: number; sha256: string; mimeType?: string; at: number },
): Promise<boolean> {
  const result = await db
    .updateTable('media')
    .set({
      state: 'stored',
      store: stored.store,
      storage_key: stored.storageKey,
      size: stored.size,
      sha256: stored.sha256,
      ...(stored.mimeType ? { mime_type: stored.mimeType } : {}),
      stored_at: stored.at,
      unavailable_reason: null,
    })
    .where('id', '=', id)
    .where('state', 'in', ['pending', 'stored'])
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Gives up on a pending file, saying why. */
export async function markUnavailable(db: Kysely<DB>, id: string, reason: string): Promise<boolean> {
  const result = await db
    .updateTable('media')
    .set({ state: 'unavailable', unavailable_reason: reason })
    .where('id', '=', id)
    .where('state', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Files created before `before` and not yet deleted, oldest first, at most `limit`. */
export async function listExpiredMedia(db: Kysely<DB>, before: number, limit: number): Promise<Media[]> {
  const rows = await db
    .selectFrom('media')
    .selectAll()
    .where('state', 'in', ['stored', 'unavailable'])
    .where('created_at', '<', before)
    .orderBy('created_at')
    .limit(limit)
    .execute();
  return rows.map(toMedia);
}

/** Marks a file deleted (its bytes are gone); the row stays so that its address can say so. */
export async function markDeleted(db: Kysely<DB>, id: string, reason: string, at: number): Promise<void> {
  await db
    .updateTable('media')
    .set({ state: 'deleted', deleted_at: at, unavailable_reason: reason, storage_key: null, store: null })
    .where('id', '=', id)
    .execute();
}

/**
 * Whether an agent may read a file: it was uploaded for that agent, or it belongs to a message of
 * one of that agent's conversations.
 */
export async function agentMayReadMedia(
  db: Kysely<DB>,
  media: { id: string; agentId: string | null },
  agentId: string,
) {
  if (media.agentId === agentId) return true;
  const row = await db
    .selectFrom('inbound_messages as m')
    .innerJoin('conversations as c', 'c.id', 'm.conversation_id')
    .select('m.provider_message_id')
    .where('m.media_id', '=', media.id)
    .where('c.agent_id', '=', agentId)
    .executeTakeFirst();
  return row !== undefined;
}
