import type { Readable } from 'node:stream';
import { request } from 'undici';
import { sha256Hex } from './inbound-kinds.js';
import { providerAgent } from './provider-agent.js';

/**
 * The provider's media endpoints, as Parley downloads what users send: a media ID is resolved
 * (`GET /{version}/{media-id}` → a short-lived URL, the type, the SHA-256, the size), then the URL
 * is fetched with the same Bearer token. The sandbox serves the same endpoints.
 */
export interface ProviderMedia {
  resolve(input: { mediaId: string; accessToken: string; phoneNumberId: string }): Promise<ResolvedMedia>;
  /** The bytes behind a resolved URL; throws `MediaFetchError` when they cannot be had. */
  download(url: string, accessToken: string): Promise<{ body: Readable; size: number | undefined }>;
  close(): Promise<void>;
}

export type ResolvedMedia =
  | {
      readonly ok: true;
      readonly url: string;
      readonly mimeType: string | undefined;
      readonly sha256: string | undefined;
      readonly size: number | undefined;
    }
  | MediaFailure;

/** Why the provider gave no file; `permanent`: asking again will not help (an unknown or expired media ID). */
export interface MediaFailure {
  readonly ok: false;
  readonly permanent: boolean;
  readonly message: string;
}

export class MediaFetchError extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
  ) {
    super(message);
    this.name = 'MediaFetchError';
  }
}

/** Codes of a media ID the provider does not know (any more): unknown object, invalid parameter, media download error. */
const GONE_CODES = new Set([100, 131009, 131052, 131053]);

export function createProviderMedia(options: { baseUrl: string; version: string; timeoutMs: number }): ProviderMedia {
  // Its own pool: a long download never holds a connection the sends need.
  const dispatcher = providerAgent(options.timeoutMs, 32);
  const base = options.baseUrl.replace(/\/$/, '');
  return {
    async resolve({ mediaId, accessToken, phoneNumberId }) {
      const url = `${base}/${options.version}/${encodeURIComponent(mediaId)}?phone_number_id=${encodeURIComponent(phoneNumberId)}`;
      let status: number;
      let body: Record<string, unknown> | undefined;
      try {
        const res = await request(url, {
          method: 'GET',
          dispatcher,
          headers: { authorization: `Bearer ${accessToken}` },
        });
        status = res.statusCode;
        const text = await res.body.text();
        try {
          const parsed: unknown = JSON.parse(text);
          body = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
        } catch {
          body = undefined;
        }
      } catch (err) {
        return {
          ok: false,
          permanent: false,
          message: `the provider could not be reached (${(err as Error).message})`,
        };
      }
      if (status === 200 && typeof body?.url === 'string') {
        const size = Number(body.file_size);
        return {
          ok: true,
          url: body.url,
          mimeType: typeof body.mime_type === 'string' ? body.mime_type : undefined,
          sha256: sha256Hex(body.sha256),
          size: Number.isSafeInteger(size) && size >= 0 ? size : undefined,
        };
      }
      const error =
        typeof body?.error === 'object' && body.error !== null ? (body.error as Record<string, unknown>) : {};
      const code = typeof error.code === 'number' ? error.code : undefined;
      const message = typeof error.message === 'string' ? error.message.slice(0, 300) : `HTTP ${status}`;
      const permanent = status === 404 || (code !== undefined && GONE_CODES.has(code));
      return { ok: false, permanent, message: `the provider answered ${status}: ${message}` };
    },

    async download(url, accessToken) {
      let res: Awaited<ReturnType<typeof request>>;
      try {
        res = await request(url, { method: 'GET', dispatcher, headers: { authorization: `Bearer ${accessToken}` } });
      } catch (err) {
        throw new MediaFetchError(`the file could not be fetched (${(err as Error).message})`, false);
      }
      if (res.statusCode !== 200) {
        await res.body.dump();
        throw new MediaFetchError(`the file's address answered ${res.statusCode}`, res.statusCode === 404);
      }
      const length = Number(res.headers['content-length']);
      return { body: res.body, size: Number.isSafeInteger(length) ? length : undefined };
    },

    close: () => dispatcher.close(),
  };
}
