import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type JobInfo, type JobRunner, RetryLater } from '../../src/jobs/job-runner.js';
import { createJobRunner } from '../../src/jobs/jobs.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { createLogger } from '../../src/shared/logger.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { runCli, runCliProcess } from '../helpers/cli.js';
import { until } from '../helpers/wait.js';

describe.each(DIALECTS)('job runner (%s)', (dialect) => {
  let t: TestApp;
  const runners: JobRunner[] = [];

  /** A runner of its own on the test app's database, as a second node would have. */
  async function runner(
    define: (r: JobRunner) => void,
    options: { leaseMs?: number; start?: boolean } = {},
  ): Promise<JobRunner> {
    const config = { ...t.ctx.config, jobs: { leaseMs: options.leaseMs ?? 1_000, pollMs: 20 } };
    const r = await createJobRunner(
      config,
      t.ctx.region.database,
      t.ctx.database,
      t.ctx.clock,
      createLogger(t.ctx.config),
    );
    define(r);
    await r.init();
    if (options.start !== false) r.start();
    runners.push(r);
    return r;
  }

  beforeAll(async () => {
    t = await createTestApp(dialect);
  });
  afterAll(async () => {
    for (const r of runners) await r.stop();
    await t.close();
  });

  it('runs a job once, then forgets it', async () => {
    const queue = `q_${randomBase62(6).toLowerCase()}`;
    const seen: unknown[] = [];
    const r = await runner((x) =>
      x.define<{ n: number }>({
        name: queue,
        handler: async (payload) => {
          seen.push(payload);
        },
      }),
    );
    await r.enqueue(queue, { n: 1 });
    await r.enqueue(queue, { n: 2 });
    await r.drained([queue]);
    expect(seen).toEqual(expect.arrayContaining([{ n: 1 }, { n: 2 }]));
    expect(seen).toHaveLength(2);
    expect((await r.counts()).filter((c) => c.queue === queue)).toEqual([
      { queue, state: 'queued', count: 0 },
      { queue, state: 'running', count: 0 },
      { queue, state: 'dead', count: 0 },
    ]);
  });

  it('jobs enqueued in one turn each resolve with their own ID once stored (on PostgreSQL, by one INSERT), and each runs once', async () => {
    const queue = `q_${randomBase62(6).toLowerCase()}`;
    const seen: number[] = [];
    const r = await runner(
      (x) =>
        x.define<{ n: number }>({
          name: queue,
          handler: async (payload) => {
            seen.push(payload.n);
          },
        }),
      { start: false },
    );
    const ids = await Promise.all(Array.from({ length: 200 }, (_, n) => r.enqueue(queue, { n })));
    expect(new Set(ids).size).toBe(200);
    if (dialect === 'postgres') {
      const schema = t.ctx.region.database.kind === 'postgres' ? t.ctx.region.database.schema : '';
      const { rows } = await sql<{ n: number; statements: number }>`
        select count(*)::int as n, count(distinct created_on)::int as statements
          from ${sql.table(`${schema}.job`)} where name = ${queue}`.execute(t.ctx.db);
      // Every row of one INSERT carries that statement's now().
      expect(rows[0]).toEqual({ n: 200, statements: 1 });
    }
    r.start();
    await r.drained([queue]);
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, n) => n));
  });

  it('a queue with batches hands its jobs over together; what the batch leaves, or a failing batch, runs job by job', async () => {
    const queue = `q_${randomBase62(6).toLowerCase()}`;
    const batches: number[][] = [];
    const single: number[] = [];
    let failNextBatch = false;
    // Started only once everything is queued, so the first claim sees them all.
    const r = await runner(
      (x) =>
        x.define<{ n: number }>({
          name: queue,
          concurrency: 2,
          retryDelaysMs: [10],
          handler: async (payload) => {
            if (payload.n === 13 && !single.includes(13)) {
              single.push(13);
              throw new Error('unlucky once');
            }
            single.push(payload.n);
          },
          batch: {
            size: 5,
            handler: async (jobs) => {
              batches.push(jobs.map((j) => j.payload.n));
              if (failNextBatch) {
                failNextBatch = false;
                throw new Error('the whole batch fails');
              }
              // Odd numbers are left to run on their own.
              return jobs.filter((j) => j.payload.n % 2 === 0).map((j) => j.job.id);
            },
          },
        }),
      { start: false },
    );
    for (let n = 0; n < 12; n++) await r.enqueue(queue, { n });
    r.start();
    await r.drained([queue]);
    expect(batches.every((b) => b.length <= 5)).toBe(true);
    expect(batches.flat().sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(batches.length).toBeLessThanOrEqual(4);
    expect(single.sort((a, b) => a - b)).toEqual([1, 3, 5, 7, 9, 11]);

    // A batch that throws: each of its jobs runs on its own, with its retries.
    failNextBatch = true;
    single.length = 0;
    batches.length = 0;
    await r.enqueue(queue, { n: 12 });
    await r.enqueue(queue, { n: 13 });
    await r.drained([queue]);
    expect(batches.flat().sort((a, b) => a - b)).toEqual(
      batches.length === 1 ? [12, 13] : expect.arrayContaining([12, 13]),
    );
    // 13 failed once on its own and ran again; 12 ran on its own too, after the failed batch.
    expect(single.filter((n) => n === 13)).toHaveLength(2);
    expect(single).toContain(12);
    expect((await r.counts()).filter((c) => c.queue === queue && c.count > 0)).toEqual([]);
  });

  it('a batch may complete its jobs in its own transaction: done with its commit, run on their own after a rollback', async () => {
    /** Jobs of a queue not done, as `db` (a transaction, say) sees them. */
    const notDone = async (db: typeof t.ctx.db, queue: string) => {
      if (t.ctx.region.database.kind === 'postgres') {
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from ${sql.table(`${t.ctx.region.database.schema}.job`)}
          where name = ${queue} and state < 'completed'`.execute(db);
        return rows[0]?.n;
      }
      const { rows } = await sql<{ n: number }>`select count(*) as n from jobs where queue = ${queue}`.execute(db);
      return Number(rows[0]?.n);
    };
    /** Three jobs in one batch whose handler completes them in its transaction, then commits or not. */
    const batchOfThree = async (rollBack: boolean) => {
      const queue = `q_${randomBase62(6).toLowerCase()}`;
      const single: number[] = [];
      const seenInside: (number | undefined)[] = [];
      const seenOutside: (number | undefined)[] = [];
      const r = await runner(
        (x) =>
          x.define<{ n: number }>({
            name: queue,
            concurrency: 1,
            handler: async (payload) => {
              single.push(payload.n);
            },
            batch: {
              size: 10,
              handler: async (jobs, complete) => {
                const ids = jobs.map((j) => j.job.id);
                await t.ctx.db.transaction().execute(async (trx) => {
                  seenInside.push(await notDone(trx, queue));
                  await complete(trx, ids);
                  seenInside.push(await notDone(trx, queue));
                  // Another connection still sees them until the commit (SQLite has only the one).
                  if (dialect === 'postgres') seenOutside.push(await notDone(t.ctx.db, queue));
                  if (rollBack) throw new Error('rolled back after completing its jobs');
                });
                return ids;
              },
            },
          }),
        { start: false },
      );
      for (let n = 0; n < 3; n++) await r.enqueue(queue, { n });
      r.start();
      await r.drained([queue]);
      return {
        seenInside,
        seenOutside,
        single: single.sort((a, b) => a - b),
        left: await notDone(t.ctx.db, queue),
      };
    };
    const outside = dialect === 'postgres' ? [3] : [];
    // Completed inside the batch's transaction (gone there before it committed); none ran on its own.
    expect(await batchOfThree(false)).toEqual({ seenInside: [3, 0], seenOutside: outside, single: [], left: 0 });
    // Rolled back after completing them: they were not done, so each ran on its own.
    expect(await batchOfThree(true)).toEqual({ seenInside: [3, 0], seenOutside: outside, single: [0, 1, 2], left: 0 });
  });

  it('retries on its schedule, keeps the last failure as a dead letter, and replays it', async () => {
    const queue = `q_${randomBase62(6).toLowerCase()}`;
    const attempts: JobInfo[] = [];
    let healthy = false;
    const r = await runner((x) =>
      x.define<{ order: string }>({
        name: queue,
        retryDelaysMs: [50, 50],
        handler: async (_payload, job) => {
          attempts.push(job);
          if (!healthy) throw new Error(`downstream refused attempt ${job.attempt}`);
        },
      }),
    );
    const id = await r.enqueue(queue, { order: 'A1' });
    await until(async () => (await r.listDead(queue)).length === 1, 'the dead letter');
    expect(attempts.map((a) => [a.attempt, a.maxAttempts])).toEqual([
      [1, 3],
      [2, 3],
      [3, 3],
    ]);
    // The same job all along, kept under its own ID.
    expect(new Set(attempts.map((a) => a.id))).toEqual(new Set([id]));
    const [dead] = await r.listDead(queue);
    expect(dead).toMatchObject({
      id,
      queue,
      payload: { order: 'A1' },
      attempts: 3,
      error: 'downstream refused attempt 3',
    });
    expect((await r.counts()).find((c) => c.queue === queue && c.state === 'dead')?.count).toBe(1);

    // The CLI lists it, and replays it onto the queue, where this runner works it.
    const listed = await runCli(['jobs', 'dead', '--queue', queue, '--json'], t.env);
    expect(listed.code).toBe(0);
    expect(listed.json()).toEqual([
      { id, queue, attempts: 3, error: 'downstream refused attempt 3', failedAt: expect.any(Number) },
    ]);
    healthy = true;
    // The real binary, as users run it (the other commands run in a thread: test/helpers/cli.ts).
    const replayed = await runCliProcess(['jobs', 'replay', '--queue', queue, '--json'], t.env);
    expect(replayed.code).toBe(0);
    expect(replayed.json()).toEqual({ replayed: 1, ids: [id] });
    await until(() => attempts.length === 4, 'the replayed run');
    expect(attempts[3]?.attempt).toBe(1);
    await r.drained([queue]);
    expect(await r.listDead(queue)).toEqual([]);
    const none = await runCli(['jobs', 'replay', '--id', 'job_nope'], t.env);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('no dead job "job_nope"');
  });

  it('RetryLater runs the job again without spending an attempt', async () => {
    const queue = `q_${randomBase62(6).toLowerCase()}`;
    const seen: number[] = [];
    const r = await runner((x) =>
      x.define({
        name: queue,
        retryDelaysMs: [],
        handler: async (_p, job) => {
          seen.push(job.attempt);
          if (seen.length < 3) throw new RetryLater(30, 'the number is busy');
        },
      }),
    );
    await r.enqueue(queue, {});
    await r.drained([queue]);
    expect(seen).toEqual([1, 1, 1]);
    expect(await r.listDead(queue)).toEqual([]);
  });

  it.runIf(dialect === 'sqlite')(
    'a job told to retry later is stored with its new time, the same attempt and the reason, and no lease',
    async () => {
      const queue = `q_${randomBase62(6).toLowerCase()}`;
      let runs = 0;
      const r = await runner((x) =>
        x.define({
          name: queue,
          handler: async () => {
            runs++;
            throw new RetryLater(600_000, 'waiting for the number’s pace');
          },
        }),
      );
      const before = Date.now();
      const id = await r.enqueue(queue, {});
      const stored = () =>
        t.ctx.db
          .selectFrom('jobs')
          .select(['attempt', 'run_at', 'locked_until', 'last_error'])
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
      await until(async () => (await stored()).last_error !== null, 'the job rescheduled');
      const row = await stored();
      expect(row).toEqual({
        attempt: 1,
        run_at: expect.any(Number),
        locked_until: null,
        last_error: 'waiting for the number’s pace',
      });
      expect(Number(row.run_at)).toBeGreaterThanOrEqual(before + 600_000);
      expect(Number(row.run_at)).toBeLessThanOrEqual(Date.now() + 600_000);
      expect(runs).toBe(1);
      await t.ctx.db.deleteFrom('jobs').where('id', '=', id).execute();
    },
  );

  it('never runs more jobs of a queue at once than its concurrency', async () => {
    const queue = `q_${randomBase62(6).toLowerCase()}`;
    let running = 0;
    let most = 0;
    let done = 0;
    const r = await runner((x) =>
      x.define({
        name: queue,
        concurrency: 3,
        handler: async () => {
          running++;
          most = Math.max(most, running);
          await new Promise((resolve) => setTimeout(resolve, 30));
          running--;
          done++;
        },
      }),
    );
    for (let i = 0; i < 12; i++) await r.enqueue(queue, { i });
    await r.drained([queue]);
    expect(done).toBe(12);
    expect(most).toBeLessThanOrEqual(3);
    expect(most).toBeGreaterThan(1);
  });

  it('a job claimed by a node that died runs again on another node once its lease lapses', async () => {
    const queue = `q_${randomBase62(6).toLowerCase()}`;
    const ran: string[] = [];
    const define = (x: JobRunner) =>
      x.define<{ id: string }>({
        name: queue,
        handler: async (payload) => {
          ran.push(payload.id);
        },
      });
    // The dying node: it claims the job (its store marks it running) and is never heard of again.
    const dying = await runner(define, { start: false, leaseMs: 1_000 });
    await dying.enqueue(queue, { id: 'orphan' });
    const store = (dying as unknown as { options: { store: import('../../src/jobs/job-runner.js').JobStore } }).options
      .store;
    const claimed = await store.claim(queue, 1, 1_000);
    expect(claimed.map((j) => j.payload)).toEqual([{ id: 'orphan' }]);
    const claimedAt = Date.now();

    const survivor = await runner(define, { leaseMs: 1_000 });
    await until(() => ran.length === 1, 'the orphaned job to run on the surviving node', 15_000);
    expect(ran).toEqual(['orphan']);
    // Not before the lease lapsed: no job runs twice at the same time.
    expect(Date.now() - claimedAt).toBeGreaterThanOrEqual(900);
    await survivor.drained([queue]);
  });

  it('a running job keeps its lease while its handler outlives it', async () => {
    const queue = `q_${randomBase62(6).toLowerCase()}`;
    let starts = 0;
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const define = (x: JobRunner) =>
      x.define({
        name: queue,
        handler: async () => {
          starts++;
          await released;
        },
      });
    const a = await runner(define, { leaseMs: 2_000 });
    await runner(define, { leaseMs: 2_000 });
    await a.enqueue(queue, {});
    await until(() => starts === 1, 'the job to start');
    // Over two leases long: the heartbeat keeps it claimed, so the other node never starts it.
    await new Promise((resolve) => setTimeout(resolve, 4_500));
    expect(starts).toBe(1);
    release();
    await a.drained([queue]);
    expect(starts).toBe(1);
  });
});
