import type { Readable } from 'node:stream';

/**
 * Where the bytes of media live, behind one small interface: a folder of the data folder (the
 * embedded default) or any S3-compatible store (several nodes share it). A store knows keys and
 * bytes only; what a file is (its type, name, organization) is a row of the `media` table.
 *
 * Keys are made by `mediaKey()` (`<orgId>/<mediaId>`); a store puts them under its own root, which
 * names the region, so regions sharing a folder or a bucket never meet.
 */
export interface MediaStore {
  readonly kind: 'folder' | 's3';
  /** Where it keeps media, for the start-up log (a folder, or a bucket and its endpoint). */
  readonly where: string;
  /**
   * Streams `body` into the store under `key`, counting its size and hashing it as it goes (the
   * bytes never sit whole in memory). Resolves once the whole file is stored; on any error (the
   * body's, the store's, or `maxBytes` passed: `MediaTooLargeError`) nothing is left under `key`
   * nor beside it, and the error is thrown. Storing a key again replaces its bytes.
   */
  put(key: string, body: Readable, options?: PutOptions): Promise<PutResult>;
  /** The bytes under `key` as a stream, with their size; undefined when nothing is stored there. */
  get(key: string): Promise<StoredBytes | undefined>;
  /** Removes what is under `key`; nothing there is not an error. */
  delete(key: string): Promise<void>;
  close(): Promise<void>;
}

export interface PutOptions {
  /** Stored with the object where the store keeps such a thing (S3's Content-Type). */
  readonly contentType?: string;
  /** More bytes than this fail the put with `MediaTooLargeError` as soon as they arrive. */
  readonly maxBytes?: number;
}

export interface PutResult {
  readonly size: number;
  /** Lower-case hex SHA-256 of the bytes stored. */
  readonly sha256: string;
}

export interface StoredBytes {
  readonly body: Readable;
  readonly size: number;
}

/** A put refused because the body ran past its `maxBytes`; nothing was kept. */
export class MediaTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`the file is larger than ${maxBytes} bytes`);
    this.name = 'MediaTooLargeError';
  }
}

export const isMediaTooLarge = (err: unknown): err is MediaTooLargeError => err instanceof MediaTooLargeError;

/** Keys are `<orgId>/<mediaId>`: IDs of letters, digits and `_` (nothing a path or a bucket could read otherwise). */
const KEY = /^[A-Za-z0-9_-]{1,64}(\/[A-Za-z0-9_-]{1,64}){1,3}$/;

export function mediaKey(orgId: string, mediaId: string): string {
  return checkKey(`${orgId}/${mediaId}`);
}

/** A key a store accepts; anything else is a bug of the caller, thrown as such. */
export function checkKey(key: string): string {
  if (!KEY.test(key)) throw new Error(`not a media key: ${JSON.stringify(key.slice(0, 80))}`);
  return key;
}
