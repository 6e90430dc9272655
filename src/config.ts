/**
 * The only reader of `process.env`. Every setting is validated with zod at startup; a bad value
 * is a one-line ConfigError that names the variable, the value and what would be valid. The API
 * key's value is never echoed, nor the password of a URL (`***`).
 */
import { z } from 'zod';
import {
  API_BODY_TIMEOUT_MS,
  API_CONNECT_TIMEOUT_MS,
  API_HEADERS_TIMEOUT_MS,
  API_MAX_BODY_BYTES,
  API_REQUEST_TIMEOUT_MS,
  API_RETRY_AFTER_MAX_MS,
  API_RETRY_BASE_DELAY_MS,
  API_RETRY_MAX_ATTEMPTS,
  API_RETRY_MAX_DELAY_MS,
  DEFAULT_PLATFORM,
} from './api/defaults.ts';
import {
  DATABASE_POOL_MAX,
  LAND_CHUNK_ITEMS,
  MIGRATION_LOCK_RETRIES,
  MIGRATION_LOCK_TIMEOUT_MS,
} from './db/defaults.ts';
import type { PassageOptions } from './domain/passages.ts';
import { videoUrlTemplateProblem } from './domain/search.ts';
import { parseSecretsKey } from './domain/webhook-secrets.ts';
import { quoteValue } from './terminal-text.ts';
import { redactUrl } from './url-credentials.ts';
import { API_RATE_BURST, API_RATE_PER_SECOND } from './queues/limiter.ts';

// Defaults owned by the modules that use them, re-exported under their setting's name.
export {
  API_BODY_TIMEOUT_MS,
  API_CONNECT_TIMEOUT_MS,
  API_HEADERS_TIMEOUT_MS,
  API_MAX_BODY_BYTES,
  API_RATE_BURST,
  API_RATE_PER_SECOND,
  API_REQUEST_TIMEOUT_MS,
  API_RETRY_AFTER_MAX_MS,
  API_RETRY_BASE_DELAY_MS,
  API_RETRY_MAX_ATTEMPTS,
  API_RETRY_MAX_DELAY_MS,
  DATABASE_POOL_MAX,
  DEFAULT_PLATFORM,
  LAND_CHUNK_ITEMS,
  MIGRATION_LOCK_RETRIES,
  MIGRATION_LOCK_TIMEOUT_MS,
};

/** The key the embedded simulator accepts unless told otherwise: documented, paid plan. */
export const SIMULATOR_DEV_API_KEY = 'vsi-dev-0000000000000000';

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/videosite_ingest';
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
export const DEFAULT_QUEUE_PREFIX = '{vsi}';
/** Shown with a bad REDIS_CLUSTER_NODES: what a valid list looks like. */
export const REDIS_CLUSTER_NODES_EXAMPLE = 'redis-1:6379,redis-2:6379,redis-3:6379';

/** Bounds of `API_MAX_BODY_BYTES`: below 1 KiB nothing fits; 256 MiB stays under V8's longest string. */
export const API_MAX_BODY_BYTES_MIN = 1_024;
export const API_MAX_BODY_BYTES_MAX = 256 * 1024 * 1024;

export const BATCH_SIZE_MAX_VIDEOS = 5000;
export const CREDIT_RESERVE = 0;
export const POLL_INITIAL_DELAY_MS = 2_000;
export const POLL_MIN_DELAY_MS = 1_000;
export const POLL_MAX_DELAY_MS = 60_000;
/**
 * Once a batch runs, it is polled often enough that an item waits at most about this long
 * between finishing upstream and landing (each poll re-reads the whole answer, so not oftener).
 */
export const POLL_LAND_WITHIN_MS = 10_000;
export const SINK_CHUNK_ITEMS = 100;
export const TRANSCRIPT_RECHECK_MS = 7 * 24 * 3_600_000;
/**
 * Passages (issue #31): most tokens (cl100k_base) a passage holds, and how many it repeats from
 * the one before. 256 fits every current embedding model's input (most take 512-8192) and keeps a
 * passage to about a minute of speech, precise enough to link to; 32 (1/8) keeps a sentence cut
 * at a boundary whole in one of the two.
 */
export const PASSAGE_TOKENS = 256;
export const PASSAGE_OVERLAP_TOKENS = 32;
/**
 * Embeddings (issue #32): passages per request to the provider. OpenAI takes up to 2048 inputs
 * and 300 000 tokens a request; 64 passages of at most PASSAGE_TOKENS (256) stay far below both,
 * and a failed request re-sends little.
 */
export const EMBEDDINGS_BATCH_SIZE = 64;
/** Embeddings: the most inputs one request may carry (OpenAI's limit). */
export const EMBEDDINGS_BATCH_SIZE_MAX = 2048;
/** Embeddings: the model asked for unless EMBEDDINGS_MODEL says otherwise. */
export const EMBEDDINGS_MODEL = 'text-embedding-3-small';
/**
 * Embeddings: the most dimensions a vector may have. Vectors are stored as pgvector's `halfvec`
 * (2 bytes a dimension), whose HNSW index takes up to 4000; a model with more is asked for fewer
 * (`dimensions`).
 */
export const EMBEDDINGS_DIMENSIONS_MAX = 4000;
/**
 * Embeddings: the dimensions asked of OpenAI's text-embedding-3 models when EMBEDDINGS_DIMENSIONS
 * is unset. They are trained to be shortened (Matryoshka): text-embedding-3-small at 512 keeps
 * nearly all of its retrieval quality at a third of its own 1536, and so a third of the room.
 */
export const EMBEDDINGS_DIMENSIONS_DEFAULT = 512;
/** The models EMBEDDINGS_DIMENSIONS_DEFAULT applies to: those known to accept `dimensions`. */
const SHORTENABLE_MODEL = /^text-embedding-3-/;

/**
 * The dimensions to ask of `model`: EMBEDDINGS_DIMENSIONS when set; else
 * EMBEDDINGS_DIMENSIONS_DEFAULT for a model known to accept `dimensions` (OpenAI's
 * text-embedding-3-*); else none (the model's own: other providers may refuse the field).
 */
export function embeddingsDimensions(model: string, configured: number | undefined): number | undefined {
  if (configured !== undefined) return configured;
  return SHORTENABLE_MODEL.test(model) ? EMBEDDINGS_DIMENSIONS_DEFAULT : undefined;
}
/** Embeddings: the most one request to the provider may take, connect to whole answer. */
export const EMBEDDINGS_TIMEOUT_MS = 60_000;
/**
 * Embeddings: requests in flight at once per process. One request at a time spends most of its
 * round on the provider's latency and our own Postgres work, far below a provider's rate limit;
 * a few in flight keep the limit busy, and a 429 pauses them all.
 */
export const EMBEDDINGS_CONCURRENCY = 4;
/** Embeddings: the most requests in flight per process (each holds a Postgres connection while it stores). */
export const EMBEDDINGS_CONCURRENCY_MAX = 32;
export const POLL_CONCURRENCY = 4;
export const SINK_CONCURRENCY = 2;
export const SCHEDULE_CONCURRENCY = 2;
export const SHUTDOWN_GRACE_MS = 20_000;
/**
 * A running job's lock in Redis, renewed at half this while the job runs; a dead worker's job is
 * taken up again after it. Long enough for a 100 MB poll on a slow link.
 */
export const JOB_LOCK_DURATION_MS = 120_000;
/** How often each worker looks for jobs whose lock expired (their worker died) and re-queues them. */
export const JOB_STALLED_CHECK_MS = 30_000;
/** How often a daemon re-checks Redis against Postgres (lost jobs, new or changed sources). */
export const RECONCILE_INTERVAL_MS = 60_000;
/** Automatic submissions of one video per kind and language, whatever the reason; past it only `replay --failed`. */
export const RETRY_ATTEMPTS_MAX = 3;
/** Spacing before the second automatic re-submission of a video; doubles for each one after. */
export const RETRY_BACKOFF_BASE_MS = 10 * 60_000;
/** A batch in flight longer than this is expired locally (its unfinished items become retryable). */
export const BATCH_MAX_AGE_MS = 48 * 3_600_000;
/** A poll's JSON `not-found` expires a batch only when such answers span at least this long. */
export const BATCH_NOT_FOUND_CONFIRM_MS = 10 * 60_000;
/** Longest one poll may read a batch answer; what landed by then is kept, the rest is read next time. */
export const POLL_MAX_DURATION_MS = 10 * 60_000;
/** Largest item of a batch answer that is parsed; a larger one is quarantined unparsed, its first bytes kept. */
export const ITEM_MAX_BYTES = 8 * 1024 * 1024;
/** How often a daemon re-checks an upstream hold with a free `/me` and lifts it when the account works again. */
export const HOLD_RECHECK_MS = 15 * 60_000;
/** Raw payloads of items settled longer ago than this are pruned, days (0: kept forever). */
export const RAW_RETENTION_DAYS = 90;
/** `sync_runs` and `credit_charges` older than this are pruned, days (0: kept forever). */
export const HISTORY_RETENTION_DAYS = 180;
/**
 * Syncs that fire on the same cron tick start spread over up to this, ms (each source at its own
 * fixed offset, src/domain/schedule.ts; never more than a quarter of the time to the cron's next
 * tick).
 * A minute: the resolution of a five-field cron, so `0 3 * * *` still syncs in the minute it
 * names, while 2 000 sources on one tick reach the queue, the API and Postgres ~30 per second
 * instead of at once.
 */
export const SCHEDULE_JITTER_MS = 60_000;
/**
 * The closest two fires of a source's cron may be (`sources add`, `sources edit`): each fire lists
 * the source at a credit per page, so `* * * * *` on a 20-page channel spends 28 800 credits a day
 * on listings alone. Five minutes still catches a new upload within the hour's first few minutes.
 */
export const SOURCE_MIN_INTERVAL_MS = 5 * 60_000;

/** Change events older than this are pruned unless a webhook endpoint still needs them, days (0: kept forever). */
export const EVENTS_RETENTION_DAYS = 30;
/** One webhook delivery (connect, send, answer) may take this long, ms. */
export const WEBHOOK_TIMEOUT_MS = 10_000;
/** Wait before the second attempt at a failing endpoint, ms; doubles per failure (with jitter) up to WEBHOOK_BACKOFF_MAX_MS. */
export const WEBHOOK_BACKOFF_BASE_MS = 5_000;
/** Longest wait between two attempts at a failing endpoint, ms (10 min). */
export const WEBHOOK_BACKOFF_MAX_MS = 10 * 60_000;
/** An endpoint failing this long without a success is disabled, ms (3 days). */
export const WEBHOOK_DISABLE_AFTER_MS = 3 * 24 * 3_600_000;
/**
 * How often a webhook worker looks for due deliveries without being woken, ms: the safety net
 * under LISTEN (a notification lost with a dropped connection) and the clock of retries.
 */
export const WEBHOOK_POLL_INTERVAL_MS = 5_000;

/** Shortest `ADMIN_TOKEN` (and `METRICS_TOKEN`) accepted, in characters: a guessable token would protect nothing. */
export const ADMIN_TOKEN_MIN_CHARS = 16;

/**
 * One item of ADMIN_ALLOWED_HOSTS: a DNS name, labels of letters, digits and inner hyphens. No
 * scheme, port or wildcard: the admin server compares the name only (src/admin/request-guard.ts).
 */
const HOST_NAME_RE = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
/** `auto`: short human lines when stderr is a terminal, JSON lines otherwise (files, pipes, log shippers). */
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;

export class ConfigError extends Error {
  readonly variable: string;
  constructor(variable: string, message: string) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
    this.variable = variable;
  }
}

/** An API key travels in a header: visible ASCII, no blanks or control characters. */
const HEADER_SAFE_RE = /^[\x21-\x7e]+$/;

/**
 * The hash tag Redis Cluster hashes a key by: the text between the first `{` and the first `}`
 * after it, when not empty (https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/#hash-tags).
 * Every queue key, and both keys of the limiter's Lua script, start with QUEUE_PREFIX: with a
 * tag they all land in one slot, which BullMQ's multi-key scripts need on a cluster.
 */
export function hashTagOf(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  if (close < 0 || close === open + 1) return undefined;
  return key.slice(open + 1, close);
}

/** One node of REDIS_CLUSTER_NODES. */
export interface RedisClusterNode {
  host: string;
  port: number;
}

/** `host:port`, `[v6]:port` or `redis://[:password@]host:port` (no TLS: rediss:// is refused, not ignored); the item's password, if any. */
function parseClusterNode(item: string): { node: RedisClusterNode; password: string | undefined } | undefined {
  let url: URL;
  try {
    url = new URL(item.startsWith('redis://') ? item : `redis://${item}`);
  } catch {
    return undefined;
  }
  const port = Number(url.port);
  if (url.hostname === '' || url.port === '' || !Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  if ((url.pathname !== '' && url.pathname !== '/') || url.search !== '' || url.hash !== '') return undefined;
  return {
    node: { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port },
    password: url.password === '' ? undefined : decodeURIComponent(url.password),
  };
}

/** An item as it may be shown: its password replaced. */
function shownClusterItem(item: string): string {
  return item.replace(/^((?:redis:\/\/)?[^:@/]*:)[^@/]*@/, '$1***@');
}

/**
 * REDIS_CLUSTER_NODES, parsed: the startup nodes and the password their URLs carry (all the
 * same, or none). A bad item is a ConfigError naming it (password hidden) and an example.
 */
function parseClusterNodes(list: string): { nodes: RedisClusterNode[]; password: string | undefined } {
  const nodes: RedisClusterNode[] = [];
  const passwords = new Set<string>();
  for (const raw of list.split(',')) {
    const item = raw.trim();
    const parsed = item === '' ? undefined : parseClusterNode(item);
    if (!parsed) {
      throw new ConfigError(
        'REDIS_CLUSTER_NODES',
        `invalid item ${JSON.stringify(shownClusterItem(item))} in ${JSON.stringify(list.split(',').map(shownClusterItem).join(','))}: expected host:port or redis://[:password@]host:port items separated by commas, e.g. ${REDIS_CLUSTER_NODES_EXAMPLE}`,
      );
    }
    nodes.push(parsed.node);
    if (parsed.password !== undefined) passwords.add(parsed.password);
  }
  if (passwords.size > 1) {
    throw new ConfigError('REDIS_CLUSTER_NODES', 'the node URLs carry different passwords: a cluster has one');
  }
  return { nodes, password: [...passwords][0] };
}

/** ADMIN_ALLOWED_HOSTS: lower-case host names; a bad item is named with what a valid one is. */
function parseAllowedHosts(list: string): string[] {
  return list.split(',').map((raw) => {
    const item = raw.trim().toLowerCase();
    if (!HOST_NAME_RE.test(item)) {
      throw new ConfigError(
        'ADMIN_ALLOWED_HOSTS',
        `invalid item ${JSON.stringify(raw.trim())}: expected host names separated by commas, e.g. admin.example.com,ops.internal ` +
          '(a name only: no scheme, port or wildcard; loopback names and IP addresses are always accepted)',
      );
    }
    return item;
  });
}

const positiveInt = (max = Number.MAX_SAFE_INTEGER) =>
  z.string().regex(/^\d+$/, 'expected a whole number').transform(Number).pipe(z.number().int().min(1).max(max));

const nonNegativeInt = z
  .string()
  .regex(/^\d+$/, 'expected a whole number')
  .transform(Number)
  .pipe(z.number().int().min(0).max(Number.MAX_SAFE_INTEGER));

const httpUrl = z
  .string()
  .url('expected an http(s) URL')
  // zod runs a refinement after a failed check too: a value `new URL` rejects must not throw here
  .refine((u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol), 'expected an http(s) URL');

/** Where a setting is listed in the reference (docs/reference/configuration.md), in this order. */
export const SETTING_GROUPS = [
  'Upstream API',
  'Storage',
  'Logging',
  'Pipeline',
  'Retention',
  'Webhooks',
  'Admin server',
  'Tracing',
  'Embeddings',
] as const;

/**
 * One setting: the environment variable's zod schema (from the raw string, its default included),
 * its unit, one line of doc for the reference, whether its value may be shown, and its group.
 */
export interface Setting {
  schema: z.ZodType<unknown, string | undefined>;
  group: (typeof SETTING_GROUPS)[number];
  doc: string;
  /** of a number, e.g. `ms`, `days`, `bytes` */
  unit?: string;
  /** the value is never echoed (errors name the variable only) */
  secret?: true;
  /** shown in the reference when the schema has no default of its own to show */
  shownDefault?: string;
}

const printableToken = (min: number, what: string) =>
  z.string().min(min, what).regex(HEADER_SAFE_RE, 'expected printable ASCII characters without blanks');

const atLeast = (min: number) => z.number().min(min, `expected at least ${min}`);
const retentionDays = (byDefault: number) => nonNegativeInt.pipe(z.number().max(36_500)).default(byDefault);

/**
 * Every setting, once. The order is the order of validation: with several bad values, the first
 * one here is the one reported.
 */
export const SETTINGS = {
  API_BASE_URL: {
    group: 'Upstream API',
    doc: 'base URL ending in `/v1` (`demo` starts the simulator itself)',
    schema: httpUrl
      .refine(
        (u) => URL.canParse(u) && new URL(u).pathname.replace(/\/+$/, '').endsWith('/v1'),
        'expected a URL ending in /v1',
      )
      .transform((u) => u.replace(/\/+$/, ''))
      .optional(),
  },
  // sent as a header value: a stray newline or blank (a copy-paste accident) fails here, named,
  // instead of as an obscure header error at the first request
  API_KEY: {
    group: 'Upstream API',
    doc: 'sent as `x-api-key`; never logged, never stored',
    secret: true,
    schema: printableToken(1, 'must not be empty').optional(),
  },
  API_PLATFORM: {
    group: 'Upstream API',
    doc: 'the platform path segment',
    schema: z
      .string()
      .regex(/^[a-z0-9][a-z0-9-]*$/, 'expected a path segment of lowercase letters, digits and dashes')
      .default(DEFAULT_PLATFORM),
  },
  DATABASE_URL: {
    group: 'Storage',
    doc: 'created by `migrate` if missing',
    schema: z
      .string()
      .refine((u) => /^postgres(ql)?:\/\//.test(u), 'expected a postgres:// URL')
      .default(DEFAULT_DATABASE_URL),
  },
  REDIS_URL: {
    group: 'Storage',
    doc: 'use `maxmemory-policy noeviction`; ignored when `REDIS_CLUSTER_NODES` is set',
    schema: z
      .string()
      .refine((u) => /^rediss?:\/\//.test(u), 'expected a redis:// or rediss:// URL')
      .default(DEFAULT_REDIS_URL),
  },
  // parsed item by item in loadConfig (parseClusterNodes), which names the bad one
  REDIS_CLUSTER_NODES: {
    group: 'Storage',
    doc: "a Redis Cluster's nodes, `host:port` or `redis://[:password@]host:port`, comma-separated (see Running on many machines)",
    schema: z.string().optional(),
  },
  REDIS_PASSWORD: {
    group: 'Storage',
    doc: 'AUTH of every Redis connection whose URL carries none',
    secret: true,
    schema: z
      .string()
      .regex(/^[^\x00-\x1f\x7f]+$/, 'expected no control characters (a stray newline?)')
      .optional(),
  },
  QUEUE_PREFIX: {
    group: 'Storage',
    doc: 'BullMQ key prefix; must hold a `{hash tag}` (one Redis Cluster slot for every key and script), else exit 2',
    schema: z
      .string()
      .regex(/^[^\s:]+$/, 'expected a non-empty prefix without blanks or colons')
      .refine(
        (p) => hashTagOf(p) !== undefined,
        `expected a prefix holding a {hash tag} (non-empty text in braces, so every queue key and Lua script stays in one Redis Cluster slot), e.g. ${DEFAULT_QUEUE_PREFIX}`,
      )
      .default(DEFAULT_QUEUE_PREFIX),
  },
  // no default here: whether it was set decides a one-shot command's level on a terminal (src/log.ts)
  LOG_LEVEL: {
    group: 'Logging',
    doc: '`fatal` `error` `warn` `info` `debug` `trace` `silent` (unset, a one-shot command on a terminal shows `warn` and up)',
    shownDefault: 'info',
    schema: z.enum(LOG_LEVELS).optional(),
  },
  LOG_FORMAT: {
    group: 'Logging',
    doc: '`json` (one JSON object per line), `pretty` (short human lines), `auto` (pretty when stderr is a terminal, else JSON)',
    schema: z.enum(LOG_FORMATS).default('auto'),
  },
  // read here to decide whether tracing is on at all (unset: the SDK is never imported); the
  // exporter reads it, and the other OTEL_EXPORTER_OTLP_* variables, itself (src/tracing.ts)
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    group: 'Tracing',
    doc: 'an OTLP/HTTP collector (`http://collector:4318`; traces go to `/v1/traces`); unset, tracing is off and costs nothing',
    schema: httpUrl.optional(),
  },
  OTEL_SERVICE_NAME: {
    group: 'Tracing',
    doc: "the traces' `service.name`",
    schema: z
      .string()
      .regex(/^[\x21-\x7e]{1,200}$/, 'expected up to 200 printable ASCII characters without blanks')
      .default('videosite-ingest'),
  },
  // the exporter reads it itself; listed so that its value is never echoed
  OTEL_EXPORTER_OTLP_HEADERS: {
    group: 'Tracing',
    doc: 'headers sent to the collector (`api-key=...,x-tenant=...`), read by the exporter; never logged',
    secret: true,
    schema: z
      .string()
      .regex(/^[\x20-\x7e]+$/, 'expected `key=value` pairs, comma-separated, in printable ASCII')
      .optional(),
  },
  SIMULATOR_API_KEY: {
    group: 'Upstream API',
    doc: 'the key the simulator accepts',
    secret: true,
    schema: printableToken(1, 'must not be empty').default(SIMULATOR_DEV_API_KEY),
  },
  API_CONNECT_TIMEOUT_MS: {
    group: 'Upstream API',
    doc: 'TCP connect timeout',
    unit: 'ms',
    schema: positiveInt(600_000).default(API_CONNECT_TIMEOUT_MS),
  },
  API_HEADERS_TIMEOUT_MS: {
    group: 'Upstream API',
    doc: 'time to the response headers',
    unit: 'ms',
    schema: positiveInt(600_000).default(API_HEADERS_TIMEOUT_MS),
  },
  API_BODY_TIMEOUT_MS: {
    group: 'Upstream API',
    doc: 'longest silence while a body arrives',
    unit: 'ms',
    schema: positiveInt(600_000).default(API_BODY_TIMEOUT_MS),
  },
  API_REQUEST_TIMEOUT_MS: {
    group: 'Upstream API',
    doc: "the most one attempt may take, from sending to its whole answer: an answer trickling a byte at a time ends here (a batch's streamed answer is bounded by `POLL_MAX_DURATION_MS` instead)",
    unit: 'ms',
    schema: positiveInt(3_600_000).default(API_REQUEST_TIMEOUT_MS),
  },
  API_RETRY_MAX_ATTEMPTS: {
    group: 'Upstream API',
    doc: 'attempts of a retryable request (GETs; POSTs only when never sent)',
    schema: positiveInt(20).default(API_RETRY_MAX_ATTEMPTS),
  },
  API_RETRY_BASE_DELAY_MS: {
    group: 'Upstream API',
    doc: 'first backoff delay (exponential, full jitter); at most `API_RETRY_MAX_DELAY_MS`',
    unit: 'ms',
    schema: positiveInt(600_000).default(API_RETRY_BASE_DELAY_MS),
  },
  API_RETRY_MAX_DELAY_MS: {
    group: 'Upstream API',
    doc: 'backoff cap; a longer `Retry-After` pauses the queue instead',
    unit: 'ms',
    schema: positiveInt(3_600_000).default(API_RETRY_MAX_DELAY_MS),
  },
  API_RETRY_AFTER_MAX_MS: {
    group: 'Upstream API',
    doc: 'longest `Retry-After` honoured (1 h); a longer one counts as this (retries, the shared pause) and is logged as `retry-after capped`',
    unit: 'ms',
    schema: positiveInt(86_400_000).default(API_RETRY_AFTER_MAX_MS),
  },
  API_MAX_BODY_BYTES: {
    group: 'Upstream API',
    doc: 'largest answer body read (16 MiB; the streamed batch answer excepted); a larger one fails as `schema-mismatch` without being buffered. Error bodies are read up to 64 KiB; errors and logs keep at most 2 KiB of a body',
    unit: 'bytes',
    schema: positiveInt(API_MAX_BODY_BYTES_MAX).pipe(atLeast(API_MAX_BODY_BYTES_MIN)).default(API_MAX_BODY_BYTES),
  },
  API_RATE_PER_SECOND: {
    group: 'Upstream API',
    doc: 'upstream requests per second, all processes together',
    unit: 'requests/s',
    schema: positiveInt(10_000).default(API_RATE_PER_SECOND),
  },
  API_RATE_BURST: {
    group: 'Upstream API',
    doc: 'requests allowed at once after a quiet period',
    unit: 'requests',
    schema: positiveInt(10_000).default(API_RATE_BURST),
  },
  BATCH_SIZE: {
    group: 'Pipeline',
    doc: 'most videos in one submitted batch',
    unit: 'videos',
    schema: positiveInt(BATCH_SIZE_MAX_VIDEOS).default(BATCH_SIZE_MAX_VIDEOS),
  },
  CREDIT_RESERVE: {
    group: 'Pipeline',
    doc: 'credits the scheduler never spends',
    unit: 'credits',
    schema: nonNegativeInt.default(CREDIT_RESERVE),
  },
  POLL_INITIAL_DELAY_MS: {
    group: 'Pipeline',
    doc: 'first poll after a submission',
    unit: 'ms',
    schema: positiveInt(3_600_000).default(POLL_INITIAL_DELAY_MS),
  },
  POLL_MIN_DELAY_MS: {
    group: 'Pipeline',
    doc: 'adaptive poll backoff, lower bound; at most `POLL_MAX_DELAY_MS`',
    unit: 'ms',
    schema: positiveInt(3_600_000).default(POLL_MIN_DELAY_MS),
  },
  POLL_MAX_DELAY_MS: {
    group: 'Pipeline',
    doc: 'adaptive poll backoff, upper bound',
    unit: 'ms',
    schema: positiveInt(3_600_000).default(POLL_MAX_DELAY_MS),
  },
  POLL_LAND_WITHIN_MS: {
    group: 'Pipeline',
    doc: 'a running batch is polled so that a finished item lands within about this',
    unit: 'ms',
    schema: positiveInt(3_600_000).default(POLL_LAND_WITHIN_MS),
  },
  LAND_CHUNK_ITEMS: {
    group: 'Pipeline',
    doc: 'items per insert while landing a poll',
    unit: 'items',
    schema: positiveInt(5000).default(LAND_CHUNK_ITEMS),
  },
  SINK_CHUNK_ITEMS: {
    group: 'Pipeline',
    doc: 'items per sink transaction',
    unit: 'items',
    schema: positiveInt(5000).default(SINK_CHUNK_ITEMS),
  },
  TRANSCRIPT_RECHECK_MS: {
    group: 'Pipeline',
    doc: 'when a `transcript-unavailable` video is asked again (7 days)',
    unit: 'ms',
    schema: positiveInt().default(TRANSCRIPT_RECHECK_MS),
  },
  POLL_CONCURRENCY: {
    group: 'Pipeline',
    doc: 'poll jobs per worker at once',
    unit: 'jobs',
    schema: positiveInt(100).default(POLL_CONCURRENCY),
  },
  SINK_CONCURRENCY: {
    group: 'Pipeline',
    doc: 'sink jobs per worker at once',
    unit: 'jobs',
    schema: positiveInt(100).default(SINK_CONCURRENCY),
  },
  SCHEDULE_CONCURRENCY: {
    group: 'Pipeline',
    doc: 'sync jobs per worker at once',
    unit: 'jobs',
    schema: positiveInt(100).default(SCHEDULE_CONCURRENCY),
  },
  SHUTDOWN_GRACE_MS: {
    group: 'Pipeline',
    doc: 'how long SIGTERM waits for running jobs',
    unit: 'ms',
    schema: positiveInt(600_000).default(SHUTDOWN_GRACE_MS),
  },
  JOB_LOCK_DURATION_MS: {
    group: 'Pipeline',
    doc: "a running job's lock (renewed while it runs; see Reliability); at least 1000",
    unit: 'ms',
    schema: positiveInt(3_600_000).pipe(atLeast(1_000)).default(JOB_LOCK_DURATION_MS),
  },
  JOB_STALLED_CHECK_MS: {
    group: 'Pipeline',
    doc: "how often dead workers' jobs are looked for (see Reliability); at least 500",
    unit: 'ms',
    schema: positiveInt(3_600_000).pipe(atLeast(500)).default(JOB_STALLED_CHECK_MS),
  },
  RECONCILE_INTERVAL_MS: {
    group: 'Pipeline',
    doc: 'how often a daemon rebuilds lost queue work from Postgres (also right after a Redis reconnect); at least 1000',
    unit: 'ms',
    schema: positiveInt(86_400_000).pipe(atLeast(1_000)).default(RECONCILE_INTERVAL_MS),
  },
  RETRY_ATTEMPTS_MAX: {
    group: 'Pipeline',
    doc: 'automatic submissions of one video per kind and language, whatever the reason; past it only `replay --failed`',
    unit: 'submissions',
    schema: positiveInt(100).default(RETRY_ATTEMPTS_MAX),
  },
  RETRY_BACKOFF_BASE_MS: {
    group: 'Pipeline',
    doc: 'wait before the second re-submission of a video (the first goes with the next sync); doubles for each later one',
    unit: 'ms',
    schema: nonNegativeInt.default(RETRY_BACKOFF_BASE_MS),
  },
  BATCH_MAX_AGE_MS: {
    group: 'Pipeline',
    doc: 'a batch in flight longer than this (48 h) is expired locally; its unfinished items become retryable',
    unit: 'ms',
    schema: positiveInt().pipe(atLeast(1_000)).default(BATCH_MAX_AGE_MS),
  },
  BATCH_NOT_FOUND_CONFIRM_MS: {
    group: 'Pipeline',
    doc: "a poll's JSON `not-found` expires the batch only when such answers span this long (10 min)",
    unit: 'ms',
    schema: nonNegativeInt.default(BATCH_NOT_FOUND_CONFIRM_MS),
  },
  POLL_MAX_DURATION_MS: {
    group: 'Pipeline',
    doc: 'longest read of one batch answer; what landed is kept, the rest is read by the next poll',
    unit: 'ms',
    schema: positiveInt(86_400_000).pipe(atLeast(1_000)).default(POLL_MAX_DURATION_MS),
  },
  ITEM_MAX_BYTES: {
    group: 'Pipeline',
    doc: 'largest batch item parsed (8 MiB); a larger one is quarantined unparsed, its first 4 KiB kept',
    unit: 'bytes',
    schema: positiveInt(1024 * 1024 * 1024)
      .pipe(atLeast(1_024))
      .default(ITEM_MAX_BYTES),
  },
  HOLD_RECHECK_MS: {
    group: 'Pipeline',
    doc: 'how often a daemon (role scheduler or poller) re-checks an upstream hold with a free `/me`, lifting `unauthorized` once the key works and `credits` once credits are back above `CREDIT_RESERVE` (15 min; at least 1000)',
    unit: 'ms',
    schema: positiveInt(86_400_000).pipe(atLeast(1_000)).default(HOLD_RECHECK_MS),
  },
  RAW_RETENTION_DAYS: {
    group: 'Retention',
    doc: 'the raw payload of an item stored or failed longer ago than this is dropped by `prune` (its row, state, error code, sha256 and size stay); quarantined, landed and retryable items keep theirs; `0` keeps every payload',
    unit: 'days',
    schema: retentionDays(RAW_RETENTION_DAYS),
  },
  HISTORY_RETENTION_DAYS: {
    group: 'Retention',
    doc: '`sync_runs`, `credit_charges` and `passage_removals` (what `export --passages --cursor` reports removed) older than this are dropped by `prune`; `0` keeps them all (credit snapshots older than a week are always thinned to one an hour)',
    unit: 'days',
    schema: retentionDays(HISTORY_RETENTION_DAYS),
  },
  CREDIT_BUDGET_PER_DAY: {
    group: 'Pipeline',
    doc: 'the most credits the whole installation (every process) spends per UTC day, listings included; past it syncs are refused and recorded (exit 3), not held',
    unit: 'credits',
    schema: positiveInt().optional(),
  },
  SCHEDULE_JITTER_MS: {
    group: 'Pipeline',
    doc: "syncs of sources on the same cron start spread over this window, each source at its own fixed offset (never more than a quarter of the time to the cron's next tick)",
    unit: 'ms',
    schema: nonNegativeInt.pipe(z.number().max(3_600_000)).default(SCHEDULE_JITTER_MS),
  },
  SOURCE_MIN_INTERVAL_MS: {
    group: 'Pipeline',
    doc: '`sources add --cron` refuses a schedule whose closest two fires are nearer than this (5 min; each fire lists the source, a credit per page); the cron must be five fields, each in range',
    unit: 'ms',
    schema: nonNegativeInt.pipe(z.number().max(86_400_000)).default(SOURCE_MIN_INTERVAL_MS),
  },
  DATABASE_POOL_MAX: {
    group: 'Storage',
    doc: 'connections in the Postgres pool of each process (opened as needed); startup exits 2, naming both settings and a combination that fits, when the concurrency settings could hold more',
    unit: 'connections',
    schema: positiveInt(1_000).default(DATABASE_POOL_MAX),
  },
  // false behind a transaction-pooling PgBouncer (before 1.21, or without max_prepared_statements):
  // a statement prepared on one server connection is then not there on the next
  DATABASE_PREPARE: {
    group: 'Storage',
    doc: '`false` behind a transaction-pooling PgBouncer: no prepared statements',
    schema: z.enum(['true', 'false'], { error: 'expected true or false' }).default('true'),
  },
  EVENTS_RETENTION_DAYS: {
    group: 'Retention',
    doc: 'change events older than this are dropped by `prune`, except those an enabled webhook endpoint has not had yet; `0` keeps them all',
    unit: 'days',
    schema: retentionDays(EVENTS_RETENTION_DAYS),
  },
  WEBHOOK_TIMEOUT_MS: {
    group: 'Webhooks',
    doc: 'one webhook delivery (connect, send, answer); longer is a failed attempt',
    unit: 'ms',
    schema: positiveInt(600_000).pipe(atLeast(100)).default(WEBHOOK_TIMEOUT_MS),
  },
  WEBHOOK_BACKOFF_BASE_MS: {
    group: 'Webhooks',
    doc: 'wait before retrying a failing endpoint: doubles per failure, with jitter, up to `WEBHOOK_BACKOFF_MAX_MS`',
    unit: 'ms',
    schema: positiveInt(86_400_000).default(WEBHOOK_BACKOFF_BASE_MS),
  },
  WEBHOOK_BACKOFF_MAX_MS: {
    group: 'Webhooks',
    doc: 'the cap of that wait',
    unit: 'ms',
    schema: positiveInt(86_400_000).default(WEBHOOK_BACKOFF_MAX_MS),
  },
  WEBHOOK_DISABLE_AFTER_MS: {
    group: 'Webhooks',
    doc: 'an endpoint failing this long without a success is disabled (3 days)',
    unit: 'ms',
    schema: positiveInt().default(WEBHOOK_DISABLE_AFTER_MS),
  },
  WEBHOOK_POLL_INTERVAL_MS: {
    group: 'Webhooks',
    doc: 'how often a webhook worker looks for due deliveries besides the LISTEN wake-ups',
    unit: 'ms',
    schema: positiveInt(3_600_000).pipe(atLeast(100)).default(WEBHOOK_POLL_INTERVAL_MS),
  },
  // the key webhook signing secrets are sealed with in Postgres (src/domain/webhook-secrets.ts)
  WEBHOOK_SECRETS_KEY: {
    group: 'Webhooks',
    doc: '32 bytes (64 hex digits or base64) that encrypt webhook secrets in Postgres (AES-256-GCM); unset, secrets are stored unencrypted (see Change events and webhooks)',
    secret: true,
    schema: z
      .string()
      .transform((v, ctx) => {
        const key = parseSecretsKey(v);
        if (typeof key === 'string') {
          ctx.addIssue({ code: 'custom', message: key });
          return z.NEVER;
        }
        return key;
      })
      .optional(),
  },
  MIGRATION_LOCK_TIMEOUT_MS: {
    group: 'Storage',
    doc: 'longest wait of one migration statement for a table lock',
    unit: 'ms',
    schema: positiveInt(600_000).pipe(atLeast(100)).default(MIGRATION_LOCK_TIMEOUT_MS),
  },
  MIGRATION_LOCK_RETRIES: {
    group: 'Storage',
    doc: 'retries after a lock timeout (doubling backoff) before `migrate` fails naming the blockers',
    schema: nonNegativeInt.pipe(z.number().max(100, 'expected at most 100')).default(MIGRATION_LOCK_RETRIES),
  },
  // sent back as a bearer token or a basic-auth password: header-safe characters only
  ADMIN_TOKEN: {
    group: 'Admin server',
    doc: "the admin server's token (at least 16 printable ASCII characters); unset, the admin server listens on loopback only, without auth",
    secret: true,
    schema: printableToken(ADMIN_TOKEN_MIN_CHARS, `expected at least ${ADMIN_TOKEN_MIN_CHARS} characters`).optional(),
  },
  // a bearer token too (Prometheus' `authorization: credentials`)
  METRICS_TOKEN: {
    group: 'Admin server',
    doc: 'when set, `/metrics` needs it (or `ADMIN_TOKEN`) as a bearer token (at least 16 characters); unset, `/metrics` is open',
    secret: true,
    schema: printableToken(ADMIN_TOKEN_MIN_CHARS, `expected at least ${ADMIN_TOKEN_MIN_CHARS} characters`).optional(),
  },
  // parsed item by item in loadConfig (parseAllowedHosts), which names the bad one
  ADMIN_ALLOWED_HOSTS: {
    group: 'Admin server',
    doc: 'host names the admin server answers to besides `localhost`, IP addresses and its `--admin-host`, comma-separated (`admin.example.com,ops.internal`: names only, no port); a request naming another host is refused (421)',
    schema: z.string().optional(),
  },
  PASSAGE_TOKENS: {
    group: 'Pipeline',
    doc: 'most tokens (cl100k_base) in a passage (transcript search, `export --passages`); a single longer word stays whole',
    unit: 'tokens',
    schema: positiveInt(100_000).default(PASSAGE_TOKENS),
  },
  PASSAGE_OVERLAP_TOKENS: {
    group: 'Pipeline',
    doc: "most tokens a passage repeats from the end of the one before (whole chunks, else the last chunk's last words; less than PASSAGE_TOKENS); search finds a phrase across two passages only within it (none at 0)",
    unit: 'tokens',
    schema: nonNegativeInt.default(PASSAGE_OVERLAP_TOKENS),
  },
  EMBEDDINGS_BASE_URL: {
    group: 'Embeddings',
    doc: 'an OpenAI-compatible embeddings API (`https://api.openai.com/v1`; requests go to `{base}/embeddings`); unset, embeddings are off',
    schema: httpUrl.transform((u) => u.replace(/\/+$/, '')).optional(),
  },
  EMBEDDINGS_MODEL: {
    group: 'Embeddings',
    doc: "the model's name as the provider spells it; a new name embeds every passage again in the background, the old vectors kept",
    schema: z
      .string()
      .regex(/^[\x21-\x7e]{1,200}$/, 'expected up to 200 printable ASCII characters without blanks')
      .default(EMBEDDINGS_MODEL),
  },
  EMBEDDINGS_DIMENSIONS: {
    group: 'Embeddings',
    doc: `sent as \`dimensions\` (models that can shorten their vectors); unset, ${EMBEDDINGS_DIMENSIONS_DEFAULT} for OpenAI's text-embedding-3 models and the model's own for any other; at most ${EMBEDDINGS_DIMENSIONS_MAX} (pgvector's HNSW index on halfvec)`,
    unit: 'dimensions',
    schema: positiveInt(EMBEDDINGS_DIMENSIONS_MAX).optional(),
  },
  // sent as a bearer token: header-safe characters only
  EMBEDDINGS_API_KEY: {
    group: 'Embeddings',
    doc: 'sent as `Authorization: Bearer`; never logged, never stored; unset, no header (local servers)',
    secret: true,
    schema: printableToken(1, 'must not be empty').optional(),
  },
  EMBEDDINGS_TOKENS_PER_DAY: {
    group: 'Embeddings',
    doc: 'the most tokens the installation sends to the provider per UTC day (every process); past it embedding stops, recorded, until the next day (search queries are counted, never refused); unset, no limit',
    unit: 'tokens',
    schema: positiveInt().optional(),
  },
  EMBEDDINGS_BATCH_SIZE: {
    group: 'Embeddings',
    doc: 'passages per request to the provider',
    unit: 'passages',
    schema: positiveInt(EMBEDDINGS_BATCH_SIZE_MAX).default(EMBEDDINGS_BATCH_SIZE),
  },
  EMBEDDINGS_TIMEOUT_MS: {
    group: 'Embeddings',
    doc: 'the most one request to the provider may take; longer is retried',
    unit: 'ms',
    schema: positiveInt(600_000).pipe(atLeast(100)).default(EMBEDDINGS_TIMEOUT_MS),
  },
  EMBEDDINGS_CONCURRENCY: {
    group: 'Embeddings',
    doc: 'requests to the provider in flight at once per process; a 429 pauses them all',
    unit: 'requests',
    schema: positiveInt(EMBEDDINGS_CONCURRENCY_MAX).default(EMBEDDINGS_CONCURRENCY),
  },
  // `search` and the overview link each hit to the video at its moment (src/domain/search.ts)
  VIDEO_URL_TEMPLATE: {
    group: 'Admin server',
    doc: 'a link to a video at a second (`{id}`, `{seconds}`), given with each `search` hit and on the overview; unset, no links',
    schema: z
      .string()
      .superRefine((t, ctx) => {
        const problem = videoUrlTemplateProblem(t);
        if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
      })
      .optional(),
  },
} satisfies Record<string, Setting>;

type Settings = typeof SETTINGS;
export type SettingName = keyof Settings;

const EnvSchema = z.object(
  Object.fromEntries(Object.entries(SETTINGS).map(([name, s]) => [name, s.schema])) as {
    [K in SettingName]: Settings[K]['schema'];
  },
);

export type Env = z.infer<typeof EnvSchema>;

/** Every environment variable the configuration reads (for docs and tests that must cover all). */
export const ENV_VARIABLES = Object.keys(SETTINGS) as readonly SettingName[];

/** The default of a setting as the reference shows it; undefined: none. */
export function shownDefaultOf(setting: Setting): string | undefined {
  if (setting.shownDefault !== undefined) return setting.shownDefault;
  const r = setting.schema.safeParse(undefined);
  return r.success && r.data !== undefined ? String(r.data) : undefined;
}

/** Each pair: the first must not exceed the second. */
const ORDERED: readonly (readonly [SettingName & keyof Env, SettingName & keyof Env])[] = [
  ['API_RETRY_BASE_DELAY_MS', 'API_RETRY_MAX_DELAY_MS'],
  ['WEBHOOK_BACKOFF_BASE_MS', 'WEBHOOK_BACKOFF_MAX_MS'],
  ['POLL_MIN_DELAY_MS', 'POLL_MAX_DELAY_MS'],
];

/** The environment, validated: the first bad value as a ConfigError (a secret's value hidden). */
function parseEnv(env: Record<string, string | undefined>): Env {
  const input: Record<string, string> = {};
  for (const k of ENV_VARIABLES) {
    const v = env[k];
    if (v !== undefined && v !== '') input[k] = v;
  }
  const r = EnvSchema.safeParse(input);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const variable = String(issue.path[0] ?? 'environment');
    const secret = (SETTINGS as Record<string, Setting>)[variable]?.secret === true;
    const shown = secret ? '(value hidden)' : quoteValue(redactUrl(input[variable] ?? ''));
    throw new ConfigError(variable, `invalid value ${shown}: ${issue.message}`);
  }
  for (const [low, high] of ORDERED) {
    const lo = r.data[low] as number;
    const hi = r.data[high] as number;
    if (lo > hi) throw new ConfigError(low, `invalid value ${lo}: must not exceed ${high} (${hi})`);
  }
  return r.data;
}

/** The settings as the code uses them, grouped; its shape is the `Config` type. */
function configOf(e: Env) {
  const cluster = e.REDIS_CLUSTER_NODES === undefined ? undefined : parseClusterNodes(e.REDIS_CLUSTER_NODES);
  const prepare = e.DATABASE_PREPARE === 'true';
  return {
    api: {
      /** undefined: the `demo` command starts the embedded simulator */
      baseUrl: e.API_BASE_URL,
      apiKey: e.API_KEY,
      platform: e.API_PLATFORM,
      connectTimeoutMs: e.API_CONNECT_TIMEOUT_MS,
      headersTimeoutMs: e.API_HEADERS_TIMEOUT_MS,
      bodyTimeoutMs: e.API_BODY_TIMEOUT_MS,
      requestTimeoutMs: e.API_REQUEST_TIMEOUT_MS,
      retry: {
        maxAttempts: e.API_RETRY_MAX_ATTEMPTS,
        baseDelayMs: e.API_RETRY_BASE_DELAY_MS,
        maxDelayMs: e.API_RETRY_MAX_DELAY_MS,
      },
      retryAfterMaxMs: e.API_RETRY_AFTER_MAX_MS,
      maxBodyBytes: e.API_MAX_BODY_BYTES,
    },
    databaseUrl: e.DATABASE_URL,
    /** the single Redis node (ignored when `redisClusterNodes` is set) */
    redisUrl: e.REDIS_URL,
    /** undefined: one node at `redisUrl` */
    redisClusterNodes: cluster?.nodes,
    // a password written in the URL wins, as ioredis does with REDIS_URL's own
    redisPassword: cluster?.password ?? e.REDIS_PASSWORD,
    queuePrefix: e.QUEUE_PREFIX,
    logLevel: e.LOG_LEVEL ?? 'info',
    /** LOG_LEVEL was set (else logLevel is the default, `info`) */
    logLevelSet: e.LOG_LEVEL !== undefined,
    logFormat: e.LOG_FORMAT,
    /** undefined: tracing off (OTEL_EXPORTER_OTLP_ENDPOINT unset); the exporter reads its own variables */
    tracing:
      e.OTEL_EXPORTER_OTLP_ENDPOINT === undefined
        ? undefined
        : { endpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: e.OTEL_SERVICE_NAME },
    simulatorApiKey: e.SIMULATOR_API_KEY,
    pipeline: {
      /** how transcripts and pages are cut into passages (the indexer, the page store) */
      passages: checkedPassageOptions({ size: e.PASSAGE_TOKENS, overlap: e.PASSAGE_OVERLAP_TOKENS }),
      apiRatePerSecond: e.API_RATE_PER_SECOND,
      apiRateBurst: e.API_RATE_BURST,
      batchSize: e.BATCH_SIZE,
      creditReserve: e.CREDIT_RESERVE,
      pollInitialDelayMs: e.POLL_INITIAL_DELAY_MS,
      pollMinDelayMs: e.POLL_MIN_DELAY_MS,
      pollMaxDelayMs: e.POLL_MAX_DELAY_MS,
      pollLandWithinMs: e.POLL_LAND_WITHIN_MS,
      landChunkSize: e.LAND_CHUNK_ITEMS,
      sinkChunkSize: e.SINK_CHUNK_ITEMS,
      transcriptRecheckMs: e.TRANSCRIPT_RECHECK_MS,
      pollConcurrency: e.POLL_CONCURRENCY,
      sinkConcurrency: e.SINK_CONCURRENCY,
      scheduleConcurrency: e.SCHEDULE_CONCURRENCY,
      shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
      jobLockDurationMs: e.JOB_LOCK_DURATION_MS,
      jobStalledCheckMs: e.JOB_STALLED_CHECK_MS,
      reconcileIntervalMs: e.RECONCILE_INTERVAL_MS,
      retryAttemptsMax: e.RETRY_ATTEMPTS_MAX,
      retryBackoffBaseMs: e.RETRY_BACKOFF_BASE_MS,
      batchMaxAgeMs: e.BATCH_MAX_AGE_MS,
      batchNotFoundConfirmMs: e.BATCH_NOT_FOUND_CONFIRM_MS,
      pollMaxDurationMs: e.POLL_MAX_DURATION_MS,
      itemMaxBytes: e.ITEM_MAX_BYTES,
      holdRecheckMs: e.HOLD_RECHECK_MS,
      rawRetentionDays: e.RAW_RETENTION_DAYS,
      historyRetentionDays: e.HISTORY_RETENTION_DAYS,
      creditBudgetPerDay: e.CREDIT_BUDGET_PER_DAY,
      scheduleJitterMs: e.SCHEDULE_JITTER_MS,
      sourceMinIntervalMs: e.SOURCE_MIN_INTERVAL_MS,
      eventsRetentionDays: e.EVENTS_RETENTION_DAYS,
      webhookTimeoutMs: e.WEBHOOK_TIMEOUT_MS,
      webhookBackoffBaseMs: e.WEBHOOK_BACKOFF_BASE_MS,
      webhookBackoffMaxMs: e.WEBHOOK_BACKOFF_MAX_MS,
      webhookDisableAfterMs: e.WEBHOOK_DISABLE_AFTER_MS,
      webhookPollIntervalMs: e.WEBHOOK_POLL_INTERVAL_MS,
      webhookSecretsKey: e.WEBHOOK_SECRETS_KEY,
    },
    databasePoolMax: e.DATABASE_POOL_MAX,
    databasePrepare: prepare,
    /** what migrating takes (every command that migrates), DATABASE_PREPARE again for its own connection */
    migration: { lockTimeoutMs: e.MIGRATION_LOCK_TIMEOUT_MS, lockRetries: e.MIGRATION_LOCK_RETRIES, prepare },
    admin: {
      token: e.ADMIN_TOKEN,
      metricsToken: e.METRICS_TOKEN,
      allowedHosts: e.ADMIN_ALLOWED_HOSTS === undefined ? [] : parseAllowedHosts(e.ADMIN_ALLOWED_HOSTS),
    },
    videoUrlTemplate: e.VIDEO_URL_TEMPLATE,
    /** undefined: embeddings off (EMBEDDINGS_BASE_URL unset) */
    embeddings:
      e.EMBEDDINGS_BASE_URL === undefined
        ? undefined
        : {
            baseUrl: e.EMBEDDINGS_BASE_URL,
            model: e.EMBEDDINGS_MODEL,
            dimensions: embeddingsDimensions(e.EMBEDDINGS_MODEL, e.EMBEDDINGS_DIMENSIONS),
            apiKey: e.EMBEDDINGS_API_KEY,
            tokensPerDay: e.EMBEDDINGS_TOKENS_PER_DAY,
            batchSize: e.EMBEDDINGS_BATCH_SIZE,
            timeoutMs: e.EMBEDDINGS_TIMEOUT_MS,
            concurrency: e.EMBEDDINGS_CONCURRENCY,
          },
  };
}

/** The embeddings settings (EMBEDDINGS_*), when embeddings are on. */
export type EmbeddingsConfig = NonNullable<Config['embeddings']>;

function checkedPassageOptions(o: PassageOptions): PassageOptions {
  if (o.overlap >= o.size) {
    throw new ConfigError(
      'PASSAGE_OVERLAP_TOKENS',
      `invalid value ${o.overlap}: must be less than PASSAGE_TOKENS (${o.size})`,
    );
  }
  return o;
}

/** The configuration: each field's meaning is its setting's doc in SETTINGS. */
export type Config = ReturnType<typeof configOf>;

/** Validate the environment. Unset and empty variables take their defaults. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  return configOf(parseEnv(env));
}
