import { createHmac, randomBytes } from 'node:crypto';

/** The provider's wire format as the sandbox speaks it: signed JSON bodies and its error answers. */

/** The digits of a phone number (the provider's spelling of it, without `+`). */
export const digits = (phone: string) => phone.replace(/\D/g, '');

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

export interface WireError {
  status: number;
  code: number;
  message: string;
  details?: string;
}

export const wireError = (e: WireError) => ({
  error: {
    message: `(#${e.code}) ${e.message}`,
    type: 'OAuthException',
    code: e.code,
    ...(e.details ? { error_data: { messaging_product: 'whatsapp', details: e.details } } : {}),
    fbtrace_id: `sandbox${randomBytes(6).toString('hex')}`,
  },
});

export type Json = Record<string, unknown>;
export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
