import { createHash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { MediaTooLargeError } from './media-store.js';

/**
 * A pass-through that hashes (SHA-256) and counts the bytes flowing to a store, and fails with
 * `MediaTooLargeError` on the first chunk past `maxBytes`, so an oversized body is refused while it
 * arrives rather than once stored.
 */
export class HashingCounter extends Transform {
  private readonly hash = createHash('sha256');
  /** Bytes so far (not `size`: the S3 upload would read that as the length of the body). */
  bytes = 0;

  constructor(private readonly maxBytes = Number.POSITIVE_INFINITY) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      done(new MediaTooLargeError(this.maxBytes));
      return;
    }
    this.hash.update(chunk);
    done(null, chunk);
  }

  /** The hex digest; once the stream has ended. */
  digest(): string {
    return this.hash.digest('hex');
  }
}
