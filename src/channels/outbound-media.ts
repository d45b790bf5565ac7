/**
 * A send's file of `POST /api/media` (`media.id`): found before anything is sent (another
 * organization's file, or for an agent key a file it may not read, is as absent: 400 naming the
 * field), then uploaded to the provider for the sending number, whose media ID is kept and reused
 * while the provider keeps the file.
 */
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import {
  agentMayReadMedia,
  findMedia,
  findProviderMediaId,
  fitsKind,
  type Media,
  type MediaStore,
  openMedia,
  saveProviderMediaId,
} from '../media/index.js';
import type { OutboundMedia, ProviderRequests, WireMedia } from '../messaging/index.js';
import { clip } from '../shared/clip.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';

/**
 * How long Parley reuses a provider's media ID: the provider keeps an upload about 30 days, so a
 * day less leaves a send never naming one it has just dropped.
 */
export const PROVIDER_MEDIA_REUSE_MS = 29 * 24 * 60 * 60 * 1000;

export interface OutboundMediaDeps {
  readonly db: Kysely<DB>;
  readonly clock: Clock;
  readonly mediaStore: MediaStore;
  readonly messaging: { readonly providerRequests: ProviderRequests };
}

/** The file a send names, checked: of the organization (and readable by an agent key's agent), stored, of its kind. */
export async function findSendableMedia(
  deps: Pick<OutboundMediaDeps, 'db'>,
  reader: { readonly orgId: string; readonly agentId: string | null },
  media: OutboundMedia & { readonly id: string },
  field: string,
): Promise<Media> {
  const found = await findMedia(deps.db, reader.orgId, media.id);
  const readable = found && (reader.agentId === null || (await agentMayReadMedia(deps.db, found, reader.agentId)));
  if (!found || !readable) {
    throw new AppError(
      'INVALID_BODY',
      `'${field}.id': no media with ID '${clip(media.id, 64)}' in this organization.`,
      {
        details: { field: `${field}.id` },
      },
    );
  }
  if (found.state !== 'stored') {
    throw new AppError(
      'INVALID_BODY',
      `'${field}.id': media '${found.id}' is ${found.state === 'deleted' ? 'past its retention' : 'not available'}.`,
      {
        details: { field: `${field}.id` },
      },
    );
  }
  if (!fitsKind(found.mimeType, media.kind)) {
    throw new AppError(
      'INVALID_BODY',
      `'${field}.kind' is '${media.kind}', but media '${found.id}' is ${found.mimeType}, which cannot be sent as ${media.kind === 'image' ? 'an' : 'a'} ${media.kind}.`,
      { details: { field: `${field}.kind` } },
    );
  }
  return found;
}

/** The sending number as the upload needs it. */
export interface UploadSender {
  readonly numberId: string;
  readonly phoneNumberId: string;
  readonly accessToken: string;
}

/**
 * The wire form of a send's file for this sender: a link as it is; a file of Parley's by the
 * provider's media ID, uploaded for the number unless an upload of it is still valid.
 */
export async function wireMediaFor(
  deps: OutboundMediaDeps,
  media: OutboundMedia,
  stored: Media | undefined,
  sender: UploadSender,
): Promise<WireMedia> {
  const filename = media.filename ?? (media.kind === 'document' ? (stored?.filename ?? undefined) : undefined);
  const named = filename !== undefined ? { filename } : {};
  if (!stored) return { kind: media.kind, link: media.link ?? '', ...named };
  const now = deps.clock.now();
  const kept = await findProviderMediaId(deps.db, stored.id, sender.numberId, now);
  if (kept) return { kind: media.kind, providerMediaId: kept, ...named };
  const bytes = await openMedia({ store: deps.mediaStore }, stored);
  if (!bytes) {
    throw new AppError('INVALID_BODY', `Media '${stored.id}' is missing from the media store, so it cannot be sent.`);
  }
  const uploaded = await deps.messaging.providerRequests.uploadMedia({
    phoneNumberId: sender.phoneNumberId,
    accessToken: sender.accessToken,
    mimeType: stored.mimeType,
    filename: stored.filename ?? stored.id,
    size: bytes.size,
    body: bytes.body,
  });
  if (!uploaded.ok) {
    bytes.body.destroy();
    const why = `${uploaded.code !== null ? ` with code ${uploaded.code}` : ''}${uploaded.message ? ` (${clip(uploaded.message, 300)})` : ''}`;
    if (uploaded.kind === 'rejected' || uploaded.kind === 'throttled') {
      throw new AppError(
        'PROVIDER_REJECTED',
        `The provider refused the upload of media '${stored.id}'${why}; nothing was sent.`,
      );
    }
    throw new AppError(
      'PROVIDER_UNAVAILABLE',
      `The upload of media '${stored.id}' to the provider failed${why}; nothing was sent.`,
    );
  }
  await saveProviderMediaId(deps.db, {
    mediaId: stored.id,
    numberId: sender.numberId,
    providerMediaId: uploaded.id,
    at: now,
    expiresAt: now + PROVIDER_MEDIA_REUSE_MS,
  });
  return { kind: media.kind, providerMediaId: uploaded.id, ...named };
}
