/**
 * The only reader of `process.env`. Every setting is validated with zod at startup; a bad value
 * is a one-line ConfigError that names the variable, the value and what would be valid. The API
 * key's value is never echoed, nor the password of a URL (`***`).
 */
import { z } from 'zod';
import { videoUrlTemplateProblem } from './domain/search.ts';
import { parseSecretsKey } from './domain/webhook-secrets.ts';
import { quoteValue } from './terminal-text.ts';
import { redactUrl } from './url-credentials.ts';

/** The key the embedded simulator accepts unless told otherwise: documented, paid plan. */
export const SIMULATOR_DEV_API_KEY = 'vsi-dev-0000000000000000';

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/videosite_ingest';
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
export const DEFAULT_QUEUE_PREFIX = '{vsi}';
/** Shown with a bad REDIS_CLUSTER_NODES: what a valid list looks like. */
export const REDIS_CLUSTER_NODES_EXAMPLE = 'redis-1:6379,redis-2:6379,redis-3:6379';
export const DEFAULT_PLATFORM = 'videosite';

/** Upstream client defaults. */
export const API_CONNECT_TIMEOUT_MS = 10_000;
export const API_HEADERS_TIMEOUT_MS = 30_000;
export const API_BODY_TIMEOUT_MS = 60_000;
/** The most one attempt may take from sending to its whole answer, ms (a streamed batch: its poll bounds it, POLL_MAX_DURATION_MS). */
export const API_REQUEST_TIMEOUT_MS = 120_000;
export const API_RETRY_MAX_ATTEMPTS = 5;
export const API_RETRY_BASE_DELAY_MS = 500;
export const API_RETRY_MAX_DELAY_MS = 30_000;
/**
 * Longest `Retry-After` honoured, ms (1 h): one answer of `Retry-After: 31536000` must not
 * silence every process for a year. A longer one is used as this and logged.
 */
export const API_RETRY_AFTER_MAX_MS = 3_600_000;
/**
 * Largest answer body read, bytes (16 MiB), except the streamed batch answer (`openBatch`):
 * a bigger one fails as schema-mismatch without being buffered.
 */
export const API_MAX_BODY_BYTES = 16 * 1024 * 1024;
/** Bounds of `API_MAX_BODY_BYTES`: below 1 KiB nothing fits; 256 MiB stays under V8's longest string. */
export const API_MAX_BODY_BYTES_MIN = 1_024;
export const API_MAX_BODY_BYTES_MAX = 256 * 1024 * 1024;

/** Pipeline defaults. */
/** Upstream requests per second, all processes together: the lowest plans allow about one (UPSTREAM.md); be a bit above. */
export const API_RATE_PER_SECOND = 5;
/** Requests allowed at once after a quiet period. */
export const API_RATE_BURST = 10;
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
/**
 * Items per landing statement and per sink transaction. A transcript item is ~20 KB of JSON and
 * several times that as parsed objects, and a chunk's objects live across its statements'
 * round trips: 500-item chunks peaked at ~500 MB RSS per process on a 5000-item transcript
 * batch, 100-item chunks at ~300 MB, at the same speed (benchmark W2, issue #4).
 */
export const LAND_CHUNK_ITEMS = 100;
export const SINK_CHUNK_ITEMS = 100;
export const TRANSCRIPT_RECHECK_MS = 7 * 24 * 3_600_000;
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
/**
 * Longest wait of one migration statement for a table lock, ms (`SET LOCAL lock_timeout`): a
 * migration behind a long transaction (a poll landing a big chunk, a person's open psql) gives
 * up and retries instead of queueing every later query on that table behind itself.
 */
export const MIGRATION_LOCK_TIMEOUT_MS = 5_000;
/** Retries of the whole migration after a lock timeout (with doubling backoff) before `migrate` fails. */
export const MIGRATION_LOCK_RETRIES = 5;
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
/**
 * Connections per Postgres pool. The default settings need 21 in a daemon with an admin server
 * (2 syncs × 2 + 4 polls + 2 sinks + reconcile, hold re-check and daily prune 1 each + admin 8;
 * src/domain/connections.ts), 15 in a backfill; startup refuses a pool smaller than what the
 * concurrency settings need. A pool opens connections only as they are needed, so the headroom
 * costs nothing until used.
 */
export const DATABASE_POOL_MAX = 24;

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

const SECRET_VARIABLES = new Set([
  'API_KEY',
  'SIMULATOR_API_KEY',
  'ADMIN_TOKEN',
  'METRICS_TOKEN',
  'REDIS_PASSWORD',
  'WEBHOOK_SECRETS_KEY',
]);

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
  .refine((u) => /^https?:$/.test(new URL(u).protocol), 'expected an http(s) URL');

const EnvSchema = z.object({
  API_BASE_URL: httpUrl
    .refine((u) => new URL(u).pathname.replace(/\/+$/, '').endsWith('/v1'), 'expected a URL ending in /v1')
    .transform((u) => u.replace(/\/+$/, ''))
    .optional(),
  // sent as a header value: a stray newline or blank (a copy-paste accident) fails here, named,
  // instead of as an obscure header error at the first request
  API_KEY: z
    .string()
    .min(1, 'must not be empty')
    .regex(HEADER_SAFE_RE, 'expected printable ASCII characters without blanks')
    .optional(),
  API_PLATFORM: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]*$/, 'expected a path segment of lowercase letters, digits and dashes')
    .default(DEFAULT_PLATFORM),
  DATABASE_URL: z
    .string()
    .refine((u) => /^postgres(ql)?:\/\//.test(u), 'expected a postgres:// URL')
    .default(DEFAULT_DATABASE_URL),
  REDIS_URL: z
    .string()
    .refine((u) => /^rediss?:\/\//.test(u), 'expected a redis:// or rediss:// URL')
    .default(DEFAULT_REDIS_URL),
  // one cluster node, or several, e.g. redis-1:6379,redis-2:6379 (parsed in loadConfig); when set REDIS_URL is ignored
  REDIS_CLUSTER_NODES: z.string().optional(),
  // AUTH of every Redis connection whose URL carries no password
  REDIS_PASSWORD: z
    .string()
    .regex(/^[^\x00-\x1f\x7f]+$/, 'expected no control characters (a stray newline?)')
    .optional(),
  QUEUE_PREFIX: z
    .string()
    .regex(/^[^\s:]+$/, 'expected a non-empty prefix without blanks or colons')
    .refine(
      (p) => hashTagOf(p) !== undefined,
      `expected a prefix holding a {hash tag} (non-empty text in braces, so every queue key and Lua script stays in one Redis Cluster slot), e.g. ${DEFAULT_QUEUE_PREFIX}`,
    )
    .default(DEFAULT_QUEUE_PREFIX),
  // no default here: whether it was set decides a one-shot command's level on a terminal (src/log.ts)
  LOG_LEVEL: z.enum(LOG_LEVELS).optional(),
  LOG_FORMAT: z.enum(LOG_FORMATS).default('auto'),
  SIMULATOR_API_KEY: z
    .string()
    .min(1, 'must not be empty')
    .regex(HEADER_SAFE_RE, 'expected printable ASCII characters without blanks')
    .default(SIMULATOR_DEV_API_KEY),
  API_CONNECT_TIMEOUT_MS: positiveInt(600_000).default(API_CONNECT_TIMEOUT_MS),
  API_HEADERS_TIMEOUT_MS: positiveInt(600_000).default(API_HEADERS_TIMEOUT_MS),
  API_BODY_TIMEOUT_MS: positiveInt(600_000).default(API_BODY_TIMEOUT_MS),
  API_REQUEST_TIMEOUT_MS: positiveInt(3_600_000).default(API_REQUEST_TIMEOUT_MS),
  API_RETRY_MAX_ATTEMPTS: positiveInt(20).default(API_RETRY_MAX_ATTEMPTS),
  API_RETRY_BASE_DELAY_MS: positiveInt(600_000).default(API_RETRY_BASE_DELAY_MS),
  API_RETRY_MAX_DELAY_MS: positiveInt(3_600_000).default(API_RETRY_MAX_DELAY_MS),
  API_RETRY_AFTER_MAX_MS: positiveInt(86_400_000).default(API_RETRY_AFTER_MAX_MS),
  API_MAX_BODY_BYTES: positiveInt(API_MAX_BODY_BYTES_MAX)
    .pipe(z.number().min(API_MAX_BODY_BYTES_MIN, `expected at least ${API_MAX_BODY_BYTES_MIN}`))
    .default(API_MAX_BODY_BYTES),
  API_RATE_PER_SECOND: positiveInt(10_000).default(API_RATE_PER_SECOND),
  API_RATE_BURST: positiveInt(10_000).default(API_RATE_BURST),
  BATCH_SIZE: positiveInt(BATCH_SIZE_MAX_VIDEOS).default(BATCH_SIZE_MAX_VIDEOS),
  CREDIT_RESERVE: nonNegativeInt.default(CREDIT_RESERVE),
  POLL_INITIAL_DELAY_MS: positiveInt(3_600_000).default(POLL_INITIAL_DELAY_MS),
  POLL_MIN_DELAY_MS: positiveInt(3_600_000).default(POLL_MIN_DELAY_MS),
  POLL_MAX_DELAY_MS: positiveInt(3_600_000).default(POLL_MAX_DELAY_MS),
  POLL_LAND_WITHIN_MS: positiveInt(3_600_000).default(POLL_LAND_WITHIN_MS),
  LAND_CHUNK_ITEMS: positiveInt(5000).default(LAND_CHUNK_ITEMS),
  SINK_CHUNK_ITEMS: positiveInt(5000).default(SINK_CHUNK_ITEMS),
  TRANSCRIPT_RECHECK_MS: positiveInt().default(TRANSCRIPT_RECHECK_MS),
  POLL_CONCURRENCY: positiveInt(100).default(POLL_CONCURRENCY),
  SINK_CONCURRENCY: positiveInt(100).default(SINK_CONCURRENCY),
  SCHEDULE_CONCURRENCY: positiveInt(100).default(SCHEDULE_CONCURRENCY),
  SHUTDOWN_GRACE_MS: positiveInt(600_000).default(SHUTDOWN_GRACE_MS),
  JOB_LOCK_DURATION_MS: positiveInt(3_600_000)
    .pipe(z.number().min(1_000, 'expected at least 1000'))
    .default(JOB_LOCK_DURATION_MS),
  JOB_STALLED_CHECK_MS: positiveInt(3_600_000)
    .pipe(z.number().min(500, 'expected at least 500'))
    .default(JOB_STALLED_CHECK_MS),
  RECONCILE_INTERVAL_MS: positiveInt(86_400_000)
    .pipe(z.number().min(1_000, 'expected at least 1000'))
    .default(RECONCILE_INTERVAL_MS),
  RETRY_ATTEMPTS_MAX: positiveInt(100).default(RETRY_ATTEMPTS_MAX),
  RETRY_BACKOFF_BASE_MS: nonNegativeInt.default(RETRY_BACKOFF_BASE_MS),
  BATCH_MAX_AGE_MS: positiveInt().pipe(z.number().min(1_000, 'expected at least 1000')).default(BATCH_MAX_AGE_MS),
  BATCH_NOT_FOUND_CONFIRM_MS: nonNegativeInt.default(BATCH_NOT_FOUND_CONFIRM_MS),
  POLL_MAX_DURATION_MS: positiveInt(86_400_000)
    .pipe(z.number().min(1_000, 'expected at least 1000'))
    .default(POLL_MAX_DURATION_MS),
  ITEM_MAX_BYTES: positiveInt(1024 * 1024 * 1024)
    .pipe(z.number().min(1_024, 'expected at least 1024'))
    .default(ITEM_MAX_BYTES),
  HOLD_RECHECK_MS: positiveInt(86_400_000)
    .pipe(z.number().min(1_000, 'expected at least 1000'))
    .default(HOLD_RECHECK_MS),
  RAW_RETENTION_DAYS: nonNegativeInt.pipe(z.number().max(36_500)).default(RAW_RETENTION_DAYS),
  HISTORY_RETENTION_DAYS: nonNegativeInt.pipe(z.number().max(36_500)).default(HISTORY_RETENTION_DAYS),
  CREDIT_BUDGET_PER_DAY: positiveInt().optional(),
  SCHEDULE_JITTER_MS: nonNegativeInt.pipe(z.number().max(3_600_000)).default(SCHEDULE_JITTER_MS),
  SOURCE_MIN_INTERVAL_MS: nonNegativeInt.pipe(z.number().max(86_400_000)).default(SOURCE_MIN_INTERVAL_MS),
  DATABASE_POOL_MAX: positiveInt(1_000).default(DATABASE_POOL_MAX),
  // false behind a transaction-pooling PgBouncer (before 1.21, or without max_prepared_statements):
  // a statement prepared on one server connection is then not there on the next
  DATABASE_PREPARE: z.enum(['true', 'false'], { error: 'expected true or false' }).default('true'),
  EVENTS_RETENTION_DAYS: nonNegativeInt.pipe(z.number().max(36_500)).default(EVENTS_RETENTION_DAYS),
  WEBHOOK_TIMEOUT_MS: positiveInt(600_000)
    .pipe(z.number().min(100, 'expected at least 100'))
    .default(WEBHOOK_TIMEOUT_MS),
  WEBHOOK_BACKOFF_BASE_MS: positiveInt(86_400_000).default(WEBHOOK_BACKOFF_BASE_MS),
  WEBHOOK_BACKOFF_MAX_MS: positiveInt(86_400_000).default(WEBHOOK_BACKOFF_MAX_MS),
  WEBHOOK_DISABLE_AFTER_MS: positiveInt().default(WEBHOOK_DISABLE_AFTER_MS),
  WEBHOOK_POLL_INTERVAL_MS: positiveInt(3_600_000)
    .pipe(z.number().min(100, 'expected at least 100'))
    .default(WEBHOOK_POLL_INTERVAL_MS),
  // the key webhook signing secrets are sealed with in Postgres (src/domain/webhook-secrets.ts)
  WEBHOOK_SECRETS_KEY: z
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
  MIGRATION_LOCK_TIMEOUT_MS: positiveInt(600_000)
    .pipe(z.number().min(100, 'expected at least 100'))
    .default(MIGRATION_LOCK_TIMEOUT_MS),
  MIGRATION_LOCK_RETRIES: nonNegativeInt
    .pipe(z.number().max(100, 'expected at most 100'))
    .default(MIGRATION_LOCK_RETRIES),
  // sent back as a bearer token or a basic-auth password: header-safe characters only
  ADMIN_TOKEN: z
    .string()
    .min(ADMIN_TOKEN_MIN_CHARS, `expected at least ${ADMIN_TOKEN_MIN_CHARS} characters`)
    .regex(/^[\x21-\x7e]+$/, 'expected printable ASCII characters without blanks')
    .optional(),
  // a bearer token too (Prometheus' `authorization: credentials`)
  METRICS_TOKEN: z
    .string()
    .min(ADMIN_TOKEN_MIN_CHARS, `expected at least ${ADMIN_TOKEN_MIN_CHARS} characters`)
    .regex(/^[\x21-\x7e]+$/, 'expected printable ASCII characters without blanks')
    .optional(),
  // parsed item by item in loadConfig (parseAllowedHosts), which names the bad one
  ADMIN_ALLOWED_HOSTS: z.string().optional(),
  // `search` and the overview link each hit to the video at its moment (src/domain/search.ts)
  VIDEO_URL_TEMPLATE: z
    .string()
    .superRefine((t, ctx) => {
      const problem = videoUrlTemplateProblem(t);
      if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
    })
    .optional(),
});

export type Env = z.infer<typeof EnvSchema>;

/** Every environment variable the configuration reads (for docs and tests that must cover all). */
export const ENV_VARIABLES = Object.keys(EnvSchema.shape) as readonly (keyof Env)[];

export interface Config {
  api: {
    /** undefined: the `demo` command starts the embedded simulator */
    baseUrl: string | undefined;
    apiKey: string | undefined;
    platform: string;
    connectTimeoutMs: number;
    headersTimeoutMs: number;
    bodyTimeoutMs: number;
    /** the most one attempt may take, sending to whole answer, ms; default 120 000 */
    requestTimeoutMs: number;
    retry: { maxAttempts: number; baseDelayMs: number; maxDelayMs: number };
    /** longest `Retry-After` honoured, ms (a longer one is used as this); default 3 600 000 */
    retryAfterMaxMs: number;
    /** largest answer body read, bytes (the streamed batch answer excepted); default 16 MiB */
    maxBodyBytes: number;
  };
  databaseUrl: string;
  /** the single Redis node (ignored when `redisClusterNodes` is set) */
  redisUrl: string;
  /** REDIS_CLUSTER_NODES: every Redis use goes through a cluster client; undefined: one node at `redisUrl` */
  redisClusterNodes: RedisClusterNode[] | undefined;
  /** the password of the cluster node URLs, else REDIS_PASSWORD (used by a single node only when REDIS_URL has none) */
  redisPassword: string | undefined;
  queuePrefix: string;
  logLevel: (typeof LOG_LEVELS)[number];
  /** LOG_LEVEL was set (else logLevel is the default, `info`) */
  logLevelSet: boolean;
  logFormat: (typeof LOG_FORMATS)[number];
  simulatorApiKey: string;
  pipeline: {
    /** sustained upstream requests per second, all processes together */
    apiRatePerSecond: number;
    apiRateBurst: number;
    /** most videos in one submitted batch */
    batchSize: number;
    /** credits never spent */
    creditReserve: number;
    pollInitialDelayMs: number;
    pollMinDelayMs: number;
    pollMaxDelayMs: number;
    /** a running batch is polled so that a finished item lands within about this, ms; default 10 000 */
    pollLandWithinMs: number;
    landChunkSize: number;
    sinkChunkSize: number;
    transcriptRecheckMs: number;
    pollConcurrency: number;
    sinkConcurrency: number;
    scheduleConcurrency: number;
    shutdownGraceMs: number;
    /** lock of a running job, ms (renewed while it runs); default 120 000 */
    jobLockDurationMs: number;
    /** interval of the stalled-job check, ms; default 30 000 */
    jobStalledCheckMs: number;
    /** interval of the daemon's reconcile with Postgres, ms; default 60 000 */
    reconcileIntervalMs: number;
    /** automatic submissions of one video per kind and language; default 3 */
    retryAttemptsMax: number;
    /** spacing before the second automatic re-submission, doubling after, ms; default 600 000 */
    retryBackoffBaseMs: number;
    /** a batch in flight longer than this is expired locally, ms; default 48 h */
    batchMaxAgeMs: number;
    /** JSON `not-found` answers must span this long before a batch is expired, ms; default 600 000 */
    batchNotFoundConfirmMs: number;
    /** longest read of one batch answer, ms; default 600 000 */
    pollMaxDurationMs: number;
    /** largest item parsed from a batch answer, bytes; default 8 MiB */
    itemMaxBytes: number;
    /** how often a daemon re-checks upstream holds with /me, ms; default 900 000 */
    holdRecheckMs: number;
    /** raw payloads of items settled longer ago are pruned, days; 0 keeps them; default 90 */
    rawRetentionDays: number;
    /** sync runs older than this are pruned, days; 0 keeps them; default 180 */
    historyRetentionDays: number;
    /** the most credits the installation spends in one UTC day; undefined: no daily cap */
    creditBudgetPerDay: number | undefined;
    /** syncs that fire on the same cron tick start spread over up to this, ms (at most a quarter of the cron's period); default 60 000 */
    scheduleJitterMs: number;
    /** the closest two fires of a source's cron may be, checked on `sources add` / `edit` (SOURCE_MIN_INTERVAL_MS) */
    sourceMinIntervalMs: number;
    /** change events older than this are pruned (unless a webhook endpoint still needs them), days; 0 keeps them; default 30 */
    eventsRetentionDays: number;
    /** one webhook delivery's time limit, ms; default 10 000 */
    webhookTimeoutMs: number;
    /** backoff of a failing endpoint: first wait and cap, ms; default 5 000 and 600 000 */
    webhookBackoffBaseMs: number;
    webhookBackoffMaxMs: number;
    /** an endpoint failing this long is disabled, ms; default 3 days */
    webhookDisableAfterMs: number;
    /** how often a webhook worker looks for due deliveries without a notification, ms; default 5 000 */
    webhookPollIntervalMs: number;
    /** WEBHOOK_SECRETS_KEY: 32 bytes that seal webhook secrets in Postgres (AES-256-GCM); undefined: stored unencrypted */
    webhookSecretsKey: Buffer | undefined;
  };
  /** connections per Postgres pool (checked against the concurrency settings at startup); default 24 */
  databasePoolMax: number;
  /** DATABASE_PREPARE: postgres.js prepares its statements on the server; default true */
  databasePrepare: boolean;
  /**
   * what migrating takes (every command that migrates: `migrate`, `daemon`, `backfill`, `demo`):
   * the lock timeout of a migration statement (ms; default 5000), retries after one (default 5),
   * and DATABASE_PREPARE again for its own connection
   */
  migration: { lockTimeoutMs: number; lockRetries: number; prepare: boolean };
  admin: {
    /**
     * required for every admin page beyond /healthz, /readyz and /metrics (bearer token or
     * basic-auth password); undefined: the admin server listens on loopback only, without auth
     */
    token: string | undefined;
    /** METRICS_TOKEN: /metrics then needs it (or `token`) as a bearer token; undefined: /metrics is open */
    metricsToken: string | undefined;
    /**
     * ADMIN_ALLOWED_HOSTS: host names the admin server answers to besides loopback names, IP
     * addresses and the address it listens on (a request naming another host is refused); default none
     */
    allowedHosts: string[];
  };
  /** a link to a video at a second (`{id}`, `{seconds}`), given with each search hit; undefined: no links */
  videoUrlTemplate: string | undefined;
}

/** Validate the environment. Unset and empty variables take their defaults. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const known = Object.keys(EnvSchema.shape) as (keyof typeof EnvSchema.shape)[];
  const input: Record<string, string> = {};
  for (const k of known) {
    const v = env[k];
    if (v !== undefined && v !== '') input[k] = v;
  }
  const r = EnvSchema.safeParse(input);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const variable = String(issue.path[0] ?? 'environment');
    const shown = SECRET_VARIABLES.has(variable) ? '(value hidden)' : quoteValue(redactUrl(input[variable] ?? ''));
    throw new ConfigError(variable, `invalid value ${shown}: ${issue.message}`);
  }
  const e = r.data;
  if (e.API_RETRY_BASE_DELAY_MS > e.API_RETRY_MAX_DELAY_MS) {
    throw new ConfigError(
      'API_RETRY_BASE_DELAY_MS',
      `invalid value ${e.API_RETRY_BASE_DELAY_MS}: must not exceed API_RETRY_MAX_DELAY_MS (${e.API_RETRY_MAX_DELAY_MS})`,
    );
  }
  if (e.WEBHOOK_BACKOFF_BASE_MS > e.WEBHOOK_BACKOFF_MAX_MS) {
    throw new ConfigError(
      'WEBHOOK_BACKOFF_BASE_MS',
      `invalid value ${e.WEBHOOK_BACKOFF_BASE_MS}: must not exceed WEBHOOK_BACKOFF_MAX_MS (${e.WEBHOOK_BACKOFF_MAX_MS})`,
    );
  }
  if (e.POLL_MIN_DELAY_MS > e.POLL_MAX_DELAY_MS) {
    throw new ConfigError(
      'POLL_MIN_DELAY_MS',
      `invalid value ${e.POLL_MIN_DELAY_MS}: must not exceed POLL_MAX_DELAY_MS (${e.POLL_MAX_DELAY_MS})`,
    );
  }
  const cluster = e.REDIS_CLUSTER_NODES === undefined ? undefined : parseClusterNodes(e.REDIS_CLUSTER_NODES);
  return {
    api: {
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
    redisUrl: e.REDIS_URL,
    redisClusterNodes: cluster?.nodes,
    // a password written in the URL wins, as ioredis does with REDIS_URL's own
    redisPassword: cluster?.password ?? e.REDIS_PASSWORD,
    queuePrefix: e.QUEUE_PREFIX,
    logLevel: e.LOG_LEVEL ?? 'info',
    logLevelSet: e.LOG_LEVEL !== undefined,
    logFormat: e.LOG_FORMAT,
    simulatorApiKey: e.SIMULATOR_API_KEY,
    pipeline: {
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
    databasePrepare: e.DATABASE_PREPARE === 'true',
    migration: {
      lockTimeoutMs: e.MIGRATION_LOCK_TIMEOUT_MS,
      lockRetries: e.MIGRATION_LOCK_RETRIES,
      prepare: e.DATABASE_PREPARE === 'true',
    },
    admin: {
      token: e.ADMIN_TOKEN,
      metricsToken: e.METRICS_TOKEN,
      allowedHosts: e.ADMIN_ALLOWED_HOSTS === undefined ? [] : parseAllowedHosts(e.ADMIN_ALLOWED_HOSTS),
    },
    videoUrlTemplate: e.VIDEO_URL_TEMPLATE,
  };
}
