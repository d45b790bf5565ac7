import type { Logger } from 'pino';
import { closeRedisQuietly } from '../shared/redis-close.js';

/**
 * Paces campaign sends per sending number: at most `mps` per second, as evenly spaced slots (one
 * every 1/mps s), so a burst never exceeds the provider's throughput. A send reserves the next free
 * slot when it is near (within `maxWaitMs`) and waits for it; a farther one is not reserved, and the
 * job comes back later. The number's interactive sends (the send and trigger endpoints) are never
 * held back, but each takes a slot as it goes (`note`), so campaign sends move aside for them and the
 * two together stay within `mps`. A throughput refusal (130429) pushes the number's next slot out,
 * slowing every sender of that number down.
 *
 * Shared across nodes through Redis when configured (one key per number holding its next free
 * slot, moved by one Lua script on Redis's own clock); per process otherwise, and while Redis
 * cannot be reached (logged, at most every 30 s).
 */
export interface NumberPacer {
  /** Reserves a slot within `maxWaitMs`: wait that long, then send; else come back in `retryInMs`. */
  reserve(
    numberId: string,
    maxWaitMs: number,
  ): Promise<{ ok: true; waitMs: number } | { ok: false; retryInMs: number }>;
  /**
   * An interactive send of this number has just gone out: it takes the next free slot without
   * waiting for it, so campaign sends come after it. Never throws (errors are logged).
   */
  note(numberId: string): Promise<void>;
  /** No slot of this number before `ms` from now. */
  slowDown(numberId: string, ms: number): Promise<void>;
  close(): Promise<void>;
}

export interface NumberPacerOptions {
  readonly mps: number;
  readonly region: string;
  readonly logger: Logger;
  readonly redisUrl?: string | undefined;
  readonly redisPrefix?: string;
}

/** Times in microseconds: slots of a 1,000 mps number are 1 ms apart. */
const RESERVE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local nxt = tonumber(redis.call('GET', KEYS[1]) or '0')
if ARGV[1] == 'slow' then
  local untilUs = now + tonumber(ARGV[2])
  if untilUs > nxt then
    redis.call('SET', KEYS[1], string.format('%.0f', untilUs), 'PX', math.ceil(tonumber(ARGV[2]) / 1000) + 60000)
  end
  return {1, 0}
end
local interval = tonumber(ARGV[2])
local slot = math.max(now, nxt)
if ARGV[1] == 'note' then
  redis.call('SET', KEYS[1], string.format('%.0f', slot + interval), 'PX', math.ceil((slot - now + interval) / 1000) + 60000)
  return {1, 0}
end
local maxWait = tonumber(ARGV[3])
local wait = slot - now
if wait > maxWait then return {0, string.format('%.0f', wait)} end
redis.call('SET', KEYS[1], string.format('%.0f', slot + interval), 'PX', math.ceil((wait + interval) / 1000) + 60000)
return {1, string.format('%.0f', wait)}
`;

const WARN_EVERY_MS = 30_000;

interface RedisLike {
  eval(script: string, keys: number, ...args: (string | number)[]): Promise<unknown>;
  quit(): Promise<unknown>;
  disconnect(): void;
  on(event: 'error', listener: (err: unknown) => void): unknown;
  removeAllListeners(event: 'error'): unknown;
}

export async function createNumberPacer(options: NumberPacerOptions): Promise<NumberPacer> {
  const intervalUs = Math.max(1, Math.round(1_000_000 / options.mps));
  const prefix = `${options.redisPrefix ?? 'parley'}:${options.region}:pace`;
  const local = new Map<string, number>();
  let redis: RedisLike | undefined;
  if (options.redisUrl) {
    const { Redis } = await import('ioredis');
    redis = new Redis(options.redisUrl, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: 500,
      connectTimeout: 2_000,
    }) as unknown as RedisLike;
  }
  let lastWarning = 0;
  const warn = (err: unknown) => {
    const now = Date.now();
    if (now - lastWarning < WARN_EVERY_MS) return;
    lastWarning = now;
    options.logger.warn({ err }, 'campaign pacing store (Redis) unreachable; pacing per process until it is back');
  };
  redis?.on('error', warn);
  const nowUs = () => Math.round(performance.timeOrigin * 1000 + performance.now() * 1000);

  function reserveLocally(numberId: string, maxWaitUs: number) {
    const now = nowUs();
    const slot = Math.max(now, local.get(numberId) ?? 0);
    const wait = slot - now;
    if (wait > maxWaitUs) return { ok: false as const, retryInMs: Math.ceil((wait - maxWaitUs) / 1000) + 1 };
    local.set(numberId, slot + intervalUs);
    return { ok: true as const, waitMs: wait / 1000 };
  }

  return {
    async reserve(numberId, maxWaitMs) {
      const maxWaitUs = maxWaitMs * 1000;
      if (redis) {
        try {
          const [ok, wait] = (await redis.eval(RESERVE, 1, `${prefix}:${numberId}`, 'take', intervalUs, maxWaitUs)) as [
            number,
            string,
          ];
          const waitUs = Number(wait);
          if (ok === 1) return { ok: true, waitMs: waitUs / 1000 };
          return { ok: false, retryInMs: Math.ceil((waitUs - maxWaitUs) / 1000) + 1 };
        } catch (err) {
          warn(err);
        }
      }
      return reserveLocally(numberId, maxWaitUs);
    },
    async note(numberId) {
      const now = nowUs();
      local.set(numberId, Math.max(now, local.get(numberId) ?? 0) + intervalUs);
      if (!redis) return;
      try {
        await redis.eval(RESERVE, 1, `${prefix}:${numberId}`, 'note', intervalUs);
      } catch (err) {
        warn(err);
      }
    },
    async slowDown(numberId, ms) {
      const until = nowUs() + ms * 1000;
      if (until > (local.get(numberId) ?? 0)) local.set(numberId, until);
      if (!redis) return;
      try {
        await redis.eval(RESERVE, 1, `${prefix}:${numberId}`, 'slow', ms * 1000);
      } catch (err) {
        warn(err);
      }
    },
    async close() {
      await closeRedisQuietly(redis);
    },
  };
}
