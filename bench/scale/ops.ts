/**
 * The operations of issue #12's point 2, each timed on a warm cache: one warm-up run, then the
 * median of RUNS (SLOW_OP_RUNS when the warm-up took over SLOW_OP_MS; under FAST_OP_MS, FAST_OP_RUNS
 * runs of FAST_OP_CALLS calls each, their mean per call). Setup and cleanup around a run are not
 * timed.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import type { Redis } from 'ioredis';
import type { Context } from '../../src/cli/context.ts';
import type { PipelineDeps } from '../../src/pipeline/deps.ts';
import type { Simulator } from '../../src/simulator/server.ts';
import type { SearchHit, SearchFilter } from '../../src/db/search.ts';
import type { Queryable } from '../../src/db/connection.ts';
import type { EmbeddingsConfig } from '../../src/config.ts';
import type { PruneRun, RootApi } from './root.ts';
import { corpus, firstBackfillJobIds } from './seed.ts';
import {
  DIFF_NEW_VIDEOS_PER_RUN,
  EMBEDDING_DIMENSIONS,
  EMBEDDING_MODEL,
  FAST_OP_CALLS,
  FAST_OP_MS,
  FAST_OP_RUNS,
  LANG,
  PROGRESS_BACKFILL_SOURCES,
  PROGRESS_BATCHES,
  PRUNE_FIRST_RUN_MAX_MS,
  RUNS,
  SLOW_OP_MS,
  SLOW_OP_RUNS,
} from './settings.ts';

export interface OpFigure {
  key: string;
  label: string;
  /** median, ms; undefined: the tree has no such operation */
  ms: number | undefined;
  runsMs: number[];
  /** what the operation returned that a reader checks (bytes, rows freed, batches submitted) */
  note?: string;
  /** held to the ratio target */
  judged: boolean;
  /** it threw, or answered wrong */
  failure?: string;
}

export interface OpContext {
  root: RootApi;
  ctx: Context;
  deps: PipelineDeps;
  redis: Redis;
  sim: Simulator;
  /** channel of source 1, the 5 000-video source */
  diffChannelId: string;
  /** a fresh queue prefix each call */
  newPrefix(): string;
  say(line: string): void;
}

interface Timing<T> {
  setup?: () => Promise<void> | void;
  run: () => Promise<T>;
  teardown?: (result: T) => Promise<void>;
}

async function timed<T>(t: Timing<T>, runs?: number): Promise<{ medianMs: number; runsMs: number[]; last: T }> {
  const once = async (): Promise<{ ms: number; result: T }> => {
    await t.setup?.();
    const t0 = performance.now();
    const result = await t.run();
    const ms = performance.now() - t0;
    await t.teardown?.(result);
    return { ms, result };
  };
  const warm = await once();
  const fast = runs === undefined && warm.ms < FAST_OP_MS;
  const n = runs ?? (warm.ms > SLOW_OP_MS ? SLOW_OP_RUNS : fast ? FAST_OP_RUNS : RUNS);
  const calls = fast ? FAST_OP_CALLS : 1;
  const runsMs: number[] = [];
  let last = warm.result;
  for (let i = 0; i < n; i++) {
    let ms = 0;
    for (let c = 0; c < calls; c++) {
      const r = await once();
      ms += r.ms;
      last = r.result;
    }
    runsMs.push(fast ? Math.round((ms / calls) * 100) / 100 : Math.round(ms * 10) / 10);
  }
  const sorted = [...runsMs].sort((a, b) => a - b);
  return { medianMs: sorted[Math.floor(sorted.length / 2)]!, runsMs, last };
}

const kb = (bytes: number) => `${Math.round(bytes / 1024)} KB`;

/** Prometheus text: the families whose read failed in a scrape so far (the counter is cumulative). */
function failedFamilies(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^vsi_metrics_collect_errors_total\{family="([^"]+)"\} (\d+)/gm)) {
    if (Number(m[2]) > 0) out.push(m[1]!);
  }
  return out;
}

/**
 * A phrase of the seed's corpus (two words side by side, no punctuation, from its middle): every
 * seeded transcript cuts the corpus at a random place, so it is said in many of them at both sizes.
 */
export function searchPhrase(): string {
  const words = corpus().toString('ascii').split(' ');
  for (let i = Math.floor(words.length / 2); i < words.length - 1; i++) {
    const [a, b] = [words[i]!, words[i + 1]!];
    if (/^[a-z]{4,}$/.test(a) && /^[a-z]{4,}$/.test(b)) return `"${a} ${b}"`;
  }
  throw new Error('no phrase of two words in the corpus');
}

type Record_ = <T>(
  key: string,
  label: string,
  t: Timing<T>,
  judge?: (last: T) => { note?: string; failure?: string },
) => Promise<void>;

/** `search` (issue #15) as the CLI runs it, where the tree has it (src/db/search.ts). */
async function measureSearch(o: OpContext, record: Record_, figures: OpFigure[]): Promise<void> {
  const label = 'search (a phrase, 20 hits)';
  const file = join(o.root.dir, 'src/db/search.ts');
  const search = existsSync(file)
    ? (
        (await import(pathToFileURL(file).href)) as {
          searchTranscripts?: (sql: Queryable, f: SearchFilter) => Promise<SearchHit[]>;
        }
      ).searchTranscripts
    : undefined;
  if (search === undefined) {
    figures.push({ key: 'search', label, ms: undefined, runsMs: [], judged: true, note: 'not available' });
    o.say(`${label}: not available`);
    return;
  }
  const query = searchPhrase();
  await record('search', label, { run: () => search(o.deps.sql, { query, limit: 20 }) }, (hits) =>
    hits.length === 20 ? { note: `${query}` } : { note: query, failure: `${hits.length} hits, expected 20` },
  );
}

/** Page search (issue #29) as the CLI runs it, where the tree has it: the same phrase in the seeded pages. */
async function measurePageSearch(o: OpContext, record: Record_, figures: OpFigure[]): Promise<void> {
  const label = 'search pages (a phrase, 20 hits)';
  const file = join(o.root.dir, 'src/db/search.ts');
  const search = existsSync(file)
    ? (
        (await import(pathToFileURL(file).href)) as {
          searchPages?: (sql: Queryable, f: { query: string; limit: number }) => Promise<unknown[]>;
        }
      ).searchPages
    : undefined;
  if (search === undefined) {
    figures.push({ key: 'search-pages', label, ms: undefined, runsMs: [], judged: true, note: 'not available' });
    o.say(`${label}: not available`);
    return;
  }
  const query = searchPhrase();
  await record('search-pages', label, { run: () => search(o.deps.sql, { query, limit: 20 }) }, (hits) =>
    hits.length === 20 ? { note: `${query}` } : { note: query, failure: `${hits.length} hits, expected 20` },
  );
}

type Imported = Record<string, unknown> | undefined;

async function importOf(o: OpContext, file: string): Promise<Imported> {
  const path = join(o.root.dir, file);
  return existsSync(path) ? ((await import(pathToFileURL(path).href)) as Record<string, unknown>) : undefined;
}

/**
 * Search by meaning (issue #32) as the CLI runs it, where the tree has it: `search --mode
 * semantic` and `--mode hybrid` (searchCorpusIn: the model in use, the query embedded by the
 * embeddings twin over HTTP, the nearest passages through the HNSW index, and for hybrid the text
 * hits fused), the same phrase and 20 hits as the text search; and its two database parts alone:
 * the choice of the model (whether it covers every passage) and the nearest passages.
 */
async function measureSemanticSearch(o: OpContext, record: Record_, figures: OpFigure[]): Promise<void> {
  const rows = [
    ['semantic', 'search --mode semantic (a phrase, 20 hits)'],
    ['hybrid', 'search --mode hybrid (a phrase, 20 hits)'],
    ['searchModel', 'the model in use (searchModel: covers every passage?)'],
    ['nearest', `nearest passages alone (nearestPassages, ${EMBEDDING_DIMENSIONS} dimensions, 20)`],
    ['embeddingsStatus', 'the embeddings line of `status`, `/metrics` and the overview (readEmbeddingsStatus)'],
  ] as const;
  const read = (await importOf(o, 'src/pipeline/read/search.ts'))?.searchCorpusIn as
    | ((
        sql: Queryable,
        s: { words: string; limit: number; mode: 'semantic' | 'hybrid' },
        e: EmbeddingsConfig,
      ) => Promise<{ mode: string; model?: string; hits: unknown[] }>)
    | undefined;
  const startTwin = (await importOf(o, 'src/embeddings/twin.ts'))?.startEmbeddingsTwin as
    ((opts: { port: number }) => Promise<{ baseUrl: string; close(): Promise<void> }>) | undefined;
  const nearest = (await importOf(o, 'src/db/semantic-search.ts'))?.nearestPassages as
    ((sql: Queryable, f: Record<string, unknown>) => Promise<unknown[]>) | undefined;
  const model = (await importOf(o, 'src/pipeline/read/search-model.ts'))?.searchModel as
    | ((sql: Queryable, e: { model: string; dimensions: number }) => Promise<{ state: string; covers?: boolean }>)
    | undefined;
  const facts = (await importOf(o, 'src/pipeline/read/status.ts'))?.readEmbeddingsStatus as
    | ((
        sql: Queryable,
        e: { model: string; dimensions: number },
      ) => Promise<{ state: string; passages?: number; covered?: number; backlog?: number }>)
    | undefined;
  const [table] = await o.deps.sql<{ ready: boolean }[]>`select to_regclass('embeddings') is not null as ready`;
  if (!read || !startTwin || !nearest || !model || !facts || !table!.ready) {
    const note = table!.ready ? 'not available' : 'not available (no embeddings table: pgvector missing?)';
    for (const [key, label] of rows) {
      figures.push({ key, label, ms: undefined, runsMs: [], judged: true, note });
      o.say(`${label}: ${note}`);
    }
    return;
  }
  const twin = await startTwin({ port: 0 });
  try {
    const embeddings: EmbeddingsConfig = {
      baseUrl: twin.baseUrl,
      model: EMBEDDING_MODEL,
      dimensions: EMBEDDING_DIMENSIONS,
      apiKey: undefined,
      tokensPerDay: undefined,
      batchSize: 64,
      timeoutMs: 60_000,
      concurrency: 1,
    };
    const words = searchPhrase();
    const twenty = (r: { mode: string; hits: unknown[] }) =>
      r.hits.length === 20
        ? { note: `${words}, ${r.mode}` }
        : { note: words, failure: `${r.hits.length} hits, expected 20` };
    for (const mode of ['semantic', 'hybrid'] as const) {
      await record(
        mode,
        rows.find(([k]) => k === mode)![1],
        { run: () => read(o.deps.sql, { words, limit: 20, mode }, embeddings) },
        twenty,
      );
    }
    await record(
      'searchModel',
      rows[2][1],
      { run: () => model(o.deps.sql, { model: EMBEDDING_MODEL, dimensions: EMBEDDING_DIMENSIONS }) },
      (m) => ({ note: `${m.state}, covers: ${String(m.covers)}` }),
    );
    const vector = Array.from(
      { length: EMBEDDING_DIMENSIONS },
      (_, i) => Math.sin(i * 0.37) / Math.sqrt(EMBEDDING_DIMENSIONS / 2),
    );
    await record(
      'nearest',
      rows[3][1],
      {
        run: () =>
          nearest(o.deps.sql, {
            model: EMBEDDING_MODEL,
            dimensions: EMBEDDING_DIMENSIONS,
            vector,
            kinds: ['transcript', 'page', 'media'],
            limit: 20,
          }),
      },
      (hits) => (hits.length === 20 ? {} : { failure: `${hits.length} hits, expected 20` }),
    );
    await record(
      'embeddingsStatus',
      rows[4][1],
      { run: () => facts(o.deps.sql, { model: EMBEDDING_MODEL, dimensions: EMBEDDING_DIMENSIONS }) },
      (e) => ({ note: `${e.state}: ${e.covered}/${e.passages} passages covered, ${e.backlog} texts waiting` }),
    );
  } finally {
    await twin.close();
  }
}

export async function measureOperations(o: OpContext): Promise<OpFigure[]> {
  const { root, deps, say } = o;
  const sql = deps.sql;
  const figures: OpFigure[] = [];
  const record = async <T>(
    key: string,
    label: string,
    t: Timing<T>,
    judge: (last: T) => { note?: string; failure?: string } = () => ({}),
    opts: { judged?: boolean; runs?: number } = {},
  ) => {
    const judged = opts.judged ?? true;
    try {
      const r = await timed(t, opts.runs);
      const j = judge(r.last);
      figures.push({ key, label, ms: r.medianMs, runsMs: r.runsMs, judged, ...j });
      say(
        `${label}: ${r.medianMs} ms (runs ${r.runsMs.join(', ')})${j.note ? `; ${j.note}` : ''}${j.failure ? `; FAILED: ${j.failure}` : ''}`,
      );
    } catch (e: unknown) {
      const failure = e instanceof Error ? e.message : String(e);
      figures.push({ key, label, ms: undefined, runsMs: [], judged, failure });
      say(`${label}: FAILED: ${failure}`);
    }
  };

  await record('status', '`status` (collectStatus)', { run: () => root.collectStatus(sql) });

  const metrics = root.createMetrics();
  const { app } = root.createAdminApp({
    token: undefined,
    sql,
    redis: o.redis,
    queues: deps.queues,
    metrics,
    log: deps.log,
  });
  const get = async (path: string) => {
    const res = await app.request(path);
    return { status: res.status, text: await res.text() };
  };
  await record('metrics', '`/metrics` scrape', { run: () => get('/metrics') }, (r) => {
    const failed = failedFamilies(r.text);
    return {
      note: kb(Buffer.byteLength(r.text)),
      ...(r.status !== 200
        ? { failure: `HTTP ${r.status}` }
        : failed.length > 0
          ? { failure: `families left out of a scrape: ${failed.join(', ')}` }
          : {}),
    };
  });
  await record('overview', 'overview page `/`', { run: () => get('/') }, (r) => ({
    note: kb(Buffer.byteLength(r.text)),
    ...(r.status !== 200 ? { failure: `HTTP ${r.status}` } : {}),
  }));

  await record(
    'perSource',
    'per-source video/transcript counts (as `status` reads them)',
    { run: () => root.perSourceCounts(sql) as Promise<unknown[]> },
    (rows) => ({
      note: `${rows.length} sources`,
    }),
  );
  await record('itemCounts', 'counts by state (videos by latest outcome; items before 0008)', {
    run: () => root.itemCounts(sql),
  });
  await record('itemErrors', 'counts by error code (latest outcomes; items before 0008)', {
    run: () => root.itemErrors(sql),
  });

  // (a history shrunk for a quick check may have fewer sources)
  const backfills = (
    await sql<
      { job_id: string }[]
    >`select job_id from batches where job_id = any(${firstBackfillJobIds(PROGRESS_BACKFILL_SOURCES)}::text[])`
  ).map((r) => r.job_id);
  const newest = await sql<{ job_id: string }[]>`
    select job_id from batches where job_id <> all(${backfills}::text[]) order by submitted_at desc limit ${PROGRESS_BATCHES - backfills.length}`;
  const progressIds = [...backfills, ...newest.map((r) => r.job_id)];
  await record(
    'progress',
    `batchProgress of ${progressIds.length} batches (${backfills.length / 2} sources' first backfills, the newest others)`,
    { run: () => root.batchProgress(sql, progressIds) as Promise<unknown[]> },
    (rows) =>
      rows.length === progressIds.length ? {} : { failure: `${rows.length} of ${progressIds.length} batches` },
  );

  // at start with Redis empty: every poll and sink job and the cron schedulers are created (one per
  // cron pattern since issue #12; one per source before)
  let emptyPrefix = '';
  await record('reconcileEmpty', 'reconcile at start, Redis empty', {
    setup: () => {
      emptyPrefix = o.newPrefix();
    },
    run: async () => {
      const queues = root.createQueues(o.redis, emptyPrefix);
      try {
        return await root.reconcile({ ...deps, queues });
      } finally {
        await queues.close();
      }
    },
    teardown: async () => root.deletePrefixKeys(o.redis, emptyPrefix),
  });
  // a daemon restarting: Redis still holds the work, reconcile confirms it
  const intactPrefix = o.newPrefix();
  const intactQueues = root.createQueues(o.redis, intactPrefix);
  try {
    await root.reconcile({ ...deps, queues: intactQueues });
    await record('reconcileIntact', 'reconcile at start, Redis intact', {
      run: () => root.reconcile({ ...deps, queues: intactQueues }),
    });
  } finally {
    await intactQueues.close();
    await root.deletePrefixKeys(o.redis, intactPrefix);
  }

  // the 5 000-video source's scheduled sync: lists its channel (new videos on top), diffs, submits
  // only the new ones; then its batches are settled as the poller and the sink would
  await record(
    'sync',
    `incremental sync of a 5 000-video source (${DIFF_NEW_VIDEOS_PER_RUN} new)`,
    {
      setup: () => {
        o.sim.catalog.addVideos(o.diffChannelId, DIFF_NEW_VIDEOS_PER_RUN);
      },
      run: () => root.syncSource(deps, 1, { trigger: 'cron' }),
      teardown: async (r) => {
        await sql`update batches set status = 'completed', completed_at = now(), terminal_at = now() where job_id = any(${r.jobIds}::text[])`;
        await sql`update video_sync set last_state = 'sunk', updated_at = now() where last_job_id = any(${r.jobIds}::text[])`;
      },
    },
    (r) => {
      const note = `${r.outcome}: ${r.submitted} videos in ${r.jobIds.length} batches`;
      return r.submitted === 2 * DIFF_NEW_VIDEOS_PER_RUN
        ? { note }
        : { note, failure: `expected ${2 * DIFF_NEW_VIDEOS_PER_RUN} videos submitted` };
    },
  );
  const listed = o.sim.catalog.videoIds(o.diffChannelId) ?? [];
  await record(
    'diff',
    `the diff alone: due videos of ${listed.length} listed, metadata + transcripts`,
    {
      run: async () => [
        ...(await root.dueVideoIds(sql, deps.settings, 'video', null, listed, true)),
        ...(await root.dueVideoIds(sql, deps.settings, 'transcript', LANG, listed, true)),
      ],
    },
    (due) => (due.length === 0 ? { note: 'none due' } : { failure: `${due.length} due after the sync` }),
  );

  await measureSearch(o, record, figures);
  await measurePageSearch(o, record, figures);
  await measureSemanticSearch(o, record, figures);

  const prune = root.prune;
  const pruneRows = [
    ['pruneDry', '`prune --dry-run`'],
    ['pruneFirst', '`prune`, first run'],
    ['pruneAgain', '`prune` again (nothing due)'],
  ] as const;
  const absent = (key: (typeof pruneRows)[number][0], note: string) => {
    const label = pruneRows.find(([k]) => k === key)![1];
    figures.push({ key, label, ms: undefined, runsMs: [], judged: key === 'pruneAgain', note });
    say(`${label}: ${note}`);
  };
  if (prune === undefined) {
    for (const [key] of pruneRows) absent(key, 'not available');
    return figures;
  }
  const freed = (r: PruneRun) => `${r.total.rows} rows, ${Math.round(r.total.bytes / 2 ** 20)} MB`;
  const perTable = (r: PruneRun) =>
    Object.entries(r.freed)
      .map(([t, f]) => `${t} ${f.rows}`)
      .join(', ');
  // what is due follows the history kept so far (at 1x a month: nothing), so the dry run and the
  // first run are shown, not held to the ratio
  let due: PruneRun | undefined;
  await record(
    'pruneDry',
    '`prune --dry-run`',
    { run: () => prune(deps, { dryRun: true, trigger: 'cli' }) },
    (r) => {
      due = r;
      return { note: `would free ${freed(r)} (${perTable(r)})` };
    },
    // shown, not judged: one run after the warm-up (it counts all that is due: 11 s at 10x)
    { judged: false, runs: 1 },
  );
  let caughtUp = false;
  try {
    const t0 = performance.now();
    const r = await prune(deps, { dryRun: false, trigger: 'cli', signal: AbortSignal.timeout(PRUNE_FIRST_RUN_MAX_MS) });
    const ms = Math.round(performance.now() - t0);
    caughtUp = !r.interrupted;
    const rate = r.total.rows / Math.max(0.001, ms / 1000);
    const rest = due ? Math.max(0, due.total.rows - r.total.rows) : 0;
    const note = caughtUp
      ? `freed ${freed(r)} (${perTable(r)})`
      : `stopped after ${Math.round(ms / 1000)} s: freed ${freed(r)} (${perTable(r)}), ${Math.round(rate)} rows/s; ${rest} rows left, about ${Math.round(rest / Math.max(1, rate) / 60)} min more`;
    figures.push({ key: 'pruneFirst', label: '`prune`, first run', ms, runsMs: [ms], judged: false, note });
    say(`\`prune\`, first run: ${ms} ms; ${note}`);
  } catch (e: unknown) {
    figures.push({
      key: 'pruneFirst',
      label: '`prune`, first run',
      ms: undefined,
      runsMs: [],
      judged: false,
      failure: e instanceof Error ? e.message : String(e),
    });
  }
  if (!caughtUp) {
    absent('pruneAgain', 'first run stopped before it caught up');
    return figures;
  }
  await record(
    'pruneAgain',
    '`prune` again (nothing due)',
    { run: () => prune(deps, { dryRun: false, trigger: 'cli' }) },
    (r) => ({ note: `freed ${freed(r)}` }),
  );
  return figures;
}
