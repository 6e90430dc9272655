/**
 * `npm run bench [-- OUT.json] [--scale F] [--keep-db] [--seed N] [--profile] [--only w1]`
 *
 * Starts the simulator with realistic settings (100 ms per request, ~20 KB transcripts, a steady
 * item rate), a fresh database and queue prefix, and runs in one go:
 *
 *   probe     the simulator alone streaming a finished transcript batch
 *   naive     the one-video-at-a-time baseline on a sample of the W1 videos
 *   W1        cold backfill: 20 channels x 250 videos, metadata + transcripts (one language)
 *   ceiling   W1's final rows written straight from memory (COPY into the tables is the ceiling)
 *   W3        W1 again after 2% new videos per channel; then once more with nothing new
 *   W2        one channel of 5000 videos: one 5000-item batch per kind
 *   overlap   a channel and two of its playlists, cold: what overlapping sources cost
 *   crawl     a website whose crawl finds 5 000 pages: pages/s landed, land lag, RSS (bench/crawl.ts)
 *   media     a list of 1 000 media URLs on 4 platforms: items/s, land lag, RSS (bench/media.ts)
 *   embeddings  W1's passages against the embeddings twin's rate limit: texts/s, share of the limit, lag (bench/embeddings.ts)
 *   webhooks  a `daemon --role webhooks` delivering events to a local receiver (bench/webhooks.ts)
 *
 * Each workload is the real CLI: a `daemon --role poller,sink` process already running and a
 * `backfill --source ...` process timed from spawn to exit. Prints the figures, the ratios and
 * every target as met / not met, and writes them as JSON (default bench/results/latest.json).
 * `--scale 0.2` shrinks every workload for a quick check (the targets are only meaningful at 1);
 * `--profile` writes a CPU profile of every pipeline process to bench/results/profiles/;
 * `--only w1` runs W1, the COPY ceiling and the design floor alone (no start-up, probe, naive,
 * other statement forms or later workloads) and prints their ratios. The processes' logs are kept in bench/results/logs/.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, freemem, loadavg, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.ts';
import { registerSource } from '../src/pipeline/commands/sources.ts';
import { loadFinalRows, runCeiling } from './ceiling.ts';
import { renderCrawl, runCrawlWorkload } from './crawl.ts';
import { renderEmbeddings, runEmbeddingsWorkload } from './embeddings.ts';
import { renderMedia, runMediaWorkload } from './media.ts';
import { runNaive } from './naive.ts';
import { probeSimulator } from './probe.ts';
import { killRunning, REPO_ROOT, shebangNodeArgs } from './procs.ts';
import {
  computeRatios,
  judgeTargets,
  renderTable,
  renderTargets,
  type ColdCost,
  type LossCheck,
  type Results,
} from './report.ts';
import {
  API_RATE_BURST,
  API_RATE_PER_SECOND,
  LANG,
  OVERLAP_PLAYLISTS,
  SIM_ITEM_CACHE_BYTES,
  SIM_ITEMS_PER_SECOND,
  SIM_LATENCY_MS,
  SIM_QUEUED_MS,
  SIM_TRANSCRIPT_CHUNKS,
  scaleOf,
} from './settings.ts';
import { createBenchEnv, type BenchEnv } from './setup.ts';
import { measureWebhookDelivery, renderWebhookDelivery, WEBHOOK_BENCH_EVENTS } from './webhooks.ts';
import { runWorkload, type WorkloadFigures } from './workload.ts';

/** bench/results/ is gitignored: the default JSON, the processes' logs, the CPU profiles. */
const RESULTS_DIR = join(REPO_ROOT, 'bench', 'results');
const DEFAULT_OUT = join(RESULTS_DIR, 'latest.json');

/** set by SIGINT/SIGTERM: what fails after it is the cleanup's doing, not news */
let stopping = false;

function say(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

function machine(): Record<string, unknown> {
  const sh = (cmd: string, args: string[]) => {
    try {
      return execFileSync(cmd, args, { encoding: 'utf8' }).trim();
    } catch {
      return 'n/a';
    }
  };
  return {
    nproc: sh('nproc', []),
    cpuModel: cpus()[0]?.model ?? 'n/a',
    memTotalGb: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    memFreeGbAtStart: Math.round((freemem() / 2 ** 30) * 10) / 10,
    freeH: sh('free', ['-h']),
    loadAvgAtStart: loadavg().map((x) => Math.round(x * 100) / 100),
    node: process.version,
  };
}

function summarise(w: WorkloadFigures): string {
  return (
    `${w.name}: ${w.ok ? 'ok' : `backfill exit ${w.exitCode}`}, ${w.wallS} s, ${w.videos} videos (${w.videosPerS}/s), ` +
    `${w.rows.total} rows (${w.rowsPerS}/s), ${w.credits} credits, ${w.apiRequests.total} requests, ` +
    `polls/batch ${w.pollsPerBatch.mean} (max ${w.pollsPerBatch.max}), peak RSS daemon ${w.peakRssMb.daemon} MB / backfill ${w.peakRssMb.backfill} MB`
  );
}

async function registerSources(
  env: BenchEnv,
  channelIds: string[],
  limit: number,
  kind: 'channel' | 'playlist' = 'channel',
): Promise<number[]> {
  const ids: number[] = [];
  for (const ref of channelIds) {
    const s = await registerSource(
      { sql: env.db.sql, api: env.api },
      { kind, ref, limit, langs: [LANG], textOnly: false, cron: null },
    );
    ids.push(s.id);
  }
  return ids;
}

/**
 * What a cold run cost, from the run itself: the listing credits its syncs recorded (its sources
 * are new: every sync run of theirs is this run's), plus 1 + its videos for every batch it
 * submitted; checked against what `/me` says was spent, and that no video went to two batches of
 * one kind although several sources listed it.
 */
async function coldCost(env: BenchEnv, w: WorkloadFigures, sourceIds: number[]): Promise<ColdCost> {
  const { sql } = env.db;
  const [r] = await sql<
    {
      listings: number;
      batches: number;
      batch_credits: number;
      videos_bought_twice: number;
      videos_listed_twice: number;
    }[]
  >`
    select
      (select coalesce(sum(listing_credits), 0)::int from sync_runs where source_id = any(${sourceIds}::int[])) as listings,
      (select count(*)::int from batches where job_id = any(${w.jobIds}::text[])) as batches,
      (select coalesce(sum(1 + n), 0)::int from (
        select count(distinct i.video_id) as n from batches b left join batch_items i using (job_id)
        where b.job_id = any(${w.jobIds}::text[]) group by b.job_id) per_batch) as batch_credits,
      (select count(*)::int from (
        select i.video_id from batch_items i join batches b using (job_id)
        where b.job_id = any(${w.jobIds}::text[]) group by i.video_id, b.kind, coalesce(b.lang, '') having count(*) > 1) twice) as videos_bought_twice,
      (select count(*)::int from (
        select video_id from source_videos where source_id = any(${sourceIds}::int[])
        group by video_id having count(*) > 1) shared) as videos_listed_twice`;
  const c = r!;
  return {
    sources: sourceIds.length,
    listingCredits: c.listings,
    batches: c.batches,
    batchCredits: c.batch_credits,
    computed: c.listings + c.batch_credits,
    spent: w.credits,
    videosListedTwice: c.videos_listed_twice,
    videosBoughtTwice: c.videos_bought_twice,
  };
}

/**
 * No loss in W2: every video and transcript the catalog says exists is a row, or an item kept
 * raw with its reason (quarantined); every item of both batches ended (stored, failed upstream,
 * or quarantined), none left processing, landed or retryable.
 */
async function checkW2(env: BenchEnv, channelId: string, w2: WorkloadFigures): Promise<LossCheck> {
  const ids = (env.sim.catalog.videoIds(channelId) ?? []).slice(0, env.scale.w2Videos);
  let expectedVideos = 0;
  let expectedTranscripts = 0;
  for (const id of ids) {
    const info = env.sim.catalog.videoInfo(id);
    if (info?.fate !== 'public') continue;
    expectedVideos++;
    if (info.transcriptLanguages.length > 0) expectedTranscripts++;
  }
  const [row] = await env.db.sql<
    { videos: number; transcripts: number; kept_video: number; kept_transcript: number; kept_without_payload: number }[]
  >`
    select (select count(*)::int from videos where id = any(${ids}::text[])) as videos,
      (select count(distinct video_id)::int from transcripts where video_id = any(${ids}::text[])) as transcripts,
      (select count(*)::int from batch_items i join batches b using (job_id)
        where i.job_id = any(${w2.jobIds}::text[]) and i.state = 'quarantined' and b.kind = 'video') as kept_video,
      (select count(*)::int from batch_items i join batches b using (job_id)
        where i.job_id = any(${w2.jobIds}::text[]) and i.state = 'quarantined' and b.kind = 'transcript') as kept_transcript,
      (select count(*)::int from batch_items where job_id = any(${w2.jobIds}::text[]) and state = 'quarantined'
        and ((payload is null and payload_raw is null) or reason is null)) as kept_without_payload`;
  const r = row!;
  const unsettledItems = Object.entries(w2.items)
    .filter(([state]) => !['sunk', 'failed', 'quarantined'].includes(state))
    .reduce((n, [, c]) => n + c, 0);
  const endedItems = (w2.items.sunk ?? 0) + (w2.items.failed ?? 0) + (w2.items.quarantined ?? 0);
  return {
    expectedVideos,
    videoRows: r.videos,
    expectedTranscripts,
    transcriptRows: r.transcripts,
    quarantinedKept: r.kept_video + r.kept_transcript,
    unsettledItems,
    noLoss:
      r.videos + r.kept_video === expectedVideos &&
      r.transcripts + r.kept_transcript === expectedTranscripts &&
      r.kept_without_payload === 0 &&
      unsettledItems === 0 &&
      endedItems === 2 * ids.length,
  };
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      scale: { type: 'string', default: '1' },
      seed: { type: 'string', default: '1' },
      'keep-db': { type: 'boolean', default: false },
      profile: { type: 'boolean', default: false },
      only: { type: 'string' },
    },
  });
  if (values.only !== undefined && values.only !== 'w1') throw new Error('--only: expected w1');
  const onlyW1 = values.only === 'w1';
  const factor = Number(values.scale);
  if (!(factor > 0 && factor <= 1)) throw new Error('--scale: expected a number in (0, 1]');
  const outPath = resolve(positionals[0] ?? DEFAULT_OUT);
  const scale = scaleOf(factor);
  const started = Date.now();
  const mach = machine();
  say(
    `machine: ${mach.nproc} cores, ${mach.memTotalGb} GB, load ${String(mach.loadAvgAtStart)} (figures are noisy on a busy machine)`,
  );
  if (!onlyW1) await (await import('./startup.ts')).reportStartup();

  const env = await createBenchEnv({
    scale,
    seed: Number(values.seed),
    resultsDir: RESULTS_DIR,
    profile: values.profile === true,
  });
  // Ctrl-C: the pipeline processes get the terminal's SIGINT too; drop what this run created
  const interrupted = (signal: NodeJS.Signals) => {
    stopping = true;
    say(`${signal}: cleaning up`);
    killRunning();
    void env.close({ keepDatabases: values['keep-db'] === true }).finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    const channels = env.sim.catalog.channels();
    const w1Channels = channels.slice(0, scale.w1Channels).map((c) => c.id);
    const w2Channel = channels[scale.w1Channels]!.id;
    const overlapChannel = channels[scale.w1Channels + 1]!;
    const settings = {
      scale,
      simulator: {
        latencyMs: SIM_LATENCY_MS,
        queuedMs: SIM_QUEUED_MS,
        itemsPerSecondPerBatch: SIM_ITEMS_PER_SECOND,
        transcriptChunks: SIM_TRANSCRIPT_CHUNKS,
        rateLimitPerS: API_RATE_PER_SECOND,
        itemCacheBytes: SIM_ITEM_CACHE_BYTES,
      },
      pipeline: {
        apiRatePerSecond: API_RATE_PER_SECOND,
        apiRateBurst: API_RATE_BURST,
        otherSettings: 'defaults',
        nodeFlags: shebangNodeArgs(),
      },
      lang: LANG,
      database: env.dbUrl.replace(/\/\/[^@]*@/, '//'),
      queuePrefix: env.prefix,
    };
    say(
      `simulator ${env.sim.baseUrl}: latency ${SIM_LATENCY_MS} ms, batches queued ${SIM_QUEUED_MS} ms then ` +
        `${SIM_ITEMS_PER_SECOND} items/s each (W1: ${2 * scale.w1Channels} batches in parallel = ` +
        `${2 * scale.w1Channels * SIM_ITEMS_PER_SECOND} items/s upstream), transcripts ${SIM_TRANSCRIPT_CHUNKS.min}-${SIM_TRANSCRIPT_CHUNKS.max} chunks`,
    );

    if (onlyW1) {
      await runW1AndCeiling(env, w1Channels, outPath, started, mach);
      return;
    }

    const probe = await probeSimulator(env.sim, w2Channel, Math.min(1000, scale.w2Videos), LANG);
    say(
      `probe: the simulator alone streams a finished ${probe.items}-item transcript batch (${probe.mb} MB): ` +
        `first read ${probe.firstReadS} s = ${probe.firstReadMbPerS} MB/s, again ${probe.repeatReadS} s = ${probe.repeatReadMbPerS} MB/s`,
    );

    const w1Sources = await registerSources(env, w1Channels, scale.w1VideosPerChannel);
    const [w2Source] = await registerSources(env, [w2Channel], scale.w2Videos);
    const overlapSources = [
      ...(await registerSources(env, [overlapChannel.id], scale.overlapVideos)),
      ...(await registerSources(
        env,
        overlapChannel.playlistIds.slice(0, OVERLAP_PLAYLISTS),
        scale.overlapVideos,
        'playlist',
      )),
    ];

    say(`naive: ${scale.naiveSample} videos one by one...`);
    const naive = await runNaive({
      sim: env.sim,
      dbUrl: env.naiveDbUrl,
      channelIds: w1Channels,
      listLimit: scale.w1VideosPerChannel,
      sample: scale.naiveSample,
      lang: LANG,
    });
    say(
      `naive: ${naive.sample} videos in ${naive.wallS} s = ${naive.videosPerS} videos/s, ${naive.creditsPerVideo} credits/video`,
    );

    say('W1: cold backfill...');
    const w1 = await runWorkload(env, 'w1', w1Sources);
    say(summarise(w1));

    say("ceiling: writing W1's final rows straight from memory...");
    const ceiling = await runCeiling(env.ceilingDbUrl, await loadFinalRows(env.db.sql, w1.jobIds));
    for (const m of [...ceiling.methods, ceiling.designFloor])
      say(`ceiling: ${m.method}: ${m.wallS} s = ${m.rowsPerS} rows/s`);
    say(
      `passages: ${ceiling.passages.cut} cut from ${ceiling.passages.transcripts} transcripts in ${ceiling.passages.wallS} s = ${ceiling.passages.passagesPerS} passages/s (search windows rebuilt alike)`,
    );
    const passageLag = await passageLagOf(env.db.sql);
    say(
      `passages: lag from a stored transcript to its passages in W1 (daemon indexer): p50 ${passageLag.p50S} s, p95 ${passageLag.p95S} s, max ${passageLag.maxS} s over ${passageLag.transcripts} transcripts`,
    );

    // W1's passages, before W3 adds to them; a window of a minute at scale 1
    const embedWindowMs = Math.max(10_000, Math.round(60_000 * factor));
    say(`embeddings: W1's passages against the embeddings twin's rate limit, for at most ${embedWindowMs / 1000} s...`);
    const embeddings = await runEmbeddingsWorkload(env, loadConfig(env.cliEnv).pipeline.passages, embedWindowMs);
    say(renderEmbeddings(embeddings).trim());

    let newVideos = 0;
    const newIds: string[] = [];
    for (const c of w1Channels) {
      const added = env.sim.catalog.addVideos(c, scale.w3NewPerChannel) ?? [];
      newVideos += added.length;
      newIds.push(...added);
    }
    say(`W3: ${newVideos} new videos (${scale.w3NewPerChannel} per channel); incremental backfill...`);
    const w3run = await runWorkload(env, 'w3', w1Sources);
    say(summarise(w3run));
    const newPublic = newIds.filter((id) => env.sim.catalog.videoInfo(id)?.fate === 'public');
    const [landed] = await env.db.sql<
      { n: number }[]
    >`select count(*)::int as n from videos where id = any(${newPublic}::text[])`;
    const w3 = { ...w3run, newVideos, newPublicVideos: newPublic.length, newVideosLanded: landed!.n };
    say('W3: rerun with nothing new...');
    const w3Unchanged = await runWorkload(env, 'w3-unchanged', w1Sources);
    say(summarise(w3Unchanged));

    say(`W2: one channel of ${scale.w2Videos} videos, one batch per kind...`);
    const w2run = await runWorkload(env, 'w2', [w2Source!]);
    const w2 = { ...w2run, loss: await checkW2(env, w2Channel, w2run) };
    say(summarise(w2));

    say(`overlap: a channel of ${scale.overlapVideos} videos and ${OVERLAP_PLAYLISTS} of its playlists, cold...`);
    const overlapRun = await runWorkload(env, 'overlap', overlapSources);
    const overlap = { ...overlapRun, cold: await coldCost(env, overlapRun, overlapSources) };
    say(summarise(overlap));

    const crawlPages = Math.max(200, Math.round(5000 * factor));
    say(`crawl: a website of ${crawlPages} pages...`);
    const crawl = await runCrawlWorkload(env, crawlPages);
    say(renderCrawl(crawl).trim());

    const mediaItems = Math.max(100, Math.round(1000 * factor));
    say(`media: a list of ${mediaItems} media URLs...`);
    const media = await runMediaWorkload(env, mediaItems);
    say(renderMedia(media).trim());

    const webhookEvents = Math.max(500, Math.round(WEBHOOK_BENCH_EVENTS * factor));
    say(`webhooks: ${webhookEvents} events delivered by a daemon to a local receiver...`);
    const webhooks = await measureWebhookDelivery({
      events: webhookEvents,
      logDir: env.logDir,
      nodeArgs: env.nodeArgs,
    });
    say(`webhooks: ${webhooks.events} events in ${webhooks.wallS} s = ${webhooks.eventsPerS} events/s`);

    const ratios = computeRatios({ naive, w1, ceiling });
    const w3Bound = {
      listings: w3.apiRequests.byEndpoint['GET /videosite/channel/videos'] ?? 0,
      // one metadata and one transcript batch per channel, each 1 + its new videos
      batchCredits: scale.w1Channels * 2 * (1 + scale.w3NewPerChannel),
    };
    const targets = judgeTargets(
      { naive, w1, ceiling, w2, w3, w3Unchanged, overlap, crawl, media, embeddings },
      ratios,
      w3Bound,
    );
    const results: Results = {
      startedAt: new Date(started).toISOString(),
      machine: { ...mach, loadAvgAtEnd: loadavg().map((x) => Math.round(x * 100) / 100) },
      settings,
      probe,
      naive,
      w1,
      ceiling,
      passageLag,
      w3,
      w3Unchanged,
      w2,
      overlap,
      crawl,
      media,
      embeddings,
      webhooks,
      ratios,
      targets,
      totalS: Math.round((Date.now() - started) / 1000),
    };
    mkdirSync(dirname(outPath), { recursive: true });
    writeFileSync(outPath, `${JSON.stringify(results, null, 2)}\n`);

    const out: string[] = [];
    out.push(
      `\nMachine: ${mach.nproc} cores (${String(mach.cpuModel)}), ${mach.memTotalGb} GB RAM, Node ${process.version}; load average ${String(mach.loadAvgAtStart)} at start, ${String(results.machine.loadAvgAtEnd)} at end\n`,
    );
    out.push(
      `Simulator: ${SIM_LATENCY_MS} ms per request, ${SIM_ITEMS_PER_SECOND} items/s per batch after ${SIM_QUEUED_MS} ms queued, ~150-chunk transcripts; ` +
        `alone it streams a finished ${probe.items}-item transcript batch at ${probe.firstReadMbPerS} MB/s the first time, ${probe.repeatReadMbPerS} MB/s again\n\n`,
    );
    out.push(renderTable(results));
    const pct = (x: number | undefined) => `${Math.round((x ?? NaN) * 1000) / 10}%`;
    out.push(
      `\nRatios: W1/naive videos/s ${ratios.w1VsNaiveVideosPerS}x; W1/COPY ceiling rows/s ${pct(ratios.w1VsCopyRowsPerS)} ` +
        `(design floor/COPY ceiling ${pct(ratios.designFloorVsCopyRowsPerS)}, W1/design floor ${pct(ratios.w1VsDesignFloorRowsPerS)})\n\n`,
    );
    out.push(renderTargets(targets));
    out.push(`\n${renderCrawl(crawl)}`);
    out.push(renderMedia(media));
    out.push(renderEmbeddings(embeddings));
    out.push(`${renderWebhookDelivery(webhooks)}`);
    out.push(`\nFigures written to ${outPath} (total ${results.totalS} s)\n`);
    process.stdout.write(out.join(''));
    const failed = [w1, w2, w3, w3Unchanged, overlap, crawl.workload, media.workload].filter((w) => !w.ok);
    if (failed.length > 0) {
      for (const f of failed) say(`${f.name} did not finish cleanly:\n${f.problems ?? ''}`);
      process.exitCode = 1;
    }
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
    await env.close({ keepDatabases: values['keep-db'] === true });
  }
}

main().catch((e: unknown) => {
  if (stopping) return;
  process.stderr.write(`bench failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exitCode = 1;
});

/**
 * `--only w1`: W1 and the ceiling of its rows, the ratios between them, nothing else; the figures
 * as JSON to `outPath`.
 */
async function runW1AndCeiling(
  env: BenchEnv,
  w1Channels: string[],
  outPath: string,
  started: number,
  mach: Record<string, unknown>,
): Promise<void> {
  const w1Sources = await registerSources(env, w1Channels, env.scale.w1VideosPerChannel);
  say('W1: cold backfill...');
  const w1 = await runWorkload(env, 'w1', w1Sources);
  say(summarise(w1));
  say("ceiling: writing W1's final rows straight from memory...");
  const ceiling = await runCeiling(env.ceilingDbUrl, await loadFinalRows(env.db.sql, w1.jobIds), {
    copyOnly: true,
  });
  for (const m of [...ceiling.methods, ceiling.designFloor])
    say(`ceiling: ${m.method}: ${m.wallS} s = ${m.rowsPerS} rows/s (${m.indexS} s of it the search index)`);
  const pct = (x: number) => `${Math.round(x * 1000) / 10}%`;
  const ratios = {
    w1VsCopyRowsPerS: w1.rowsPerS / ceiling.copy.rowsPerS,
    designFloorVsCopyRowsPerS: ceiling.designFloor.rowsPerS / ceiling.copy.rowsPerS,
    w1VsDesignFloorRowsPerS: w1.rowsPerS / ceiling.designFloor.rowsPerS,
  };
  const loadAvgAtEnd = loadavg().map((x) => Math.round(x * 100) / 100);
  mkdirSync(dirname(outPath), { recursive: true });
  writeFileSync(
    outPath,
    `${JSON.stringify({ startedAt: new Date(started).toISOString(), machine: { ...mach, loadAvgAtEnd }, w1, ceiling, ratios }, null, 2)}\n`,
  );
  process.stdout.write(
    `W1 ${w1.wallS} s, ${w1.rowsPerS} rows/s (cpu daemon ${w1.cpuS.daemon} s / backfill ${w1.cpuS.backfill} s); ` +
      `COPY ceiling ${ceiling.copy.wallS} s, ${ceiling.copy.rowsPerS} rows/s; design floor ${ceiling.designFloor.wallS} s, ${ceiling.designFloor.rowsPerS} rows/s\n` +
      `W1/COPY ceiling ${pct(ratios.w1VsCopyRowsPerS)}, design floor/COPY ceiling ${pct(ratios.designFloorVsCopyRowsPerS)}, ` +
      `W1/design floor ${pct(ratios.w1VsDesignFloorRowsPerS)}; load ${String(mach.loadAvgAtStart)} at start, ${String(loadAvgAtEnd)} at end\n`,
  );
  if (!w1.ok) {
    say(`w1 did not finish cleanly:\n${w1.problems ?? ''}`);
    process.exitCode = 1;
  }
}

/**
 * How long W1's transcripts waited for their passages: from the landing transaction that stored
 * a transcript (`updated_at`) to the indexer transaction that cut its first passage (`cut_at`).
 */
async function passageLagOf(
  sql: import('postgres').Sql,
): Promise<{ transcripts: number; p50S: number | null; p95S: number | null; maxS: number | null }> {
  const [r] = await sql<{ n: number; p50: number | null; p95: number | null; max: number | null }[]>`
    with lag as (
      select extract(epoch from min(p.cut_at) - t.updated_at)::float8 as s
      from transcripts t join passages p on p.kind = 'transcript' and p.doc = t.video_id and p.lang = t.lang
      group by t.video_id, t.lang, t.updated_at)
    select count(*)::int as n, percentile_cont(0.5) within group (order by s) as p50,
      percentile_cont(0.95) within group (order by s) as p95, max(s) as max from lag`;
  const r1 = (x: number | null) => (x === null ? null : Math.round(x * 10) / 10);
  return { transcripts: r!.n, p50S: r1(r!.p50), p95S: r1(r!.p95), maxS: r1(r!.max) };
}
