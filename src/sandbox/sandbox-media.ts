import { createHash, randomInt } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { ensurePrivateDir, PRIVATE_FILE_MODE } from '../shared/private-files.js';
import { wireError } from './sandbox-wire.js';

/**
 * The sandbox's media, kept as the provider keeps it: a file under a numeric media ID, resolved by
 * `GET /{version}/{media-id}` (its URL, type, SHA-256 and size) and fetched from that URL with a
 * Bearer token, as from the provider's own. In a folder beside the sandbox's state file (so that
 * files survive a restart, as the provider's do), else in memory.
 */
export interface SandboxMediaFile {
  readonly id: string;
  readonly bytes: Buffer;
  readonly mimeType: string;
  /** Lower-case hex. */
  readonly sha256: string;
  readonly filename?: string;
}

export interface SandboxMediaStore {
  put(bytes: Buffer, mimeType: string, filename?: string): SandboxMediaFile;
  get(id: string): SandboxMediaFile | undefined;
  delete(id: string): boolean;
}

/** A media ID as the provider spells them: digits. */
const newMediaId = () =>
  `${randomInt(1, 10)}${String(randomInt(0, 1e9)).padStart(9, '0')}${String(randomInt(0, 1e6)).padStart(6, '0')}`;
const isMediaId = (id: string) => /^\d{1,32}$/.test(id);
const hashOf = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

export function memoryMediaStore(): SandboxMediaStore {
  const files = new Map<string, SandboxMediaFile>();
  return {
    put(bytes, mimeType, filename) {
      const file = { id: newMediaId(), bytes, mimeType, sha256: hashOf(bytes), ...(filename ? { filename } : {}) };
      files.set(file.id, file);
      return file;
    },
    get: (id) => files.get(id),
    delete: (id) => files.delete(id),
  };
}

export function folderMediaStore(dir: string): SandboxMediaStore {
  ensurePrivateDir(dir);
  return {
    put(bytes, mimeType, filename) {
      const file = { id: newMediaId(), bytes, mimeType, sha256: hashOf(bytes), ...(filename ? { filename } : {}) };
      writeFileSync(join(dir, file.id), bytes, { mode: PRIVATE_FILE_MODE });
      const meta = { mimeType, sha256: file.sha256, ...(filename ? { filename } : {}) };
      writeFileSync(join(dir, `${file.id}.json`), JSON.stringify(meta), { mode: PRIVATE_FILE_MODE });
      return file;
    },
    get(id) {
      if (!isMediaId(id)) return undefined;
      try {
        const meta = JSON.parse(readFileSync(join(dir, `${id}.json`), 'utf8')) as Omit<
          SandboxMediaFile,
          'id' | 'bytes'
        >;
        return { id, bytes: readFileSync(join(dir, id)), ...meta };
      } catch {
        return undefined;
      }
    },
    delete(id) {
      if (!isMediaId(id)) return false;
      const had = this.get(id) !== undefined;
      rmSync(join(dir, id), { force: true });
      rmSync(join(dir, `${id}.json`), { force: true });
      return had;
    },
  };
}

export interface MediaEndpoints {
  readonly store: SandboxMediaStore;
  /** The sandbox's own address (the URLs it hands out point at it). */
  readonly url: () => string;
  /** Serve downloads at most this fast (a slow network, for tests); unset: at once. */
  readonly bytesPerSecond?: number | undefined;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const bearer = (req: IncomingMessage) => /^Bearer \S+$/.test(req.headers.authorization ?? '');
const unknownObject = (id: string) =>
  wireError({
    status: 400,
    code: 100,
    message: `Unsupported get request. Object with ID '${id.slice(0, 40)}' does not exist, cannot be loaded due to missing permissions, or does not support this operation`,
  });

/**
 * Answers the Cloud API's media requests: resolve (`GET /{version}/{media-id}`), delete
 * (`DELETE /{version}/{media-id}`), and the download of a resolved URL (`GET /sandbox-media/{id}`).
 * Resolves with false when the request is none of these.
 */
export async function handleMediaRequest(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  endpoints: MediaEndpoints,
): Promise<boolean> {
  const byId = /^\/v\d+\.\d+\/(\d+)$/.exec(path);
  const download = /^\/sandbox-media\/(\d+)$/.exec(path);
  if (!(byId && (req.method === 'GET' || req.method === 'DELETE')) && !(download && req.method === 'GET')) {
    return false;
  }
  if (!bearer(req)) {
    json(res, 401, wireError({ status: 401, code: 190, message: 'Invalid OAuth access token' }));
    return true;
  }
  const id = (byId ?? download)?.[1] ?? '';
  const file = endpoints.store.get(id);
  if (byId && req.method === 'DELETE') {
    if (!endpoints.store.delete(id)) json(res, 400, unknownObject(id));
    else json(res, 200, { success: true });
    return true;
  }
  if (!file) {
    json(res, byId ? 400 : 404, unknownObject(id));
    return true;
  }
  if (byId) {
    json(res, 200, {
      messaging_product: 'whatsapp',
      url: `${endpoints.url()}/sandbox-media/${file.id}`,
      mime_type: file.mimeType,
      sha256: file.sha256,
      file_size: String(file.bytes.length),
      id: file.id,
    });
    return true;
  }
  res.writeHead(200, { 'content-type': file.mimeType, 'content-length': file.bytes.length });
  await writeAtRate(res, file.bytes, endpoints.bytesPerSecond);
  return true;
}

/** Writes the bytes, at most `bytesPerSecond` of them a second when set (ten slices a second). */
async function writeAtRate(res: ServerResponse, bytes: Buffer, bytesPerSecond: number | undefined): Promise<void> {
  if (!bytesPerSecond) {
    res.end(bytes);
    return;
  }
  const slice = Math.max(1, Math.floor(bytesPerSecond / 10));
  for (let at = 0; at < bytes.length && !res.destroyed; at += slice) {
    res.write(bytes.subarray(at, at + slice));
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  res.end();
}
