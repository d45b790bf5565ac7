/**
 * The media feature's public surface: the store of bytes (a folder or S3), the `media` rows, and
 * the verbs that keep and read files. Inbound downloads, the retention sweep and the media routes
 * live beside them.
 */
export { createMediaStore, mediaFolderOf } from './create-media-store.js';
export { type Media, type MediaRef, mediaRefOf, toMedia } from './media.model.js';
export {
  agentMayReadMedia,
  findMedia,
  findMediaById,
  findMediaByIds,
  insertMedia,
  markStored,
  markUnavailable,
  type NewMedia,
} from './media.repository.js';
export { type MediaDeps, type NewStoredMedia, openMedia, storeMedia } from './media.service.js';
export type { MediaSource, MediaState, MediaTable } from './media.tables.js';
export { type MediaReadDeps, type MediaReader, mediaHeaders, readMedia } from './media-read.service.js';
export { defineMediaRetention, type MediaRetentionDeps, sweepExpiredMedia } from './media-retention.js';
export {
  isMediaTooLarge,
  type MediaStore,
  MediaTooLargeError,
  mediaKey,
  type PutOptions,
  type PutResult,
  type StoredBytes,
} from './media-store.js';
export { safeFilename, type Upload, uploadMedia } from './media-upload.service.js';
export { findProviderMediaId, saveProviderMediaId } from './provider-media.repository.js';
export { fitsKind, MAX_UPLOAD_BYTES, UPLOAD_TYPES, type UploadKind, type UploadType } from './upload-types.js';
