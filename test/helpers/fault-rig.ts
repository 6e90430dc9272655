/**
 * Everything one fault scenario runs against, all of it its own: the simulator (in this
 * process, over real HTTP), a private `redis-server`, a private Postgres cluster, and a fault
 * proxy in front of each of the three. The pipeline runs as real CLI processes pointed at the
 * proxies; the test reads Postgres and Redis directly (not through the proxies) to judge.
 *
 *   const rig = await startFaultRig('04-redis', { catalog: { channelSizes: [300] } });
 *   const d = rig.cli(['daemon']);                 // a real daemon process
 *   await rig.redisServer.kill(); await rig.redisServer.start();
 *   figures('04 redis-restart-empty', { lost: 0 });
 *   await rig.close();
 */
import { appendFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { createApiClient, type ApiClient } from '../../src/api/client.ts';
import { createDb, type DbHandle } from '../../src/db/connection.ts';
import { migrateDatabase } from '../../src/db/migrate.ts';
import type { Source } from '../../src/db/schema.ts';
import { registerSource, type NewSourceInput } from '../../src/pipeline/commands/sources.ts';
import { closeRedis, createRedis } from '../../src/queues/connection.ts';
import { startSimulator, type Simulator, type SimulatorOptions } from '../../src/simulator/server.ts';
import { startFaultProxy, type FaultProxy } from './fault-proxy.ts';
import { startPgCluster, type PgCluster, type PgClusterOptions } from './pg-cluster.ts';
import { cleanupWhenGone, killAll, runCliToEnd, startCli, within, type CliProcess } from './proc.ts';
import { startRedisServer, type RedisServer, type RedisServerOptions } from './redis-server.ts';

/**
 * Pipeline settings of the CLI processes: quick polls, small chunks, short locks and stall
 * checks (a killed worker's job comes back in seconds, not minutes), a frequent reconcile, and
 * logs at info (the tests wait for log lines).
 */
export const FAULT_ENV: Record<string, string> = {
  POLL_INITIAL_DELAY_MS: '200',
  POLL_MIN_DELAY_MS: '100',
  POLL_MAX_DELAY_MS: '1000',
  LAND_CHUNK_ITEMS: '500',
  SINK_CHUNK_ITEMS: '250',
  SHUTDOWN_GRACE_MS: '5000',
  API_RATE_PER_SECOND: '1000',
  API_RATE_BURST: '1000',
  API_RETRY_BASE_DELAY_MS: '100',
  API_RETRY_MAX_DELAY_MS: '2000',
  JOB_LOCK_DURATION_MS: '4000',
  JOB_STALLED_CHECK_MS: '2000',
  RECONCILE_INTERVAL_MS: '3000',
  LOG_LEVEL: 'info',
};

export interface FaultRigOptions {
  sim?: SimulatorOptions;
  /** e.g. `{ password }`: REDIS_URL then carries it */
  redis?: RedisServerOptions;
  /** e.g. `{ password }`: DATABASE_URL then carries it */
  pg?: PgClusterOptions;
}

export interface FaultRig {
  label: string;
  sim: Simulator;
  apiProxy: FaultProxy;
  redisServer: RedisServer;
  redisProxy: FaultProxy;
  pg: PgCluster;
  pgProxy: FaultProxy;
  database: string;
  prefix: string;
  /** environment of a CLI process: every connection goes through the proxies */
  env: Record<string, string>;
  /** direct connections for the test's own reads (lazily opened, closed by close()) */
  db(): DbHandle;
  redis(): Redis;
  /** an API client straight to the simulator (no proxy), for registering sources */
  api(): ApiClient;
  /** migrate the scenario database (daemons do it too; tests that seed rows first need it) */
  migrate(): Promise<void>;
  addSource(input: Partial<NewSourceInput> & { ref: string }): Promise<Source>;
  /** start a CLI process (killed by close() if still running) */
  cli(args: string[], env?: Record<string, string>, label?: string): CliProcess;
  /** run a CLI command to its end */
  run(args: string[], env?: Record<string, string>, timeoutMs?: number): ReturnType<typeof runCliToEnd>;
  close(): Promise<void>;
}

export async function startFaultRig(label: string, opts: FaultRigOptions = {}): Promise<FaultRig> {
  const sim = await startSimulator({ seed: 1, jobs: { queuedMs: 100, itemsPerSecond: 2000 }, ...opts.sim });
  const apiProxy = await startFaultProxy({ target: { host: '127.0.0.1', port: Number(new URL(sim.url).port) } });
  const redisServer = await startRedisServer(opts.redis);
  const redisProxy = await startFaultProxy({ target: { host: '127.0.0.1', port: redisServer.port } });
  const pg = await startPgCluster(opts.pg);
  const pgProxy = await startFaultProxy({ target: { host: '127.0.0.1', port: pg.port } });
  const database = `vsi_faults_${label.replace(/[^a-z0-9]+/gi, '_').toLowerCase()}`.slice(0, 60);
  const prefix = `{vsi-faults-${randomBytes(3).toString('hex')}}`;
  const procs: CliProcess[] = [];
  let db: DbHandle | undefined;
  let redis: Redis | undefined;
  let api: ApiClient | undefined;

  const env: Record<string, string> = {
    API_BASE_URL: apiProxy.url('http', '/v1'),
    API_KEY: sim.apiKey,
    API_PLATFORM: sim.platform,
    // the servers' URLs (with their passwords, if any), pointed at the proxies
    DATABASE_URL: pg.url(database).replace(`@127.0.0.1:${pg.port}/`, `@127.0.0.1:${pgProxy.port}/`),
    REDIS_URL: redisServer.url.replace(`127.0.0.1:${redisServer.port}`, `127.0.0.1:${redisProxy.port}`),
    QUEUE_PREFIX: prefix,
    ...FAULT_ENV,
  };

  const rig: FaultRig = {
    label,
    sim,
    apiProxy,
    redisServer,
    redisProxy,
    pg,
    pgProxy,
    database,
    prefix,
    env,
    db() {
      db ??= createDb(pg.url(database), { max: 4 });
      return db;
    },
    redis() {
      // straight to the server: the test's reads must not suffer the faults it injects
      redis ??= createRedis(redisServer.url);
      redis.on('error', () => undefined);
      return redis;
    },
    api() {
      api ??= createApiClient({ baseUrl: sim.baseUrl, apiKey: sim.apiKey, platform: sim.platform });
      return api;
    },
    async migrate() {
      await migrateDatabase(pg.url(database));
    },
    async addSource(input) {
      await rig.migrate();
      const h = rig.db();
      return registerSource(
        { sql: h.sql, api: rig.api() },
        { kind: 'channel', limit: 5000, langs: [], textOnly: false, cron: null, ...input },
      );
    },
    cli(args, extra = {}, name) {
      const p = startCli(args, { ...env, ...extra }, name);
      procs.push(p);
      // a daemon must not outlive a test process killed mid-run (checked: still ours by name)
      cleanupWhenGone(`grep -q videosite-ingest /proc/${p.pid}/cmdline 2>/dev/null && kill -9 ${p.pid}`);
      return p;
    },
    run(args, extra = {}, timeoutMs) {
      return runCliToEnd(args, { ...env, ...extra }, timeoutMs);
    },
    async close() {
      // every step bounded: a hung close must not keep the servers alive (the hook would time out)
      await within(killAll(procs), 10_000);
      await within(
        Promise.allSettled([db?.close(), api?.close(), redis ? closeRedis(redis, 1_000) : undefined]),
        8_000,
      );
      await within(Promise.allSettled([apiProxy.close(), redisProxy.close(), pgProxy.close()]), 5_000);
      await within(Promise.allSettled([redisServer.stop(), pg.destroy(), sim.close()]), 30_000);
    },
  };
  return rig;
}

/**
 * The one line of figures a scenario prints, e.g.
 * `faults: 04 redis-restart-empty lost=0 duplicates=0 resumed_after_s=2.1`; also appended to
 * $FAULT_FIGURES_FILE when set (the table in docs/reliability.md is built from it).
 */
export function figures(scenario: string, values: Record<string, number | string | boolean>): string {
  const line = `faults: ${scenario} ${Object.entries(values)
    .map(([k, v]) => `${k}=${typeof v === 'number' && !Number.isInteger(v) ? v.toFixed(1) : String(v)}`)
    .join(' ')}`;
  process.stdout.write(`${line}\n`);
  const file = process.env.FAULT_FIGURES_FILE;
  if (file) appendFileSync(file, `${line}\n`);
  return line;
}

/** Count rows with a one-value query, e.g. `count(sql, sql\`select count(*)::int as n from videos\`)`. */
export async function countOf(q: Promise<{ n: number }[]>): Promise<number> {
  const [r] = await q;
  return r?.n ?? 0;
}

/** The public (deliverable) regular videos of a channel in the simulator's catalog. */
export function publicVideoIds(sim: Simulator, channelId: string): string[] {
  return sim.catalog.videoIds(channelId)!.filter((id) => sim.catalog.videoInfo(id)!.fate === 'public');
}

/** Requests the simulator saw for an endpoint template, e.g. `POST /videosite/video/batch`. */
export function requestsTo(sim: Simulator, endpoint: string): number {
  return sim.stats().byEndpoint[endpoint]?.total ?? 0;
}

/**
 * When the daemon first logged items landed by a poll that began after `faultAt` (epoch ms), so
 * was run through Redis after the fault; undefined until then. A poll already running at the
 * fault can still land its items (that needs Postgres only), so an item landed after the fault
 * proves nothing by itself: in one run of scenario 27 the first came 0.2 s after the fault, then
 * nothing for 60 s. `poll.landed` says how long its poll took (`ms`), so when it began.
 */
export function landedByNewPoll(daemon: CliProcess, faultAt: number): number | undefined {
  const l = daemon
    .logs()
    .find((x) => x.event === 'poll.landed' && Number(x.landed) > 0 && x.time - Number(x.ms) > faultAt);
  return l?.time;
}
