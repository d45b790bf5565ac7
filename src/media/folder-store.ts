import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { open, readdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ensurePrivateDir, PRIVATE_FILE_MODE } from '../shared/private-files.js';
import { HashingCounter } from './hashing-counter.js';
import { checkKey, type MediaStore, type PutOptions, type PutResult, type StoredBytes } from './media-store.js';

/**
 * Media in a folder (`<data>/media/<region>/<orgId>/<mediaId>`), private as the rest of the data
 * folder (folders 0700, files 0600). A file is written beside its place under a random name and
 * renamed into it once complete, so a reader, a crash or a failed put never sees part of one (the
 * next put of the key removes what a killed process left).
 */
export function createFolderStore(root: string): MediaStore {
  const pathOf = (key: string) => join(root, ...checkKey(key).split('/'));
  return {
    kind: 'folder',
    where: root,

    async put(key: string, body: Readable, options: PutOptions = {}): Promise<PutResult> {
      const path = pathOf(key);
      ensurePrivateDir(dirname(path));
      // What a put of this key left when its process was killed: a job runs once at a time, so
      // no other put of the key is under way (media IDs are never reused).
      const leftovers = (await readdir(dirname(path))).filter(
        (name) => name.startsWith(`${basename(path)}.`) && name.endsWith('.part'),
      );
      for (const name of leftovers) await rm(join(dirname(path), name), { force: true });
      const partial = `${path}.${randomBytes(6).toString('hex')}.part`;
      const counter = new HashingCounter(options.maxBytes);
      try {
        await pipeline(body, counter, createWriteStream(partial, { flags: 'wx', mode: PRIVATE_FILE_MODE }));
        await rename(partial, path);
      } catch (err) {
        await rm(partial, { force: true });
        throw err;
      }
      return { size: counter.bytes, sha256: counter.digest() };
    },

    async get(key: string): Promise<StoredBytes | undefined> {
      let handle: Awaited<ReturnType<typeof open>>;
      try {
        handle = await open(pathOf(key), 'r');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw err;
      }
      try {
        const { size } = await handle.stat();
        // The stream owns the handle from here: it closes it at its end or when destroyed.
        return { body: handle.createReadStream(), size };
      } catch (err) {
        await handle.close();
        throw err;
      }
    },

    async delete(key: string): Promise<void> {
      await rm(pathOf(key), { force: true });
    },

    async close(): Promise<void> {},
  };
}
