import type { SandboxMediaStore } from './sandbox-media.js';
import { isObject, type Json } from './sandbox-wire.js';

/**
 * The kinds of message the sandbox can deliver as if a user sent them: the body of
 * `POST /api/sandbox/inbound` (and of the sandbox's own `/sandbox/inbound`, which the CLI uses),
 * checked here once for both, and the Cloud API message item each becomes.
 */

export const SANDBOX_MEDIA_KINDS = ['image', 'video', 'audio', 'document', 'sticker'] as const;
export type SandboxMediaKind = (typeof SANDBOX_MEDIA_KINDS)[number];

/** What the provider accepts of each kind of file: its types and its largest size. */
export const MEDIA_RULES: Record<SandboxMediaKind, { readonly types: readonly string[]; readonly maxBytes: number }> = {
  image: { types: ['image/jpeg', 'image/png'], maxBytes: 5 * 1024 * 1024 },
  video: { types: ['video/mp4', 'video/3gpp'], maxBytes: 16 * 1024 * 1024 },
  audio: { types: ['audio/aac', 'audio/amr', 'audio/mpeg', 'audio/mp4', 'audio/ogg'], maxBytes: 16 * 1024 * 1024 },
  document: {
    types: [
      'application/pdf',
      'text/plain',
      'application/msword',
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      'application/vnd.ms-excel',
      'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
      'application/vnd.ms-powerpoint',
      'application/vnd.openxmlformats-officedocument.presentationml.presentation',
    ],
    maxBytes: 100 * 1024 * 1024,
  },
  sticker: { types: ['image/webp'], maxBytes: 500 * 1024 },
};

export type SandboxInboundContent =
  | { readonly kind: 'text'; readonly text: string }
  | {
      readonly kind: SandboxMediaKind;
      readonly data: Buffer;
      readonly mimeType: string;
      readonly filename?: string;
      readonly caption?: string;
    }
  | {
      readonly kind: 'location';
      readonly latitude: number;
      readonly longitude: number;
      readonly name?: string;
      readonly address?: string;
    }
  | { readonly kind: 'buttonReply'; readonly id: string; readonly title: string }
  | { readonly kind: 'listReply'; readonly id: string; readonly title: string; readonly description?: string }
  | { readonly kind: 'reaction'; readonly messageId: string; readonly emoji: string };

export interface SandboxInboundMessage {
  readonly content: SandboxInboundContent;
  /** The provider's ID of the message this one replies to. */
  readonly replyTo?: string;
}

const KINDS = [
  'image',
  'video',
  'audio',
  'document',
  'sticker',
  'location',
  'buttonReply',
  'listReply',
  'reaction',
] as const;

const str = (v: unknown, name: string, min: number, max: number): string => {
  if (typeof v !== 'string' || v.length < min || v.length > max) {
    throw new InboundKindError(
      min > 0
        ? `'${name}' must be a string of ${min} to ${max} characters.`
        : `'${name}' must be a string of at most ${max} characters.`,
    );
  }
  return v;
};
const optional = (v: unknown, name: string, max: number): string | undefined =>
  v === undefined ? undefined : str(v, name, 0, max);

/** A body the sandbox cannot deliver: the sentence says why. */
export class InboundKindError extends Error {}

function mediaOf(kind: SandboxMediaKind, v: unknown, text: string | undefined): SandboxInboundContent {
  if (!isObject(v)) throw new InboundKindError(`'${kind}' must be an object with 'data' (base64) and 'mimeType'.`);
  const rules = MEDIA_RULES[kind];
  const mimeType = str(v.mimeType, `${kind}.mimeType`, 1, 128).toLowerCase();
  if (!rules.types.includes(mimeType)) {
    throw new InboundKindError(
      `'${kind}.mimeType' must be one of ${rules.types.join(', ')}; got '${mimeType.slice(0, 60)}'.`,
    );
  }
  // Its length is judged once decoded, against the provider's limit (the body's limit bounds the text).
  const raw = str(v.data, `${kind}.data`, 1, Number.MAX_SAFE_INTEGER);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(raw.replace(/\s/g, '')))
    throw new InboundKindError(`'${kind}.data' must be base64.`);
  const data = Buffer.from(raw, 'base64');
  if (data.length === 0) throw new InboundKindError(`'${kind}.data' must not be empty.`);
  if (data.length > rules.maxBytes) {
    throw new InboundKindError(
      `'${kind}' is ${data.length} bytes; the provider takes at most ${rules.maxBytes} for ${kind}s.`,
    );
  }
  const captionable = kind === 'image' || kind === 'video' || kind === 'document';
  if (!captionable && (v.caption !== undefined || text !== undefined)) {
    throw new InboundKindError(`A${kind === 'audio' ? 'n audio' : ' sticker'} message has no caption or text.`);
  }
  if (v.caption !== undefined && text !== undefined)
    throw new InboundKindError("Give the caption as 'text' or as 'caption', not both.");
  const caption = optional(v.caption, `${kind}.caption`, 1024) ?? text;
  if (caption !== undefined && caption.length > 1024)
    throw new InboundKindError('A caption is at most 1,024 characters.');
  const filename = optional(v.filename, `${kind}.filename`, 240);
  return { kind, data, mimeType, ...(filename ? { filename } : {}), ...(caption ? { caption } : {}) };
}

function number(v: unknown, name: string, max: number): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || Math.abs(v) > max) {
    throw new InboundKindError(`'${name}' must be a number from -${max} to ${max}.`);
  }
  return v;
}

/** The message of a body: `text` alone, or one other kind (with `text` as the caption of an image, video or document). */
export function inboundMessageOf(body: Json): SandboxInboundMessage {
  const given = KINDS.filter((k) => body[k] !== undefined);
  if (given.length > 1)
    throw new InboundKindError(`Give one kind of message, not ${given.map((k) => `'${k}'`).join(' and ')}.`);
  const text = body.text === undefined ? undefined : str(body.text, 'text', 0, 4096);
  if (text !== undefined && !text.trim()) throw new InboundKindError("'text' must not be empty.");
  const replyTo = body.replyTo === undefined ? undefined : str(body.replyTo, 'replyTo', 1, 512);
  const kind = given[0];
  const withReply = (content: SandboxInboundContent): SandboxInboundMessage => ({
    content,
    ...(replyTo ? { replyTo } : {}),
  });
  if (kind === undefined) {
    if (text === undefined)
      throw new InboundKindError(`Give 'text' or one of ${KINDS.map((k) => `'${k}'`).join(', ')}.`);
    return withReply({ kind: 'text', text });
  }
  if ((SANDBOX_MEDIA_KINDS as readonly string[]).includes(kind))
    return withReply(mediaOf(kind as SandboxMediaKind, body[kind], text));
  if (text !== undefined) throw new InboundKindError(`'text' cannot go with '${kind}'.`);
  const v = body[kind];
  if (!isObject(v)) throw new InboundKindError(`'${kind}' must be an object.`);
  switch (kind) {
    case 'location': {
      const name = optional(v.name, 'location.name', 256);
      const address = optional(v.address, 'location.address', 1024);
      return withReply({
        kind,
        latitude: number(v.latitude, 'location.latitude', 90),
        longitude: number(v.longitude, 'location.longitude', 180),
        ...(name ? { name } : {}),
        ...(address ? { address } : {}),
      });
    }
    case 'buttonReply':
      return withReply({
        kind,
        id: str(v.id, 'buttonReply.id', 1, 256),
        title: str(v.title, 'buttonReply.title', 1, 20),
      });
    case 'listReply': {
      const description = optional(v.description, 'listReply.description', 72);
      return withReply({
        kind,
        id: str(v.id, 'listReply.id', 1, 200),
        title: str(v.title, 'listReply.title', 1, 24),
        ...(description ? { description } : {}),
      });
    }
    default:
      return withReply({
        kind: 'reaction',
        messageId: str(v.messageId, 'reaction.messageId', 1, 512),
        emoji: str(v.emoji, 'reaction.emoji', 0, 16),
      });
  }
}

/** The Cloud API `value.messages[]` item of a message (its file kept in `media` first, as the provider does). */
export function inboundItem(
  message: SandboxInboundMessage,
  head: { readonly from: string; readonly id: string; readonly timestamp: string },
  media: SandboxMediaStore,
): Json {
  const c = message.content;
  const base: Json = { ...head, ...(message.replyTo ? { context: { from: head.from, id: message.replyTo } } : {}) };
  switch (c.kind) {
    case 'text':
      return { ...base, type: 'text', text: { body: c.text } };
    case 'location': {
      const { kind: _, ...location } = c;
      return { ...base, type: 'location', location };
    }
    case 'buttonReply':
      return {
        ...base,
        type: 'interactive',
        interactive: { type: 'button_reply', button_reply: { id: c.id, title: c.title } },
      };
    case 'listReply': {
      const { kind: _, ...row } = c;
      return { ...base, type: 'interactive', interactive: { type: 'list_reply', list_reply: row } };
    }
    case 'reaction':
      return { ...base, type: 'reaction', reaction: { message_id: c.messageId, emoji: c.emoji } };
    default: {
      const file = media.put(c.data, c.mimeType, c.filename);
      return {
        ...base,
        type: c.kind,
        [c.kind]: {
          id: file.id,
          mime_type: c.mimeType,
          sha256: file.sha256,
          ...(c.caption ? { caption: c.caption } : {}),
          ...(c.kind === 'document' && c.filename ? { filename: c.filename } : {}),
          ...(c.kind === 'audio' && c.mimeType === 'audio/ogg' ? { voice: true } : {}),
          ...(c.kind === 'sticker' ? { animated: false } : {}),
        },
      };
    }
  }
}
