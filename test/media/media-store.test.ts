import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createMediaStore, mediaFolderOf } from '../../src/media/create-media-store.js';
import { type MediaStore, MediaTooLargeError, mediaKey } from '../../src/media/media-store.js';
import { startS3, type TestS3 } from '../helpers/s3.js';

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** A body arriving in pieces, as from a socket; `failAfter` bytes then an error. */
function body(bytes: Buffer, options: { chunk?: number; failAfter?: number } = {}): Readable {
  const chunk = options.chunk ?? 64 * 1024;
  return Readable.from(
    (async function* () {
      for (let at = 0; at < bytes.length; at += chunk) {
        if (options.failAfter !== undefined && at >= options.failAfter) throw new Error('the connection dropped');
        yield bytes.subarray(at, at + chunk);
      }
    })(),
  );
}

async function readAll(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

/** Every file under a folder, recursively (a failed put leaves none behind). */
const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));

describe.each(['folder', 's3'] as const)('the %s media store', (kind) => {
  let s3: TestS3 | undefined;
  let store: MediaStore;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'parley-media-'));
    if (kind === 's3') s3 = await startS3();
    store = await createMediaStore(loadConfig({}, { PARLEY_DATA_DIR: dataDir, ...s3?.env }), 'us');
    expect(store.kind).toBe(kind);
  });

  afterAll(async () => {
    await store.close();
    await s3?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('stores a stream, counting and hashing it on the way, and gives it back with its size', async () => {
    const bytes = randomBytes(300_000);
    const key = mediaKey('org_a', 'med_one');
    const put = await store.put(key, body(bytes), { contentType: 'image/jpeg' });
    expect(put).toEqual({ size: bytes.length, sha256: sha256(bytes) });
    const got = await store.get(key);
    expect(got?.size).toBe(bytes.length);
    expect(sha256(await readAll(got?.body ?? Readable.from([])))).toBe(sha256(bytes));
    if (kind === 'folder') {
      const file = join(mediaFolderOf(dataDir, 'us'), 'org_a', 'med_one');
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(statSync(join(mediaFolderOf(dataDir, 'us'), 'org_a')).mode & 0o777).toBe(0o700);
    }
  });

  it('streams a file larger than a multipart part through', async () => {
    const bytes = randomBytes(11 * 1024 * 1024);
    const key = mediaKey('org_a', 'med_big');
    expect(await store.put(key, body(bytes, { chunk: 1024 * 1024 }))).toEqual({
      size: bytes.length,
      sha256: sha256(bytes),
    });
    const got = await store.get(key);
    expect(got?.size).toBe(bytes.length);
    expect((await readAll(got?.body ?? Readable.from([]))).equals(bytes)).toBe(true);
  });

  it('refuses a body past its limit as it arrives, and keeps nothing of it', async () => {
    const key = mediaKey('org_a', 'med_toolarge');
    await expect(store.put(key, body(randomBytes(200_000)), { maxBytes: 100_000 })).rejects.toBeInstanceOf(
      MediaTooLargeError,
    );
    expect(await store.get(key)).toBeUndefined();
    if (kind === 'folder') expect(filesUnder(dataDir).filter((f) => f.includes('med_toolarge'))).toEqual([]);
  });

  it('keeps nothing of a body that fails part-way', async () => {
    const key = mediaKey('org_a', 'med_broken');
    await expect(store.put(key, body(randomBytes(400_000), { failAfter: 200_000 }))).rejects.toThrow(
      'the connection dropped',
    );
    expect(await store.get(key)).toBeUndefined();
    if (kind === 'folder') expect(filesUnder(dataDir).filter((f) => f.includes('med_broken'))).toEqual([]);
  });

  it('deletes, and deleting what is not there is no error', async () => {
    const key = mediaKey('org_b', 'med_gone');
    await store.put(key, body(Buffer.from('bye')));
    await store.delete(key);
    expect(await store.get(key)).toBeUndefined();
    await expect(store.delete(key)).resolves.toBeUndefined();
  });

  it('refuses a key that could leave its root', async () => {
    await expect(store.put('../etc/passwd', body(Buffer.from('x')))).rejects.toThrow('not a media key');
    expect(() => mediaKey('org_a', '..')).toThrow('not a media key');
  });
});

describe('the media store settings', () => {
  it('refuses S3 without a bucket, saying which setting is missing', async () => {
    await expect(createMediaStore(loadConfig({}, { PARLEY_MEDIA_STORE: 's3' }), 'us')).rejects.toThrow(
      'PARLEY_MEDIA_STORE=s3 needs PARLEY_MEDIA_S3_BUCKET',
    );
  });
});
