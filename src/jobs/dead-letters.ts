import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

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

/** Deletes and returns the dead letters matching the filter (all when it is empty). */
export async function takeDeadJobs(db: Kysely<DB>, filter: { id?: string; queue?: string }): Promise<DeadJob[]> {
  let query = db.deleteFrom('job_dead_letters');
  if (filter.id !== undefined) query = query.where('id', '=', filter.id);
  if (filter.queue !== undefined) query = query.where('queue', '=', filter.queue);
  const rows = await query.returningAll().execute();
  return rows.map(toDeadJob).sort((a, b) => a.failedAt - b.failedAt || a.id.localeCompare(b.id));
}
