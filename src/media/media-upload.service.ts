/**
 * `POST /api/media`: a file an agent will send, kept by Parley. The bytes decide its type: the
 * first bytes are sniffed (`file-type`) and must be what the upload declared (or, declared as
 * nothing in particular, one of the accepted types); each type has the provider's size limit. The
 * file streams to the media store as it arrives (a 100 MB document never sits whole in memory);
 * on any error nothing is kept.
 */
import { Readable } from 'node:stream';
import { fileTypeFromBuffer } from 'file-type';
import { clip } from '../shared/clip.js';
import { AppError } from '../shared/errors.js';
import type { Media } from './media.model.js';
import { type MediaDeps, storeMedia } from './media.service.js';
import { isMediaTooLarge } from './media-store.js';
import { SNIFFED_AS, UPLOAD_TYPES } from './upload-types.js';

/** Bytes read before deciding the type: enough for every signature the sniffer knows (Office's zip entries too). */
const SAMPLE_BYTES = 64 * 1024;
const MB = 1024 * 1024;

export interface Upload {
  /** The file's bytes, as they arrive. */
  readonly body: AsyncIterable<Buffer> & Readable;
  /** The type the upload declared (the part's Content-Type). */
  readonly declaredType: string;
  readonly filename: string | undefined;
}

const mib = (bytes: number) => `${bytes / MB} MB`;
const accepted = () => Object.keys(UPLOAD_TYPES).join(', ');

/** The first bytes, and a stream of the whole file (those bytes, then the rest as it arrives). */
async function sampleOf(body: AsyncIterable<Buffer>): Promise<{ sample: Buffer; whole: Readable }> {
  const it = body[Symbol.asyncIterator]();
  const head: Buffer[] = [];
  let size = 0;
  let done = false;
  while (size < SAMPLE_BYTES) {
    const next = await it.next();
    if (next.done) {
      done = true;
      break;
    }
    head.push(next.value);
    size += next.value.length;
  }
  const sample = Buffer.concat(head);
  async function* all() {
    if (sample.length > 0) yield sample;
    if (done) return;
    for (let next = await it.next(); !next.done; next = await it.next()) yield next.value;
  }
  return { sample: sample.subarray(0, SAMPLE_BYTES), whole: Readable.from(all(), { objectMode: false }) };
}

/** Text as the provider takes it: UTF-8 (a sequence cut at the sample's end is fine), no NUL bytes. */
function looksLikeText(sample: Buffer): boolean {
  if (sample.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(sample, { stream: true });
    return true;
  } catch {
    return false;
  }
}

/** The type the bytes say, checked against the declared one: the type the file is kept as. */
async function typeOf(sample: Buffer, declared: string): Promise<string> {
  if (sample.length === 0) throw new AppError('INVALID_BODY', "The field 'file' is empty.");
  const sniffed = (await fileTypeFromBuffer(sample))?.mime ?? (looksLikeText(sample) ? null : undefined);
  const undeclared = declared === '' || declared === 'application/octet-stream';
  if (undeclared) {
    const own = Object.entries(SNIFFED_AS).find(([, names]) => names[0] === sniffed)?.[0];
    if (own) return own;
    throw new AppError(
      'INVALID_BODY',
      `The file's type cannot be sent${sniffed ? ` (its bytes are ${sniffed})` : ''}; declare its Content-Type, one of: ${accepted()}.`,
    );
  }
  const names = SNIFFED_AS[declared];
  if (!names) {
    throw new AppError(
      'INVALID_BODY',
      `Files of type '${clip(declared, 80)}' cannot be sent; accepted: ${accepted()}.`,
    );
  }
  if (sniffed === undefined || !names.includes(sniffed)) {
    throw new AppError(
      'INVALID_BODY',
      `The file's bytes are not ${declared}${sniffed ? ` (they are ${sniffed})` : ''}: the bytes decide the type.`,
    );
  }
  return declared;
}

/** A file name as kept: no folders, no control characters, at most 240 characters. */
export function safeFilename(name: string | undefined): string | null {
  const base = (name ?? '').split(/[\\/]/).pop() ?? '';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  const clean = base.replace(/[\u0000-\u001f\u007f]/g, '').trim();
  return clean ? [...clean].slice(0, 240).join('') : null;
}

/** Keeps an uploaded file for the organization (and the agent of an agent key): its row, once stored whole. */
export async function uploadMedia(
  deps: MediaDeps,
  uploader: { readonly orgId: string; readonly agentId: string | null },
  upload: Upload,
): Promise<Media> {
  const declared = upload.declaredType.split(';')[0]?.trim().toLowerCase() ?? '';
  const { sample, whole } = await sampleOf(upload.body);
  let mimeType: string;
  try {
    mimeType = await typeOf(sample, declared);
  } catch (err) {
    // Read to its end, so the answer reaches a client still sending (the bytes go nowhere).
    for await (const _ of whole) {
    }
    throw err;
  }
  const limit = UPLOAD_TYPES[mimeType]?.maxBytes ?? 0;
  try {
    return await storeMedia(deps, {
      orgId: uploader.orgId,
      agentId: uploader.agentId,
      source: 'upload',
      mimeType,
      filename: safeFilename(upload.filename),
      body: whole,
      maxBytes: limit,
    });
  } catch (err) {
    if (isMediaTooLarge(err) || (err as { code?: unknown }).code === 'FST_REQ_FILE_TOO_LARGE') {
      throw new AppError(
        'PAYLOAD_TOO_LARGE',
        `Files of type ${mimeType} may be at most ${mib(limit)}; this one is larger.`,
      );
    }
    throw err;
  }
}
