/**
 * `npm run bench:scale [-- --root DIR] [--keep-db] [--reuse-db TAG] [--shrink F] [--projection-only] [--out FILE]`
 *
 * Issue #12's scale benchmark. For each history size (1x: 100 000 videos, 300 000 batch items,
 * 200 sources, a month of hourly syncs; 10x: ten times that over a year) it creates a fresh
 * database (vsi_bench_scale_*), migrates it with the measured tree's migrations, seeds it in SQL
 * (bench/scale/seed.ts), vacuums and analyses it, then times on a warm cache what people look at
 * every few seconds and what a daemon does at start and on each tick (bench/scale/ops.ts). At 10x
 * it also prints the table sizes and a year's projected size with and without retention, and
 * fires 2 000 sources on one cron minute through a real daemon (bench/scale/storm.ts).
 *
 * `--root DIR` (or BENCH_ROOT): the code measured, imported from that tree (default: this one),
 * so an older checkout gives the "before" figures; what it lacks prints "-". `--keep-db` keeps
 * the databases; `--reuse-db TAG` times again the databases an earlier run kept (their names end
 * in `_TAG_1x` and `_TAG_10x`: migrated to this tree, vacuumed, not seeded again; a size without
 * one is seeded as usual), for a 10x seeding takes most of an hour with vectors. A kept database
 * that was timed has had its `prune` run, its source synced and, at 10x, its storm fired: so
 * `prune` finds less there, the incremental sync finds its 10 new videos already submitted (it
 * reports "expected 20 videos submitted"), and at 10x "reconcile at start, Redis empty" has the
 * storm's 100 batches more to enqueue; the first run's figures of those hold, the other timings
 * hold again. `--shrink 0.05` shrinks both sizes for a quick check of the harness (the ratios
 * mean something only at 1); `--projection-only` seeds the 10x history alone and prints its table
 * sizes and the year's projection (no 1x, no timings, no storm). Most of a run is seeding 10x,
 * its HNSW index above all; docs/performance.md has how long runs took.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { loadConfig } from '../../src/config.ts';
import { withDatabase } from '../../src/db/migrate.ts';
import { closeRedis, createRedis } from '../../src/queues/connection.ts';
import { checkCounters, databaseExists, dropDatabase, vacuumAnalyze } from './database.ts';
import { measureOperations } from './ops.ts';
import { project } from './projection.ts';
import { renderOps, renderProjection, renderSeeding, renderStorm, type ScaleResults, type ScaleRun } from './report.ts';
import { loadRoot, THIS_ROOT, type RootApi } from './root.ts';
import { seedHistory, type CatalogChannels } from './seed.ts';
import {
  CATALOG_SMALL_CHANNEL_VIDEOS,
  DIFF_SOURCE_VIDEOS,
  LARGE,
  REAL_TRANSCRIPT_CHUNKS,
  SIM_SEED,
  SMALL,
  type ScaleSpec,
} from './settings.ts';
import { runStorm, type StormFigures } from './storm.ts';
import type { Projection } from './projection.ts';

const RESULTS_DIR = join(THIS_ROOT, 'bench', 'results');

function say(line: string): void {
  process.stderr.write(`bench:scale: ${line}\n`);
}

function shrunk(spec: ScaleSpec, f: number): ScaleSpec {
  if (f === 1) return spec;
  return {
    ...spec,
    label: `${spec.label}*${f}`,
    sources: Math.max(20, Math.round(spec.sources * f)),
    videos: Math.max(DIFF_SOURCE_VIDEOS + 2_000, Math.round(spec.videos * f)),
    incrementalBatches: Math.max(200, Math.round(spec.incrementalBatches * f)),
  };
}

interface ScaleOutcome {
  run: ScaleRun;
  projection?: Projection;
  storm?: StormFigures;
}

async function runScale(
  root: RootApi,
  spec: ScaleSpec,
  opts: {
    tag: string;
    catalogChannels: number;
    keepDb: boolean;
    large: boolean;
    projectionOnly?: boolean;
    reuseDb?: boolean;
  },
): Promise<ScaleOutcome> {
  const config = loadConfig({});
  const database = `vsi_bench_scale_${opts.tag}_${spec.label.replace(/[^A-Za-z0-9]/g, '_')}`;
  const url = withDatabase(config.databaseUrl, database);
  // the catalog: channel 0 is source 1 (5 000 videos), the others a few videos each
  const sim = await root.startSimulator({
    seed: SIM_SEED,
    latencyMs: 0,
    rateLimit: { requestsPerSecond: 5_000, burst: 5_000 },
    catalog: {
      channels: 1,
      channelSizes: [DIFF_SOURCE_VIDEOS, ...Array<number>(opts.catalogChannels - 1).fill(CATALOG_SMALL_CHANNEL_VIDEOS)],
      shortsPerChannel: 0,
      livesPerChannel: 0,
      playlistsPerChannel: 0,
      transcriptChunks: { ...REAL_TRANSCRIPT_CHUNKS },
    },
  });
  const redis = createRedis(config.redisUrl);
  let prefixes = 0;
  const newPrefix = () => `{vsi-bench-scale-${opts.tag}-${spec.label}-${prefixes++}}`;
  const channels = sim.catalog.channels().slice(0, spec.sources);
  const catalog: CatalogChannels = {
    channelIds: channels.map((c) => c.id),
    videoIds: channels.map((c) => sim.catalog.videoIds(c.id) ?? []),
  };
  let ctx: ReturnType<RootApi['createContext']> | undefined;
  // the pipeline's own prefix: the timed syncs queue poll jobs there
  const pipelinePrefix = newPrefix();
  try {
    const reused = opts.reuseDb === true && (await databaseExists(config.databaseUrl, database));
    say(
      `${spec.label}: database ${database}${reused ? ' (kept by an earlier run)' : ''}: migrating with ${root.dir}/migrations`,
    );
    await root.migrateDatabase(url);
    const seedSql = postgres(url, { max: 2, onnotice: () => {} });
    let seedS: number;
    let vacuumS: number;
    let counterProblems: string[];
    let stepsMs: Record<string, number>;
    try {
      const seeded = reused
        ? { totalMs: 0, stepsMs: {} }
        : await seedHistory(seedSql, spec, catalog, (l) => say(`${spec.label}: ${l}`));
      counterProblems = await checkCounters(seedSql, (l) => say(`${spec.label}: ${l}`));
      seedS = seeded.totalMs / 1000;
      stepsMs = seeded.stepsMs;
      const t0 = Date.now();
      await vacuumAnalyze(seedSql);
      vacuumS = (Date.now() - t0) / 1000;
    } finally {
      await seedSql.end({ timeout: 5 });
    }
    say(`${spec.label}: seeded in ${seedS.toFixed(1)} s, VACUUM ANALYZE ${vacuumS.toFixed(1)} s`);
    for (const p of counterProblems) say(`${spec.label}: COUNTERS DISAGREE: ${p}`);

    const env = {
      DATABASE_URL: url,
      REDIS_URL: config.redisUrl,
      QUEUE_PREFIX: pipelinePrefix,
      API_BASE_URL: sim.baseUrl,
      API_KEY: sim.apiKey,
      API_PLATFORM: sim.platform,
      API_RATE_PER_SECOND: '1000',
      API_RATE_BURST: '1000',
      LOG_LEVEL: 'warn',
    };
    ctx = root.createContext({ env, log: root.silentLogger() });
    const deps = ctx.deps();
    let projection: Projection | undefined;
    if (opts.large) {
      say(`${spec.label}: table sizes and a year's projection (real transcripts from the simulator)...`);
      projection = await project(deps.sql, deps.api, spec, catalog.videoIds[0] ?? []);
    }
    const ops = opts.projectionOnly
      ? []
      : await measureOperations({
          root,
          ctx,
          deps,
          redis,
          sim,
          diffChannelId: catalog.channelIds[0]!,
          newPrefix,
          say: (l) => say(`${spec.label}: ${l}`),
        });
    let storm: StormFigures | undefined;
    if (opts.large && !opts.projectionOnly) {
      mkdirSync(RESULTS_DIR, { recursive: true });
      storm = await runStorm({
        root,
        sql: deps.sql,
        redis,
        env,
        prefix: newPrefix(),
        logPath: join(RESULTS_DIR, `scale-storm-${opts.tag}.log`),
        say: (l) => say(`${spec.label}: ${l}`),
      });
      say(`${spec.label}: ${renderStorm(storm).split('\n')[0]}`);
    }
    const run: ScaleRun = {
      label: spec.label,
      database,
      seedS,
      vacuumS,
      seedStepsS: Object.fromEntries(Object.entries(stepsMs).map(([k, v]) => [k, v / 1000])),
      counterProblems,
      ops,
    };
    return { run, projection, storm };
  } finally {
    await ctx?.close();
    await root.deletePrefixKeys(redis, pipelinePrefix).catch(() => {});
    await closeRedis(redis);
    await sim.close();
    if (!opts.keepDb) await dropDatabase(config.databaseUrl, database).catch(() => {});
    else say(`${spec.label}: kept database ${database}`);
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      root: { type: 'string' },
      'keep-db': { type: 'boolean', default: false },
      'reuse-db': { type: 'string' },
      shrink: { type: 'string', default: '1' },
      out: { type: 'string' },
      'projection-only': { type: 'boolean', default: false },
    },
  });
  const rootDir = values.root ?? process.env.BENCH_ROOT ?? THIS_ROOT;
  const factor = Number(values.shrink);
  if (!(factor > 0 && factor <= 1)) throw new Error(`--shrink: expected a number in (0, 1], got ${values.shrink}`);
  const started = Date.now();
  const root = await loadRoot(rootDir);
  const machine = {
    cores: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'n/a',
    memGb: Math.round(totalmem() / 2 ** 30),
    loadAvgAtStart: loadavg().map((x) => Math.round(x * 100) / 100),
    node: process.version,
  };
  say(`root ${root.dir}; ${machine.cores} cores, ${machine.memGb} GB, load ${machine.loadAvgAtStart.join(' ')}`);
  const reuse = values['reuse-db'];
  if (reuse !== undefined && !/^[0-9a-z]+$/.test(reuse))
    throw new Error(
      `--reuse-db: expected the tag of kept databases (vsi_bench_scale_<tag>_1x), got ${JSON.stringify(reuse)}`,
    );
  const tag = reuse ?? randomBytes(3).toString('hex');
  const small = shrunk(SMALL, factor);
  const large = shrunk(LARGE, factor);
  const common = {
    tag,
    catalogChannels: large.sources,
    keepDb: values['keep-db'] === true,
    reuseDb: reuse !== undefined,
  };
  if (values['projection-only']) {
    const p = await runScale(root, large, { ...common, large: true, projectionOnly: true });
    const outPath = resolve(values.out ?? join(RESULTS_DIR, 'scale-projection.json'));
    mkdirSync(dirname(outPath), { recursive: true });
    writeFileSync(
      outPath,
      `${JSON.stringify({ root: root.dir, machine, run: p.run, projection: p.projection }, null, 2)}\n`,
    );
    process.stdout.write(
      `\nbench:scale --projection-only of ${root.dir}: seeded ${p.run.label} in ${p.run.seedS.toFixed(1)} s\n\n` +
        `${p.projection ? renderProjection(p.projection, large.label) : ''}\nFigures written to ${outPath}; total ${Math.round((Date.now() - started) / 1000)} s\n`,
    );
    return;
  }
  const s = await runScale(root, small, { ...common, large: false });
  const l = await runScale(root, large, { ...common, large: true });
  const results: ScaleResults = {
    root: root.dir,
    startedAt: new Date(started).toISOString(),
    machine: { ...machine, loadAvgAtEnd: loadavg().map((x) => Math.round(x * 100) / 100) },
    small: s.run,
    large: l.run,
    projection: l.projection,
    storm: l.storm,
    totalS: Math.round((Date.now() - started) / 1000),
  };
  const outPath = resolve(values.out ?? join(RESULTS_DIR, 'scale.json'));
  mkdirSync(dirname(outPath), { recursive: true });
  writeFileSync(outPath, `${JSON.stringify(results, null, 2)}\n`);

  const out: string[] = [];
  out.push(
    `\nbench:scale of ${root.dir} on ${machine.cores} cores (${machine.cpuModel}), ${machine.memGb} GB, Node ${machine.node}; load ${machine.loadAvgAtStart.join(' ')} at start, ${String(results.machine.loadAvgAtEnd)} at end\n\n`,
  );
  out.push(renderSeeding(results));
  out.push(
    `\nWarm cache, median of 5 runs after a warm-up (3 when a run takes over 2 s); the simulator answers at once:\n\n`,
  );
  out.push(renderOps(results));
  if (l.storm) out.push(`\n${renderStorm(l.storm)}`);
  if (l.projection) out.push(`\n${renderProjection(l.projection, large.label)}`);
  out.push(`\nFigures written to ${outPath}; total ${results.totalS} s\n`);
  process.stdout.write(out.join(''));
}

main().catch((e: unknown) => {
  process.stderr.write(`bench:scale failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exitCode = 1;
});
