import { readFileSync, statSync } from 'node:fs';
import { basename, extname } from 'node:path';
import { fail } from '../run.js';

/** The kinds of `parley sandbox inbound`, one of which is given. */
export interface InboundKindFlags {
  text?: string;
  image?: string;
  audio?: string;
  video?: string;
  document?: string;
  location?: string;
  button?: string;
  caption?: string;
}

/** File types by extension, as the provider names them. */
const TYPES: Record<string, string> = {
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.png': 'image/png',
  '.webp': 'image/webp',
  '.mp4': 'video/mp4',
  '.3gp': 'video/3gpp',
  '.ogg': 'audio/ogg',
  '.opus': 'audio/ogg',
  '.mp3': 'audio/mpeg',
  '.m4a': 'audio/mp4',
  '.aac': 'audio/aac',
  '.amr': 'audio/amr',
  '.pdf': 'application/pdf',
  '.txt': 'text/plain',
  '.doc': 'application/msword',
  '.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  '.xls': 'application/vnd.ms-excel',
  '.xlsx': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  '.ppt': 'application/vnd.ms-powerpoint',
  '.pptx': 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
};

/** Larger files than the sandbox takes in one message (its body limit, base64). */
const MAX_FILE = 17 * 1024 * 1024;

function fileOf(flag: string, path: string, caption: string | undefined): Record<string, unknown> {
  const mimeType = TYPES[extname(path).toLowerCase()];
  if (!mimeType) fail(`--${flag} ${path}: unknown file type; use one of ${Object.keys(TYPES).join(' ')}`);
  let size: number;
  try {
    size = statSync(path).size;
  } catch {
    fail(`--${flag} ${path}: no such file`);
  }
  if (size > MAX_FILE) fail(`--${flag} ${path}: the sandbox takes files of at most 17 MB in one message`);
  return {
    data: readFileSync(path).toString('base64'),
    mimeType,
    filename: basename(path),
    ...(caption !== undefined ? { caption } : {}),
  };
}

/**
 * The message part of the body of the sandbox's `/sandbox/inbound` from the flags: exactly one of
 * --text, --image, --audio, --video, --document, --location LAT,LNG, --button ID:TITLE; --caption
 * goes with an image, a video or a document. The sandbox checks the rest (types, sizes) as the
 * provider would.
 */
export function inboundBodyOf(flags: InboundKindFlags): Record<string, unknown> {
  const kinds = (['text', 'image', 'audio', 'video', 'document', 'location', 'button'] as const).filter(
    (k) => flags[k] !== undefined,
  );
  if (kinds.length !== 1) {
    fail(
      kinds.length === 0
        ? 'give one of --text, --image, --audio, --video, --document, --location or --button'
        : `give one kind of message, not ${kinds.map((k) => `--${k}`).join(' and ')}`,
    );
  }
  const kind = kinds[0];
  if (flags.caption !== undefined && kind !== 'image' && kind !== 'video' && kind !== 'document') {
    fail('--caption goes with --image, --video or --document');
  }
  switch (kind) {
    case 'text':
      if (!flags.text?.trim()) fail('--text must not be empty');
      return { text: flags.text };
    case 'location': {
      const m = /^\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*$/.exec(flags.location ?? '');
      const latitude = Number(m?.[1]);
      const longitude = Number(m?.[2]);
      if (!m || Math.abs(latitude) > 90 || Math.abs(longitude) > 180) {
        fail(
          `--location must be LATITUDE,LONGITUDE such as 38.7223,-9.1393; got "${(flags.location ?? '').slice(0, 40)}"`,
        );
      }
      return { location: { latitude, longitude } };
    }
    case 'button': {
      const at = (flags.button ?? '').indexOf(':');
      const id = (flags.button ?? '').slice(0, Math.max(0, at));
      const title = (flags.button ?? '').slice(at + 1);
      if (at <= 0 || !title)
        fail(`--button must be ID:TITLE such as refund:Refund; got "${(flags.button ?? '').slice(0, 40)}"`);
      return { buttonReply: { id, title } };
    }
    default: {
      const k = kind as 'image' | 'audio' | 'video' | 'document';
      return { [k]: fileOf(k, flags[k] ?? '', flags.caption) };
    }
  }
}
