/**
 * Redis connections for BullMQ, the limiter and every command: one Redis node (REDIS_URL) or a
 * Redis Cluster (REDIS_CLUSTER_NODES), decided in one place (`createRedisFromConfig`). Workers
 * need `maxRetriesPerRequest: null` (blocking commands must wait through a reconnect instead of
 * failing), and every connection retries forever with a capped delay so a Redis restart or a
 * failover is survived without restarting our processes.
 */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { silentLogger, type Logger } from '../log.ts';

/** A single node or a cluster: BullMQ, the limiter and the commands take either. */
export type RedisClient = Redis | Cluster;

export const REDIS_RECONNECT_MAX_DELAY_MS = 5_000;
/** Longest wait for a connection's QUIT before it is dropped. */
export const REDIS_CLOSE_TIMEOUT_MS = 2_000;
/**
 * Longest wait for a cluster's slot map (CLUSTER SLOTS) from one node. ioredis's 1 s default is
 * short for a node busy electing a new master; a dead node fails fast anyway (connection refused).
 */
export const REDIS_CLUSTER_SLOTS_REFRESH_TIMEOUT_MS = 3_000;
/**
 * Wait before a command whose cluster node went away is sent again (after a slot map refresh).
 * ioredis retries such a command up to `maxRedirections` (16) times: 16 × 500 ms covers a
 * replica's promotion (cluster-node-timeout plus an election, a few seconds), where the 100 ms
 * default gives up after 1.6 s and the error reaches BullMQ's slower retries. Fault scenario 27
 * (node timeout 2 s): items landed again 4.7 s after the master's SIGKILL, 10.1 s with these
 * retries off (measured before the scenario counted only polls started after the kill; with
 * that stricter count, 5.2-8.4 s under load).
 */
export const REDIS_CLUSTER_FAILOVER_RETRY_MS = 500;

/** The capped backoff of every reconnect (node and cluster). */
const reconnectDelay = (times: number): number =>
  Math.min(200 * 2 ** Math.min(times, 10), REDIS_RECONNECT_MAX_DELAY_MS);

/**
 * A primary that was demoted to a replica (a managed Redis's failover, `REPLICAOF`) still
 * accepts our connection but answers every write `READONLY ...`. Reconnect: the endpoint (a DNS
 * name, a proxy) now leads to the new primary. 2 also sends the failed command again once the
 * connection is back, so no caller sees the error. Set on every connection, and carried over to
 * the ones BullMQ makes with `duplicate()` (ioredis copies the options).
 */
function reconnectOnReadonly(log: Logger = silentLogger()): NonNullable<RedisOptions['reconnectOnError']> {
  return (err) => {
    if (!err.message.startsWith('READONLY')) return false;
    log.warn(
      { event: 'redis.readonly_reconnect', err: { message: err.message } },
      'Redis answered READONLY (a failed-over primary): reconnecting',
    );
    return 2;
  };
}

export interface RedisConnectionOptions {
  /** where the READONLY reconnect is logged; default nowhere */
  log?: Logger;
  /** AUTH password (REDIS_PASSWORD); a node URL's own password otherwise */
  password?: string;
}

/** A single node. */
export function createRedis(url: string, opts: RedisOptions & { log?: Logger } = {}): Redis {
  const { log, ...rest } = opts;
  return new Redis(url, {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    retryStrategy: reconnectDelay,
    reconnectOnError: reconnectOnReadonly(log),
    ...rest,
  });
}

/**
 * A cluster client from its startup nodes: it learns the rest (and every failover) from
 * CLUSTER SLOTS and MOVED answers. The node options (`redisOptions`) are those of a single node.
 */
export function createRedisCluster(
  nodes: { host: string; port: number }[],
  opts: RedisConnectionOptions & { cluster?: ClusterOptions } = {},
): Cluster {
  return new Cluster(nodes, {
    clusterRetryStrategy: reconnectDelay,
    // commands wait while no node is reachable (a failover), as a single node's do
    enableOfflineQueue: true,
    // No ready check (CLUSTER INFO): while a failover is under way it says cluster_state:fail,
    // and ioredis then drops every node connection and reconnects the whole client, again at
    // each failed check. Commands caught in those resets could be left unanswered for good: in
    // fault scenario 27 under load a poll job's Redis call never returned, its worker kept the
    // job's lock alive, and nothing was polled again (no item landed in the 60 s after the
    // SIGKILL). Without the check the client stays up and each command is retried on its own
    // (CLUSTERDOWN, a closed connection: the retry delays below) until the replica serves the slot.
    enableReadyCheck: false,
    slotsRefreshTimeout: REDIS_CLUSTER_SLOTS_REFRESH_TIMEOUT_MS,
    retryDelayOnFailover: REDIS_CLUSTER_FAILOVER_RETRY_MS,
    redisOptions: {
      maxRetriesPerRequest: null,
      reconnectOnError: reconnectOnReadonly(opts.log),
      ...(opts.password === undefined ? {} : { password: opts.password }),
    },
    ...opts.cluster,
  });
}

/** The Redis settings of the configuration (a `Config` fits). */
export interface RedisSettings {
  redisUrl: string;
  redisClusterNodes: { host: string; port: number }[] | undefined;
  redisPassword: string | undefined;
}

/** The connection the configuration asks for: a cluster when REDIS_CLUSTER_NODES is set, else REDIS_URL. */
export function createRedisFromConfig(config: RedisSettings, opts: { log?: Logger } = {}): RedisClient {
  if (config.redisClusterNodes !== undefined) {
    return createRedisCluster(config.redisClusterNodes, { log: opts.log, password: config.redisPassword });
  }
  return createRedis(config.redisUrl, {
    log: opts.log,
    ...(config.redisPassword === undefined ? {} : { password: config.redisPassword }),
  });
}

/** The variable a user fixes when Redis cannot be reached. */
export function redisSettingName(redis: RedisClient): 'REDIS_CLUSTER_NODES' | 'REDIS_URL' {
  return redis instanceof Cluster ? 'REDIS_CLUSTER_NODES' : 'REDIS_URL';
}

/**
 * Where a connection points, as a person fixing it needs it: the setting and its hosts and ports
 * (`REDIS_URL 127.0.0.1:6379`), never a password.
 */
export function redisTarget(redis: RedisClient): string {
  // a cluster's startup nodes are not public: the variable alone names them
  if (redis instanceof Cluster) return redisSettingName(redis);
  return `${redisSettingName(redis)} ${redis.options.host ?? ''}:${redis.options.port ?? ''}`;
}

/** Close a connection, but never wait longer than `timeoutMs` (an unreachable Redis hangs QUIT). */
export async function closeRedis(redis: RedisClient, timeoutMs = REDIS_CLOSE_TIMEOUT_MS): Promise<void> {
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

/**
 * Delete every key under `prefix` (a test's or a benchmark's own queues; never a shared prefix).
 * On a cluster SCAN sees one node's keys: every master is scanned. The prefix holds a hash tag,
 * so the keys of one SCAN page share a slot and one DEL takes them all.
 */
export async function deletePrefixKeys(redis: RedisClient, prefix: string): Promise<void> {
  // a cluster knows its masters once connected: a PING waits for that (offline queue)
  if (redis instanceof Cluster) await redis.ping();
  const nodes: Redis[] = redis instanceof Cluster ? redis.nodes('master') : [redis];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await node.del(...keys);
    } while (cursor !== '0');
  }
}
