import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { requireKey } from '../../src/http/auth.js';
import {
  RATE_LIMIT_HEADERS,
  rateLimit,
  rateLimitedResponse,
  withHeaders,
} from '../../src/rate-limit/rate-limit.hook.js';
import { createSendRateLimiter, type SendRateLimiter } from '../../src/rate-limit/send-rate-limiter.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { createTestApp, DIALECTS, REDIS_URL, type TestApp } from '../helpers/app.js';
import { makeKey, makeOrg } from '../helpers/factories.js';

const silent = pino({ level: 'silent' });
const PATH = '/api/channels/test-limited';

/** The real app of `t`, plus a test-only route limited like the send route. */
async function limitedApp(t: TestApp, limiter: SendRateLimiter = t.ctx.sendRateLimiter): Promise<FastifyInstance> {
  const app = await buildApp(t.ctx, { logRequests: false });
  app.post(
    PATH,
    {
      onRequest: [requireKey(t.ctx, 'channels'), rateLimit({ sendRateLimiter: limiter })],
      config: { family: 'channel' },
      schema: {
        response: {
          200: withHeaders(Type.Object({ success: Type.Literal(true) }), RATE_LIMIT_HEADERS),
          ...rateLimitedResponse('channel'),
        },
      },
    },
    async () => ({ success: true as const }),
  );
  await app.ready();
  return app;
}

const hit = (app: FastifyInstance, auth: Record<string, string>) =>
  app.inject({ method: 'POST', url: PATH, headers: { ...auth, 'content-type': 'application/json' }, payload: {} });

async function orgWithKeys(t: TestApp, count: number) {
  const org = await makeOrg(t.ctx);
  const keys = [];
  for (let i = 0; i < count; i++) keys.push(await makeKey(t.ctx, org.id, { permissions: ['channels', 'triggers'] }));
  return { org, keys };
}

describe.each(DIALECTS)('send rate limits, in memory (%s)', (dialect) => {
  let t: TestApp;
  let app: FastifyInstance;
  beforeAll(async () => {
    t = await createTestApp(dialect, { env: { PARLEY_SEND_RATE_LIMIT: '3', PARLEY_SEND_RATE_LIMIT_ORG: '4' } });
    app = await limitedApp(t);
  });
  afterAll(async () => {
    await app.close();
    await t.close();
  });

  it('counts per key: the 4th request is 429 with Retry-After 60, the envelope and RateLimit headers', async () => {
    const { keys } = await orgWithKeys(t, 1);
    const auth = keys[0]?.auth ?? {};
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await hit(app, auth);
      expect(res.statusCode).toBe(200);
      expect(res.headers['ratelimit-policy']).toBe('"key";q=3;w=60, "org";q=4;w=60');
      remaining.push(String(res.headers.ratelimit));
      expect(res.headers['retry-after']).toBeUndefined();
    }
    // The key counter is the tighter one after the first request (3 for the key, 4 for the org).
    expect(remaining[0]).toMatch(/^"key";r=2;t=(59|60)$/);
    expect(remaining[1]).toMatch(/^"key";r=1;t=(59|60)$/);
    expect(remaining[2]).toMatch(/^"key";r=0;t=(59|60)$/);

    const refused = await hit(app, auth);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('60');
    expect(refused.headers['ratelimit-policy']).toBe('"key";q=3;w=60, "org";q=4;w=60');
    expect(refused.headers.ratelimit).toMatch(/^"key";r=0;t=([1-5]?[0-9]|60)$/);
    const body = refused.json();
    expect(Object.keys(body).sort()).toEqual(['error', 'success']);
    expect(body.success).toBe(false);
    expect(body.error).toBe(
      'Rate limit exceeded: this API key may make 3 requests per 60 seconds; retry after 60 seconds.',
    );
  });

  it('counts per organization across its keys, and a refusal by the key does not use up the organization', async () => {
    const { keys } = await orgWithKeys(t, 2);
    const [a, b] = [keys[0]?.auth ?? {}, keys[1]?.auth ?? {}];
    // Key A: 3 allowed, 2 refused by its own limit; only the 3 allowed count for the organization.
    const statusesA = [];
    for (let i = 0; i < 5; i++) statusesA.push((await hit(app, a)).statusCode);
    expect(statusesA).toEqual([200, 200, 200, 429, 429]);

    const lastForOrg = await hit(app, b);
    expect(lastForOrg.statusCode).toBe(200);
    expect(lastForOrg.headers.ratelimit).toMatch(/^"org";r=0;t=\d+$/);

    const refused = await hit(app, b);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('60');
    expect(refused.headers.ratelimit).toMatch(/^"org";r=0;t=\d+$/);
    expect(refused.json()).toEqual({
      success: false,
      error: 'Rate limit exceeded: this organization may make 4 requests per 60 seconds; retry after 60 seconds.',
    });
  });

  it('leaves other organizations alone', async () => {
    const first = await orgWithKeys(t, 1);
    const auth = first.keys[0]?.auth ?? {};
    for (let i = 0; i < 3; i++) expect((await hit(app, auth)).statusCode).toBe(200);
    expect((await hit(app, auth)).statusCode).toBe(429);

    const other = await orgWithKeys(t, 1);
    const res = await hit(app, other.keys[0]?.auth ?? {});
    expect(res.statusCode).toBe(200);
    expect(res.headers.ratelimit).toMatch(/^"key";r=2;t=\d+$/);
  });

  it('documents the 429 and the rate limit headers in the OpenAPI description', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
    const responses = doc.paths[PATH].post.responses;
    expect(Object.keys(responses['200'].headers)).toEqual(['RateLimit-Policy', 'RateLimit']);
    expect(Object.keys(responses['429'].headers)).toEqual(['Retry-After', 'RateLimit-Policy', 'RateLimit']);
    expect(responses['429'].headers['Retry-After'].schema).toEqual({ type: 'integer' });
    expect(responses['429'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ChannelError' });
  });

  it('authenticates before counting: a bad key is 401 and carries no rate limit headers', async () => {
    const res = await hit(app, { authorization: 'Bearer nope' });
    expect(res.statusCode).toBe(401);
    expect(res.headers['ratelimit-policy']).toBeUndefined();
  });

  it('has room again once the window that refused has ended', async () => {
    // Same limiter, a 1-second window instead of 60, so the test does not wait a minute.
    const short = await createSendRateLimiter({
      perKey: 2,
      perOrg: 100,
      region: 'us',
      logger: silent,
      windowSeconds: 1,
    });
    const shortApp = await limitedApp(t, short);
    try {
      const { keys } = await orgWithKeys(t, 1);
      const auth = keys[0]?.auth ?? {};
      expect((await hit(shortApp, auth)).statusCode).toBe(200);
      expect((await hit(shortApp, auth)).statusCode).toBe(200);
      const refused = await hit(shortApp, auth);
      expect(refused.statusCode).toBe(429);
      expect(refused.headers['retry-after']).toBe('1');
      await new Promise((r) => setTimeout(r, 1_100));
      const again = await hit(shortApp, auth);
      expect(again.statusCode).toBe(200);
      expect(again.headers.ratelimit).toBe('"key";r=1;t=1');
    } finally {
      await shortApp.close();
      await short.close();
    }
  });
});

describe('send rate limiter with Redis unreachable', () => {
  it('falls back to counting in the process and logs a warning', async () => {
    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) });
    const limiter = await createSendRateLimiter({
      perKey: 2,
      perOrg: 10,
      region: 'us',
      logger,
      redisUrl: 'redis://127.0.0.1:1',
      redisPrefix: `parley-test-${randomBase62(8)}`,
    });
    try {
      const subject = { keyId: 'key_a', orgId: 'org_a' };
      const decisions = [];
      for (let i = 0; i < 3; i++) decisions.push(await limiter.consume(subject));
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, false]);
      expect(warnings.some((w) => w.includes('rate limit store (Redis) unreachable'))).toBe(true);
    } finally {
      await limiter.close();
    }
  });
});

describe.skipIf(!REDIS_URL)('send rate limits shared through Redis', () => {
  it('two limiters on one Redis share the counters, under the configured key prefix', async () => {
    const prefix = `parley-test-${randomBase62(8)}`;
    const make = () =>
      createSendRateLimiter({
        perKey: 3,
        perOrg: 100,
        region: 'us',
        logger: silent,
        redisUrl: REDIS_URL,
        redisPrefix: prefix,
      });
    const [one, two] = await Promise.all([make(), make()]);
    await Promise.all([one.ready(), two.ready()]);
    const { Redis } = await import('ioredis');
    const redis = new Redis(REDIS_URL ?? '');
    try {
      const subject = { keyId: `key_${randomBase62(6)}`, orgId: `org_${randomBase62(6)}` };
      const allowed = [];
      for (const limiter of [one, two, one, two, one]) allowed.push((await limiter.consume(subject)).allowed);
      expect(allowed).toEqual([true, true, true, false, false]);
      expect(await redis.get(`${prefix}:us:rl:key:${subject.keyId}`)).toBe('5');
      expect(await redis.get(`${prefix}:us:rl:org:${subject.orgId}`)).toBe('3');
      const ttl = await redis.ttl(`${prefix}:us:rl:key:${subject.keyId}`);
      expect(ttl).toBeGreaterThan(50);
      expect(ttl).toBeLessThanOrEqual(60);
    } finally {
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
      await redis.quit();
      await one.close();
      await two.close();
    }
  });
});
