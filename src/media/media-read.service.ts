import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema.js';
import { clip } from '../shared/clip.js';
import { AppError } from '../shared/errors.js';
import type { Media } from './media.model.js';
import { agentMayReadMedia, findMedia } from './media.repository.js';
import type { MediaStore, StoredBytes } from './media-store.js';

/** Who reads: the key's organization, narrowed to its agent for an agent key. */
export interface MediaReader {
  readonly orgId: string;
  readonly agentId: string | null;
}

export interface MediaReadDeps {
  readonly db: Kysely<DB>;
  readonly store: MediaStore;
  readonly logger: Logger;
  readonly retentionDays: number;
}

/**
 * A file and its bytes, for `GET /api/media/<id>`. Another organization's file, or for an agent
 * key a file of no conversation of its agent, is absent (404, the same sentence). A file that is
 * not (or no longer) stored is 404 too, with a sentence saying why.
 */
export async function readMedia(
  deps: MediaReadDeps,
  reader: MediaReader,
  id: string,
): Promise<{ media: Media; bytes: StoredBytes }> {
  const absent = new AppError('NOT_FOUND', `No media with ID '${clip(id, 64)}' in this organization.`);
  const media = await findMedia(deps.db, reader.orgId, id);
  if (!media) throw absent;
  if (reader.agentId !== null && !(await agentMayReadMedia(deps.db, media, reader.agentId))) throw absent;
  switch (media.state) {
    case 'deleted':
      throw new AppError(
        'NOT_FOUND',
        `Media '${media.id}' was deleted: files are kept ${deps.retentionDays} days (PARLEY_MEDIA_RETENTION_DAYS).`,
      );
    case 'pending':
      throw new AppError(
        'NOT_FOUND',
        `Media '${media.id}' is still being downloaded from the provider; message.received is sent once it is stored.`,
      );
    case 'unavailable':
      throw new AppError(
        'NOT_FOUND',
        `Media '${media.id}' is not available: ${media.unavailableReason ?? 'it could not be downloaded from the provider'}.`,
      );
    default:
      break;
  }
  const bytes = media.storageKey ? await deps.store.get(media.storageKey) : undefined;
  if (!bytes) {
    deps.logger.error(
      { mediaId: media.id, store: media.store, where: deps.store.where },
      'a stored file is missing from the media store',
    );
    throw new AppError('NOT_FOUND', `The bytes of media '${media.id}' are missing from the media store.`);
  }
  return { media, bytes };
}

/** Raster images a browser may show inline; anything else (SVG, HTML, PDF...) is a download. */
const INLINE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

const EXTENSIONS: Record<string, string> = {
  'image/jpeg': 'jpg',
  'image/png': 'png',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'video/mp4': 'mp4',
  'video/3gpp': '3gp',
  'audio/aac': 'aac',
  'audio/amr': 'amr',
  'audio/mpeg': 'mp3',
  'audio/mp4': 'm4a',
  'audio/ogg': 'ogg',
  'application/pdf': 'pdf',
  'text/plain': 'txt',
};

/** The headers a file is served with: its type, size, SHA-256 as its ETag, and how a browser takes it. */
export function mediaHeaders(media: Media, size: number): Record<string, string> {
  const inline = INLINE_TYPES.has(media.mimeType);
  const name = media.filename ?? `${media.id}${EXTENSIONS[media.mimeType] ? `.${EXTENSIONS[media.mimeType]}` : ''}`;
  // The quoted name in plain ASCII for every client, and the exact one (RFC 6266's filename*) for those that read it.
  const ascii = name.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return {
    'content-type': media.mimeType,
    'content-length': String(size),
    ...(media.sha256 ? { etag: `"${media.sha256}"` } : {}),
    'x-content-type-options': 'nosniff',
    'content-disposition': inline
      ? `inline; filename="${ascii}"`
      : `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`,
  };
}
