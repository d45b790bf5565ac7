/**
 * The files Parley accepts for sending, as the provider accepts them: each type with its size
 * limit and the kind of message it can go out as. The bytes decide (sniffed): `SNIFFED_AS` lists
 * what the sniffer may call each type.
 */

const MB = 1024 * 1024;

export type UploadKind = 'image' | 'video' | 'audio' | 'document';

export interface UploadType {
  readonly kind: UploadKind;
  readonly maxBytes: number;
}

const OFFICE = [
  'application/msword',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.ms-excel',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'application/vnd.ms-powerpoint',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation',
];

export const UPLOAD_TYPES: Readonly<Record<string, UploadType>> = Object.freeze({
  'image/jpeg': { kind: 'image', maxBytes: 5 * MB },
  'image/png': { kind: 'image', maxBytes: 5 * MB },
  'video/mp4': { kind: 'video', maxBytes: 16 * MB },
  'video/3gpp': { kind: 'video', maxBytes: 16 * MB },
  'audio/aac': { kind: 'audio', maxBytes: 16 * MB },
  'audio/amr': { kind: 'audio', maxBytes: 16 * MB },
  'audio/mpeg': { kind: 'audio', maxBytes: 16 * MB },
  'audio/mp4': { kind: 'audio', maxBytes: 16 * MB },
  'audio/ogg': { kind: 'audio', maxBytes: 16 * MB },
  'application/pdf': { kind: 'document', maxBytes: 100 * MB },
  'text/plain': { kind: 'document', maxBytes: 100 * MB },
  ...Object.fromEntries(OFFICE.map((t) => [t, { kind: 'document', maxBytes: 100 * MB }])),
});

/** The largest file of any type: what a multipart upload may carry at all. */
export const MAX_UPLOAD_BYTES = Math.max(...Object.values(UPLOAD_TYPES).map((t) => t.maxBytes));

/** What the sniffer may call a file of each type (its own name first); `null`: no signature (plain text). */
export const SNIFFED_AS: Readonly<Record<string, readonly (string | null)[]>> = Object.freeze({
  'image/jpeg': ['image/jpeg'],
  'image/png': ['image/png'],
  'video/mp4': ['video/mp4', 'video/quicktime'],
  'video/3gpp': ['video/3gpp', 'video/mp4'],
  'audio/aac': ['audio/aac'],
  'audio/amr': ['audio/amr'],
  'audio/mpeg': ['audio/mpeg'],
  'audio/mp4': ['audio/mp4', 'audio/x-m4a', 'video/mp4', 'audio/m4a'],
  'audio/ogg': ['audio/ogg', 'audio/opus'],
  'application/pdf': ['application/pdf'],
  'text/plain': [null],
  'application/msword': ['application/x-cfb'],
  'application/vnd.ms-excel': ['application/x-cfb'],
  'application/vnd.ms-powerpoint': ['application/x-cfb'],
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': [
    'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    'application/zip',
  ],
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': [
    'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
    'application/zip',
  ],
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': [
    'application/vnd.openxmlformats-officedocument.presentationml.presentation',
    'application/zip',
  ],
});

/** Whether a stored file of this type can go out as a message of this kind. */
export const fitsKind = (mimeType: string, kind: string): boolean => UPLOAD_TYPES[mimeType]?.kind === kind;
