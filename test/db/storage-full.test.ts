import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';
import { captureLog } from '../helpers/log-capture.js';
import { createProbeApp } from '../helpers/platform-probe.js';

/**
 * A full disk, made real with SQLite's own size cap (`max_page_count`: SQLite then answers
 * SQLITE_FULL exactly as on a full file system): writes are 503 with Retry-After in the route's
 * envelope, the log names SQLITE_FULL, /api/ready says unavailable until a write succeeds, and
 * nothing half-written remains.
 */
describe('a full disk (sqlite)', () => {
  let t: TestApp;
  let auth: Record<string, string>;
  const log = captureLog('info');

  beforeAll(async () => {
    t = await createProbeApp('sqlite', { logger: log.logger });
    auth = (await makeTenant(t.ctx)).orgKey.auth;
  });
  afterAll(async () => {
    await t.close();
  });

  const sqlite = () => {
    const handle = t.ctx.database.sqlite;
    if (!handle) throw new Error('not sqlite');
    return handle;
  };
  const createEndUser = (name: string) =>
    t.app.inject({
      method: 'POST',
      url: '/api/endusers',
      headers: auth,
      payload: {
        origin: 'manual',
        name,
        email: `${name}@example.com`,
        tags: Array.from({ length: 20 }, (_, i) => `tag${i}-${'x'.repeat(50)}`),
      },
    });

  it('answers 503 with Retry-After, is not ready, and recovers once a write succeeds', async () => {
    const pages = Number(sqlite().pragma('page_count', { simple: true }));
    sqlite().pragma(`max_page_count = ${pages}`);
    let full: Awaited<ReturnType<typeof createEndUser>> | undefined;
    for (let i = 0; i < 200 && !full; i++) {
      const res = await createEndUser(`full${i}`);
      if (res.statusCode !== 201) full = res;
    }
    expect(full?.statusCode, full?.body).toBe(503);
    expect(full?.headers['retry-after']).toBe('30');
    expect(full?.json()).toEqual({
      error: 'The server cannot store data right now; retry later.',
      code: 'SERVICE_UNAVAILABLE',
    });

    const notReady = await t.app.inject({ method: 'GET', url: '/api/ready' });
    expect(notReady.statusCode).toBe(503);
    expect(notReady.json()).toEqual({ status: 'unavailable' });
    // The log names the real cause, not the rollback that followed it.
    const failures = log
      .text()
      .split('\n')
      .filter((line) => line.includes('upstream failure'));
    expect(failures.join('\n')).toContain('SQLITE_FULL');
    expect(log.text()).not.toContain('no transaction is active');

    sqlite().pragma('max_page_count = 1073741823');
    const ready = await t.app.inject({ method: 'GET', url: '/api/ready' });
    expect(ready.statusCode).toBe(200);
    expect((await createEndUser('after')).statusCode).toBe(201);
  });
});
