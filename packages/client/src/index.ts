/**
 * @parley/client: a small typed client of the Parley API, for Node 20+ and browsers. The types come
 * from the API's own /api/openapi.json (openapi-typescript, src/openapi.ts); the client itself
 * needs nothing but `fetch` and Web Crypto.
 */
import type { components, operations } from './openapi.js';

export type { components, operations, paths } from './openapi.js';
export { type ParleyEvent, verifyEvent, WebhookVerificationError } from './verify.js';

type Schemas = components['schemas'];
export type EndUser = Schemas['EndUser'];
export type EndUserCreate = Schemas['EndUserCreateRequest'];
export type EndUserPatch = Schemas['EndUserPatch'];
export type EndUserBatch = Schemas['EndUserBatchRequest'];
export type EndUserBatchResult = Schemas['EndUserBatchResult'];
export type ChannelSendRequest = Schemas['ChannelSendRequest'];
export type ChannelSendResponse = Schemas['ChannelSendResponse'];
export type Message = Schemas['Message'];
export type TriggerStartRequest = Schemas['TriggerStartRequest'];
export type TriggerStartResponse = Schemas['TriggerStartResponse'];
export type Conversation = Schemas['Conversation'];
export type ConversationMessage = Schemas['ConversationMessage'];
export type Campaign = Schemas['Campaign'];
export type Delivery = Schemas['Delivery'];
export type CampaignWebhookRequest = Schemas['CampaignWebhookRequest'];
export type CampaignWebhookResponse = Schemas['CampaignWebhookResponse'];
export type SandboxInboundRequest = Schemas['SandboxInboundRequest'];
export type HandoffRequest = Schemas['HandoffRequest'];
export type UploadedMedia = Schemas['UploadedMedia'];
export type ReadReceiptResponse = Schemas['ReadReceiptResponse'];

/** A file fetched with `media.download`: its bytes as a stream, and what the API says of them. */
export interface DownloadedMedia {
  readonly body: ReadableStream<Uint8Array>;
  readonly mimeType: string;
  readonly size: number;
  /** Lower-case hex SHA-256 (the ETag), when given. */
  readonly sha256: string | undefined;
  /** The file name the API serves it under. */
  readonly filename: string | undefined;
}

export interface UploadInit {
  /** The file name to keep (default: the Blob's own name, else `file`). */
  readonly filename?: string;
  /** The declared type (default: the Blob's own type); the API sniffs the bytes either way. */
  readonly type?: string;
}

type Query<Op extends keyof operations> = operations[Op] extends { parameters: { query?: infer Q } }
  ? NonNullable<Q>
  : never;
type Ok<Op extends keyof operations> = operations[Op] extends {
  responses: infer R;
}
  ? R extends Record<number, unknown>
    ? {
        [S in keyof R]: S extends 200 | 201 | 202
          ? R[S] extends { content: { 'application/json': infer T } }
            ? T
            : never
          : never;
      }[keyof R]
    : never
  : never;

export type EndUserListQuery = Query<'listEndUsers'>;
export type ConversationListQuery = Query<'listConversations'>;

/** Every failed call: the HTTP status, the API's sentence, its `code` (end-user routes), the request ID. */
export class ParleyError extends Error {
  readonly status: number;
  /** The API's error code (end-user routes: `NOT_FOUND`, `DUPLICATE_ENDUSER`...); undefined on other routes. */
  readonly code: string | undefined;
  readonly requestId: string | undefined;
  /** Seconds the API asked to wait (429, 503), when it said. */
  readonly retryAfter: number | undefined;
  /** The parsed error body. */
  readonly body: unknown;

  constructor(
    status: number,
    message: string,
    init: { code?: string; requestId?: string; retryAfter?: number; body?: unknown } = {},
  ) {
    super(message);
    this.name = 'ParleyError';
    this.status = status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
    this.body = init.body;
  }
}

export interface RetryOptions {
  /** Retries after the first attempt (default 3); 0 turns retrying off. */
  readonly retries?: number;
  /** Longest wait before one retry, in ms (default 60,000: a 429 asks for 60 s). */
  readonly maxDelayMs?: number;
  /** First backoff after a 502, a 503 or a network error, doubled each time (default 500 ms). */
  readonly backoffMs?: number;
}

export interface ClientOptions {
  /** The region's base address, e.g. https://us.parley.example.com or http://127.0.0.1:3000. */
  readonly baseUrl: string;
  /** An API key of that region. */
  readonly apiKey: string;
  readonly retry?: RetryOptions;
  /** A fetch implementation (default: the global one). */
  readonly fetch?: typeof fetch;
}

export interface CallOptions {
  /** The Idempotency-Key of a send, trigger or campaign post (default: one made for this call, reused on its retries). */
  readonly idempotencyKey?: string;
  readonly signal?: AbortSignal;
}

interface Request {
  readonly method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  readonly path: string;
  readonly query?: Record<string, unknown> | undefined;
  readonly body?: unknown;
  /** A multipart body instead of JSON (an upload). */
  readonly form?: FormData | undefined;
  /** Safe to send again after a 502, 503 or network error: GETs and calls with an Idempotency-Key. */
  readonly idempotencyKey?: string | undefined;
  readonly signal?: AbortSignal | undefined;
}

const enc = encodeURIComponent;
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });

function newIdempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}

export class ParleyClient {
  private readonly baseUrl: string;
  private readonly apiKey: string;
  private readonly fetchImpl: typeof fetch;
  private readonly retries: number;
  private readonly maxDelayMs: number;
  private readonly backoffMs: number;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.apiKey = options.apiKey;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.retries = options.retry?.retries ?? 3;
    this.maxDelayMs = options.retry?.maxDelayMs ?? 60_000;
    this.backoffMs = options.retry?.backoffMs ?? 500;
  }

  /** Messages on a channel. */
  readonly channels = {
    /** Sends a template (any time) or free text (inside the 24-hour window) from an agent's number. */
    send: (body: ChannelSendRequest, options: CallOptions = {}): Promise<ChannelSendResponse> =>
      this.request({
        method: 'POST',
        path: '/api/channels/send',
        body,
        idempotencyKey: options.idempotencyKey ?? newIdempotencyKey(),
        signal: options.signal,
      }),
  };

  readonly messages = {
    /** A sent message and its statuses, by the provider's message ID (or Parley's `msg_...`). */
    get: (messageId: string, options: CallOptions = {}): Promise<Message> =>
      this.request<Ok<'getMessage'>>({
        method: 'GET',
        path: `/api/messages/${enc(messageId)}`,
        signal: options.signal,
      }).then((r) => r.message),
    /** Marks a received message read at the provider; `typing: true` shows the typing indicator too. */
    read: (
      messageId: string,
      body: { typing?: boolean } = {},
      options: CallOptions = {},
    ): Promise<ReadReceiptResponse> =>
      this.request({ method: 'POST', path: `/api/messages/${enc(messageId)}/read`, body, signal: options.signal }),
  };

  /** Files: uploads to send (`message.media.id`), and downloads of what users sent. */
  readonly media = {
    /**
     * Uploads a file to send. In Node, `fs.openAsBlob(path)` gives a Blob read from the disk as it
     * is sent, so a large document never sits whole in memory.
     */
    upload: (file: Blob | Uint8Array, init: UploadInit = {}, options: CallOptions = {}): Promise<UploadedMedia> => {
      const blob =
        file instanceof Blob
          ? file
          : new Blob([new Uint8Array(file)], { type: init.type ?? 'application/octet-stream' });
      const typed = init.type && blob.type !== init.type ? new Blob([blob], { type: init.type }) : blob;
      const name = init.filename ?? (typeof File !== 'undefined' && file instanceof File ? file.name : 'file');
      const form = new FormData();
      form.set('file', typed, name);
      return this.request({ method: 'POST', path: '/api/media', form, signal: options.signal });
    },
    /** The bytes of a file (`media.id` of a message, `media.url` of `message.received`), as a stream. */
    download: async (mediaId: string, options: CallOptions = {}): Promise<DownloadedMedia> => {
      const res = await this.exchange({ method: 'GET', path: `/api/media/${enc(mediaId)}`, signal: options.signal });
      if (!res.body) throw new ParleyError(res.status, 'The answer carried no bytes.');
      const etag = res.headers.get('etag');
      const name = /filename="([^"]*)"/.exec(res.headers.get('content-disposition') ?? '')?.[1];
      return {
        body: res.body,
        mimeType: res.headers.get('content-type') ?? 'application/octet-stream',
        size: Number(res.headers.get('content-length') ?? 0),
        sha256: etag ? etag.replace(/"/g, '') : undefined,
        filename: name,
      };
    },
  };

  readonly triggers = {
    /** Starts (or joins) a conversation at an agent's trigger point. */
    start: (
      agentId: string,
      triggerId: string,
      body: TriggerStartRequest,
      options: CallOptions = {},
    ): Promise<TriggerStartResponse> =>
      this.request({
        method: 'POST',
        path: `/api/triggers/${enc(agentId)}/${enc(triggerId)}`,
        body,
        idempotencyKey: options.idempotencyKey ?? newIdempotencyKey(),
        signal: options.signal,
      }),
  };

  readonly endUsers = {
    list: (query: EndUserListQuery = {}, options: CallOptions = {}): Promise<Ok<'listEndUsers'>> =>
      this.request({ method: 'GET', path: '/api/endusers', query, signal: options.signal }),
    /** Every end user matching `query`, page after page. */
    iterate: (query: Omit<EndUserListQuery, 'cursor'> = {}, options: CallOptions = {}): AsyncIterable<EndUser> =>
      this.pages((cursor) => this.endUsers.list({ ...query, ...(cursor ? { cursor } : {}) }, options)),
    create: (body: EndUserCreate, options: CallOptions = {}): Promise<EndUser> =>
      this.request({ method: 'POST', path: '/api/endusers', body, signal: options.signal }),
    batch: (body: EndUserBatch, options: CallOptions = {}): Promise<EndUserBatchResult> =>
      this.request({ method: 'POST', path: '/api/endusers/batch', body, signal: options.signal }),
    get: (id: string, options: CallOptions = {}): Promise<EndUser> =>
      this.request({ method: 'GET', path: `/api/endusers/${enc(id)}`, signal: options.signal }),
    update: (id: string, patch: EndUserPatch, options: CallOptions = {}): Promise<EndUser> =>
      this.request({ method: 'PATCH', path: `/api/endusers/${enc(id)}`, body: patch, signal: options.signal }),
    delete: (id: string, options: CallOptions = {}): Promise<Ok<'deleteEndUser'>> =>
      this.request({ method: 'DELETE', path: `/api/endusers/${enc(id)}`, signal: options.signal }),
  };

  readonly conversations = {
    list: (query: ConversationListQuery = {}, options: CallOptions = {}): Promise<Ok<'listConversations'>> =>
      this.request({ method: 'GET', path: '/api/conversations', query, signal: options.signal }),
    iterate: (
      query: Omit<ConversationListQuery, 'cursor'> = {},
      options: CallOptions = {},
    ): AsyncIterable<Conversation> =>
      this.pages((cursor) => this.conversations.list({ ...query, ...(cursor ? { cursor } : {}) }, options)),
    get: (id: string, options: CallOptions = {}): Promise<Conversation> =>
      this.request({ method: 'GET', path: `/api/conversations/${enc(id)}`, signal: options.signal }),
    /** The thread, oldest first, page by page. */
    messages: (
      id: string,
      query: Query<'listConversationMessages'> = {},
      options: CallOptions = {},
    ): Promise<Ok<'listConversationMessages'>> =>
      this.request({ method: 'GET', path: `/api/conversations/${enc(id)}/messages`, query, signal: options.signal }),
    close: (id: string, options: CallOptions = {}): Promise<Conversation> =>
      this.request({ method: 'POST', path: `/api/conversations/${enc(id)}/close`, signal: options.signal }),
    /** Hands the conversation to people (the dashboard's inbox); the agent's hook hears no more messages of it until released. */
    handoff: (id: string, body: HandoffRequest = {}, options: CallOptions = {}): Promise<Conversation> =>
      this.request({ method: 'POST', path: `/api/conversations/${enc(id)}/handoff`, body, signal: options.signal }),
    /** Hands the conversation back to the bot. */
    release: (id: string, options: CallOptions = {}): Promise<Conversation> =>
      this.request({ method: 'POST', path: `/api/conversations/${enc(id)}/release`, signal: options.signal }),
  };

  readonly campaigns = {
    /** Posts recipients to a campaign (with the key bound to that campaign). */
    webhook: (
      campaignId: string,
      body: CampaignWebhookRequest,
      options: CallOptions = {},
    ): Promise<CampaignWebhookResponse> =>
      this.request({
        method: 'POST',
        path: `/api/campaigns/${enc(campaignId)}/webhook`,
        body,
        idempotencyKey: options.idempotencyKey ?? newIdempotencyKey(),
        signal: options.signal,
      }),
    get: (campaignId: string, options: CallOptions = {}): Promise<Campaign> =>
      this.request({ method: 'GET', path: `/api/campaigns/${enc(campaignId)}`, signal: options.signal }),
    deliveries: (
      campaignId: string,
      query: Query<'listCampaignDeliveries'> = {},
      options: CallOptions = {},
    ): Promise<Ok<'listCampaignDeliveries'>> =>
      this.request({
        method: 'GET',
        path: `/api/campaigns/${enc(campaignId)}/deliveries`,
        query,
        signal: options.signal,
      }),
  };

  /** The built-in provider sandbox (a server started without a provider of its own). */
  readonly sandbox = {
    /** A user writing in to an agent's number, as the provider would report it (a `message.received` follows). */
    inbound: (body: SandboxInboundRequest, options: CallOptions = {}): Promise<Ok<'simulateInboundMessage'>> =>
      this.request({ method: 'POST', path: '/api/sandbox/inbound', body, signal: options.signal }),
  };

  /** GET /api/health (no key needed). */
  health(options: CallOptions = {}): Promise<Ok<'getHealth'>> {
    return this.request({ method: 'GET', path: '/api/health', signal: options.signal });
  }

  /** GET /api/ready (no key needed): the database, and Redis when configured; a ParleyError of status 503 when not ready. */
  ready(options: CallOptions = {}): Promise<Ok<'getReadiness'>> {
    return this.request({ method: 'GET', path: '/api/ready', signal: options.signal });
  }

  /** GET /api/openapi.json (no key needed): the API description this client was generated from. */
  openapi(options: CallOptions = {}): Promise<Ok<'getOpenApiDocument'>> {
    return this.request({ method: 'GET', path: '/api/openapi.json', signal: options.signal });
  }

  private async *pages<T>(
    fetchPage: (cursor: string | undefined) => Promise<{ data: T[]; nextCursor: string | null }>,
  ): AsyncGenerator<T> {
    let cursor: string | undefined;
    do {
      const page = await fetchPage(cursor);
      yield* page.data;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }

  /**
   * One logical call: sent, and sent again (same Idempotency-Key) after a 429 (its Retry-After,
   * capped by `maxDelayMs`: a refused request did nothing, so any call may be retried), and, for
   * calls safe to repeat (GETs and calls with an Idempotency-Key), after a 502, a 503 or a network
   * error, with doubling backoff.
   */
  private async request<T>(req: Request): Promise<T> {
    return (await (await this.exchange(req)).json()) as T;
  }

  /** The successful answer of a call (retried as `request` says), its body unread. */
  private async exchange(req: Request): Promise<Response> {
    const url = new URL(this.baseUrl + req.path);
    for (const [name, value] of Object.entries(req.query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = { authorization: `Bearer ${this.apiKey}`, accept: 'application/json' };
    if (req.body !== undefined && !req.form) headers['content-type'] = 'application/json';
    if (req.idempotencyKey) headers['idempotency-key'] = req.idempotencyKey;
    const repeatable = req.method === 'GET' || req.idempotencyKey !== undefined;
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await this.fetchImpl(url, {
          method: req.method,
          headers,
          ...(req.form ? { body: req.form } : req.body !== undefined ? { body: JSON.stringify(req.body) } : {}),
          ...(req.signal ? { signal: req.signal } : {}),
        });
      } catch (err) {
        if (req.signal?.aborted || !repeatable || attempt >= this.retries) throw err;
        await sleep(Math.min(this.backoffMs * 2 ** attempt, this.maxDelayMs), req.signal);
        continue;
      }
      if (res.ok) return res;
      const error = await toError(res);
      const retryable = res.status === 429 || (repeatable && (res.status === 502 || res.status === 503));
      if (!retryable || attempt >= this.retries) throw error;
      const asked = error.retryAfter !== undefined ? error.retryAfter * 1000 : this.backoffMs * 2 ** attempt;
      await sleep(Math.min(asked, this.maxDelayMs), req.signal);
    }
  }
}

async function toError(res: Response): Promise<ParleyError> {
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  const fields = typeof body === 'object' && body !== null ? (body as { error?: unknown; code?: unknown }) : {};
  const retryAfter = Number(res.headers.get('retry-after'));
  return new ParleyError(res.status, typeof fields.error === 'string' ? fields.error : `HTTP ${res.status}`, {
    ...(typeof fields.code === 'string' ? { code: fields.code } : {}),
    ...(res.headers.get('x-request-id') ? { requestId: res.headers.get('x-request-id') ?? '' } : {}),
    ...(Number.isFinite(retryAfter) && res.headers.has('retry-after') ? { retryAfter } : {}),
    body,
  });
}

/** A client for one region's base address and key. */
export function createClient(options: ClientOptions): ParleyClient {
  return new ParleyClient(options);
}
