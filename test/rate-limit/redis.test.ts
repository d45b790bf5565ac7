import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSendRateLimiter, type SendRateLimiter } from '../../src/rate-limit/send-rate-limiter.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { freePort } from '../helpers/cli.js';
import { until } from '../helpers/wait.js';

const REDIS_SERVER = '/usr/bin/redis-server';

/**
 * A Redis of the test's own, frozen with SIGSTOP: it accepts connections and never answers, the
 * worst way for a store to fail. The limiter's breaker makes that cost one timeout per interval.
 */
describe.skipIf(!existsSync(REDIS_SERVER))('a stalled Redis', () => {
  let server: ChildProcess;
  let port: number;
  let limiter: SendRateLimiter;
  let probe: Redis;
  const prefix = `rlt_${randomBase62(8)}`;

  beforeAll(async () => {
    port = await freePort();
    server = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
    probe.on('error', () => undefined);
    await until(async () => {
      try {
        await probe.connect();
        return (await probe.ping()) === 'PONG';
      } catch {
        probe.disconnect();
        return false;
      }
    }, 'the test Redis');
    limiter = await createSendRateLimiter({
      perKey: 1000,
      perOrg: 10_000,
      region: 'us',
      logger: pino({ level: 'silent' }),
      redisUrl: `redis://127.0.0.1:${port}`,
      redisPrefix: prefix,
      breakerMs: 1_000,
    });
    await limiter.ready();
  });
  afterAll(async () => {
    server.kill('SIGCONT');
    await limiter?.close();
    probe?.disconnect();
    server.kill('SIGKILL');
  });

  const shared = async () => Number((await probe.get(`${prefix}:us:rl:key:k1`)) ?? 0);

  it('costs one timeout per interval, not one per request, and is used again once it answers', async () => {
    expect((await limiter.consume({ keyId: 'k1', orgId: 'o1' })).allowed).toBe(true);
    expect(await shared()).toBe(1);
    expect(limiter.sharedStoreHealthy()).toBe(true);

    server.kill('SIGSTOP');
    const started = Date.now();
    for (let i = 0; i < 20; i++) expect((await limiter.consume({ keyId: 'k1', orgId: 'o1' })).allowed).toBe(true);
    const elapsed = Date.now() - started;
    // Without the breaker: 20 requests × 2 counters × 500 ms. With it: one timeout, then memory.
    expect(elapsed).toBeLessThan(5 * 500);
    expect(limiter.sharedStoreHealthy()).toBe(false);

    server.kill('SIGCONT');
    await until(async () => {
      await limiter.consume({ keyId: 'k1', orgId: 'o1' });
      return limiter.sharedStoreHealthy();
    }, 'the breaker to close');
    const before = await shared();
    await limiter.consume({ keyId: 'k1', orgId: 'o1' });
    expect(await shared()).toBe(before + 1);
  });
});

/**
 * Redis killed, then started again empty: the key's quota holds across the whole outage. The
 * fallback starts from the last shared count, and the restarted Redis catches up with what the
 * fallback counted, so the key gets its quota once in the window, not once per store.
 */
describe.skipIf(!existsSync(REDIS_SERVER))('a Redis lost and restarted empty', () => {
  let server: ChildProcess;
  let port: number;
  let limiter: SendRateLimiter;
  let probe: Redis;
  const prefix = `rlr_${randomBase62(8)}`;
  const start = () =>
    spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
  const reachable = async () => {
    try {
      if (probe.status !== 'ready') await probe.connect();
      return (await probe.ping()) === 'PONG';
    } catch {
      probe.disconnect();
      return false;
    }
  };

  beforeAll(async () => {
    port = await freePort();
    server = start();
    probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
    probe.on('error', () => undefined);
    await until(reachable, 'the test Redis');
    limiter = await createSendRateLimiter({
      perKey: 10,
      perOrg: 10_000,
      region: 'us',
      logger: pino({ level: 'silent' }),
      redisUrl: `redis://127.0.0.1:${port}`,
      redisPrefix: prefix,
      breakerMs: 200,
    });
    await limiter.ready();
  });
  afterAll(async () => {
    await limiter?.close();
    probe?.disconnect();
    server.kill('SIGKILL');
  });

  it('allows the quota once across Redis, the fallback and Redis again', async () => {
    let allowed = 0;
    const take = async () => {
      const ok = (await limiter.consume({ keyId: 'k1', orgId: 'o1' })).allowed;
      if (ok) allowed++;
      return ok;
    };
    for (let i = 0; i < 4; i++) await take();
    expect(allowed).toBe(4);

    server.kill('SIGKILL');
    await until(
      () => !limiter.sharedStoreHealthy() || take().then(() => !limiter.sharedStoreHealthy()),
      'the fallback',
    );
    // Whatever the wait above counted, the fallback continues from the shared 4: 10 in all, then refusals.
    for (let i = 0; i < 20; i++) await take();
    expect(await take()).toBe(false);
    expect(allowed).toBe(10);

    server = start();
    await until(reachable, 'Redis again');
    await until(async () => {
      await take();
      return limiter.sharedStoreHealthy();
    }, 'the limiter to use Redis again');
    // The empty Redis caught up with the fallback's count: still refused, and counted there.
    expect(await take()).toBe(false);
    expect(allowed).toBe(10);
    expect(Number(await probe.get(`${prefix}:us:rl:key:k1`))).toBeGreaterThan(10);
  });
});
