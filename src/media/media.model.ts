import type { MediaSource, MediaState, MediaTable } from './media.tables.js';

/** A media row as the rest of Parley sees it. */
export interface Media {
  readonly id: string;
  readonly orgId: string;
  readonly source: MediaSource;
  readonly state: MediaState;
  readonly mimeType: string;
  readonly size: number | null;
  readonly sha256: string | null;
  readonly filename: string | null;
  readonly store: 'folder' | 's3' | null;
  readonly storageKey: string | null;
  readonly providerMediaId: string | null;
  readonly numberId: string | null;
  readonly agentId: string | null;
  readonly unavailableReason: string | null;
  readonly createdAt: number;
  readonly storedAt: number | null;
  readonly deletedAt: number | null;
}

export function toMedia(row: MediaTable): Media {
  const n = (v: number | string | null) => (v === null ? null : Number(v));
  return {
    id: row.id,
    orgId: row.org_id,
    source: row.source,
    state: row.state,
    mimeType: row.mime_type,
    size: n(row.size),
    sha256: row.sha256,
    filename: row.filename,
    store: row.store,
    storageKey: row.storage_key,
    providerMediaId: row.provider_media_id,
    numberId: row.number_id,
    agentId: row.agent_id,
    unavailableReason: row.unavailable_reason,
    createdAt: Number(row.created_at),
    storedAt: n(row.stored_at),
    deletedAt: n(row.deleted_at),
  };
}

/** What messages and events show of a file: `media` of the conversation history and `message.received`. */
export interface MediaRef {
  readonly id: string;
  readonly mimeType: string;
  readonly size: number | null;
  readonly sha256: string | null;
  readonly filename?: string;
  /** The bytes can be fetched (`GET /api/media/<id>`). */
  readonly available: boolean;
}

export function mediaRefOf(media: Media): MediaRef {
  return {
    id: media.id,
    mimeType: media.mimeType,
    size: media.size,
    sha256: media.sha256,
    ...(media.filename !== null ? { filename: media.filename } : {}),
    available: media.state === 'stored',
  };
}
