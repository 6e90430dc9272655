/**
 * Redis connections for BullMQ. Workers need `maxRetriesPerRequest: null` (blocking commands must
 * wait through a reconnect instead of failing), and every connection retries forever with a
 * capped delay so a Redis restart is survived without restarting our processes.
 */
import { Redis, type RedisOptions } from 'ioredis';

export const REDIS_RECONNECT_MAX_DELAY_MS = 5_000;
/** Longest wait for a connection's QUIT before it is dropped. */
export const REDIS_CLOSE_TIMEOUT_MS = 2_000;

export function createRedis(url: string, opts: RedisOptions = {}): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    retryStrategy: (times) => Math.min(200 * 2 ** Math.min(times, 10), REDIS_RECONNECT_MAX_DELAY_MS),
    ...opts,
  });
}

/** Close a connection, but never wait longer than `timeoutMs` (an unreachable Redis hangs QUIT). */
export async function closeRedis(redis: Redis, timeoutMs = REDIS_CLOSE_TIMEOUT_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      redis.quit().catch(() => undefined),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
  } finally {
    if (timer) clearTimeout(timer);
    redis.disconnect();
  }
}

/** Delete every key under `prefix` (a test's or a benchmark's own queues; never a shared prefix). */
export async function deletePrefixKeys(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
}
