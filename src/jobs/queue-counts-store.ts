import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

/** Dead letters by queue (`parley jobs status`, the metrics): the same table on both stores. */
export async function deadJobCounts(db: Kysely<DB>): Promise<{ queue: string; count: number }[]> {
  const rows = await db
    .selectFrom('job_dead_letters')
    .select(['queue', (eb) => eb.fn.countAll<number>().as('n')])
    .groupBy('queue')
    .execute();
  return rows.map((r) => ({ queue: r.queue, count: Number(r.n) }));
}
