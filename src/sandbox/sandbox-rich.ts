/**
 * The sandbox's rules for what a send may carry beyond text and templates, as the provider plays
 * them: image, video, document, audio and sticker messages (by an uploaded media ID or a link),
 * interactive reply buttons and lists, a quoted message (`context.message_id`), a template's header
 * file, read receipts with the typing indicator, and media uploads for a number. A malformed
 * request is refused with the provider's error code.
 */
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import type { SandboxMediaStore } from './sandbox-media.js';
import { isObject, type Json, type WireError } from './sandbox-wire.js';

const MEDIA_TYPES = new Set(['image', 'video', 'document', 'audio', 'sticker']);

/** A template parameter that is text (a header file is checked by `checkRichSend`). */
export const isTextParameter = (p: Json): boolean => !(typeof p.type === 'string' && MEDIA_TYPES.has(p.type));

/** Templates whose header is a file, by name: the file's kind. */
export const MEDIA_HEADER_TEMPLATES: Readonly<Record<string, 'image' | 'video' | 'document'>> = {
  promo_image: 'image',
};

const invalid = (details: string): WireError => ({
  status: 400,
  code: 131009,
  message: 'Parameter value is not valid',
  details,
});
const missing = (details: string): WireError => ({
  status: 400,
  code: 131008,
  message: 'Required parameter is missing',
  details,
});

const chars = (v: unknown) => (typeof v === 'string' ? [...v].length : -1);
const text = (v: unknown, min: number, max: number) =>
  typeof v === 'string' && v.trim() !== '' && chars(v) >= min && chars(v) <= max;

/** A media object (`{id}` or `{link}`): the ID of a file uploaded to the sandbox, or an http(s) address. */
function checkMediaObject(kind: string, m: unknown, media: SandboxMediaStore): WireError | undefined {
  if (!isObject(m)) return missing(`${kind}: a media object is required`);
  const hasId = typeof m.id === 'string';
  const hasLink = typeof m.link === 'string';
  if (hasId === hasLink) return invalid(`${kind}: exactly one of id and link`);
  if (hasLink && !/^https?:\/\/\S+$/.test(String(m.link))) return invalid(`${kind}.link: must be an http(s) URL`);
  if (hasId && !media.get(String(m.id))) {
    return {
      status: 400,
      code: 131053,
      message: 'Media upload error',
      details: `${kind}.id: media ID ${String(m.id).slice(0, 40)} was not uploaded for this number or has expired`,
    };
  }
  if (m.caption !== undefined && (kind === 'audio' || kind === 'sticker'))
    return invalid(`${kind}.caption: not allowed`);
  if (m.caption !== undefined && chars(m.caption) > 1024) return invalid(`${kind}.caption: at most 1024 characters`);
  if (m.filename !== undefined && kind !== 'document') return invalid(`${kind}.filename: documents only`);
  return undefined;
}

function checkButtons(action: Json): WireError | undefined {
  const buttons = action.buttons;
  if (!Array.isArray(buttons) || buttons.length < 1 || buttons.length > 3) {
    return invalid('interactive.action.buttons: 1 to 3 buttons');
  }
  const ids = new Set<string>();
  for (const b of buttons) {
    const reply = isObject(b) && b.type === 'reply' && isObject(b.reply) ? b.reply : undefined;
    if (!reply) return missing('interactive.action.buttons: each needs type reply and a reply object');
    if (!text(reply.id, 1, 256)) return invalid('interactive.action.buttons.reply.id: 1 to 256 characters');
    if (!text(reply.title, 1, 20)) return invalid('interactive.action.buttons.reply.title: 1 to 20 characters');
    if (ids.has(String(reply.id))) return invalid('interactive.action.buttons: button IDs must be unique');
    ids.add(String(reply.id));
  }
  return undefined;
}

function checkList(action: Json): WireError | undefined {
  if (!text(action.button, 1, 20)) return invalid('interactive.action.button: 1 to 20 characters');
  const sections = action.sections;
  if (!Array.isArray(sections) || sections.length < 1 || sections.length > 10) {
    return invalid('interactive.action.sections: 1 to 10 sections');
  }
  const ids = new Set<string>();
  let rows = 0;
  for (const s of sections) {
    if (!isObject(s) || !Array.isArray(s.rows) || s.rows.length === 0)
      return missing('interactive.action.sections.rows');
    if (sections.length > 1 && !text(s.title, 1, 24)) {
      return missing('interactive.action.sections.title: required (1 to 24 characters) with several sections');
    }
    if (s.title !== undefined && !text(s.title, 1, 24))
      return invalid('interactive.action.sections.title: 1 to 24 characters');
    for (const r of s.rows) {
      rows++;
      if (!isObject(r) || !text(r.id, 1, 200))
        return invalid('interactive.action.sections.rows.id: 1 to 200 characters');
      if (!text(r.title, 1, 24)) return invalid('interactive.action.sections.rows.title: 1 to 24 characters');
      if (r.description !== undefined && chars(r.description) > 72) {
        return invalid('interactive.action.sections.rows.description: at most 72 characters');
      }
      if (ids.has(String(r.id))) return invalid('interactive.action.sections.rows: row IDs must be unique');
      ids.add(String(r.id));
    }
  }
  if (rows > 10) return invalid(`interactive.action.sections: at most 10 rows in all, got ${rows}`);
  return undefined;
}

function checkInteractive(i: unknown): WireError | undefined {
  if (!isObject(i)) return missing('interactive: an object is required');
  if (!isObject(i.body) || !text(i.body.text, 1, 1024)) return invalid('interactive.body.text: 1 to 1024 characters');
  if (!isObject(i.action)) return missing('interactive.action');
  if (i.type === 'button') return checkButtons(i.action);
  if (i.type === 'list') return checkList(i.action);
  return invalid('interactive.type: button or list');
}

/**
 * A free-form send of a kind beyond text (a file, buttons, a list) and any send's quote: the wire
 * error to answer, `'window'` when its shape is right (free-form: the 24-hour window decides), or
 * undefined when the body is none of these (text and templates go on to their own checks).
 */
export function checkRichSend(body: Json, media: SandboxMediaStore): WireError | 'window' | undefined {
  if (body.context !== undefined) {
    if (!isObject(body.context) || typeof body.context.message_id !== 'string' || !body.context.message_id) {
      return invalid('context.message_id: the ID of a message is required');
    }
  }
  const type = typeof body.type === 'string' ? body.type : '';
  if (MEDIA_TYPES.has(type)) return checkMediaObject(type, body[type], media) ?? 'window';
  if (type === 'interactive') return checkInteractive(body.interactive) ?? 'window';
  if (type === 'template') return checkTemplateHeader(body, media);
  return undefined;
}

/** A template's header file: the one parameter of a file-header template, of its kind; none elsewhere. */
function checkTemplateHeader(body: Json, media: SandboxMediaStore): WireError | undefined {
  const t = isObject(body.template) ? body.template : {};
  const components = Array.isArray(t.components) ? t.components.filter(isObject) : [];
  const header = components.find((c) => c.type === 'header');
  const params = Array.isArray(header?.parameters) ? header.parameters.filter(isObject) : [];
  const files = params.filter((p) => typeof p.type === 'string' && MEDIA_TYPES.has(p.type));
  const kind = typeof t.name === 'string' ? MEDIA_HEADER_TEMPLATES[t.name] : undefined;
  const mismatch = (details: string): WireError => ({
    status: 400,
    code: 132012,
    message: 'Parameter format does not match format in the created template',
    details,
  });
  if (!kind) return files.length > 0 ? mismatch('header: this template has no media header') : undefined;
  const [file] = params;
  if (params.length === 1 && file && file.type !== kind)
    return mismatch(`header: expected a parameter of type ${kind}`);
  if (params.length === 1 && file) return checkMediaObject(kind, file[kind], media);
  return undefined;
}

/** A read receipt (`status: read`): its message ID, and the typing indicator when asked. */
export function checkRead(body: Json): WireError | undefined {
  if (typeof body.message_id !== 'string' || !body.message_id.startsWith('wamid.')) {
    return invalid('message_id: the ID of a received message is required');
  }
  if (
    body.typing_indicator !== undefined &&
    !(isObject(body.typing_indicator) && body.typing_indicator.type === 'text')
  ) {
    return invalid('typing_indicator.type: must be text');
  }
  return undefined;
}

/** Upload types and limits, as the provider takes them. */
const UPLOAD_LIMITS: Record<string, number> = {
  'image/jpeg': 5,
  'image/png': 5,
  'image/webp': 0.5,
  'video/mp4': 16,
  'video/3gpp': 16,
  'audio/aac': 16,
  'audio/amr': 16,
  'audio/mpeg': 16,
  'audio/mp4': 16,
  'audio/ogg': 16,
};
const limitOf = (type: string) => (UPLOAD_LIMITS[type] ?? (/^(application|text)\//.test(type) ? 100 : 0)) * 1024 * 1024;

/** `POST /{version}/{phone-number-id}/media`: the file kept, its new media ID; or the wire error. */
export async function receiveUpload(
  req: IncomingMessage,
  media: SandboxMediaStore,
): Promise<WireError | { id: string }> {
  const contentType = req.headers['content-type'] ?? '';
  if (!/^multipart\/form-data;/i.test(contentType)) return missing('the body must be multipart/form-data');
  let form: FormData;
  try {
    const request = new Request('http://sandbox/upload', {
      method: 'POST',
      headers: { 'content-type': contentType },
      body: Readable.toWeb(req) as ReadableStream<Uint8Array>,
      duplex: 'half',
    } as RequestInit);
    form = await request.formData();
  } catch {
    return invalid('the multipart body cannot be read');
  }
  if (form.get('messaging_product') !== 'whatsapp') return missing('messaging_product: must be whatsapp');
  const file = form.get('file');
  if (!(file instanceof Blob)) return missing('file: a file is required');
  const type = String(form.get('type') ?? file.type);
  const limit = limitOf(type);
  if (!limit) {
    return {
      status: 400,
      code: 131053,
      message: 'Media upload error',
      details: `Unsupported file type: ${type.slice(0, 80)}`,
    };
  }
  if (file.size > limit) {
    return { status: 400, code: 131053, message: 'Media upload error', details: `file is larger than ${limit} bytes` };
  }
  const name = file instanceof File && file.name ? file.name : undefined;
  const kept = media.put(Buffer.from(await file.arrayBuffer()), type, name);
  return { id: kept.id };
}
