import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobRunner } from '../../src/jobs/job-runner.js';
import { createJobRunner } from '../../src/jobs/jobs.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { createLogger } from '../../src/shared/logger.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/wait.js';

describe.each(DIALECTS)('a job stored in a transaction (%s)', (dialect) => {
  let t: TestApp;
  let r: JobRunner;
  const queue = `q_${randomBase62(6).toLowerCase()}`;
  const ran: number[] = [];

  beforeAll(async () => {
    t = await createTestApp(dialect);
    // An idle queue looks for due jobs only once a minute: what runs sooner was woken.
    const config = { ...t.ctx.config, jobs: { leaseMs: 5_000, pollMs: 60_000 } };
    r = await createJobRunner(config, t.ctx.region.database, t.ctx.database, t.ctx.clock, createLogger(t.ctx.config));
    r.define<{ n: number }>({
      name: queue,
      handler: async (payload) => {
        ran.push(payload.n);
      },
    });
    await r.init();
    r.start();
    // The first poll of the queue (at start) has found nothing; the next is a minute away.
    await r.drained([queue]);
  });
  afterAll(async () => {
    await r.stop();
    await t.close();
  });

  it('is worked once the transaction commits, without anyone waking its queue', async () => {
    const startedAt = Date.now();
    await t.ctx.db.transaction().execute(async (trx) => {
      await r.enqueue(queue, { n: 1 }, { db: trx });
      await r.enqueueMany(queue, [{ n: 2 }, { n: 3 }], { db: trx });
    });
    await until(() => ran.length === 3, 'the jobs to run after the commit', 10_000);
    expect(ran.sort()).toEqual([1, 2, 3]);
    expect(Date.now() - startedAt).toBeLessThan(10_000);
  });

  it('is never stored, nor worked, when the transaction rolls back', async () => {
    ran.length = 0;
    await expect(
      t.ctx.db.transaction().execute(async (trx) => {
        await r.enqueue(queue, { n: 4 }, { db: trx });
        throw new Error('undone');
      }),
    ).rejects.toThrow('undone');
    // A job committed after it is worked at once; the undone one never was.
    await t.ctx.db.transaction().execute((trx) => r.enqueue(queue, { n: 5 }, { db: trx }));
    await until(() => ran.length === 1, 'the committed job to run', 10_000);
    await r.drained([queue]);
    expect(ran).toEqual([5]);
  });
});
