import type { ThreadMessage } from '../conversations/conversation.schemas.js';
import { dashboardMediaPath } from './media.pages.js';
import { formatTime } from './page-kit.js';

/** What the conversation view shows of one message: its text, and what its kind carries, as what it is. */
export interface ThreadItem {
  readonly who: string;
  readonly at: string;
  readonly text: string;
  readonly status: string | undefined;
  /** A photo shown inline (a link to it whole). */
  readonly image?: { readonly src: string; readonly alt: string };
  /** Any other file: a download link with its size. */
  readonly file?: { readonly href: string; readonly label: string; readonly size: string };
  /** A file that is not (or no longer) there. */
  readonly missing?: string;
  readonly location?: { readonly href: string; readonly label: string };
  /** A button or list reply, a reaction, shared contacts, a kind Parley cannot show. */
  readonly note?: string;
  readonly replyTo?: boolean;
}

const KIND_NAMES: Record<string, string> = {
  image: 'Photo',
  audio: 'Audio',
  video: 'Video',
  document: 'Document',
  sticker: 'Sticker',
};

/** 183 KB, 2.4 MB: sizes as people read them. */
export function formatSize(bytes: number | null): string {
  if (bytes === null) return '';
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** What an outbound message carried beside its text: a file, buttons, a list, a template's header file. */
function outboundNote(m: ThreadMessage): string | undefined {
  const file = m.media && !('available' in m.media) ? m.media : m.template?.headerMedia;
  if (file) {
    const name = (KIND_NAMES[file.kind] ?? 'File').toLowerCase();
    return `Sent with a ${name}: ${file.filename ?? file.link ?? file.id ?? ''}`;
  }
  if (m.buttons) return `Sent with the buttons ${m.buttons.map((b) => `“${b.title}”`).join(', ')}`;
  if (m.list) {
    const rows = m.list.sections.flatMap((s) => s.rows.map((r) => r.title));
    return `Sent with the list “${m.list.button}”: ${rows.join(', ')}`;
  }
  return undefined;
}

const RASTER = new Set(['image/jpeg', 'image/png', 'image/webp', 'image/gif']);

export function threadItemOf(m: ThreadMessage): ThreadItem {
  const base = {
    who: m.direction === 'inbound' ? 'End user' : 'Agent',
    at: formatTime(m.createdAt),
    text:
      m.type === 'template' && m.template
        ? `Template ${m.template.name}${m.template.parameters ? `: ${m.template.parameters.body.join(', ')}` : ''}`
        : (m.text ?? ''),
    status: m.status,
    ...(m.replyTo ? { replyTo: true } : {}),
  };
  const kind = m.inboundType ?? '';
  // An inbound file (an outbound one is shown by its text).
  if (m.media && 'available' in m.media) {
    const name = kind === 'audio' && m.media.voice ? 'Voice note' : (KIND_NAMES[kind] ?? 'File');
    if (!m.media.available) return { ...base, missing: `${name} (no longer available)` };
    const href = dashboardMediaPath(m.media.id);
    if (RASTER.has(m.media.mimeType) && (kind === 'image' || kind === 'sticker')) {
      return { ...base, image: { src: href, alt: base.text ? `${name}: ${base.text}` : `${name} from the end user` } };
    }
    return {
      ...base,
      file: { href, label: m.media.filename ?? name, size: formatSize(m.media.size) },
    };
  }
  const sent = m.direction === 'outbound' ? outboundNote(m) : undefined;
  if (sent) return { ...base, note: sent };
  if (m.location) {
    const { latitude: lat, longitude: lng, name, address } = m.location;
    const where = [name, address].filter(Boolean).join(', ');
    return {
      ...base,
      location: {
        href: `https://www.openstreetmap.org/?mlat=${lat}&mlon=${lng}#map=16/${lat}/${lng}`,
        label: `${where ? `${where} ` : ''}(${lat}, ${lng})`,
      },
    };
  }
  if (m.reply) {
    const note =
      m.reply.kind === 'list' ? `Chose “${m.reply.title}” from a list` : `Tapped the button “${m.reply.title}”`;
    return { ...base, note };
  }
  if (m.reaction) {
    return { ...base, note: m.reaction.emoji ? `Reacted ${m.reaction.emoji} to a message` : 'Took a reaction back' };
  }
  if (m.contacts) {
    const people = m.contacts.map((c) => [c.name, c.phones[0]?.phone].filter(Boolean).join(' ')).join('; ');
    return { ...base, note: `Shared ${m.contacts.length === 1 ? 'a contact' : 'contacts'}: ${people}` };
  }
  if (kind === 'unsupported') return { ...base, note: 'A kind of message Parley cannot show' };
  return base;
}
