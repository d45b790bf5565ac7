import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { classifyProviderError, type ProviderResult } from './provider.js';
import { providerAgent } from './provider-agent.js';

/**
 * The provider's requests beside a send: a file uploaded for a number (`POST /{phone-number-id}/media`,
 * multipart, streamed: a 100 MB document never sits whole in memory) and a message marked read,
 * with the typing indicator when asked (`POST /{phone-number-id}/messages`, `status: read`).
 */
export interface ProviderRequests {
  uploadMedia(input: MediaUpload): Promise<UploadResult>;
  markRead(input: ReadReceipt): Promise<RequestResult>;
  close(): Promise<void>;
}

export interface MediaUpload {
  readonly phoneNumberId: string;
  readonly accessToken: string;
  readonly mimeType: string;
  readonly filename: string;
  readonly size: number;
  readonly body: Readable;
}

export interface ReadReceipt {
  readonly phoneNumberId: string;
  readonly accessToken: string;
  /** The provider's ID of the inbound message read. */
  readonly messageId: string;
  readonly typing: boolean;
}

export type RequestFailure = Extract<ProviderResult, { ok: false }>;
export type UploadResult = { readonly ok: true; readonly id: string } | RequestFailure;
export type RequestResult = { readonly ok: true } | RequestFailure;

/** A multipart field's header, its name and value quoted safely. */
const quoted = (value: string) => value.replace(/["\r\n\\]/g, '_');

/** The body of an upload: `messaging_product`, `type`, then the file, streamed, with its exact length. */
function multipart(input: MediaUpload): { body: Readable; length: number; contentType: string } {
  const boundary = `----parley${randomBytes(12).toString('hex')}`;
  const field = (name: string, value: string) =>
    `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const head = Buffer.from(
    field('messaging_product', 'whatsapp') +
      field('type', input.mimeType) +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${quoted(input.filename)}"\r\n` +
      `Content-Type: ${input.mimeType}\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  async function* parts() {
    yield head;
    for await (const chunk of input.body) yield chunk as Buffer;
    yield tail;
  }
  return {
    body: Readable.from(parts(), { objectMode: false }),
    length: head.length + input.size + tail.length,
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
}

export function createProviderRequests(options: {
  baseUrl: string;
  version: string;
  timeoutMs: number;
}): ProviderRequests {
  const dispatcher = providerAgent(options.timeoutMs, 32);
  const base = options.baseUrl.replace(/\/$/, '');
  const url = (phoneNumberId: string, what: string) =>
    `${base}/${options.version}/${encodeURIComponent(phoneNumberId)}/${what}`;

  async function call(
    target: string,
    accessToken: string,
    body: { data: string | Readable; length?: number; contentType: string },
  ): Promise<{ ok: true; parsed: Record<string, unknown> | undefined } | RequestFailure> {
    let status: number;
    let parsed: Record<string, unknown> | undefined;
    try {
      const res = await request(target, {
        method: 'POST',
        dispatcher,
        headers: {
          authorization: `Bearer ${accessToken}`,
          'content-type': body.contentType,
          ...(body.length !== undefined ? { 'content-length': String(body.length) } : {}),
        },
        body: body.data,
      });
      status = res.statusCode;
      const text = await res.body.text();
      try {
        const value: unknown = text ? JSON.parse(text) : undefined;
        parsed = typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
      } catch {
        parsed = undefined;
      }
    } catch (err) {
      return {
        ok: false,
        kind: 'unavailable',
        code: null,
        message: `could not be reached (${(err as Error).message})`,
      };
    }
    if (status >= 200 && status < 300) return { ok: true, parsed };
    return classifyProviderError(status, parsed) as RequestFailure;
  }

  return {
    async uploadMedia(input) {
      const form = multipart(input);
      const out = await call(url(input.phoneNumberId, 'media'), input.accessToken, {
        data: form.body,
        length: form.length,
        contentType: form.contentType,
      });
      if (!out.ok) return out;
      const id = out.parsed?.id;
      if (typeof id !== 'string' || !id) {
        return { ok: false, kind: 'unavailable', code: null, message: 'answered an upload without a media ID' };
      }
      return { ok: true, id };
    },

    async markRead(input) {
      const body = {
        messaging_product: 'whatsapp',
        status: 'read',
        message_id: input.messageId,
        ...(input.typing ? { typing_indicator: { type: 'text' } } : {}),
      };
      const out = await call(url(input.phoneNumberId, 'messages'), input.accessToken, {
        data: JSON.stringify(body),
        contentType: 'application/json',
      });
      return out.ok ? { ok: true } : out;
    },

    close: () => dispatcher.close(),
  };
}
