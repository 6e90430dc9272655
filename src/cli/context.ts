/**
 * What a command needs, built from the validated configuration and closed in one call. Each
 * part is opened only when the command asks for it (`search` needs no API key, `migrate` no Redis);
 * a command that needs Postgres only takes src/cli/db-context.ts, which loads none of the clients
 * imported here.
 */
import type { ApiClient, RequestEvent } from '../api/client.ts';
import { createApiClientFromConfig } from '../api-from-config.ts';
import { ConfigError, type Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { closeRedis, createRedisFromConfig, type RedisClient } from '../queues/connection.ts';
import { createApiLimiter, type ApiLimiter } from '../queues/limiter.ts';
import { createQueues, type PipelineQueues } from '../queues/queues.ts';
import { keyFingerprint } from '../api/key-fingerprint.ts';
import { createChargeRecorder, type ChargeRecorder } from '../pipeline/ingest/charges.ts';
import type { PipelineDeps, PipelineMetrics } from '../pipeline/deps.ts';
import { createDbContext, type DbContext, type DbContextOptions } from './db-context.ts';

/** What a command with metrics (the daemon's admin server) observes: every API attempt, and the pipeline's outcomes. */
export interface ContextMetrics extends PipelineMetrics {
  apiRequest(e: RequestEvent): void;
}

export interface Context extends DbContext {
  /** one node (REDIS_URL) or a cluster (REDIS_CLUSTER_NODES) */
  redis(): RedisClient;
  queues(): PipelineQueues;
  limiter(): ApiLimiter;
  api(): ApiClient;
  /** what each API request was billed, written to `credit_charges` (fed by the client) */
  charges(): ChargeRecorder;
  /** Everything the pipeline steps take. Opens the database, Redis and the API client. */
  deps(): PipelineDeps;
  close(): Promise<void>;
}

export interface ContextOptions extends DbContextOptions {
  /** fed by the API client (`onRequest`) and the pipeline steps; default none */
  metrics?: ContextMetrics;
}

export function createContext(opts: ContextOptions = {}): Context {
  const base = createDbContext(opts);
  const { config, log } = base;
  let redis: RedisClient | undefined;
  let queues: PipelineQueues | undefined;
  let limiter: ApiLimiter | undefined;
  let api: ApiClient | undefined;
  let charges: ChargeRecorder | undefined;

  const ctx: Context = {
    config,
    log,
    db: base.db,
    redis() {
      if (!redis) {
        const r = createRedisFromConfig(config, { log });
        // A one-shot command started with Redis down reports it once (waitForRedis: one line
        // naming REDIS_URL), not a warning per reconnect attempt before it; a lost connection
        // of a command that was running, and every error of the daemon, are logged.
        let wasReady = opts.longRunning ?? false;
        r.once('ready', () => (wasReady = true));
        r.on('error', (err: Error) => {
          if (wasReady) log.warn({ event: 'redis.error', err: { message: err.message } }, 'redis connection error');
        });
        redis = r;
      }
      return redis;
    },
    queues() {
      queues ??= createQueues(ctx.redis(), config.queuePrefix);
      return queues;
    },
    limiter() {
      limiter ??= createApiLimiter({
        redis: ctx.redis(),
        prefix: config.queuePrefix,
        requestsPerSecond: config.pipeline.apiRatePerSecond,
        burst: config.pipeline.apiRateBurst,
        // no pause outlasts the longest Retry-After the client honours
        maxPauseMs: config.api.retryAfterMaxMs,
      });
      return limiter;
    },
    api() {
      if (!api) {
        requireApiSettings(config);
        const l = ctx.limiter();
        api = createApiClientFromConfig(config.api, log, {
          beforeRequest: (signal) => l.acquire(signal),
          onRequest: observeApiRequest(l, ctx.charges(), opts.metrics, log),
        });
      }
      return api;
    },
    charges() {
      charges ??= createChargeRecorder({
        sql: ctx.db().sql,
        log,
        keyFingerprint: config.api.apiKey === undefined ? null : keyFingerprint(config.api.apiKey),
      });
      return charges;
    },
    deps() {
      const handle = ctx.db();
      return {
        sql: handle.sql,
        api: ctx.api(),
        log,
        queues: ctx.queues(),
        limiter: ctx.limiter(),
        settings: config.pipeline,
        metrics: opts.metrics,
        charges: ctx.charges(),
        embeddings: config.embeddings,
      };
    },
    async close() {
      // what was billed is written before the database closes
      await charges
        ?.close()
        .catch((err: unknown) => log.warn({ event: 'charges.write_failed', err }, 'could not record billed credits'));
      await Promise.allSettled([api?.close(), queues?.close(), base.close()]);
      if (redis) await closeRedis(redis);
    },
  };
  return ctx;
}

/** The API settings a command that calls the API cannot do without, each refused by its variable's name. */
function requireApiSettings(config: Config): void {
  if (config.api.baseUrl === undefined) {
    throw new ConfigError(
      'API_BASE_URL',
      'not set (expected the API base URL ending in /v1; `demo` starts a simulator itself)',
    );
  }
  if (config.api.apiKey === undefined) {
    throw new ConfigError('API_KEY', 'not set (the key is sent as x-api-key)');
  }
}

/** The client's `onRequest`: each attempt's charge recorded, counted in the metrics, and a 429 shared with every process. */
function observeApiRequest(
  limiter: ApiLimiter,
  charges: ChargeRecorder,
  metrics: ContextMetrics | undefined,
  log: Logger,
): (e: RequestEvent) => void {
  return (e) => {
    charges.record(e);
    metrics?.apiRequest(e);
    // a rate limit seen by one request silences every process until it passes, even
    // when this request retries it by itself
    if (e.status === 429 && e.retryAfterMs !== undefined) {
      limiter
        .pauseFor(e.retryAfterMs)
        .catch((err: unknown) =>
          log.warn({ event: 'rate_limit.share_failed', err }, 'could not share the rate-limit pause'),
        );
    }
  };
}
