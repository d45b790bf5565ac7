/** The part of a Redis client that closing needs. */
export interface ClosableRedis {
  quit(): Promise<unknown>;
  disconnect(): void;
  on(event: 'error', listener: (err: unknown) => void): unknown;
  removeAllListeners(event: 'error'): unknown;
}

/** Closes a Redis client at shutdown without a late error reaching the process (a lost connection just goes). */
export async function closeRedisQuietly(redis: ClosableRedis | undefined): Promise<void> {
  if (!redis) return;
  redis.removeAllListeners('error');
  redis.on('error', () => {});
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}
