import { type Media, mediaRefOf } from '../media/index.js';
import { contentOf, type InboundContent } from './inbound-kinds.js';

/** What `message.received` and the conversation history tell of an inbound message itself. */
export interface InboundEventFields {
  readonly type: string;
  readonly text: string | null;
  readonly [field: string]: unknown;
}

/** An inbound message as stored, as far as its kind goes. */
export interface StoredKind {
  readonly type: string | null;
  readonly text: string | null;
  readonly reply_to?: string | null;
  readonly content?: string | null;
}

/** The address a file is fetched at: `GET /api/media/<id>` on the region's base address. */
export const mediaUrlOf = (baseUrl: string, mediaId: string) => `${baseUrl}/api/media/${mediaId}`;

/**
 * What an inbound message carries, as `message.received` and the conversation history show it:
 * `type`, `text`, then only what its kind has (`media`, `location`, `reply`, `reaction`,
 * `contacts`) and `replyTo` when it replies. `baseUrl` adds the file's absolute `url` (the event).
 */
export function inboundFields(row: StoredKind, media: Media | undefined, baseUrl?: string): InboundEventFields {
  const content: InboundContent = contentOf(row.content);
  return {
    type: row.type ?? 'text',
    text: row.text,
    ...(media
      ? {
          media: {
            ...mediaRefOf(media),
            ...(content.voice ? { voice: true } : {}),
            ...(content.animated ? { animated: true } : {}),
            ...(baseUrl ? { url: mediaUrlOf(baseUrl, media.id) } : {}),
          },
        }
      : {}),
    ...(content.location ? { location: content.location } : {}),
    ...(content.reply ? { reply: content.reply } : {}),
    ...(content.reaction ? { reaction: content.reaction } : {}),
    ...(content.contacts ? { contacts: content.contacts } : {}),
    ...(row.reply_to ? { replyTo: row.reply_to } : {}),
  };
}
