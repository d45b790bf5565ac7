import { describe, expect, it } from 'vitest';
import { retrying } from '../../src/db/retry.js';

/** Pure logic (no database): which errors a write is tried again after, and how many times. */
describe('retrying', () => {
  const lost = () => Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });

  it('tries again after each wait while the database cannot answer, then succeeds', async () => {
    let calls = 0;
    const retried: number[] = [];
    const out = await retrying(
      async () => {
        calls++;
        if (calls < 3) throw lost();
        return 'stored';
      },
      { waitsMs: [1, 1, 1], onRetry: (_err, attempt) => retried.push(attempt) },
    );
    expect(out).toBe('stored');
    expect(calls).toBe(3);
    expect(retried).toEqual([1, 2]);
  });

  it('gives up after the last wait with the last error', async () => {
    let calls = 0;
    await expect(
      retrying(
        async () => {
          calls++;
          throw lost();
        },
        { waitsMs: [1, 1] },
      ),
    ).rejects.toMatchObject({ code: '57P01' });
    expect(calls).toBe(3);
  });

  it('tries again after a full disk too (a passing fault), not only a lost connection', async () => {
    let calls = 0;
    await retrying(
      async () => {
        calls++;
        if (calls === 1) throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
      },
      { waitsMs: [1] },
    );
    expect(calls).toBe(2);
  });

  it('never runs again a write the database refused (a constraint, a bad statement)', async () => {
    let calls = 0;
    await expect(
      retrying(
        async () => {
          calls++;
          throw Object.assign(new Error('duplicate key'), { code: '23505' });
        },
        { waitsMs: [1, 1] },
      ),
    ).rejects.toMatchObject({ code: '23505' });
    expect(calls).toBe(1);
  });
});
