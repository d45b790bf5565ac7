/** The `media` table (migration 0022-media): one row per file Parley keeps. */
export interface MediaTable {
  /** `med_...` */
  id: string;
  org_id: string;
  /** `inbound`: a user sent it (downloaded from the provider); `upload`: an agent uploaded it. */
  source: MediaSource;
  state: MediaState;
  mime_type: string;
  /** Bytes; null until stored. */
  size: number | null;
  /** Lower-case hex SHA-256: what the provider announced until stored, then of the bytes stored. */
  sha256: string | null;
  filename: string | null;
  /** The store that holds the bytes (`folder` or `s3`), once stored. */
  store: 'folder' | 's3' | null;
  /** The bytes' key in that store (`<orgId>/<mediaId>`), once stored. */
  storage_key: string | null;
  /** Inbound: the provider's media ID the bytes are downloaded by. */
  provider_media_id: string | null;
  /** Inbound: the number whose access token downloads it. */
  number_id: string | null;
  /** The agent an agent key uploaded it for (it may read it); null for inbound media and organization uploads. */
  agent_id: string | null;
  /** Why the file is not available (`unavailable`, `deleted`). */
  unavailable_reason: string | null;
  created_at: number;
  stored_at: number | null;
  deleted_at: number | null;
}

export type MediaSource = 'inbound' | 'upload';
/** `pending` → `stored` or `unavailable`; `stored` → `deleted` past the retention. */
export type MediaState = 'pending' | 'stored' | 'unavailable' | 'deleted';

/** The `provider_media` table (migration 0040-rich-outbound): a file uploaded to the provider for a number. */
export interface ProviderMediaTable {
  media_id: string;
  number_id: string;
  /** The provider's media ID, usable in that number's sends until `expires_at`. */
  provider_media_id: string;
  uploaded_at: number;
  expires_at: number;
}
