import { createHmac, timingSafeEqual } from 'node:crypto';

/** Checks `X-Hub-Signature-256` against the raw bytes, in constant time. */
export function verifySignature(appSecret: string, raw: Buffer, header: string | undefined): boolean {
  if (!header?.startsWith('sha256=')) return false;
  const given = Buffer.from(header.slice(7), 'hex');
  const expected = createHmac('sha256', appSecret).update(raw).digest();
  return given.length === expected.length && timingSafeEqual(given, expected);
}
