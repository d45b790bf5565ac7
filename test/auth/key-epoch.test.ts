import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { keyEpochConfirmer, requireKey } from '../../src/http/auth.js';
import { revokeKey } from '../../src/keys/key.service.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { makeKey, makeOrg } from '../helpers/factories.js';

const REVOKED = { error: 'This API key has been revoked.', code: 'UNAUTHORIZED' };

/**
 * The fail-closed rule of the key-epoch protocol (src/auth/key-epoch.ts): a request admitted on a
 * cached key answers only once a statement of its own has confirmed the key epoch. A route that
 * never confirms it (here, on purpose) answers the 401 of a revoked key, not its data.
 */
describe.each(DIALECTS)('key epoch: a cached key never confirmed fails closed (%s)', (dialect) => {
  let t: TestApp;
  let app: FastifyInstance;

  beforeAll(async () => {
    t = await createTestApp(dialect);
    // A second app on the same context, with routes that opt in to confirming the epoch themselves.
    app = await buildApp(t.ctx, { logRequests: false });
    const onCache = { onRequest: [requireKey(t.ctx, 'endusers', { epochInQuery: true })] };
    // Forgets to confirm: must never answer its data to a key admitted on the cache.
    app.get('/test/forgets-the-epoch', onCache, async () => ({ secret: 'data' }));
    // Confirms, reading the epoch alone (as a route whose own statement read none).
    app.get('/test/confirms-the-epoch', onCache, async (request) => {
      await keyEpochConfirmer(t.ctx, request)?.(undefined);
      return { secret: 'data' };
    });
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
    await t?.close();
  });

  it('answers 401, the body of a revoked key, once the key is admitted from the cache', async () => {
    const org = await makeOrg(t.ctx);
    const k = await makeKey(t.ctx, org.id, { permissions: ['endusers'] });
    const get = (url: string) => app.inject({ method: 'GET', url, headers: k.auth });

    // The first request reads the key from the database (nothing to confirm) and caches it.
    const first = await get('/test/forgets-the-epoch');
    expect(first.statusCode).toBe(200);
    // From the cache, pending the epoch the route never reads: refused, nothing of its answer leaks.
    for (let i = 0; i < 3; i++) {
      const res = await get('/test/forgets-the-epoch');
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual(REVOKED);
      expect(res.body).not.toContain('secret');
    }
    // The key itself is fine: a route that confirms the epoch answers from the cache as before.
    for (let i = 0; i < 3; i++) {
      const res = await get('/test/confirms-the-epoch');
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ secret: 'data' });
    }
    // And a real revocation is the same 401 on both.
    await revokeKey(t.ctx.db, t.ctx.clock, org.id, k.id);
    for (const url of ['/test/forgets-the-epoch', '/test/confirms-the-epoch']) {
      const res = await get(url);
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual(REVOKED);
    }
  });
});
