/** The settings of media (photos, voice notes, documents): where it is kept and for how long. A part of the list in settings.ts. */
import { atLeast, boolean, milliseconds, oneOf, positiveInt, type Setting, text, url } from './values.js';

export const media = {
  PARLEY_MEDIA_STORE: {
    type: oneOf(['folder', 's3'] as const),
    default: 'folder' as const,
    doc: 'where media (photos, voice notes, documents) is kept: `folder` (`<data>/media/<region>/`) or `s3` (any S3-compatible store, shared by every node); on PostgreSQL with `folder`, every node must share that folder',
  },
  PARLEY_MEDIA_S3_BUCKET: {
    type: text,
    default: undefined,
    doc: "bucket of the `s3` media store (required with it); credentials come from the AWS SDK's usual sources (`AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`, a profile, an instance role)",
  },
  PARLEY_MEDIA_S3_ENDPOINT: {
    type: url,
    default: undefined,
    shown: "unset: AWS's own",
    doc: 'address of an S3-compatible service (MinIO, R2, Ceph...), e.g. `https://s3.example.com`',
  },
  PARLEY_MEDIA_S3_REGION: {
    type: text,
    default: undefined,
    shown: "the SDK's (`AWS_REGION`, the profile)",
    doc: 'region of the bucket',
  },
  PARLEY_MEDIA_S3_FORCE_PATH_STYLE: {
    type: boolean,
    default: false,
    doc: 'address the bucket in the path (`https://host/bucket/key`) rather than the host name, as most S3-compatible services need',
  },
  PARLEY_MEDIA_S3_PREFIX: {
    type: text,
    default: '',
    shown: 'none',
    doc: 'first part of every object key (e.g. `parley/`), so deployments can share a bucket; the region follows',
  },
  PARLEY_MEDIA_RETENTION_DAYS: {
    type: positiveInt,
    default: 30,
    doc: 'media older than this many days is deleted; its address then answers 404',
  },
  PARLEY_MEDIA_SWEEP_MS: {
    type: atLeast(100),
    default: 3_600_000,
    note: '1 hour',
    doc: 'how often media past its retention is deleted, by one node of the region each time (at least 100)',
  },
  PARLEY_MEDIA_DOWNLOAD_RETRY_DELAYS_MS: {
    type: milliseconds,
    default: Object.freeze([1_000, 5_000, 30_000, 120_000]),
    doc: 'waits before each new try of an inbound media download from the provider; after the last, the media is marked unavailable and `message.received` goes out',
  },
  PARLEY_SANDBOX_MEDIA_BYTES_PER_SECOND: {
    type: positiveInt,
    default: undefined,
    shown: 'unset: at once',
    doc: 'the sandbox serves media downloads at most this fast, as a slow network would',
  },
} satisfies Record<string, Setting>;
