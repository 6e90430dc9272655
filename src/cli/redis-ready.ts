/**
 * One-shot commands wait a bounded time for Redis. The shared connection retries forever and
 * queues every command until Redis answers (right for daemons, which must outlive a Redis
 * restart), so without this check `backfill`, `replay` or `sources add` run while Redis is down
 * would hang silently, logging a reconnect warning every few seconds, instead of failing.
 */
import { redisTarget, type RedisClient } from '../queues/connection.ts';

/** How long a one-shot command waits for Redis to accept commands before giving up. */
export const REDIS_READY_TIMEOUT_MS = 5_000;

export class RedisUnreachableError extends Error {
  constructor(timeoutMs: number, lastError: string | undefined, target: string) {
    // the target is the setting and host:port, never the URL: it may carry a password
    super(
      `Redis is not reachable at ${target}: no connection within ${timeoutMs} ms${lastError ? ` (${lastError})` : ''}`,
    );
    this.name = 'RedisUnreachableError';
  }
}

/**
 * Resolve once `redis` is ready, or reject with RedisUnreachableError after `timeoutMs`. On
 * timeout the connection is closed, so the command can finish without waiting for Redis again.
 * A cluster is ready once it has the slot map and a connection to a node (ioredis's `ready`).
 */
export async function waitForRedis<R extends RedisClient>(
  redis: R,
  timeoutMs: number = REDIS_READY_TIMEOUT_MS,
): Promise<R> {
  if (redis.status === 'ready') return redis;
  let lastError: string | undefined;
  const onError = (e: Error) => {
    lastError = e.message;
  };
  let onReady = () => {};
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      onReady = resolve;
      redis.on('error', onError);
      redis.once('ready', onReady);
      timer = setTimeout(() => reject(new RedisUnreachableError(timeoutMs, lastError, redisTarget(redis))), timeoutMs);
    });
    return redis;
  } catch (e: unknown) {
    redis.disconnect();
    throw e;
  } finally {
    clearTimeout(timer);
    redis.off('error', onError);
    redis.off('ready', onReady);
  }
}

/**
 * Resolve true once `redis` is ready, or false as soon as `stopped` settles first (the daemon's
 * SIGTERM/SIGINT): a daemon started while Redis is down waits for it without a deadline, but a
 * stop request must not wait behind that.
 */
export async function redisReadyOrStopped(redis: RedisClient, stopped: Promise<unknown>): Promise<boolean> {
  if (redis.status === 'ready') return true;
  let onReady = () => {};
  try {
    return await Promise.race([
      new Promise<true>((resolve) => {
        onReady = () => resolve(true);
        redis.once('ready', onReady);
      }),
      stopped.then(() => false as const),
    ]);
  } finally {
    redis.off('ready', onReady);
  }
}
