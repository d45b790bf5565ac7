import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

/**
 * The one dead-letter store: jobs of every queue that failed their last attempt, kept for an
 * operator (`parley jobs dead`, `parley jobs replay`; for the provider webhooks' queue also
 * `parley webhooks failed`, `parley webhooks retry`).
 */

/** A job that failed its last attempt. */
export interface DeadJob {
  readonly id: string;
  readonly queue: string;
  readonly payload: unknown;
  readonly attempts: number;
  readonly error: string | null;
  readonly failedAt: number;
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export async function insertDeadJob(
  db: Kysely<DB>,
  job: { id: string; queue: string; payload: unknown; attempts: number; error: string; at: number },
): Promise<void> {
  await db
    .insertInto('job_dead_letters')
    .values({
      id: job.id,
      queue: job.queue,
      payload: JSON.stringify(job.payload ?? null),
      attempts: job.attempts,
      last_error: job.error,
      failed_at: job.at,
    })
    // A job can fail its last attempt twice when a lease lapsed in between: keep the first letter.
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}

const toDeadJob = (row: {
  id: string;
  queue: string;
  payload: string;
  attempts: number;
  last_error: string | null;
  failed_at: number;
}): DeadJob => ({
  id: row.id,
  queue: row.queue,
  payload: parse(row.payload),
  attempts: Number(row.attempts),
  error: row.last_error,
  failedAt: Number(row.failed_at),
});

/** Dead letters, oldest first, of one queue or of all. */
export async function listDeadJobs(db: Kysely<DB>, queue?: string): Promise<DeadJob[]> {
  let query = db.selectFrom('job_dead_letters').selectAll();
  if (queue !== undefined) query = query.where('queue', '=', queue);
  const rows = await query.orderBy('failed_at').orderBy('id').execute();
  return rows.map(toDeadJob);
}

/**
 * Dead letters of one queue that were attempted (a dead letter never attempted was moved here by
 * a migration, see 0016), oldest first: all, the one with `id`, or those whose payload text
 * contains `containing` (a cheap filter; the caller checks what it finds).
 */
export async function findDeadJobs(
  db: Kysely<DB>,
  queue: string,
  filter: { id?: string; containing?: string } = {},
): Promise<DeadJob[]> {
  let query = db.selectFrom('job_dead_letters').selectAll().where('queue', '=', queue).where('attempts', '>', 0);
  if (filter.id !== undefined) query = query.where('id', '=', filter.id);
  if (filter.containing !== undefined) query = query.where('payload', 'like', `%${filter.containing}%`);
  const rows = await query.orderBy('failed_at').orderBy('id').execute();
  return rows.map(toDeadJob);
}

/** Dead letters by queue. */
export async function countDeadJobs(db: Kysely<DB>): Promise<{ queue: string; count: number }[]> {
  const rows = await db
    .selectFrom('job_dead_letters')
    .select(['queue', (eb) => eb.fn.countAll<number>().as('n')])
    .groupBy('queue')
    .execute();
  return rows.map((r) => ({ queue: r.queue, count: Number(r.n) }));
}

/** Records another failed run of a dead letter that stays one. */
export async function updateDeadJob(
  db: Kysely<DB>,
  id: string,
  change: { attempts: number; error: string; at: number },
): Promise<void> {
  await db
    .updateTable('job_dead_letters')
    .set({ attempts: change.attempts, last_error: change.error, failed_at: change.at })
    .where('id', '=', id)
    .execute();
}

/** Deletes one dead letter (its work was done, or it moved elsewhere). */
export async function deleteDeadJob(db: Kysely<DB>, id: string): Promise<void> {
  await db.deleteFrom('job_dead_letters').where('id', '=', id).execute();
}

/**
 * Deletes and returns the dead letters matching the filter (all when it is empty); with
 * `neverAttempted`, only those never attempted (see 0016).
 */
export async function takeDeadJobs(
  db: Kysely<DB>,
  filter: { id?: string; queue?: string; neverAttempted?: boolean },
): Promise<DeadJob[]> {
  let query = db.deleteFrom('job_dead_letters');
  if (filter.id !== undefined) query = query.where('id', '=', filter.id);
  if (filter.queue !== undefined) query = query.where('queue', '=', filter.queue);
  if (filter.neverAttempted) query = query.where('attempts', '=', 0);
  const rows = await query.returningAll().execute();
  return rows.map(toDeadJob).sort((a, b) => a.failedAt - b.failedAt || a.id.localeCompare(b.id));
}
