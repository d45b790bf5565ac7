import * as crypto from 'node:crypto';
import { crc32 } from 'node:zlib';
import { REGIONS, type Region } from '../config.js';
import { randomBase62, toBase62 } from '../shared/ids.js';

/**
 * Key format: `prl_<region>_<32 base62 secret><6 base62 checksum>`, e.g.
 * `prl_us_4fQ2...Zk0aB3c9`.
 *  - `prl_` is the product prefix secret scanners match on;
 *  - the region (`us`, `eu`, `in`, `qa`) lets any region reject another's key before a lookup;
 *  - 32 base62 characters carry about 190 random bits;
 *  - the checksum is CRC32 of everything before it, in 6 base62 characters, so a mistyped or
 *    truncated key is refused without touching the database.
 * Only the SHA-256 of the whole key and its visible prefix (`prl_us_` plus 4 secret characters)
 * are stored, so the part never shown again holds 28 random characters, about 167 bits.
 */
const SECRET_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const VISIBLE_SECRET_CHARS = 4;
const KEY_PATTERN = new RegExp(
  `^prl_(${REGIONS.join('|')})_([0-9A-Za-z]{${SECRET_LENGTH}})([0-9A-Za-z]{${CHECKSUM_LENGTH}})$`,
);

function checksum(body: string): string {
  return toBase62(crc32(body), CHECKSUM_LENGTH);
}

export interface GeneratedKey {
  key: string;
  prefix: string;
  hash: string;
}

/** One-shot `crypto.hash` where Node has it (20.12 and later): no Hash object per request. */
const sha256Hex: (text: string) => string =
  typeof crypto.hash === 'function'
    ? (text) => crypto.hash('sha256', text, 'hex')
    : (text) => crypto.createHash('sha256').update(text).digest('hex');

export function hashKey(key: string): string {
  return sha256Hex(key);
}

export function generateKey(region: Region): GeneratedKey {
  const body = `prl_${region}_${randomBase62(SECRET_LENGTH)}`;
  const key = body + checksum(body);
  return { key, prefix: key.slice(0, `prl_${region}_`.length + VISIBLE_SECRET_CHARS), hash: hashKey(key) };
}

export type ParsedKey = { ok: true; region: Region } | { ok: false; reason: 'malformed' | 'checksum' };

/** Checks the shape and checksum of a presented key (no database access). */
export function parseKey(key: string): ParsedKey {
  const match = KEY_PATTERN.exec(key);
  if (!match) return { ok: false, reason: 'malformed' };
  const [, region, secret, sum] = match;
  if (checksum(`prl_${region}_${secret}`) !== sum) return { ok: false, reason: 'checksum' };
  return { ok: true, region: region as Region };
}
