import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Random bytes drawn from a pool refilled 4 KiB at a time: one call into the CSPRNG per ~90 IDs. */
const pool = Buffer.allocUnsafe(4096);
let offset = pool.length;

function randomByte(): number {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const byte = pool[offset] as number;
  pool[offset++] = 0; // what made a key or an ID does not linger in the pool
  return byte;
}

/** Uniform random base62 string (rejection sampling, so no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const byte = randomByte();
    if (byte < 248) out += ALPHABET[byte % 62];
  }
  return out;
}

export function toBase62(value: number, width: number): string {
  let n = value;
  let out = '';
  while (n > 0) {
    out = ALPHABET[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out.padStart(width, '0');
}

export type IdKind =
  | 'org'
  | 'agt'
  | 'key'
  | 'cmp'
  | 'eu'
  | 'msg'
  | 'num'
  | 'evt'
  | 'job'
  | 'cnv'
  | 'trg'
  | 'ep'
  | 'dlv'
  | 'usr'
  | 'inv'
  | 'aud'
  | 'nte'
  | 'med'
  | 'seg'
  | 'snd';

/** Unguessable identifiers: a kind prefix and 22 base62 characters (about 131 random bits). */
export function newId(kind: IdKind): string {
  return `${kind}_${randomBase62(22)}`;
}
