import { cleanId, cleanString, isObject, type Json, list, MAX_ID, MAX_NAME, MAX_TEXT } from './webhook-values.js';

/**
 * What an inbound message carries, by kind (the Cloud API's `value.messages[]` items): its text or
 * caption, its file, a location, a button or list reply, a reaction, contacts, and the message it
 * replies to. Every value is checked and bounded as the rest of a webhook is (webhook-values.ts);
 * a kind Parley does not know, or a malformed part of one it knows, is kept as far as it goes and
 * never fails the message.
 */

/** The kinds Parley tells apart; anything else is `unsupported`. */
export const INBOUND_TYPES = [
  'text',
  'image',
  'audio',
  'video',
  'document',
  'sticker',
  'location',
  'contacts',
  'interactive',
  'button',
  'reaction',
  'unsupported',
] as const;
export type InboundType = (typeof INBOUND_TYPES)[number];

/** The kinds that carry a file. */
export const MEDIA_TYPES = ['image', 'audio', 'video', 'document', 'sticker'] as const;
export type MediaType = (typeof MEDIA_TYPES)[number];

export interface InboundLocation {
  readonly latitude: number;
  readonly longitude: number;
  readonly name?: string;
  readonly address?: string;
}

/** A tap on a reply button (`interactive` `button_reply`, or a template's quick reply: `button`) or a list row. */
export interface InboundReply {
  readonly kind: 'button' | 'list';
  readonly id: string;
  readonly title: string;
  readonly description?: string;
}

/** `emoji` is empty when the user took a reaction back. */
export interface InboundReaction {
  readonly messageId: string;
  readonly emoji: string;
}

export interface InboundContact {
  readonly name: string;
  readonly phones: readonly { readonly phone: string; readonly waId?: string; readonly type?: string }[];
  readonly emails: readonly { readonly email: string; readonly type?: string }[];
  readonly organization?: string;
}

/** What a kind carries beside its text and file: stored as JSON with the message. */
export interface InboundContent {
  readonly location?: InboundLocation;
  readonly reply?: InboundReply;
  readonly reaction?: InboundReaction;
  readonly contacts?: readonly InboundContact[];
  /** An audio message recorded as a voice note. */
  readonly voice?: boolean;
  /** An animated sticker. */
  readonly animated?: boolean;
}

/** The file of a message as the webhook announces it: downloaded later, by its provider ID. */
export interface InboundMediaRef {
  readonly providerMediaId: string;
  readonly mimeType: string;
  /** Lower-case hex; null when the webhook gave none (or none believable). */
  readonly sha256: string | null;
  readonly filename: string | null;
}

export interface InboundKind {
  readonly type: InboundType;
  /** The body, or the caption of an image, video or document; null for the other kinds. */
  readonly text: string | null;
  /** The provider's ID of the message this one replies to (`context.id`). */
  readonly replyTo: string | null;
  readonly content: InboundContent;
  readonly media: InboundMediaRef | undefined;
}

const MAX_CAPTION = 4096;
const MAX_TITLE = 256;
const MAX_DESCRIPTION = 1024;
const MAX_EMOJI = 32;
const MAX_FILENAME = 240;
const MAX_CONTACTS = 20;
const MAX_CONTACT_ENTRIES = 10;

/** `type/subtype` in lower case, else undefined. */
function mimeTypeOf(v: unknown): string | undefined {
  const s = cleanString(v, 128)?.split(';')[0]?.trim().toLowerCase();
  return s && /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/.test(s) ? s : undefined;
}

/** The provider's SHA-256, hex or base64, as lower-case hex; undefined when it is neither. */
export function sha256Hex(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  if (/^[0-9a-fA-F]{64}$/.test(v)) return v.toLowerCase();
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(v)) {
    const bytes = Buffer.from(v.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (bytes.length === 32) return bytes.toString('hex');
  }
  return undefined;
}

/** A file name without folders or control characters, at most 240 characters. */
export function cleanFilename(v: unknown): string | undefined {
  const s = cleanString(v, 1024)
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
    ?.replace(/[\u0000-\u001f\u007f]/g, '')
    .split(/[/\\]/)
    .pop()
    ?.trim();
  return s ? s.slice(0, MAX_FILENAME) : undefined;
}

/** A coordinate: a finite number (or numeric string) within ±`max`. */
function coordinate(v: unknown, max: number): number | undefined {
  const n = typeof v === 'string' && /^-?\d{1,3}(\.\d+)?$/.test(v.trim()) ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) && Math.abs(n) <= max ? n : undefined;
}

const text = (v: unknown, max: number) => {
  const s = cleanString(v, max)?.trim();
  return s ? s : undefined;
};

function locationOf(v: Json): InboundLocation | undefined {
  const latitude = coordinate(v.latitude, 90);
  const longitude = coordinate(v.longitude, 180);
  if (latitude === undefined || longitude === undefined) return undefined;
  const name = text(v.name, MAX_NAME);
  const address = text(v.address, MAX_DESCRIPTION);
  return { latitude, longitude, ...(name ? { name } : {}), ...(address ? { address } : {}) };
}

function replyOf(kind: 'button' | 'list', v: unknown): InboundReply | undefined {
  if (!isObject(v)) return undefined;
  const id = cleanId(v.id, MAX_TITLE);
  const title = text(v.title, MAX_TITLE) ?? '';
  if (!id) return undefined;
  const description = kind === 'list' ? text(v.description, MAX_DESCRIPTION) : undefined;
  return { kind, id, title, ...(description ? { description } : {}) };
}

function contactsOf(v: unknown): InboundContact[] {
  return list(v)
    .slice(0, MAX_CONTACTS)
    .map((c): InboundContact => {
      const name = isObject(c.name)
        ? (text(c.name.formatted_name, MAX_NAME) ??
          [text(c.name.first_name, MAX_NAME), text(c.name.last_name, MAX_NAME)].filter(Boolean).join(' '))
        : '';
      const phones = list(c.phones)
        .slice(0, MAX_CONTACT_ENTRIES)
        .flatMap((p) => {
          const phone = text(p.phone, 64);
          if (!phone) return [];
          const waId = cleanId(p.wa_id, 32);
          const type = text(p.type, 32);
          return [{ phone, ...(waId ? { waId } : {}), ...(type ? { type } : {}) }];
        });
      const emails = list(c.emails)
        .slice(0, MAX_CONTACT_ENTRIES)
        .flatMap((e) => {
          const email = text(e.email, 320);
          if (!email) return [];
          const type = text(e.type, 32);
          return [{ email, ...(type ? { type } : {}) }];
        });
      const organization = isObject(c.org) ? text(c.org.company, MAX_NAME) : undefined;
      return { name, phones, emails, ...(organization ? { organization } : {}) };
    });
}

function mediaOf(type: MediaType, v: Json): InboundMediaRef | undefined {
  const providerMediaId = cleanId(v.id, MAX_ID);
  if (!providerMediaId) return undefined;
  return {
    providerMediaId,
    mimeType: mimeTypeOf(v.mime_type) ?? (type === 'sticker' ? 'image/webp' : 'application/octet-stream'),
    sha256: sha256Hex(v.sha256) ?? null,
    filename: type === 'document' ? (cleanFilename(v.filename) ?? null) : null,
  };
}

/** The kind of one `value.messages[]` item and what it carries. */
export function inboundKindOf(m: Json): InboundKind {
  const given = cleanString(m.type, 32) || 'text';
  const type: InboundType = (INBOUND_TYPES as readonly string[]).includes(given)
    ? (given as InboundType)
    : 'unsupported';
  const replyTo = isObject(m.context) ? (cleanId(m.context.id, MAX_ID) ?? null) : null;
  const part = isObject(m[type]) ? (m[type] as Json) : {};
  const base = { type, replyTo, text: null, content: {}, media: undefined };
  switch (type) {
    case 'text':
      return { ...base, text: cleanString(part.body, MAX_TEXT) ?? null };
    case 'image':
    case 'video':
    case 'document':
    case 'audio':
    case 'sticker': {
      const caption = type === 'audio' || type === 'sticker' ? undefined : cleanString(part.caption, MAX_CAPTION);
      const content: InboundContent = {
        ...(type === 'audio' && part.voice === true ? { voice: true } : {}),
        ...(type === 'sticker' && part.animated === true ? { animated: true } : {}),
      };
      return { ...base, text: caption ?? null, content, media: mediaOf(type, part) };
    }
    case 'location': {
      const location = locationOf(part);
      return { ...base, content: location ? { location } : {} };
    }
    case 'contacts': {
      const contacts = contactsOf(m.contacts);
      return { ...base, content: contacts.length > 0 ? { contacts } : {} };
    }
    case 'interactive': {
      const kind = part.type === 'list_reply' ? 'list' : part.type === 'button_reply' ? 'button' : undefined;
      const reply = kind ? replyOf(kind, part[`${kind}_reply`]) : undefined;
      return { ...base, content: reply ? { reply } : {} };
    }
    case 'button': {
      // A template's quick-reply button: its payload is the ID the template gave it.
      const id = cleanId(part.payload, MAX_TITLE) ?? text(part.text, MAX_TITLE);
      const title = text(part.text, MAX_TITLE) ?? '';
      return { ...base, content: id ? { reply: { kind: 'button', id, title } } : {} };
    }
    case 'reaction': {
      const messageId = cleanId(part.message_id, MAX_ID);
      const emoji = cleanString(part.emoji, MAX_EMOJI) ?? '';
      return { ...base, content: messageId ? { reaction: { messageId, emoji } } : {} };
    }
    default:
      return base;
  }
}

/** Content as stored (JSON), null when the kind carries nothing beside text and file. */
export function contentJson(content: InboundContent): string | null {
  return Object.keys(content).length > 0 ? JSON.stringify(content) : null;
}

export function contentOf(json: string | null | undefined): InboundContent {
  if (!json) return {};
  try {
    const parsed: unknown = JSON.parse(json);
    return isObject(parsed) ? (parsed as InboundContent) : {};
  } catch {
    return {};
  }
}
