import { type Expression, type SelectQueryBuilder, type SqlBool, sql } from 'kysely';

/**
 * A keyset seek on a (time, id) pair, in either direction, for the lists the dashboard pages
 * through. The list's own order is newest first or oldest first; a seek `backward` reads the rows
 * before a position in the opposite order (the caller turns them round), so Previous costs one
 * index range like Next. The time bound (`<=` or `>=`) is written out beside the tie-break so
 * every database sees an index range, not only a filter.
 */
export interface Seek {
  readonly at: number;
  readonly id: string;
  /** The rows before the position in the list's order (a Previous page), not after it. */
  readonly backward: boolean;
}

export function seekPage<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  columns: { readonly at: string; readonly id: string },
  options: { readonly newestFirst: boolean; readonly seek: Seek | undefined; readonly limit: number },
): SelectQueryBuilder<DB, TB, O> {
  const { seek } = options;
  // Descending when the list is newest first and we read forward, or oldest first and we read back.
  const descending = options.newestFirst !== (seek?.backward === true);
  const at = sql.ref(columns.at);
  const id = sql.ref(columns.id);
  let q = query;
  if (seek) {
    const cmp = sql.raw(descending ? '<' : '>');
    const bound = sql.raw(descending ? '<=' : '>=');
    const condition: Expression<SqlBool> = sql<SqlBool>`${at} ${bound} ${seek.at} and (${at} ${cmp} ${seek.at} or ${id} ${cmp} ${seek.id})`;
    q = q.where(condition);
  }
  const direction = descending ? 'desc' : 'asc';
  return q.orderBy(at, direction).orderBy(id, direction).limit(options.limit);
}
