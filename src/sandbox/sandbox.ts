import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import type { SandboxTemplate } from '../config.js';
import type { Clock } from '../shared/clock.js';
import { fromProviderDigits, windowKey } from '../shared/phone.js';
import { type AccountEndpoints, handleAccountRequest, type NumberHealth, SANDBOX_WABA } from './sandbox-account.js';
import {
  InboundKindError,
  inboundItem,
  inboundMessageOf,
  type SandboxInboundMessage,
} from './sandbox-inbound-kinds.js';
import { folderMediaStore, handleMediaRequest, memoryMediaStore, type SandboxMediaStore } from './sandbox-media.js';
import { checkRead, receiveUpload } from './sandbox-rich.js';
import { BUILT_IN_TEMPLATES, sendChecker } from './sandbox-send-check.js';
import { type SentEntry, type SentQuery, sentEntryOf } from './sandbox-sent-log.js';
import { fileState, memoryState } from './sandbox-state.js';
import { SandboxTemplates } from './sandbox-templates.js';
import { digits, isObject, type Json, providerJson, signBody, type WireError, wireError } from './sandbox-wire.js';

/**
 * A stand-in for the messaging provider: a real HTTP server speaking the Cloud API wire format,
 * so the adapter talks to it exactly as to the provider. It keeps its own 24-hour windows (from the
 * inbound messages it delivered; in a state file when given one, so that they survive a restart
 * and are shared by every sandbox using that file, as a real provider remembers), answers magic
 * recipients with the provider's errors, and sends signed status webhooks (sent, delivered, read)
 * after every accepted send.
 */
export interface Sandbox {
  readonly url: string;
  /** Where webhooks go, e.g. http://127.0.0.1:3000/webhooks/msgapp. */
  setWebhookUrl(url: string): void;
  /**
   * Delivers a signed inbound text message webhook; once Parley acknowledged it (200), opens the
   * sandbox's own window. Throws when the webhook is refused or cannot be delivered.
   */
  deliverInbound(input: SandboxInbound): Promise<{ messageId: string }>;
  /** Resolves once every scheduled webhook has been delivered (or given up). */
  idle(): Promise<void>;
  /** The last wire requests received (newest last), for tests. */
  readonly received: readonly SandboxRequest[];
  /** Its log of what it was sent, newest first (sandbox-sent-log.ts). */
  sent(query: SentQuery): SentEntry[];
  /** The files it keeps, as the provider does (users' inbound media; sandbox-media.ts). */
  readonly media: SandboxMediaStore;
  close(): Promise<void>;
}

export interface SandboxInbound {
  readonly phoneNumberId: string;
  /** The business number, E.164. */
  readonly displayPhoneNumber: string;
  /** The user, E.164. */
  readonly from: string;
  /** A text message; or `message`, any kind (sandbox-inbound-kinds.ts). */
  readonly text?: string;
  readonly message?: SandboxInboundMessage;
  readonly name?: string;
  /** The inbound message's ID (`wamid.`...); generated when absent. */
  readonly messageId?: string;
}

export interface SandboxRequest {
  readonly path: string;
  readonly authorization: string | undefined;
  readonly body: unknown;
}

export interface SandboxOptions {
  readonly clock: Clock;
  readonly appSecret: string;
  readonly templates?: readonly SandboxTemplate[];
  /** Pause before each status webhook; 0 sends them on the next turn of the event loop. */
  readonly statusDelayMs?: number;
  /** false: no status webhooks at all (PARLEY_SANDBOX_STATUSES=false, for send benchmarks). */
  readonly statuses?: boolean;
  /**
   * Sends per second per number accepted before answering 130429 (the provider's throughput
   * limit, 80 by default there); unset: no limit.
   */
  readonly mps?: number;
  readonly webhookUrl?: string;
  readonly port?: number;
  readonly host?: string;
  readonly onError?: (err: unknown, what: string) => void;
  /**
   * SQLite file of the sandbox's own state (its 24-hour windows, the display numbers it saw), e.g.
   * `<data>/sandbox-state.db`; without one the state lives in memory and ends with the process.
   */
  readonly stateFile?: string;
  /** Folder of the files it keeps (e.g. `<data>/sandbox-media`); without one they live in memory. */
  readonly mediaDir?: string;
  /** Serve media downloads at most this fast (bytes a second), as a slow network would; unset: at once. */
  readonly mediaBytesPerSecond?: number;
}

const MAX_BODY = 1024 * 1024;
/** An inbound message may carry a file (base64): 16 MB of video is about 22 MB of text. */
const MAX_INBOUND_BODY = 24 * 1024 * 1024;

export async function startSandbox(options: SandboxOptions): Promise<Sandbox> {
  const { clock, appSecret } = options;
  // The account's templates (with their categories and statuses), which the send checker reads live.
  const catalogue = new SandboxTemplates(BUILT_IN_TEMPLATES, options.templates ?? []);
  const templates = catalogue.entries;
  const health = new Map<string, NumberHealth>();
  const delayMs = options.statusDelayMs ?? 0;
  const onError = options.onError ?? (() => {});
  let webhookUrl = options.webhookUrl;
  /** Set on close: scheduled webhooks are dropped instead of retried against a server going away. */
  let closing = false;
  const state = options.stateFile
    ? fileState(options.stateFile, (err) => onError(err, 'writing the log of what it was sent'))
    : memoryState();
  const media = options.mediaDir ? folderMediaStore(options.mediaDir) : memoryMediaStore();
  let ownUrl = '';
  const checkSend = sendChecker({ clock, state, templates, mps: options.mps, media });
  /** Who sent each inbound message (the last few thousand), so a read receipt's log entry names its user. */
  const inboundFrom = new Map<string, string>();
  const inFlight = new Set<Promise<void>>();
  const received: SandboxRequest[] = [];
  const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: 64 });
  const nowSeconds = () => String(Math.floor(clock.now() / 1000));

  async function postWebhook(payload: Json): Promise<number> {
    if (!webhookUrl) throw new Error('the sandbox has no webhook address yet');
    const body = providerJson(payload);
    const res = await request(webhookUrl, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': signBody(appSecret, body) },
      body,
      signal: AbortSignal.timeout(10_000),
    });
    await res.body.dump();
    return res.statusCode;
  }

  function envelope(phoneNumberId: string, value: Json): Json {
    return {
      object: 'whatsapp_business_account',
      entry: [
        {
          id: SANDBOX_WABA,
          changes: [
            {
              field: 'messages',
              value: {
                messaging_product: 'whatsapp',
                metadata: {
                  display_phone_number: digits(state.displayNumber(phoneNumberId) ?? ''),
                  phone_number_id: phoneNumberId,
                },
                ...value,
              },
            },
          ],
        },
      ],
    };
  }

  function track(work: Promise<void>): void {
    inFlight.add(work);
    void work.finally(() => inFlight.delete(work));
  }

  const pause = () =>
    new Promise<void>((resolve) => (delayMs > 0 ? setTimeout(resolve, delayMs) : setImmediate(resolve)));

  async function deliverWithRetry(payload: Json, what: string): Promise<void> {
    for (let attempt = 1; attempt <= 3 && !closing; attempt++) {
      try {
        const status = await postWebhook(payload);
        if (status === 200) return;
        if (attempt === 3) onError(new Error(`webhook answered ${status}`), what);
      } catch (err) {
        if (attempt === 3) onError(err, what);
      }
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
    }
  }

  function scheduleStatuses(phoneNumberId: string, wamid: string, to: string, callbackData: string | undefined) {
    if (!webhookUrl || options.statuses === false) return;
    track(
      (async () => {
        for (const status of ['sent', 'delivered', 'read'] as const) {
          await pause();
          if (closing) return;
          const payload = envelope(phoneNumberId, {
            statuses: [
              {
                id: wamid,
                status,
                timestamp: nowSeconds(),
                recipient_id: digits(to),
                ...(callbackData !== undefined ? { biz_opaque_callback_data: callbackData } : {}),
              },
            ],
          });
          await deliverWithRetry(payload, `${status} status of ${wamid}`);
        }
      })(),
    );
  }

  async function readText(req: IncomingMessage, max = MAX_BODY): Promise<string> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > max) throw new Error('body too large');
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  function send(res: ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (req.method === 'GET' && path === '/sandbox/health') return send(res, 200, { status: 'ok' });
    const endpoints = { store: media, url: () => ownUrl, bytesPerSecond: options.mediaBytesPerSecond };
    if (await handleAccountRequest(req, res, path, account)) return;
    if (await handleMediaRequest(req, res, path, endpoints)) return;
    if (req.method === 'POST' && /^\/v\d+\.\d+\/\d+\/media$/.test(path)) {
      if (!/^Bearer \S+$/.test(req.headers.authorization ?? '')) {
        return send(res, 401, wireError({ status: 401, code: 190, message: 'Invalid OAuth access token' }));
      }
      const uploaded = await receiveUpload(req, media);
      return 'code' in uploaded ? send(res, uploaded.status, wireError(uploaded)) : send(res, 200, uploaded);
    }
    const match = /^\/(v\d+\.\d+)\/(\d+)\/messages$/.exec(path);
    if (req.method !== 'POST' || (!match && path !== '/sandbox/inbound')) {
      return send(res, 404, wireError({ status: 404, code: 100, message: 'Unknown path components' }));
    }
    let body: unknown;
    let text = '';
    try {
      text = await readText(req, path === '/sandbox/inbound' ? MAX_INBOUND_BODY : MAX_BODY);
      body = JSON.parse(text);
    } catch {
      return send(res, 400, wireError({ status: 400, code: 100, message: 'Invalid JSON body' }));
    }
    if (!isObject(body)) return send(res, 400, wireError({ status: 400, code: 100, message: 'Invalid JSON body' }));

    if (path === '/sandbox/inbound') {
      const { phone_number_id, display_phone_number, from, name } = body;
      if (typeof phone_number_id !== 'string' || typeof from !== 'string') {
        return send(res, 400, { error: 'phone_number_id and from are required strings' });
      }
      if (!fromProviderDigits(digits(from)) || !/^\+?[\d\s().-]+$/.test(from.trim())) {
        return send(res, 400, {
          error: `from must be a phone number in international format, got "${from.slice(0, 40)}"`,
        });
      }
      let message: SandboxInboundMessage;
      try {
        message = inboundMessageOf(body);
      } catch (err) {
        if (err instanceof InboundKindError) return send(res, 400, { error: err.message });
        throw err;
      }
      try {
        const out = await deliverInbound({
          phoneNumberId: phone_number_id,
          displayPhoneNumber: typeof display_phone_number === 'string' ? display_phone_number : '',
          from,
          message,
          ...(typeof name === 'string' ? { name } : {}),
        });
        return send(res, 200, out);
      } catch (err) {
        return send(res, 502, { error: err instanceof Error ? err.message : 'delivery failed' });
      }
    }

    const phoneNumberId = match?.[2] ?? '';
    const authorization = req.headers.authorization;
    received.push({ path, authorization, body });
    if (received.length > 200) received.shift();
    // Every request on the number's messages endpoint goes in the log, with the sandbox's answer.
    const refuse = (error: WireError) => {
      state.sent.record(sentEntryOf(phoneNumberId, text, body as Json, clock.now(), { error }));
      send(res, error.status, wireError(error));
    };
    if (!authorization || !/^Bearer \S+$/.test(authorization)) {
      return refuse({ status: 401, code: 190, message: 'Invalid OAuth access token' });
    }
    if (body.status === 'read') {
      const wrong = checkRead(body);
      if (wrong) return refuse(wrong);
      const read = String(body.message_id);
      const entry = sentEntryOf(phoneNumberId, text, body, clock.now(), { messageId: read });
      state.sent.record({ ...entry, to: inboundFrom.get(read) ?? entry.to });
      return send(res, 200, { success: true });
    }
    const checked = checkSend(phoneNumberId, body);
    if ('code' in checked) return refuse(checked);
    const wamid = `wamid.${randomBytes(24).toString('base64url')}`;
    state.sent.record(sentEntryOf(phoneNumberId, text, body, clock.now(), { messageId: wamid }));
    send(res, 200, {
      messaging_product: 'whatsapp',
      contacts: [{ input: body.to, wa_id: digits(checked.to) }],
      messages: [{ id: wamid }],
    });
    const callback = typeof body.biz_opaque_callback_data === 'string' ? body.biz_opaque_callback_data : undefined;
    scheduleStatuses(phoneNumberId, wamid, checked.to, callback);
  }

  /** The account's webhooks (template statuses, the number's quality): `entry[].id` is the account. */
  const account: AccountEndpoints = {
    templates: catalogue,
    health,
    displayNumber: (id) => state.displayNumber(id),
    readJson: async (req) => {
      try {
        return JSON.parse(await readText(req)) as unknown;
      } catch {
        return undefined;
      }
    },
    async deliver(change) {
      const payload = {
        object: 'whatsapp_business_account',
        entry: [{ id: SANDBOX_WABA, time: Number(nowSeconds()), changes: [change] }],
      };
      try {
        return await postWebhook(payload);
      } catch (err) {
        onError(err, change.field);
        return 0;
      }
    },
  };

  async function deliverInbound(input: SandboxInbound): Promise<{ messageId: string }> {
    const messageId = input.messageId ?? `wamid.${randomBytes(24).toString('base64url')}`;
    if (input.displayPhoneNumber) state.setDisplayNumber(input.phoneNumberId, input.displayPhoneNumber);
    const at = clock.now();
    const payload = envelope(input.phoneNumberId, {
      contacts: [{ profile: { name: input.name ?? '' }, wa_id: digits(input.from) }],
      messages: [
        inboundItem(
          input.message ?? { content: { kind: 'text', text: input.text ?? '' } },
          { from: digits(input.from), id: messageId, timestamp: nowSeconds() },
          media,
        ),
      ],
    });
    inboundFrom.set(messageId, `+${digits(input.from)}`);
    if (inboundFrom.size > 5000) inboundFrom.delete(inboundFrom.keys().next().value ?? '');
    const status = await postWebhook(payload);
    if (status !== 200) throw new Error(`Parley's webhook answered ${status}`);
    // As the provider: the user wrote in, so the window is open, whatever Parley does with it.
    state.openWindow(input.phoneNumberId, windowKey(`+${digits(input.from)}`), at);
    return { messageId };
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      onError(err, 'sandbox request');
      if (!res.headersSent) send(res, 500, wireError({ status: 500, code: 1, message: 'An unknown error occurred' }));
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  ownUrl = `http://${host}:${address.port}`;

  return {
    url: `http://${host}:${address.port}`,
    setWebhookUrl(url) {
      webhookUrl = url;
    },
    deliverInbound,
    async idle() {
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
    received,
    sent: (query) => state.sent.list(query),
    media,
    async close() {
      closing = true;
      await Promise.allSettled([...inFlight]);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await dispatcher.close();
      state.close();
    },
  };
}
