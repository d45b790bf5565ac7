import { describe, expect, it } from 'vitest';
import { retryWhileUnavailable } from '../../src/db/retry-unavailable.js';

/** Pure logic (no database): which errors a write is tried again after, and how many times. */
describe('retryWhileUnavailable', () => {
  const lost = () => Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });

  it('tries again after each wait while the database cannot answer, then succeeds', async () => {
    let calls = 0;
    const retried: number[] = [];
    const out = await retryWhileUnavailable(
      async () => {
        calls++;
        if (calls < 3) throw lost();
        return 'stored';
      },
      [1, 1, 1],
      (_err, attempt) => retried.push(attempt),
    );
    expect(out).toBe('stored');
    expect(calls).toBe(3);
    expect(retried).toEqual([1, 2]);
  });

  it('gives up after the last wait with the last error', async () => {
    let calls = 0;
    await expect(
      retryWhileUnavailable(async () => {
        calls++;
        throw lost();
      }, [1, 1]),
    ).rejects.toMatchObject({ code: '57P01' });
    expect(calls).toBe(3);
  });

  it('never runs again a write the database refused (a constraint, a bad statement)', async () => {
    let calls = 0;
    await expect(
      retryWhileUnavailable(async () => {
        calls++;
        throw Object.assign(new Error('duplicate key'), { code: '23505' });
      }, [1, 1]),
    ).rejects.toMatchObject({ code: '23505' });
    expect(calls).toBe(1);
  });
});
