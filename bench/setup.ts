/**
 * The benchmark's world: the simulator (in this process, so the catalog can grow between
 * workloads), fresh databases (one for the pipeline, one each for the two baselines), a fresh
 * BullMQ prefix on the shared Redis, and the environment every CLI process gets. `close()`
 * removes everything it created (the databases only when not asked to keep them).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import type { Redis } from 'ioredis';
import { createApiClient, type ApiClient } from '../src/api/client.ts';
import { loadConfig } from '../src/config.ts';
import { createDb, type DbHandle } from '../src/db/connection.ts';
import { migrateDatabase, quoteIdentifier, withDatabase } from '../src/db/migrate.ts';
import { closeRedis, createRedis, deletePrefixKeys } from '../src/queues/connection.ts';
import { startSimulator, type Simulator } from '../src/simulator/server.ts';
import { PIPELINE_ENV, simulatorOptions, type Scale } from './settings.ts';

export interface BenchEnv {
  sim: Simulator;
  scale: Scale;
  /** the pipeline's database */
  db: DbHandle;
  dbUrl: string;
  naiveDbUrl: string;
  ceilingDbUrl: string;
  prefix: string;
  redis: Redis;
  /** a plain client (no shared limiter) for /me and source registration */
  api: ApiClient;
  /** environment of every CLI process */
  cliEnv: Record<string, string>;
  logDir: string;
  /** flags for node in every CLI process (`--profile`: a CPU profile per process) */
  nodeArgs: string[];
  close(opts: { keepDatabases: boolean }): Promise<void>;
}

async function dropDatabase(serverUrl: string, url: string): Promise<void> {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  const admin = postgres(withDatabase(serverUrl, 'postgres'), { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`drop database if exists ${quoteIdentifier(name)} with (force)`);
  } finally {
    await admin.end({ timeout: 5 });
  }
}

export async function createBenchEnv(opts: {
  scale: Scale;
  seed: number;
  resultsDir: string;
  profile?: boolean;
}): Promise<BenchEnv> {
  const config = loadConfig({});
  const tag = randomBytes(4).toString('hex');
  const dbUrl = withDatabase(config.databaseUrl, `vsi_bench_${tag}`);
  const naiveDbUrl = withDatabase(config.databaseUrl, `vsi_bench_${tag}_naive`);
  const ceilingDbUrl = withDatabase(config.databaseUrl, `vsi_bench_${tag}_ceiling`);
  const prefix = `{vsi-bench-${tag}}`;
  const logDir = join(opts.resultsDir, 'logs');
  mkdirSync(logDir, { recursive: true });

  const sim = await startSimulator(simulatorOptions(opts.scale, opts.seed));
  const created: string[] = [];
  let db: DbHandle | undefined;
  let redis: Redis | undefined;
  try {
    for (const url of [dbUrl, naiveDbUrl, ceilingDbUrl]) {
      await migrateDatabase(url);
      created.push(url);
    }
    db = createDb(dbUrl, { max: 4 });
    redis = createRedis(config.redisUrl);
  } catch (e: unknown) {
    await db?.close();
    if (redis) await closeRedis(redis);
    for (const url of created) await dropDatabase(config.databaseUrl, url).catch(() => {});
    await sim.close();
    throw e;
  }
  const api = createApiClient({ baseUrl: sim.baseUrl, apiKey: sim.apiKey, platform: sim.platform });
  const r = redis;
  const handle = db;
  return {
    sim,
    scale: opts.scale,
    db: handle,
    dbUrl,
    naiveDbUrl,
    ceilingDbUrl,
    prefix,
    redis: r,
    api,
    cliEnv: {
      API_BASE_URL: sim.baseUrl,
      API_KEY: sim.apiKey,
      API_PLATFORM: sim.platform,
      DATABASE_URL: dbUrl,
      REDIS_URL: config.redisUrl,
      QUEUE_PREFIX: prefix,
      ...PIPELINE_ENV,
    },
    logDir,
    nodeArgs: opts.profile ? ['--cpu-prof', `--cpu-prof-dir=${join(opts.resultsDir, 'profiles')}`] : [],
    async close({ keepDatabases }) {
      await api.close();
      await handle.close();
      await deletePrefixKeys(r, prefix).catch(() => {});
      await closeRedis(r);
      if (!keepDatabases) {
        for (const url of created) await dropDatabase(config.databaseUrl, url).catch(() => {});
      }
      await sim.close();
    },
  };
}
