import { type Dispatcher, request } from 'undici';
import {
  type ListMessage,
  type ReplyButton,
  richWireBody,
  type WireMedia,
  wireMediaObject,
} from './outbound-content.js';
import { providerAgent } from './provider-agent.js';

/** What Parley asks the provider to send, already validated and normalized. */
export interface ProviderSend {
  readonly phoneNumberId: string;
  readonly accessToken: string;
  /** E.164 recipient. */
  readonly to: string;
  readonly content:
    | {
        readonly kind: 'text';
        /** The body, or a file's caption. */
        readonly text: string;
        /** At most one of these three (outbound-content.ts). */
        readonly media?: WireMedia;
        readonly buttons?: readonly ReplyButton[];
        readonly list?: ListMessage;
        /** The provider's ID of a message to quote. */
        readonly replyTo?: string;
      }
    | {
        readonly kind: 'template';
        readonly name: string;
        readonly language: string;
        readonly header: readonly string[];
        readonly body: readonly string[];
        /** The file of a template whose header is an image, a video or a document. */
        readonly headerMedia?: WireMedia;
      };
  /** Our own message ID; comes back on every status webhook of the message. */
  readonly callbackData: string;
}

/**
 * How the provider answered. `rejected` and `throttled` are the caller's business (400);
 * `config` (bad token) and `unavailable` (unreachable, 5xx: not sent) are ours (502); `unknown`
 * (no answer in time, the connection lost after the request went out, a 2xx without a message ID)
 * is a 502 too, but the provider may have accepted the message.
 */
export type ProviderResult =
  | { readonly ok: true; readonly messageId: string }
  | {
      readonly ok: false;
      readonly kind: 'rejected' | 'throttled' | 'config' | 'unavailable' | 'unknown';
      readonly code: number | null;
      readonly message: string;
    };

/** Connection failures that happen before any byte of the request is sent: the message did not go out. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** The request went out and the answer did not come (or stopped coming) in time. */
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/**
 * An answer's body, read in full within `ms` of its headers: undici's `bodyTimeout` bounds each
 * pause in it, this the whole (a body dripped a byte at a time would otherwise never end).
 */
async function bodyWithin(body: Dispatcher.ResponseData['body'], ms: number): Promise<string> {
  const timer = setTimeout(() => {
    body.destroy(
      Object.assign(new Error(`the answer's body took longer than ${ms} ms`), { code: 'UND_ERR_BODY_TIMEOUT' }),
    );
  }, ms);
  try {
    return await body.text();
  } finally {
    clearTimeout(timer);
  }
}

function errorCodeOf(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

export interface MessagingProvider {
  send(input: ProviderSend): Promise<ProviderResult>;
  close(): Promise<void>;
}

export interface CloudProviderOptions {
  readonly baseUrl: string;
  readonly version: string;
  readonly timeoutMs: number;
}

const THROTTLE_CODES = new Set([130429, 131056, 4, 80007]);
const CONFIG_CODES = new Set([190, 0]);
const TROUBLE_CODES = new Set([1, 2, 131000, 131016, 131057]);

interface ProviderErrorBody {
  error?: { message?: unknown; code?: unknown; error_data?: { details?: unknown } };
  messages?: { id?: unknown }[];
}

/** Classifies a provider error by its `error.code`, the HTTP status only as a fallback. */
export function classifyProviderError(httpStatus: number, body: ProviderErrorBody | undefined): ProviderResult {
  const code = typeof body?.error?.code === 'number' ? body.error.code : null;
  const details = body?.error?.error_data?.details;
  const message =
    typeof details === 'string' ? details : typeof body?.error?.message === 'string' ? body.error.message : '';
  if (code !== null) {
    if (THROTTLE_CODES.has(code)) return { ok: false, kind: 'throttled', code, message };
    if (CONFIG_CODES.has(code)) return { ok: false, kind: 'config', code, message };
    if (TROUBLE_CODES.has(code) || httpStatus >= 500) {
      return { ok: false, kind: 'unavailable', code, message: `HTTP ${httpStatus}, code ${code}` };
    }
    return { ok: false, kind: 'rejected', code, message };
  }
  if (httpStatus === 429) return { ok: false, kind: 'throttled', code, message };
  if (httpStatus === 401) return { ok: false, kind: 'config', code, message };
  if (httpStatus >= 400 && httpStatus < 500) return { ok: false, kind: 'rejected', code, message };
  return { ok: false, kind: 'unavailable', code, message: message || `HTTP ${httpStatus}` };
}

/** The provider's wire body of a send. */
export function toWireBody(input: ProviderSend): Record<string, unknown> {
  const common = {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: input.to,
    biz_opaque_callback_data: input.callbackData,
  };
  const c = input.content;
  if (c.kind === 'text') {
    if (c.media === undefined && c.buttons === undefined && c.list === undefined && c.replyTo === undefined) {
      return { ...common, type: 'text', text: { preview_url: false, body: c.text } };
    }
    return {
      ...common,
      ...(c.replyTo !== undefined ? { context: { message_id: c.replyTo } } : {}),
      ...richWireBody(c.text, c),
    };
  }
  const param = (text: string) => ({ type: 'text', text });
  const components: Record<string, unknown>[] = [];
  if (c.headerMedia) {
    const kind = c.headerMedia.kind;
    components.push({ type: 'header', parameters: [{ type: kind, [kind]: wireMediaObject(c.headerMedia) }] });
  } else if (c.header.length > 0) components.push({ type: 'header', parameters: c.header.map(param) });
  if (c.body.length > 0) components.push({ type: 'body', parameters: c.body.map(param) });
  return {
    ...common,
    type: 'template',
    template: { name: c.name, language: { code: c.language }, ...(components.length ? { components } : {}) },
  };
}

/** The Cloud API adapter; the sandbox speaks the same wire format, so it serves both. */
export function createCloudProvider(options: CloudProviderOptions): MessagingProvider {
  const dispatcher = providerAgent(options.timeoutMs, 256);
  const base = options.baseUrl.replace(/\/$/, '');
  return {
    async send(input) {
      const url = `${base}/${options.version}/${encodeURIComponent(input.phoneNumberId)}/messages`;
      let status: number;
      let parsed: ProviderErrorBody | undefined;
      try {
        const res = await request(url, {
          method: 'POST',
          dispatcher,
          headers: { authorization: `Bearer ${input.accessToken}`, 'content-type': 'application/json' },
          body: JSON.stringify(toWireBody(input)),
        });
        status = res.statusCode;
        const text = await bodyWithin(res.body, options.timeoutMs);
        try {
          parsed = text ? (JSON.parse(text) as ProviderErrorBody) : undefined;
        } catch {
          parsed = undefined;
        }
      } catch (err) {
        const code = errorCodeOf(err);
        if (code !== undefined && TIMEOUT_CODES.has(code)) {
          return { ok: false, kind: 'unknown', code: null, message: `no answer within ${options.timeoutMs} ms` };
        }
        if (code !== undefined && NOT_SENT_CODES.has(code)) {
          return { ok: false, kind: 'unavailable', code: null, message: 'could not be reached' };
        }
        return { ok: false, kind: 'unknown', code: null, message: 'the connection failed after the request was sent' };
      }
      const id = parsed?.messages?.[0]?.id;
      if (status >= 200 && status < 300 && typeof id === 'string') return { ok: true, messageId: id };
      if (status >= 200 && status < 300) {
        return { ok: false, kind: 'unknown', code: null, message: 'answered without a message ID' };
      }
      return classifyProviderError(status, parsed);
    },
    close: () => dispatcher.close(),
  };
}
