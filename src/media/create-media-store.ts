import { join } from 'node:path';
import type { Config, Region } from '../config.js';
import { ConfigError } from '../config.js';
import { createFolderStore } from './folder-store.js';
import type { MediaStore } from './media-store.js';

/** The folder of the folder store, in the data folder: one per region. */
export const mediaFolderOf = (dataDir: string, region: Region) => join(dataDir, 'media', region);

/**
 * The region's media store, as configured: the folder (`<data>/media/<region>/`) or S3 (keys
 * under `<PARLEY_MEDIA_S3_PREFIX><region>/`). The AWS SDK is loaded only when S3 is configured:
 * the embedded default neither pays for it at start-up nor hears its warnings.
 */
export async function createMediaStore(config: Config, region: Region): Promise<MediaStore> {
  const { media } = config;
  if (media.store === 'folder') return createFolderStore(mediaFolderOf(config.dataDir, region));
  const { bucket, endpoint, region: s3Region, forcePathStyle, prefix } = media.s3;
  if (!bucket) throw new ConfigError('PARLEY_MEDIA_STORE=s3 needs PARLEY_MEDIA_S3_BUCKET, the bucket to keep media in');
  const { createS3Store } = await import('./s3-store.js');
  return createS3Store({ bucket, endpoint, region: s3Region, forcePathStyle, prefix: `${prefix}${region}/` });
}
