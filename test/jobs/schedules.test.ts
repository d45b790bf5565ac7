import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobRunner } from '../../src/jobs/job-runner.js';
import { createJobRunner } from '../../src/jobs/jobs.js';
import { CONVERSATION_IDLE_SWEEP_QUEUE } from '../../src/jobs/queues.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { createLogger } from '../../src/shared/logger.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/wait.js';

describe.each(DIALECTS)('scheduled jobs (%s)', (dialect) => {
  let t: TestApp;
  const runners: JobRunner[] = [];

  /** A runner of its own on the test app's database, as another node would have. */
  async function node(define: (r: JobRunner) => void): Promise<JobRunner> {
    const config = { ...t.ctx.config, jobs: { leaseMs: 2_000, pollMs: 50 } };
    const r = await createJobRunner(
      config,
      t.ctx.region.database,
      t.ctx.database,
      t.ctx.clock,
      createLogger(t.ctx.config),
    );
    define(r);
    await r.init();
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

  /** Runs the schedule on these nodes until it ran `times`; answers each run's node and interval. */
  async function runOn(nodes: readonly string[], times: number) {
    const name = `s_${randomBase62(6).toLowerCase()}`;
    const everyMs = 200;
    const runs: { node: string; interval: number }[] = [];
    const started: JobRunner[] = [];
    for (const id of nodes) {
      started.push(
        await node((r) =>
          r.schedule({
            name,
            everyMs,
            run: async (interval) => {
              runs.push({ node: id, interval });
            },
          }),
        ),
      );
    }
    const from = Math.floor(Date.now() / everyMs);
    for (const r of started) r.start();
    await until(() => runs.length >= times, `${times} intervals to run`, 20_000);
    for (const r of started) await r.stop();
    const to = Math.floor(Date.now() / everyMs);
    const intervals = runs.map((run) => run.interval);
    // Each interval once, and no more runs than intervals went by (none for the one it started in).
    expect(new Set(intervals).size).toBe(intervals.length);
    expect(runs.length).toBeLessThanOrEqual(to - from);
    for (const interval of intervals) expect(interval).toBeGreaterThan(from);
    return runs;
  }

  it('runs once per interval', async () => {
    await runOn(['a'], 5);
  });

  // The SQLite store serves one node's process; on PostgreSQL every node of a region works jobs.
  it.runIf(dialect === 'postgres')(
    'runs once per interval with two nodes working jobs, not once per node',
    async () => {
      await runOn(['a', 'b'], 8);
    },
  );

  it.runIf(dialect === 'postgres')(
    'the idle sweep runs once per PARLEY_CONVERSATION_SWEEP_MS with two nodes on one database',
    async () => {
      const env = { PARLEY_CONVERSATION_SWEEP_MS: '200' };
      const from = Math.floor(Date.now() / 200);
      const a = await createTestApp(dialect, { env });
      try {
        const b = await createTestApp(dialect, { env, shareWith: a, ownDataDir: true });
        try {
          // The sweeps run, as pg-boss keeps them: one job per interval, whichever node ran it.
          const sweeps = async () =>
            (
              await sql<{ interval: string }>`
                select data->'p'->>'interval' as interval from job
                 where name = ${CONVERSATION_IDLE_SWEEP_QUEUE} and state = 'completed'`.execute(a.ctx.db)
            ).rows.map((r) => Number(r.interval));
          await until(async () => (await sweeps()).length >= 8, 'eight sweeps', 20_000);
          const to = Math.floor(Date.now() / 200);
          const intervals = await sweeps();
          expect(new Set(intervals).size).toBe(intervals.length);
          expect(intervals.length).toBeLessThanOrEqual(to - from);
        } finally {
          await b.close();
        }
      } finally {
        await a.close();
      }
    },
  );

  it('a failed run is logged and kept as no dead letter; the next interval runs it again', async () => {
    const name = `s_${randomBase62(6).toLowerCase()}`;
    let attempts = 0;
    const r = await node((x) =>
      x.schedule({
        name,
        everyMs: 100,
        run: async () => {
          attempts++;
          if (attempts === 1) throw new Error('not this time');
        },
      }),
    );
    r.start();
    await until(() => attempts >= 2, 'the next interval to run', 10_000);
    await r.stop();
    expect((await r.listDead(name)).length).toBe(0);
  });
});
