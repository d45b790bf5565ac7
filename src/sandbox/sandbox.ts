import { createHmac, randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { Agent, request } from 'undici';
import type { SandboxTemplate } from '../config.js';
import type { Clock } from '../shared/clock.js';
import { fromProviderDigits, windowKey } from '../shared/phone.js';

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
  close(): Promise<void>;
}

export interface SandboxInbound {
  readonly phoneNumberId: string;
  /** The business number, E.164. */
  readonly displayPhoneNumber: string;
  /** The user, E.164. */
  readonly from: string;
  readonly text: string;
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
}

/** The sandbox's memory: what a real provider keeps on its side. */
interface SandboxState {
  openWindow(phoneNumberId: string, userKey: string, at: number): void;
  lastInbound(phoneNumberId: string, userKey: string): number | undefined;
  setDisplayNumber(phoneNumberId: string, display: string): void;
  displayNumber(phoneNumberId: string): string | undefined;
  close(): void;
}

function memoryState(): SandboxState {
  const windows = new Map<string, number>();
  const displays = new Map<string, string>();
  return {
    openWindow: (id, key, at) => windows.set(`${id}:${key}`, Math.max(at, windows.get(`${id}:${key}`) ?? at)),
    lastInbound: (id, key) => windows.get(`${id}:${key}`),
    setDisplayNumber: (id, display) => displays.set(id, display),
    displayNumber: (id) => displays.get(id),
    close: () => {},
  };
}

/** State in a SQLite file: survives restarts, and several processes (WAL) share it. */
function fileState(file: string): SandboxState {
  mkdirSync(dirname(file), { recursive: true });
  const db = new SQLite(file);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  db.exec(`
    create table if not exists sandbox_windows (
      phone_number_id text not null, user_key text not null, last_inbound_at integer not null,
      primary key (phone_number_id, user_key));
    create table if not exists sandbox_numbers (phone_number_id text primary key, display text not null);`);
  const upsertWindow = db.prepare(
    `insert into sandbox_windows (phone_number_id, user_key, last_inbound_at) values (?, ?, ?)
     on conflict (phone_number_id, user_key) do update
     set last_inbound_at = max(last_inbound_at, excluded.last_inbound_at)`,
  );
  const selectWindow = db.prepare(
    'select last_inbound_at as at from sandbox_windows where phone_number_id = ? and user_key = ?',
  );
  const upsertNumber = db.prepare(
    'insert into sandbox_numbers (phone_number_id, display) values (?, ?) on conflict (phone_number_id) do update set display = excluded.display',
  );
  const selectNumber = db.prepare('select display from sandbox_numbers where phone_number_id = ?');
  return {
    openWindow: (id, key, at) => void upsertWindow.run(id, key, at),
    lastInbound: (id, key) => (selectWindow.get(id, key) as { at: number } | undefined)?.at,
    setDisplayNumber: (id, display) => void upsertNumber.run(id, display),
    displayNumber: (id) => (selectNumber.get(id) as { display: string } | undefined)?.display,
    close: () => db.close(),
  };
}

export const BUILT_IN_TEMPLATES: readonly SandboxTemplate[] = [
  { name: 'hello_world', language: 'en_US', header: 0, body: 0 },
  { name: 'order_update', language: 'en_US', header: 1, body: 2 },
];

/** Recipients with a fixed answer, to exercise error paths. */
export const MAGIC_NUMBERS = {
  notOnApp: '+15005550001',
  throttled: '+15005550002',
  serverError: '+15005550003',
  /** 131056 (pair rate limit) when the previous send to it came less than PAIR_RATE_MS ago. */
  pairRate: '+15005550004',
} as const;

/** The sandbox's pair rate: one message per this many ms to the pair-rate magic number. */
export const PAIR_RATE_MS = 2_000;

const WINDOW_MS = 24 * 60 * 60 * 1000;
const MAX_BODY = 1024 * 1024;
const digits = (phone: string) => phone.replace(/\D/g, '');

/** JSON as the provider signs it: non-ASCII escaped as \uXXXX. */
export function providerJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

export function signBody(appSecret: string, body: string | Buffer): string {
  return `sha256=${createHmac('sha256', appSecret).update(body).digest('hex')}`;
}

interface WireError {
  status: number;
  code: number;
  message: string;
  details?: string;
}

const wireError = (e: WireError) => ({
  error: {
    message: `(#${e.code}) ${e.message}`,
    type: 'OAuthException',
    code: e.code,
    ...(e.details ? { error_data: { messaging_product: 'whatsapp', details: e.details } } : {}),
    fbtrace_id: `sandbox${randomBytes(6).toString('hex')}`,
  },
});

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export async function startSandbox(options: SandboxOptions): Promise<Sandbox> {
  const { clock, appSecret } = options;
  const templates = [...BUILT_IN_TEMPLATES, ...(options.templates ?? [])];
  const delayMs = options.statusDelayMs ?? 0;
  const onError = options.onError ?? (() => {});
  let webhookUrl = options.webhookUrl;
  /** Set on close: scheduled webhooks are dropped instead of retried against a server going away. */
  let closing = false;
  const state = options.stateFile ? fileState(options.stateFile) : memoryState();
  const inFlight = new Set<Promise<void>>();
  const received: SandboxRequest[] = [];
  const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: 64 });
  /** Start times of the last second's accepted sends, per number (for `mps`). */
  const recentSends = new Map<string, number[]>();
  let lastPairSend = Number.NEGATIVE_INFINITY;
  const overThroughput = (phoneNumberId: string): boolean => {
    if (options.mps === undefined) return false;
    const now = Date.now();
    const times = (recentSends.get(phoneNumberId) ?? []).filter((t) => t > now - 1000);
    recentSends.set(phoneNumberId, times);
    if (times.length >= options.mps) return true;
    times.push(now);
    return false;
  };
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
          id: 'sandbox-waba',
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

  function checkSend(phoneNumberId: string, body: Json): WireError | { to: string } {
    if (body.messaging_product !== 'whatsapp') {
      return { status: 400, code: 100, message: 'Invalid parameter', details: 'messaging_product must be whatsapp' };
    }
    if (typeof body.to !== 'string' || digits(body.to).length < 7) {
      return { status: 400, code: 100, message: 'Invalid parameter', details: 'to must be a phone number' };
    }
    const to = `+${digits(body.to)}`;
    if (to === MAGIC_NUMBERS.notOnApp) {
      return {
        status: 400,
        code: 131026,
        message: 'Message undeliverable',
        details: 'The recipient is not a user of the messaging app.',
      };
    }
    if (to === MAGIC_NUMBERS.throttled) {
      return {
        status: 429,
        code: 130429,
        message: 'Rate limit hit',
        details: 'Cloud API message throughput has been reached.',
      };
    }
    if (to === MAGIC_NUMBERS.serverError) return { status: 500, code: 1, message: 'An unknown error occurred' };
    if (to === MAGIC_NUMBERS.pairRate) {
      const now = Date.now();
      if (now - lastPairSend < PAIR_RATE_MS) {
        return {
          status: 400,
          code: 131056,
          message: '(Business Account, Consumer Account) pair rate limit hit',
          details: 'Too many messages sent from this phone number to the same phone number in a short period of time.',
        };
      }
      lastPairSend = now;
    }
    if (overThroughput(phoneNumberId)) {
      return {
        status: 400,
        code: 130429,
        message: 'Rate limit hit',
        details: 'Cloud API message throughput has been reached.',
      };
    }
    if (body.type === 'text') {
      const text = isObject(body.text) ? body.text.body : undefined;
      // The provider counts characters (code points), and refuses a body of blanks.
      if (typeof text !== 'string' || !text.trim() || [...text].length > 4096) {
        return {
          status: 400,
          code: 131009,
          message: 'Parameter value is not valid',
          details: 'text.body: 1 to 4096 characters',
        };
      }
      const last = state.lastInbound(phoneNumberId, windowKey(to));
      if (last === undefined || clock.now() - last > WINDOW_MS) {
        return {
          status: 400,
          code: 131047,
          message: 'Re-engagement message',
          details:
            'Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
        };
      }
      return { to };
    }
    if (body.type === 'template') {
      const t = isObject(body.template) ? body.template : {};
      const language = isObject(t.language) ? t.language.code : undefined;
      const known = templates.find((k) => k.name === t.name && k.language === language);
      if (!known) {
        return {
          status: 404,
          code: 132001,
          message: 'Template name does not exist in the translation',
          details: `template name (${String(t.name)}) does not exist in ${String(language)}`,
        };
      }
      const components = Array.isArray(t.components) ? t.components.filter(isObject) : [];
      const texts = components.flatMap((c) => (Array.isArray(c.parameters) ? c.parameters.filter(isObject) : []));
      if (texts.some((p) => typeof p.text !== 'string' || !p.text.trim())) {
        return {
          status: 400,
          code: 131008,
          message: 'Required parameter is missing',
          details: 'a text parameter must not be empty',
        };
      }
      const count = (type: string) => {
        const c = components.find((x) => x.type === type);
        return Array.isArray(c?.parameters) ? c.parameters.length : 0;
      };
      for (const part of ['header', 'body'] as const) {
        if (count(part) !== known[part]) {
          return {
            status: 400,
            code: 132000,
            message: 'Number of parameters does not match the expected number of params',
            details: `${part}: number of localizable_params (${count(part)}) does not match the expected number of params (${known[part]})`,
          };
        }
      }
      return { to };
    }
    return {
      status: 400,
      code: 131009,
      message: 'Parameter value is not valid',
      details: 'type must be text or template',
    };
  }

  async function readBody(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY) throw new Error('body too large');
      chunks.push(chunk as Buffer);
    }
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  }

  function send(res: ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (req.method === 'GET' && path === '/sandbox/health') return send(res, 200, { status: 'ok' });
    const match = /^\/(v\d+\.\d+)\/(\d+)\/messages$/.exec(path);
    if (req.method !== 'POST' || (!match && path !== '/sandbox/inbound')) {
      return send(res, 404, wireError({ status: 404, code: 100, message: 'Unknown path components' }));
    }
    let body: unknown;
    try {
      body = await readBody(req);
    } catch {
      return send(res, 400, wireError({ status: 400, code: 100, message: 'Invalid JSON body' }));
    }
    if (!isObject(body)) return send(res, 400, wireError({ status: 400, code: 100, message: 'Invalid JSON body' }));

    if (path === '/sandbox/inbound') {
      const { phone_number_id, display_phone_number, from, text, name } = body;
      if (typeof phone_number_id !== 'string' || typeof from !== 'string' || typeof text !== 'string') {
        return send(res, 400, { error: 'phone_number_id, from and text are required strings' });
      }
      if (!fromProviderDigits(digits(from)) || !/^\+?[\d\s().-]+$/.test(from.trim())) {
        return send(res, 400, {
          error: `from must be a phone number in international format, got "${from.slice(0, 40)}"`,
        });
      }
      if (!text.trim()) return send(res, 400, { error: 'text must not be empty' });
      try {
        const out = await deliverInbound({
          phoneNumberId: phone_number_id,
          displayPhoneNumber: typeof display_phone_number === 'string' ? display_phone_number : '',
          from,
          text,
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
    if (!authorization || !/^Bearer \S+$/.test(authorization)) {
      return send(res, 401, wireError({ status: 401, code: 190, message: 'Invalid OAuth access token' }));
    }
    const checked = checkSend(phoneNumberId, body);
    if ('code' in checked) return send(res, checked.status, wireError(checked));
    const wamid = `wamid.${randomBytes(24).toString('base64url')}`;
    send(res, 200, {
      messaging_product: 'whatsapp',
      contacts: [{ input: body.to, wa_id: digits(checked.to) }],
      messages: [{ id: wamid }],
    });
    const callback = typeof body.biz_opaque_callback_data === 'string' ? body.biz_opaque_callback_data : undefined;
    scheduleStatuses(phoneNumberId, wamid, checked.to, callback);
  }

  async function deliverInbound(input: SandboxInbound): Promise<{ messageId: string }> {
    const messageId = input.messageId ?? `wamid.${randomBytes(24).toString('base64url')}`;
    if (input.displayPhoneNumber) state.setDisplayNumber(input.phoneNumberId, input.displayPhoneNumber);
    const at = clock.now();
    const payload = envelope(input.phoneNumberId, {
      contacts: [{ profile: { name: input.name ?? '' }, wa_id: digits(input.from) }],
      messages: [
        { from: digits(input.from), id: messageId, timestamp: nowSeconds(), type: 'text', text: { body: input.text } },
      ],
    });
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
