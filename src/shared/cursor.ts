/**
 * Keyset cursors of the list routes: a (time, id) position, base64url of the JSON pair. Only what
 * `encodeCursor` makes is accepted back: a time in range and an ID of the shape the route lists,
 * spelled exactly as this API spells it (no HMAC: a forged position only reveals what the same key
 * can list anyway).
 */
export interface Position {
  readonly at: number;
  readonly id: string;
}

export const encodeCursor = (at: number, id: string): string =>
  Buffer.from(JSON.stringify([at, id])).toString('base64url');

/** The position of a cursor this API returned, or undefined for anything else. */
export function decodeCursor(text: string, idShape: RegExp): Position | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      Number.isSafeInteger(value[0]) &&
      (value[0] as number) >= 0 &&
      typeof value[1] === 'string' &&
      idShape.test(value[1]) &&
      encodeCursor(value[0] as number, value[1]) === text
    ) {
      return { at: value[0] as number, id: value[1] };
    }
  } catch {
    // not a cursor
  }
  return undefined;
}
