import type { Logger } from 'pino';
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { closeRedisQuietly } from '../shared/redis-close.js';

/**
 * Limits of the trigger and channel send endpoints: one counter per API key and one per
 * organization, both checked on every request.
 *
 * Algorithm: a fixed window per counter, opened by the first request of the counter and lasting
 * the window (60 s). A refused request never extends the window, so every counter is back to
 * zero at most 60 s after any refusal: the `Retry-After: 60` the spec mandates is always enough
 * for the limit that refused to have room again. A sliding window gives the same guarantee with
 * smoother edges, but costs a sorted set per counter in Redis; a fixed window is one integer with
 * a TTL, updated atomically by one Lua call, which keeps a shared Redis cheap at thousands of
 * sends per second. The price is the classic burst at a window edge (up to twice the limit
 * across two adjacent windows), acceptable for a per-minute abuse guard.
 *
 * Store: in memory with one process; in Redis when `REDIS_URL` is set, so several processes share
 * the counters. If Redis cannot be reached the limiter falls back to the in-memory counters of
 * the process (limits then hold per process instead of across processes) and logs a warning,
 * rather than refusing every send because the limiter is down, or letting them all through; a
 * circuit breaker keeps a stalled Redis from costing every request a timeout.
 *
 * Continuity across an outage: each process remembers the last shared count it saw for each
 * counter, so the in-memory fallback starts from there, not from zero; and when Redis answers
 * again (perhaps restarted empty), a counter that this process kept counting meanwhile raises the
 * shared one to what it counted before it is used again. A key thus gets its quota once per
 * window through an outage, not once per store (docs/operations.md).
 */

export const WINDOW_SECONDS = 60;

export type LimitName = 'key' | 'org';

export interface LimitState {
  readonly name: LimitName;
  readonly quota: number;
  readonly remaining: number;
  /** Seconds until this counter starts afresh. */
  readonly resetSeconds: number;
}

export interface RateLimitDecision {
  readonly allowed: boolean;
  /** The limit that refused the request, or the most constraining one when allowed. */
  readonly binding: LimitState;
  /** Value of the `RateLimit-Policy` header. */
  readonly policyHeader: string;
  /** Value of the `RateLimit` header. */
  readonly rateLimitHeader: string;
  /** Seconds to send in `Retry-After` when refused. */
  readonly retryAfterSeconds: number;
}

/** What a rate-limited route needs: one check per request, and a way to let go of resources. */
export interface SendRateLimiter {
  readonly windowSeconds: number;
  /** Resolves once the shared store is connected, or has failed to connect (then: memory). */
  ready(): Promise<void>;
  /** False while a configured Redis is disconnected or its breaker is open (counting in memory). */
  sharedStoreHealthy(): boolean;
  consume(subject: { keyId: string; orgId: string }): Promise<RateLimitDecision>;
  /**
   * Whether a request would be allowed now, counting nothing (POST /api/channels/send/check): the
   * limit that would refuse it, if any, with its quota and the seconds until its window restarts.
   */
  peek(subject: { keyId: string; orgId: string }): Promise<RateLimitPeek>;
  close(): Promise<void>;
}

export type RateLimitPeek =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly name: LimitName; readonly quota: number; readonly retryAfterSeconds: number };

export interface SendRateLimiterOptions {
  readonly perKey: number;
  readonly perOrg: number;
  readonly region: string;
  readonly logger: Logger;
  readonly redisUrl?: string | undefined;
  /** Prefix of every Redis key, e.g. `parley` → `parley:us:rl:key:<keyId>`. */
  readonly redisPrefix?: string;
  /** The segment after the region, so two limiters keep separate counters (default `rl`; campaigns: `crl`). */
  readonly storeName?: string;
  /** Window length. Production always uses 60 s; tests shorten it to watch a window end. */
  readonly windowSeconds?: number;
  /** How long a failed Redis is left alone before one request tries it again. */
  readonly breakerMs?: number;
}

interface Counter {
  readonly name: LimitName;
  readonly quota: number;
  readonly memory: RateLimiterMemory;
  readonly redis: RateLimiterRedis | undefined;
  /** With Redis: the last shared count seen per id, where the fallback starts from. */
  readonly seen: Map<string, { count: number; resetAt: number }>;
  /** Ids counted in memory while Redis was away, whose counts Redis must catch up with. */
  readonly counted: Set<string>;
}

/** Past this many remembered ids, those whose window has ended are forgotten. */
const SEEN_PRUNE_AT = 10_000;

const WARN_EVERY_MS = 30_000;
/** After a Redis failure, Redis is not asked again for this long. */
export const BREAKER_MS = 5_000;

/** Builds the limiter; the Redis client is loaded only when `redisUrl` is set. */
export async function createSendRateLimiter(options: SendRateLimiterOptions): Promise<SendRateLimiter> {
  const windowSeconds = options.windowSeconds ?? WINDOW_SECONDS;
  const prefix = `${options.redisPrefix ?? 'parley'}:${options.region}:${options.storeName ?? 'rl'}`;
  const Redis = options.redisUrl ? (await import('ioredis')).Redis : undefined;
  const redis =
    options.redisUrl && Redis
      ? new Redis(options.redisUrl, {
          // Fail fast instead of queueing commands while disconnected: a send must not wait on Redis.
          enableOfflineQueue: false,
          maxRetriesPerRequest: 1,
          commandTimeout: 500,
          connectTimeout: 2_000,
          lazyConnect: false,
        })
      : undefined;
  let lastWarning = 0;
  const warn = (err: unknown) => {
    const now = Date.now();
    if (now - lastWarning < WARN_EVERY_MS) return;
    lastWarning = now;
    options.logger.warn(
      { err },
      'rate limit store (Redis) unreachable; counting in this process only until it is back',
    );
  };
  // ioredis reports connection errors as events; without a listener they would be thrown.
  redis?.on('error', warn);

  const counter = (name: LimitName, quota: number): Counter => ({
    name,
    quota,
    memory: new RateLimiterMemory({ points: quota, duration: windowSeconds, keyPrefix: `${prefix}:${name}` }),
    redis: redis
      ? new RateLimiterRedis({
          storeClient: redis,
          points: quota,
          duration: windowSeconds,
          keyPrefix: `${prefix}:${name}`,
          rejectIfRedisNotReady: true,
        })
      : undefined,
    seen: new Map(),
    counted: new Set(),
  });
  const perKey = counter('key', options.perKey);
  const perOrg = counter('org', options.perOrg);
  const policyHeader = `"key";q=${perKey.quota};w=${windowSeconds}, "org";q=${perOrg.quota};w=${windowSeconds}`;

  /*
   * Circuit breaker: after a Redis failure or timeout, the counters of this process are used for
   * `breakerMs` without asking Redis at all; then one request probes it (the others keep counting
   * in memory meanwhile), and a success closes the breaker. A stalled Redis thus costs one timeout
   * per interval, not one (or two) per request.
   */
  const breakerMs = options.breakerMs ?? BREAKER_MS;
  let openUntil = 0;
  let probing = false;
  const redisUsable = (): boolean => {
    if (openUntil === 0) return true;
    if (Date.now() < openUntil || probing) return false;
    probing = true;
    return true;
  };
  const redisWorked = () => {
    if (openUntil === 0) return;
    openUntil = 0;
    probing = false;
    options.logger.info('rate limit store (Redis) answers again; limits are shared across processes again');
  };
  const redisFailed = (err: unknown) => {
    probing = false;
    openUntil = Date.now() + breakerMs;
    warn(err);
  };

  /** Consumes one point; `refused` when over the limit. Store errors fall back to memory. */
  async function take(c: Counter, id: string): Promise<{ res: RateLimiterRes; refused: boolean }> {
    const attempt = async (limiter: RateLimiterAbstract) => {
      try {
        return { res: await limiter.consume(id), refused: false };
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) return { res: rejection, refused: true };
        throw rejection;
      }
    };
    if (c.redis && redisUsable()) {
      try {
        let taken = await attempt(c.redis);
        redisWorked();
        if (c.counted.has(id)) taken = await catchUp(c, c.redis, id, taken);
        remember(c, id, taken.res);
        return taken;
      } catch (err) {
        redisFailed(err);
      }
    }
    if (c.redis) await startFromShared(c, id);
    return attempt(c.memory);
  }

  function remember(c: Counter, id: string, res: RateLimiterRes): void {
    const resetAt = Date.now() + res.msBeforeNext;
    const last = c.seen.get(id);
    if (last) {
      last.count = res.consumedPoints;
      last.resetAt = resetAt;
      return;
    }
    if (c.seen.size >= SEEN_PRUNE_AT) {
      const now = Date.now();
      for (const [key, value] of c.seen) if (value.resetAt <= now) c.seen.delete(key);
    }
    c.seen.set(id, { count: res.consumedPoints, resetAt });
  }

  /** The first fallback count of an id in a window starts from the last shared count seen. */
  async function startFromShared(c: Counter, id: string): Promise<void> {
    if (c.counted.has(id)) return;
    c.counted.add(id);
    const last = c.seen.get(id);
    const left = last ? last.resetAt - Date.now() : 0;
    if (last && left > 0 && (await c.memory.get(id)) === null) {
      await c.memory.set(id, last.count, Math.ceil(left / 1000));
    }
  }

  /** Redis is back: it counts at least what this process counted while it was away. */
  async function catchUp(
    c: Counter,
    redis: RateLimiterRedis,
    id: string,
    taken: { res: RateLimiterRes; refused: boolean },
  ): Promise<{ res: RateLimiterRes; refused: boolean }> {
    c.counted.delete(id);
    const local = await c.memory.get(id);
    await c.memory.delete(id);
    // `taken` counted this request in Redis; the memory count did not include it.
    const missing = (local?.consumedPoints ?? 0) + 1 - taken.res.consumedPoints;
    if (!local || missing <= 0) return taken;
    const res = await redis.penalty(id, missing);
    return { res, refused: res.consumedPoints > c.quota };
  }

  async function refund(c: Counter, id: string): Promise<void> {
    const store = c.redis && openUntil === 0 ? c.redis : c.memory;
    try {
      await store.reward(id, 1);
    } catch (err) {
      redisFailed(err);
    }
  }

  const state = (c: Counter, res: RateLimiterRes, refused: boolean): LimitState => ({
    name: c.name,
    quota: c.quota,
    remaining: refused ? 0 : Math.max(0, res.remainingPoints),
    resetSeconds: Math.max(1, Math.min(windowSeconds, Math.ceil(res.msBeforeNext / 1000))),
  });

  const decide = (allowed: boolean, binding: LimitState): RateLimitDecision => ({
    allowed,
    binding,
    policyHeader,
    rateLimitHeader: `"${binding.name}";r=${binding.remaining};t=${binding.resetSeconds}`,
    retryAfterSeconds: windowSeconds,
  });

  return {
    windowSeconds,
    sharedStoreHealthy() {
      if (!redis) return true;
      return redis.status === 'ready' && openUntil === 0;
    },
    async ready() {
      if (!redis || redis.status === 'ready') return;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          redis.off('ready', done);
          redis.off('error', done);
          resolve();
        };
        const timer = setTimeout(done, 3_000);
        redis.once('ready', done);
        redis.once('error', done);
      });
    },
    async peek({ keyId, orgId }) {
      for (const [c, id] of [
        [perKey, keyId],
        [perOrg, orgId],
      ] as const) {
        let res: RateLimiterRes | null = null;
        try {
          res = c.redis && openUntil === 0 ? await c.redis.get(id) : await c.memory.get(id);
        } catch {
          res = await c.memory.get(id);
        }
        if (res && res.consumedPoints >= c.quota) {
          return {
            allowed: false,
            name: c.name,
            quota: c.quota,
            retryAfterSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
          };
        }
      }
      return { allowed: true };
    },
    async consume({ keyId, orgId }) {
      const key = await take(perKey, keyId);
      // A request the key limit refuses does not touch the organization's counter, so one noisy
      // key cannot use up the budget of the organization's other keys.
      if (key.refused) return decide(false, state(perKey, key.res, true));
      const org = await take(perOrg, orgId);
      if (org.refused) {
        // Nor does a request the organization refuses count against its key.
        await refund(perKey, keyId);
        return decide(false, state(perOrg, org.res, true));
      }
      const k = state(perKey, key.res, false);
      const o = state(perOrg, org.res, false);
      const binding = o.remaining < k.remaining || (o.remaining === k.remaining && o.resetSeconds > k.resetSeconds);
      return decide(true, binding ? o : k);
    },
    async close() {
      await closeRedisQuietly(redis);
    },
  };
}
