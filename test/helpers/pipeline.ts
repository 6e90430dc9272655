/**
 * A whole pipeline for one test file: the simulator over real HTTP, a private Postgres database,
 * a private BullMQ prefix on the real Redis, and the real client, queues and workers. `close()`
 * stops everything and removes the database and every Redis key of the prefix.
 */
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { createApiClient, type ApiClient } from '../../src/api/client.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { silentLogger } from '../../src/log.ts';
import type { PipelineDeps } from '../../src/pipeline/deps.ts';
import { startWorkers, type Role, type WorkerSet } from '../../src/pipeline/services/workers.ts';
import { closeRedis, createRedis, deletePrefixKeys } from '../../src/queues/connection.ts';
import { createApiLimiter } from '../../src/queues/limiter.ts';
import { createQueues, type PipelineQueues } from '../../src/queues/queues.ts';
import { startSimulator, type Simulator, type SimulatorOptions } from '../../src/simulator/server.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Settings that keep tests quick: short poll delays, small chunks, a short grace period. */
export const FAST_PIPELINE: Config['pipeline'] = {
  ...loadConfig({}).pipeline,
  pollInitialDelayMs: 100,
  pollMinDelayMs: 50,
  pollMaxDelayMs: 400,
  landChunkSize: 100,
  sinkChunkSize: 100,
  shutdownGraceMs: 3_000,
  apiRatePerSecond: 1000,
  apiRateBurst: 1000,
};

/** The same settings as environment variables, for CLI processes. */
export const FAST_PIPELINE_ENV: Record<string, string> = {
  POLL_INITIAL_DELAY_MS: '100',
  POLL_MIN_DELAY_MS: '50',
  POLL_MAX_DELAY_MS: '400',
  LAND_CHUNK_ITEMS: '100',
  SINK_CHUNK_ITEMS: '100',
  SHUTDOWN_GRACE_MS: '3000',
  API_RATE_PER_SECOND: '1000',
  API_RATE_BURST: '1000',
  LOG_LEVEL: 'warn',
};

export interface PipelineHarness {
  sim: Simulator;
  database: TestDatabase;
  redis: Redis;
  prefix: string;
  queues: PipelineQueues;
  api: ApiClient;
  deps: PipelineDeps;
  /** environment for a CLI process pointed at this harness */
  env: Record<string, string>;
  startWorkers(roles?: Role[]): WorkerSet;
  close(): Promise<void>;
}

export async function createPipelineHarness(
  label: string,
  simOptions: SimulatorOptions = {},
): Promise<PipelineHarness> {
  const sim = await startSimulator({ seed: 1, jobs: { queuedMs: 100, itemsPerSecond: 2000 }, ...simOptions });
  const database = await createTestDatabase(label);
  const config = loadConfig({});
  const redis = createRedis(config.redisUrl);
  const prefix = `{vsi-test-${label}-${randomBytes(4).toString('hex')}}`;
  const queues = createQueues(redis, prefix);
  const limiter = createApiLimiter({ redis, prefix, requestsPerSecond: 1000, burst: 1000 });
  const api = createApiClient({
    baseUrl: sim.baseUrl,
    apiKey: sim.apiKey,
    platform: sim.platform,
    retry: { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 200 },
    beforeRequest: (signal) => limiter.acquire(signal),
  });
  const deps: PipelineDeps = {
    sql: database.sql,
    api,
    log: silentLogger(),
    queues,
    limiter,
    settings: FAST_PIPELINE,
  };
  const workerSets: WorkerSet[] = [];
  return {
    sim,
    database,
    redis,
    prefix,
    queues,
    api,
    deps,
    env: {
      API_BASE_URL: sim.baseUrl,
      API_KEY: sim.apiKey,
      API_PLATFORM: sim.platform,
      DATABASE_URL: database.url,
      REDIS_URL: config.redisUrl,
      QUEUE_PREFIX: prefix,
      ...FAST_PIPELINE_ENV,
    },
    startWorkers(roles: Role[] = ['scheduler', 'poller', 'sink']) {
      const w = startWorkers(deps, { roles, connection: redis });
      workerSets.push(w);
      return w;
    },
    async close() {
      await Promise.allSettled(workerSets.map((w) => w.close(2_000)));
      await queues.close();
      await deletePrefixKeys(redis, prefix);
      await closeRedis(redis);
      await api.close();
      await database.drop();
      await sim.close();
    },
  };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run `videosite-ingest <args>` as a real process; `input`, when given, is its standard input. */
export function runCli(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 120_000,
  input?: string,
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/videosite-ingest.js', ...args], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    if (input !== undefined) child.stdin!.end(input);
  });
}

/** Poll `check` until it returns a value other than undefined, or fail after `timeoutMs`. */
export async function waitFor<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 30_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
