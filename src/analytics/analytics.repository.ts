import type { Kysely, Transaction } from 'kysely';
import type { DB } from '../db/schema.js';

/** SQL of analytics: sums of the counters of `stat_counts` (kept by the triggers of migration 0064). */

type Db = Kysely<DB> | Transaction<DB>;

/** Per hour and metric (reasons and shards added up), from `since` (inclusive) to `until` (exclusive). */
export async function countsByHour(
  db: Db,
  key: string,
  metrics: readonly string[],
  since: number,
  until: number,
): Promise<{ bucket: number; metric: string; n: number }[]> {
  const rows = await db
    .selectFrom('stat_counts')
    .select(['bucket', 'metric', (eb) => eb.fn.sum<number>('n').as('n')])
    .where('key', '=', key)
    .where('bucket', '>=', since)
    .where('bucket', '<', until)
    .where('metric', 'in', metrics)
    .groupBy(['bucket', 'metric'])
    .execute();
  return rows.map((r) => ({ bucket: Number(r.bucket), metric: r.metric, n: Number(r.n) }));
}

/** Failures by reason, most first. */
export async function failureReasons(
  db: Db,
  key: string,
  since: number,
  until: number,
  limit: number,
): Promise<{ reason: string; count: number }[]> {
  const rows = await db
    .selectFrom('stat_counts')
    .select(['reason', (eb) => eb.fn.sum<number>('n').as('n')])
    .where('key', '=', key)
    .where('bucket', '>=', since)
    .where('bucket', '<', until)
    .where('metric', '=', 'failed')
    .groupBy('reason')
    .orderBy('n', 'desc')
    .orderBy('reason')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ reason: r.reason || 'unknown', count: Number(r.n) }));
}
