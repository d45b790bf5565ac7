import { decodeCursor, encodeCursor, type Position } from './cursor.js';
import { AppError } from './errors.js';

/**
 * Pages that go both ways (the dashboard's lists): `cursor` is the position after which the page
 * starts (Next), `before` the position before which it ends (Previous). Both are cursors as
 * `encodeCursor` makes them; the rows are read with `seekPage` (db/keyset.ts), `limit + 1` of them,
 * so one more row tells whether there is a page beyond.
 */
export interface PageRequest {
  readonly limit: number;
  readonly cursor?: string | undefined;
  readonly before?: string | undefined;
}

export interface TwoWayPage<T> {
  readonly data: T[];
  /** The cursor of the next page, or null on the last. */
  readonly next: string | null;
  /** The `before` cursor of the previous page, or null on the first. */
  readonly previous: string | null;
}

export interface PageSeek {
  readonly at: number;
  readonly id: string;
  readonly backward: boolean;
}

const notACursor = (name: string) =>
  new AppError('INVALID_BODY', `Invalid query parameter: '${name}' is not a cursor this page gave.`);

/** The seek a request asks for (undefined: the first page); a cursor of another shape is a 400. */
export function seekOf(request: PageRequest, idShape: RegExp): PageSeek | undefined {
  const decode = (text: string, name: string): Position => {
    const position = decodeCursor(text, idShape);
    if (!position) throw notACursor(name);
    return position;
  };
  if (request.before) return { ...decode(request.before, 'before'), backward: true };
  if (request.cursor) return { ...decode(request.cursor, 'cursor'), backward: false };
  return undefined;
}

/**
 * The page of rows read `limit + 1` at a time by `seek`, in the list's order, with the cursors of
 * its neighbours. A backward read came in reverse order: it is turned round here.
 */
export function pageOf<R, T>(
  rows: readonly R[],
  limit: number,
  seek: PageSeek | undefined,
  positionOf: (row: R) => Position,
  map: (row: R) => T,
): TwoWayPage<T> {
  const more = rows.length > limit;
  const kept = rows.slice(0, limit);
  const page = seek?.backward ? kept.reverse() : kept;
  const first = page[0];
  const last = page[page.length - 1];
  const at = (row: R | undefined) => (row === undefined ? null : cursorAt(positionOf(row)));
  // An empty page after a seek (its rows were deleted since): back to where the seek started.
  const here = seek ? encodeCursor(seek.at, seek.id) : null;
  if (seek?.backward) {
    return { data: page.map(map), previous: more ? at(first) : null, next: at(last) ?? here };
  }
  return { data: page.map(map), next: more ? at(last) : null, previous: seek ? (at(first) ?? here) : null };
}

const cursorAt = (p: Position) => encodeCursor(p.at, p.id);
