import { type Kysely, sql } from 'kysely';
import { precompiled, slot } from '../db/precompiled.js';
import type { DB } from '../db/schema.js';
import type { Clock } from '../shared/clock.js';
import { newId } from '../shared/ids.js';
import type { ClaimedJob, JobStore } from './job-store.js';

// The hot insert (a provider webhook's job) joins the group commit of its event-loop turn.
const insertJob = precompiled((db) =>
  db.insertInto('jobs').values({
    id: slot(0),
    queue: slot(1),
    payload: slot(2),
    attempt: slot(3),
    run_at: slot(4),
    created_at: slot(5),
  }),
);

// A job told to come back later (a campaign delivery waiting for its number's pace: thousands at
// once behind a large campaign) joins the group commit too, rather than committing on its own.
const rescheduleJob = precompiled((db) =>
  db
    .updateTable('jobs')
    .set({ attempt: slot(0), run_at: slot(1), locked_until: null, last_error: slot(2) })
    .where('id', '=', slot<string>(3)),
);

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Jobs in a table of the region's SQLite database, worked by the process that serves it. A claim
 * sets a lease (`locked_until`); a job whose lease lapsed (its process was killed) is claimed again,
 * so `kill -9` at any moment loses nothing. Done jobs are deleted. Run times and leases follow
 * real time; `clock` only stamps `created_at`.
 */
export function createSqliteJobStore(db: Kysely<DB>, clock: Clock): JobStore {
  return {
    kind: 'sqlite',
    async init() {},
    async insert(queue, payload, attempt, runAt, trx) {
      const id = newId('job');
      const values = [id, queue, JSON.stringify(payload ?? null), attempt, runAt, clock.now()];
      if (trx) {
        await trx
          .insertInto('jobs')
          .values({ id, queue, payload: values[2] as string, attempt, run_at: runAt, created_at: clock.now() })
          .execute();
      } else {
        await insertJob(db, values);
      }
      return id;
    },
    async insertOnce(queue, key, payload) {
      // One process serves the database: a key's job is stored once, and gone once done.
      const result = await db
        .insertInto('jobs')
        .values({
          id: `job_${queue}_${key}`,
          queue,
          payload: JSON.stringify(payload ?? null),
          attempt: 1,
          run_at: Date.now(),
          created_at: clock.now(),
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
    },
    async insertMany(queue, payloads, trx) {
      const ids: string[] = [];
      for (const payload of payloads) ids.push(await this.insert(queue, payload, 1, Date.now(), trx));
      return ids;
    },
    async claim(queue, limit, leaseMs) {
      const now = Date.now();
      // The LIMIT cast, not bound bare: SQLite would prepare the claim again on every poll (see
      // SqliteStableLimitCompiler in db/database.ts).
      const { rows } = await sql<{ id: string; queue: string; payload: string; attempt: number }>`
        update jobs set locked_until = ${now + leaseMs}
        where id in (
          select id from jobs
          where queue = ${queue} and run_at <= ${now} and (locked_until is null or locked_until < ${now})
          order by run_at, id
          limit cast(${limit} as integer)
        )
        returning id, queue, payload, attempt`.execute(db);
      return rows.map(
        (r): ClaimedJob => ({ id: r.id, queue: r.queue, payload: parse(r.payload), attempt: Number(r.attempt) }),
      );
    },
    async extend(_queue, ids, leaseMs) {
      if (ids.length === 0) return;
      await db
        .updateTable('jobs')
        .set({ locked_until: Date.now() + leaseMs })
        .where('id', 'in', [...ids])
        .execute();
    },
    async complete(job, trx) {
      await (trx ?? db).deleteFrom('jobs').where('id', '=', job.id).execute();
    },
    async completeMany(_queue, jobs, trx) {
      if (jobs.length === 0) return;
      await (trx ?? db)
        .deleteFrom('jobs')
        .where(
          'id',
          'in',
          jobs.map((j) => j.id),
        )
        .execute();
    },
    async reschedule(job, attempt, runAt, error) {
      await rescheduleJob(db, [attempt, runAt, error, job.id]);
    },
    async counts() {
      const now = Date.now();
      const rows = await db
        .selectFrom('jobs')
        .select((eb) => [
          'queue',
          eb.fn.countAll<number>().as('total'),
          eb.fn.sum<number>(eb.case().when('locked_until', '>=', now).then(1).else(0).end()).as('running'),
        ])
        .groupBy('queue')
        .execute();
      return rows.map((r) => ({
        queue: r.queue,
        queued: Number(r.total) - Number(r.running ?? 0),
        running: Number(r.running ?? 0),
      }));
    },
    async close() {},
  };
}
