import { describe, expect, it } from 'vitest';
import { LaterWrites } from '../../src/db/later-writes.js';
import { ManualClock } from '../../src/shared/clock.js';
import { captureLog } from '../helpers/log-capture.js';
import { until } from '../helpers/wait.js';

/** Pure logic (no database; the faults are the errors a database gives): when a write is tried again. */
describe('LaterWrites', () => {
  const full = () => Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
  const setup = () => {
    const clock = new ManualClock();
    const log = captureLog('info');
    return { clock, log, writes: new LaterWrites({ clock, logger: log.logger }, [1, 1], 20) };
  };

  it('writes at once when it can', async () => {
    const { clock, writes } = setup();
    let calls = 0;
    expect(await writes.run('recording x', async () => calls++, { until: clock.now() + 1000 })).toBe(true);
    expect(calls).toBe(1);
    expect(writes.waiting).toBe(0);
  });

  it('keeps a write a passing fault refuses, and writes it in the background once the fault has passed', async () => {
    const { clock, log, writes } = setup();
    let diskFull = true;
    let written = 0;
    const done = await writes.run(
      'recording x',
      async () => {
        if (diskFull) throw full();
        written++;
      },
      { until: clock.now() + 60_000 },
    );
    expect(done).toBe(false);
    expect(writes.waiting).toBe(1);
    expect(log.text()).toContain('recording x failed for now; trying again in the background');
    diskFull = false;
    await until(() => writes.waiting === 0, 'the write done in the background');
    expect(written).toBe(1);
    expect(log.text()).toContain('recording x succeeded in the background');
  });

  it('gives a kept write up once it is no longer needed', async () => {
    const { clock, log, writes } = setup();
    await writes.run(
      'recording x',
      async () => {
        throw full();
      },
      { until: clock.now() + 1000 },
    );
    expect(writes.waiting).toBe(1);
    clock.advance(1000);
    await until(() => writes.waiting === 0, 'the write given up');
    expect(log.text()).toContain('gave up recording x: it is no longer needed');
  });

  it('never keeps a write the database refused', async () => {
    const { clock, log, writes } = setup();
    let calls = 0;
    const done = await writes.run(
      'recording x',
      async () => {
        calls++;
        throw Object.assign(new Error('constraint failed'), { code: 'SQLITE_CONSTRAINT_CHECK' });
      },
      { until: clock.now() + 1000 },
    );
    expect(done).toBe(false);
    expect(calls).toBe(1);
    expect(writes.waiting).toBe(0);
    expect(log.text()).toContain('recording x failed');
  });
});
