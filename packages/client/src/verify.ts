/**
 * Verifies an event webhook as Standard Webhooks define it: `webhook-signature` holds
 * `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` (several, space-separated, during a secret
 * rotation), keyed with the endpoint's secret (`whsec_` + base64); `webhook-timestamp` within 5
 * minutes of now. Web Crypto only, so it runs in Node 20+ and in browsers alike.
 */

/** An event as Parley sends it. */
export interface ParleyEvent {
  type: 'conversation.started' | 'message.received' | 'message.status' | 'conversation.closed' | (string & {});
  /** ISO 8601. */
  timestamp: string;
  data: Record<string, unknown>;
}

export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

type Headers = Record<string, string | string[] | undefined> | globalThis.Headers;

const TOLERANCE_S = 5 * 60;

function header(headers: Headers, name: string): string | undefined {
  if (typeof (headers as globalThis.Headers).get === 'function')
    return (headers as globalThis.Headers).get(name) ?? undefined;
  const value = (headers as Record<string, string | string[] | undefined>)[name];
  return Array.isArray(value) ? value[0] : value;
}

function base64ToBytes(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function bytesToBase64(bytes: Uint8Array): string {
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

/** Compares in time independent of where the strings differ. */
function equal(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * Checks an event's signature over its raw body (the bytes as received, not re-serialized JSON) and
 * returns the event; throws WebhookVerificationError when the headers are missing, the timestamp is
 * too old or too new, or no signature matches.
 */
export async function verifyEvent(
  rawBody: string | Uint8Array,
  headers: Headers,
  secret: string,
  now: Date = new Date(),
): Promise<ParleyEvent> {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures)
    throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature');
  const seconds = Number(timestamp);
  if (!Number.isInteger(seconds)) throw new WebhookVerificationError('webhook-timestamp is not a number of seconds');
  const skew = Math.abs(now.getTime() / 1000 - seconds);
  if (skew > TOLERANCE_S) throw new WebhookVerificationError('webhook-timestamp is too far from now');
  const body = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
  const key = await globalThis.crypto.subtle.importKey(
    'raw',
    base64ToBytes(secret.startsWith('whsec_') ? secret.slice(6) : secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const mac = await globalThis.crypto.subtle.sign('HMAC', key, new TextEncoder().encode(`${id}.${seconds}.${body}`));
  const expected = bytesToBase64(new Uint8Array(mac));
  const matches = signatures
    .split(' ')
    .map((s) => s.split(','))
    .some(([version, signature]) => version === 'v1' && signature !== undefined && equal(signature, expected));
  if (!matches) throw new WebhookVerificationError('no signature matches');
  return JSON.parse(body) as ParleyEvent;
}
