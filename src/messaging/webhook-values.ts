/*
 * The checks of webhook values, shared by the parts of a webhook (statuses, messages and their kinds).
 *
 * Every value taken from a webhook is checked and bounded here, so that a well-signed but odd
 * payload is applied or skipped item by item and never makes the database refuse a write (a NUL in
 * text, a time past bigint, a fractional or huge error code in an integer column).
 */
export type Json = Record<string, unknown>;
export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
export const list = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObject) : []);

export const MAX_ID = 512;
export const MAX_CALLBACK = 512;
export const MAX_NAME = 256;
export const MAX_TEXT = 65_536;
export const MAX_ERROR_MESSAGE = 1024;
export const INT32_MAX = 2 ** 31 - 1;
/** Provider times before this are not believable (the Cloud API did not exist). */
export const EARLIEST_TIME_MS = Date.UTC(2015, 0, 1);
/** Provider clocks run a little ahead at most. */
export const CLOCK_SKEW_MS = 60 * 60 * 1000;

/** A string without NUL characters (PostgreSQL text cannot hold them), at most `max` long; else undefined. */
export function cleanString(v: unknown, max: number): string | undefined {
  if (typeof v !== 'string') return undefined;
  const s = v.includes('\u0000') ? v.replaceAll('\u0000', '') : v;
  return s.length <= max ? s : s.slice(0, max);
}

/** An identifier: a non-empty string of at most `max` characters, without NUL; anything else is no ID. */
export function cleanId(v: unknown, max: number): string | undefined {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return String(v);
  if (typeof v !== 'string' || v.length === 0 || v.length > max || v.includes('\u0000')) return undefined;
  return v;
}
