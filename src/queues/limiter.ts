/**
 * The upstream rate limit, shared by every process through Redis: a token bucket (Lua, on Redis's
 * own clock, so process clocks do not matter) plus a "paused until" mark set when the upstream
 * answers 429 with Retry-After. Every API request of every worker acquires a token first, so N
 * daemons together stay under the plan's rate, and a 429 silences all of them for its window.
 */
import { API_RETRY_AFTER_MAX_MS } from '../api/defaults.ts';
import type { RedisClient } from './connection.ts';

/** Upstream requests per second, all processes together: the lowest plans allow about one (UPSTREAM.md); be a bit above. */
export const API_RATE_PER_SECOND = 5;
/** Requests allowed at once after a quiet period. */
export const API_RATE_BURST = 10;

/** Longest single wait of `acquire` before it asks Redis again. */
export const LIMITER_RECHECK_MS = 5_000;

const ACQUIRE_LUA = `
local bucket = KEYS[1]
local paused = KEYS[2]
local ratePerMs = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local maxPause = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local pausedUntil = tonumber(redis.call('GET', paused) or '0')
if pausedUntil > now + maxPause then
  -- longer than any Retry-After is honoured for (set before the cap existed): shortened once
  pausedUntil = now + maxPause
  redis.call('SET', paused, tostring(pausedUntil), 'PX', maxPause + 1000)
end
if pausedUntil > now then return pausedUntil - now end
local b = redis.call('HMGET', bucket, 'tokens', 'ts')
local tokens = tonumber(b[1]) or burst
local ts = tonumber(b[2]) or now
tokens = math.min(burst, tokens + (now - ts) * ratePerMs)
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = math.ceil((1 - tokens) / ratePerMs)
end
redis.call('HSET', bucket, 'tokens', tostring(tokens), 'ts', tostring(now))
redis.call('PEXPIRE', bucket, 60000)
return wait
`;

const PAUSE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local untilMs = now + tonumber(ARGV[1])
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if untilMs > cur then redis.call('SET', KEYS[1], tostring(untilMs), 'PX', tonumber(ARGV[1]) + 1000) end
return math.max(untilMs, cur) - now
`;

/** The pause left, read on the node that holds it (on a cluster, TIME elsewhere is another clock). */
const PAUSED_FOR_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local untilMs = tonumber(redis.call('GET', KEYS[1]) or '0')
return math.max(0, untilMs - now)
`;

export interface ApiLimiterOptions {
  redis: RedisClient;
  /** key prefix, e.g. the queue prefix `{vsi}`: its hash tag keeps both keys of ACQUIRE_LUA in one cluster slot */
  prefix: string;
  /** sustained requests per second across all processes; default API_RATE_PER_SECOND (5) */
  requestsPerSecond?: number;
  /** requests allowed at once after a quiet period; default API_RATE_BURST (10) */
  burst?: number;
  /**
   * longest pause, ms (the client's `retryAfterMaxMs`): `pauseFor` asks no longer, and a pause
   * found in Redis that ends later (left by an older version that honoured any Retry-After) is
   * shortened to end within this; default 3 600 000
   */
  maxPauseMs?: number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export interface ApiLimiter {
  /** Wait until a request may be sent (rate and any 429 pause). */
  acquire(signal?: AbortSignal): Promise<void>;
  /** Silence every process for `ms` (a 429's Retry-After), at most `maxPauseMs`. Returns the pause still in force. */
  pauseFor(ms: number): Promise<number>;
  /** Milliseconds until the current pause ends (0 when not paused). */
  pausedForMs(): Promise<number>;
}

function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

export function createApiLimiter(opts: ApiLimiterOptions): ApiLimiter {
  const rate = opts.requestsPerSecond ?? API_RATE_PER_SECOND;
  const burst = opts.burst ?? API_RATE_BURST;
  const maxPauseMs = Math.max(1, Math.round(opts.maxPauseMs ?? API_RETRY_AFTER_MAX_MS));
  const sleep = opts.sleep ?? defaultSleep;
  const bucketKey = `${opts.prefix}:api:bucket`;
  const pausedKey = `${opts.prefix}:api:paused-until`;
  return {
    async acquire(signal) {
      for (;;) {
        const wait = Number(
          await opts.redis.eval(ACQUIRE_LUA, 2, bucketKey, pausedKey, rate / 1000, burst, maxPauseMs),
        );
        if (wait <= 0) return;
        // a long pause (a 429's Retry-After) is waited out in slices, re-read from Redis each
        // time: a pause that ends early (lifted by hand, lost with a Redis restart) ends here too
        await sleep(Math.min(wait, LIMITER_RECHECK_MS), signal);
      }
    },
    async pauseFor(ms) {
      const bounded = Math.min(maxPauseMs, Math.max(1, Math.round(ms)));
      return Number(await opts.redis.eval(PAUSE_LUA, 1, pausedKey, bounded));
    },
    async pausedForMs() {
      return Number(await opts.redis.eval(PAUSED_FOR_LUA, 1, pausedKey));
    },
  };
}
