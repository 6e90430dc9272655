/**
 * The code under measurement, imported from a code root given at run time (`--root DIR` or
 * BENCH_ROOT; default this checkout), so the same harness measures an older tree ("before") and
 * the current one ("after"). Each measured operation names where it lives in either tree, newest
 * first; one a tree does not have is reported as "-". The types are this checkout's: an older
 * tree's functions are called only through the parameters both share.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Redis } from 'ioredis';
import type { AdminMetrics } from '../../src/admin/metrics.ts';
import type { AdminAppOptions } from '../../src/admin/server.ts';
import type { Context, ContextOptions } from '../../src/cli/context.ts';
import type { Queryable } from '../../src/db/connection.ts';
import type { Logger } from '../../src/log.ts';
import type { PipelineDeps } from '../../src/pipeline/deps.ts';
import type { PipelineQueues } from '../../src/queues/queues.ts';
import type { Simulator, SimulatorOptions } from '../../src/simulator/server.ts';

export const THIS_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A read of the database that takes the pool alone. */
export type Read = (sql: Queryable) => Promise<unknown>;

export interface PruneRun {
  freed: Record<string, { rows: number; bytes: number }>;
  total: { rows: number; bytes: number };
  /** stopped by its signal before the end */
  interrupted: boolean;
}

export interface RootApi {
  dir: string;
  /** bin/videosite-ingest.js of the root */
  bin: string;
  migrateDatabase(url: string): Promise<unknown>;
  createContext(opts: ContextOptions): Context;
  silentLogger(): Logger;
  startSimulator(opts: SimulatorOptions): Promise<Simulator>;
  createQueues(redis: Redis, prefix: string): PipelineQueues;
  deletePrefixKeys(redis: Redis, prefix: string): Promise<void>;
  createMetrics(opts?: { processMetrics?: boolean }): AdminMetrics;
  createAdminApp(opts: AdminAppOptions): { app: { request(path: string): Response | Promise<Response> } };
  collectStatus: Read;
  batchProgress(sql: Queryable, jobIds: readonly string[]): Promise<unknown>;
  reconcile(deps: PipelineDeps): Promise<unknown>;
  syncSource(
    deps: PipelineDeps,
    sourceId: number,
    opts: { trigger: 'cron' },
  ): Promise<{ jobIds: string[]; outcome: string; submitted: number }>;
  dueVideoIds(
    sql: Queryable,
    settings: PipelineDeps['settings'],
    kind: 'video' | 'transcript',
    lang: string | null,
    ids: string[],
    wantsChunks: boolean,
  ): Promise<string[]>;
  /** per-source video and transcript counts as `status` reads them (since issue #12: the first page, needing attention first) */
  perSourceCounts: Read;
  /** videos per latest outcome (status; items per state before migrations/0008) */
  itemCounts: Read;
  /** latest error codes (status, /metrics; items per error code before migrations/0008) */
  itemErrors: Read;
  /** `prune` of issue #12, when the tree has it */
  prune?: (deps: PipelineDeps, o: { dryRun: boolean; trigger: 'cli'; signal?: AbortSignal }) => Promise<PruneRun>;
}

type Where = readonly [file: string, name: string];

/** Where each read lives, newest first. */
const READS = {
  perSourceCounts: [
    ['src/pipeline/read/status.ts', 'readStatusSources'],
    ['src/db/source-stats.ts', 'sourcesWithStats'],
    ['src/db/sources.ts', 'sourcesWithCounts'],
  ],
  // since migrations/0008 status counts each video's latest outcome, not every item received
  itemCounts: [
    ['src/db/video-outcomes.ts', 'outcomeCounts'],
    ['src/db/item-counts.ts', 'itemStateCounts'],
    ['src/db/items.ts', 'itemCounts'],
  ],
  itemErrors: [
    ['src/db/video-outcomes.ts', 'outcomeErrorCounts'],
    ['src/db/item-counts.ts', 'itemErrorCodeCounts'],
    ['src/db/items.ts', 'itemErrorCounts'],
  ],
} as const satisfies Record<string, readonly Where[]>;

async function importFrom(dir: string, file: string): Promise<Record<string, unknown> | undefined> {
  const path = join(dir, file);
  if (!existsSync(path)) return undefined;
  return (await import(pathToFileURL(path).href)) as Record<string, unknown>;
}

/** The export `name` of `file` under `dir`; fails naming both when a required one is missing. */
async function required<T>(dir: string, file: string, name: string): Promise<T> {
  const m = await importFrom(dir, file);
  const f = m?.[name];
  if (typeof f !== 'function') throw new Error(`${dir}: ${file} has no function ${name}`);
  return f as T;
}

async function firstOf<T>(dir: string, places: readonly Where[]): Promise<T> {
  for (const [file, name] of places) {
    const f = (await importFrom(dir, file))?.[name];
    if (typeof f === 'function') return f as T;
  }
  throw new Error(`${dir}: none of ${places.map(([f, n]) => `${f} ${n}`).join(', ')}`);
}

export async function loadRoot(dirArg: string): Promise<RootApi> {
  const dir = resolve(dirArg);
  const bin = join(dir, 'bin', 'videosite-ingest.js');
  if (!existsSync(bin))
    throw new Error(`--root / BENCH_ROOT: ${dir} is not a checkout of videosite-ingest (no bin/videosite-ingest.js)`);
  const pruneModule = await importFrom(dir, 'src/pipeline/commands/prune.ts');
  return {
    dir,
    bin,
    migrateDatabase: await required(dir, 'src/db/migrate.ts', 'migrateDatabase'),
    createContext: await required(dir, 'src/cli/context.ts', 'createContext'),
    silentLogger: await required(dir, 'src/log.ts', 'silentLogger'),
    startSimulator: await required(dir, 'src/simulator/server.ts', 'startSimulator'),
    createQueues: await required(dir, 'src/queues/queues.ts', 'createQueues'),
    deletePrefixKeys: await required(dir, 'src/queues/connection.ts', 'deletePrefixKeys'),
    createMetrics: await required(dir, 'src/admin/metrics.ts', 'createMetrics'),
    createAdminApp: await required(dir, 'src/admin/server.ts', 'createAdminApp'),
    collectStatus: await required(dir, 'src/pipeline/read/status.ts', 'collectStatus'),
    batchProgress: await required(dir, 'src/db/batch-progress.ts', 'batchProgress'),
    reconcile: await required(dir, 'src/pipeline/services/reconcile.ts', 'reconcile'),
    syncSource: await required(dir, 'src/pipeline/ingest/sync-source.ts', 'syncSource'),
    dueVideoIds: await required(dir, 'src/pipeline/ingest/sync-source.ts', 'dueVideoIds'),
    perSourceCounts: await firstOf(dir, READS.perSourceCounts),
    itemCounts: await firstOf(dir, READS.itemCounts),
    itemErrors: await firstOf(dir, READS.itemErrors),
    prune: typeof pruneModule?.prune === 'function' ? (pruneModule.prune as RootApi['prune']) : undefined,
  };
}
