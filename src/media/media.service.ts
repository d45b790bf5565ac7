import type { Readable } from 'node:stream';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { Clock } from '../shared/clock.js';
import { newId } from '../shared/ids.js';
import type { Media } from './media.model.js';
import { insertMedia } from './media.repository.js';
import { type MediaStore, mediaKey, type StoredBytes } from './media-store.js';

/** What keeping media needs: the database, the region's store, the clock. */
export interface MediaDeps {
  readonly db: Kysely<DB>;
  readonly store: MediaStore;
  readonly clock: Clock;
}

export interface NewStoredMedia {
  readonly orgId: string;
  readonly source: Media['source'];
  readonly mimeType: string;
  readonly filename: string | null;
  /** The agent an agent key stored it for (that agent may read it). */
  readonly agentId?: string | null;
  readonly body: Readable;
  /** Refused past this many bytes (`MediaTooLargeError`), with nothing kept. */
  readonly maxBytes?: number;
}

/**
 * Keeps a file: its bytes streamed to the store (sized and hashed on the way), then its row. On
 * any failure nothing is left: bytes stored for a row that could not be written are deleted.
 */
export async function storeMedia(deps: MediaDeps, input: NewStoredMedia): Promise<Media> {
  const id = newId('med');
  const key = mediaKey(input.orgId, id);
  const { size, sha256 } = await deps.store.put(key, input.body, {
    contentType: input.mimeType,
    ...(input.maxBytes !== undefined ? { maxBytes: input.maxBytes } : {}),
  });
  const now = deps.clock.now();
  const row = {
    id,
    org_id: input.orgId,
    source: input.source,
    state: 'stored' as const,
    mime_type: input.mimeType,
    size,
    sha256,
    filename: input.filename,
    store: deps.store.kind,
    storage_key: key,
    provider_media_id: null,
    number_id: null,
    agent_id: input.agentId ?? null,
    created_at: now,
    stored_at: now,
  };
  try {
    await insertMedia(deps.db, row);
  } catch (err) {
    await deps.store.delete(key).catch(() => {});
    throw err;
  }
  return {
    id,
    orgId: input.orgId,
    source: input.source,
    state: 'stored',
    mimeType: input.mimeType,
    size,
    sha256,
    filename: input.filename,
    store: deps.store.kind,
    storageKey: key,
    providerMediaId: null,
    numberId: null,
    agentId: row.agent_id,
    unavailableReason: null,
    createdAt: now,
    storedAt: now,
    deletedAt: null,
  };
}

/**
 * The bytes of a stored file, as a stream with their size; undefined when the file is not stored
 * (pending, unavailable, deleted) or its bytes are missing from the store.
 */
export async function openMedia(deps: Pick<MediaDeps, 'store'>, media: Media): Promise<StoredBytes | undefined> {
  if (media.state !== 'stored' || !media.storageKey) return undefined;
  return deps.store.get(media.storageKey);
}
