import type { Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { HashingCounter } from './hashing-counter.js';
import { checkKey, type MediaStore, type PutOptions, type PutResult, type StoredBytes } from './media-store.js';

export interface S3StoreOptions {
  readonly bucket: string;
  /** An S3-compatible service's address; unset: AWS. */
  readonly endpoint?: string | undefined;
  /** Unset: the SDK's own (AWS_REGION, the profile). */
  readonly region?: string | undefined;
  readonly forcePathStyle: boolean;
  /** Put before every key: the configured prefix and the region (`parley/us/`). */
  readonly prefix: string;
}

/** Parts of a multipart upload: S3's smallest, and two in flight, so a put holds about 10 MB at most. */
const PART_SIZE = 5 * 1024 * 1024;
const PARTS_IN_FLIGHT = 2;

/**
 * Media in any S3-compatible store, shared by every node. Credentials come from the SDK's usual
 * sources (environment, profile, instance role). A body is streamed up in 5 MB parts (one plain
 * put when it is smaller), hashed and counted on its way; a failed upload is aborted, so nothing
 * is left of it. Checksums are sent only where an operation requires them: the SDK's default
 * trailing checksums are not understood by every S3-compatible service.
 */
export function createS3Store(options: S3StoreOptions): MediaStore {
  const client = new S3Client({
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    ...(options.region ? { region: options.region } : {}),
    forcePathStyle: options.forcePathStyle,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const { bucket } = options;
  const keyOf = (key: string) => `${options.prefix}${checkKey(key)}`;

  return {
    kind: 's3',
    where: `s3://${bucket}/${options.prefix}${options.endpoint ? ` at ${options.endpoint}` : ''}`,

    async put(key: string, body: Readable, putOptions: PutOptions = {}): Promise<PutResult> {
      const counter = new HashingCounter(putOptions.maxBytes);
      body.on('error', (err) => counter.destroy(err));
      body.pipe(counter);
      const upload = new Upload({
        client,
        params: {
          Bucket: bucket,
          Key: keyOf(key),
          Body: counter,
          ...(putOptions.contentType ? { ContentType: putOptions.contentType } : {}),
        },
        partSize: PART_SIZE,
        queueSize: PARTS_IN_FLIGHT,
        leavePartsOnError: false,
      });
      // The counter's own error (too large, the body's failure) is the one to tell.
      let failure: unknown;
      counter.on('error', (err) => {
        failure ??= err;
        void upload.abort().catch(() => {});
      });
      try {
        await upload.done();
      } catch (err) {
        body.destroy();
        throw failure ?? err;
      }
      if (failure) {
        // The upload may have completed with what arrived before the failure: nothing may stay.
        await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: keyOf(key) })).catch(() => {});
        throw failure;
      }
      return { size: counter.bytes, sha256: counter.digest() };
    },

    async get(key: string): Promise<StoredBytes | undefined> {
      try {
        const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: keyOf(key) }));
        if (!out.Body) return undefined;
        return { body: out.Body as Readable, size: Number(out.ContentLength ?? 0) };
      } catch (err) {
        if (err instanceof S3ServiceException && (err.name === 'NoSuchKey' || err.$metadata.httpStatusCode === 404)) {
          return undefined;
        }
        throw err;
      }
    },

    async delete(key: string): Promise<void> {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: keyOf(key) }));
    },

    async close(): Promise<void> {
      client.destroy();
    },
  };
}
