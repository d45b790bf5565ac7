import type { TwoWayPage } from '../shared/page.js';

/** Rows on every page of a dashboard list. */
export const PAGE_SIZE = 50;

/** What templates/pager.eta shows: the links to the previous and next pages, where there are any. */
export interface Pager {
  readonly previous?: string;
  readonly next?: string;
  /** The list the links page through, for their accessible names when a page has two lists. */
  readonly label?: string;
}

/** The query parameters of one list's position; a page with two lists names the second's apart. */
export interface PageParams {
  readonly cursor: string;
  readonly before: string;
}
const PARAMS: PageParams = { cursor: 'cursor', before: 'before' };

/**
 * The Previous and Next links of a page of `path`, keeping its filters and the other lists'
 * positions (`params`; empty ones left out).
 */
export function pagerOf(
  path: string,
  params: Record<string, string | undefined>,
  page: Pick<TwoWayPage<unknown>, 'next' | 'previous'>,
  names: PageParams = PARAMS,
  label?: string,
): Pager {
  const url = (position: Record<string, string>) => {
    const query = new URLSearchParams();
    const kept = { ...params, [names.cursor]: undefined, [names.before]: undefined, ...position };
    for (const [name, value] of Object.entries(kept)) if (value) query.set(name, value);
    const text = query.toString();
    return text ? `${path}?${text}` : path;
  };
  return {
    ...(page.previous ? { previous: url({ [names.before]: page.previous }) } : {}),
    ...(page.next ? { next: url({ [names.cursor]: page.next }) } : {}),
    ...(label ? { label } : {}),
  };
}

/** The page request of a dashboard list from its query string. */
export const pageRequestOf = (query: Record<string, string | undefined>, names: PageParams = PARAMS) => ({
  limit: PAGE_SIZE,
  cursor: query[names.cursor]?.slice(0, 200),
  before: query[names.before]?.slice(0, 200),
});
