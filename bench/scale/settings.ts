/**
 * What `npm run bench:scale` seeds and measures, in one place: the two history sizes, the
 * simulator's catalog, the storm's daemon settings, the timing rules and the target.
 */

import { totalmem } from 'node:os';

/** One seeded history. Items: two per video (metadata, transcript) plus the incremental batches'. */
export interface ScaleSpec {
  label: string;
  sources: number;
  videos: number;
  /** small batches submitted after the sources' first backfills (re-checks, retries, new videos) */
  incrementalBatches: number;
  /** how far back the history reaches (sync runs, batches, credit snapshots) */
  historyDays: number;
}

/** The 1x: 100 000 videos, 300 000 batch items, 200 sources, a month of sync runs. */
export const SMALL: ScaleSpec = {
  label: '1x',
  sources: 200,
  videos: 100_000,
  incrementalBatches: 4_000,
  historyDays: 30,
};
/** The 10x: 1 000 000 videos, 3 000 000 batch items, 2 000 sources, a year of sync runs. */
export const LARGE: ScaleSpec = {
  label: '10x',
  sources: 2_000,
  videos: 1_000_000,
  incrementalBatches: 40_000,
  historyDays: 365,
};

/** Items per incremental batch: 5..45, 25 on average (100 000 items per 4 000 batches). */
export const INCREMENTAL_BATCH_ITEMS = { min: 5, max: 45 } as const;
/** Batches in flight at the time of the measurements, at either size: what is in flight depends on what is new, not on history. */
export const IN_FLIGHT_BATCHES = 40;
/** Ended batches with items still landed (the sink is behind), the newest ones before those in flight. */
export const SINK_LAGGING_BATCHES = 5;
/** Videos of a source listed at most per sync (`--limit`); the diff source lists all of its own. */
export const SOURCE_LIST_LIMIT = 50;
/** Share (per mille) of videos a second source also lists. */
export const SHARED_VIDEOS_PER_MILLE = 50;
/** Every source is synced hourly: one `sync_runs` row per source per hour of history. */
export const SOURCE_CRON = '0 * * * *';
/** A `/me` reading every this many minutes, besides one before each submission. */
export const CREDIT_SNAPSHOT_EVERY_MIN = 5;

/**
 * The simulator's catalog: channel 0 is the 5 000-video source whose incremental sync is timed
 * (source 1 of both databases); channel i is source i + 1's, with a few videos each (already
 * stored, so a scheduled sync of it lists and finds nothing due).
 */
export const DIFF_SOURCE_VIDEOS = 5_000;
export const CATALOG_SMALL_CHANNEL_VIDEOS = 4;
/** New videos added to the diff source's channel before each timed sync (so it submits two batches of them). */
export const DIFF_NEW_VIDEOS_PER_RUN = 10;
export const SIM_SEED = 1;

/** Transcript language of every source. */
export const LANG = 'en';

/**
 * Stored sizes of real items, for the projection: ~150 timed chunks per transcript, ~20 KB of
 * JSON (bench/settings.ts SIM_TRANSCRIPT_CHUNKS, what the simulator sends in `npm run bench`).
 * The seed's transcript items are ~3 KB (10 chunks) so that 10x seeds in minutes; the projection
 * measures these real ones in Postgres and scales the transcript-bearing bytes by them.
 */
export const REAL_TRANSCRIPT_CHUNKS = { min: 140, max: 160 } as const;
/** Real transcript items generated and stored to measure their size. */
export const REAL_TRANSCRIPT_SAMPLE = 200;

/**
 * Each real sample row is stored this many times (under distinct keys) in a table like the real
 * one, indexes included, so that its bytes per row are not rounded up to whole 8 KB pages.
 */
export const SAMPLE_COPIES = 10;
/**
 * The vectors seeded and projected: the default model's, at the dimension asked of it when
 * EMBEDDINGS_DIMENSIONS is unset (src/config.ts EMBEDDINGS_MODEL, EMBEDDINGS_DIMENSIONS_DEFAULT).
 */
export const EMBEDDING_MODEL = 'text-embedding-3-small';
export const EMBEDDING_DIMENSIONS = 512;
/** Pseudo-random vectors the seeded ones are made of (two each): at most 4096. */
export const EMBEDDING_POOL = 4096;
/** Passage texts (per mille) given a vector: all of them, as a corpus the embedder has caught up with. */
export const EMBEDDED_PER_MILLE = 1000;
/**
 * maintenance_work_mem of the HNSW build, a third of this machine's memory up to 8 GB: the graph
 * built in memory is many times faster than on disk. 10x's ~2.5 million 512-dimension vectors
 * outgrew 2 GB past 55% of the table, and the build went from ~25 000 heap blocks a minute to
 * 1 500-3 000.
 */
export const HNSW_BUILD_MEMORY = `${Math.max(1, Math.min(8, Math.floor(totalmem() / 2 ** 30 / 3)))}GB`;
/**
 * Bytes of an embedding row besides its vector: the heap tuple's header and keys (~40), and the
 * TOAST chunks' headers and index entries of a vector stored out of line (~60).
 */
export const EMBEDDING_ROW_OVERHEAD_BYTES = 100;
/**
 * pgvector's HNSW index holds each vector again with its neighbours: 2 * m item pointers of 6
 * bytes on layer 0 (m = 16, pgvector's default), ~8 bytes of element header, and the upper
 * layers (1 in m elements): per element ~dimensions * 4 + 2 * 16 * 6 + 8 bytes, before fill.
 */
export const HNSW_M = 16;
export const HNSW_FILL = 0.9;

/** Runs per operation after one warm-up run; the median is reported. */
export const RUNS = 5;
/** An operation whose warm-up took longer than this is run fewer times, ms. */
export const SLOW_OP_MS = 2_000;
export const SLOW_OP_RUNS = 3;
/**
 * An operation whose warm-up took under this many ms is run FAST_OP_RUNS times: over 5 runs the
 * median of a sub-millisecond read swung 0.5-4 ms with any other process on the 2 cores
 * (item counts by error code: runs 0.5, 4.2, 0.5, 3.3, 1.6 ms), which alone made a ratio of 5.
 */
export const FAST_OP_MS = 5;
export const FAST_OP_RUNS = 25;
/**
 * Each run of such an operation times this many calls in a row and reports their mean: one call
 * of a counter read takes 0.1-0.3 ms, the resolution of a single timing and the jitter of one
 * round trip, so one call per run made ratios of 0.5 to 3 between two equal figures.
 */
export const FAST_OP_CALLS = 20;
/** The target of issue #12: no operation slower than this many times at 10x than at 1x. */
export const TARGET_RATIO = 2;

/**
 * Batches whose progress is read at once (a backfill of 2 000 sources waits on 4 000): the same
 * mix at either size, the first backfills of 200 sources (~200 000 items) and the newest small
 * batches, so only the history around them differs.
 */
export const PROGRESS_BATCHES = 4_000;
export const PROGRESS_BACKFILL_SOURCES = 200;
/**
 * Longest the first real `prune` may run, ms: at 10x it catches up a year (millions of payloads
 * and sync runs), at ~20 000 rows/s. It is stopped there (between two statements, as a shutdown
 * does) and its rate reported; a run that ends in time is followed by one with nothing due.
 */
export const PRUNE_FIRST_RUN_MAX_MS = 60_000;

/** The storm: every source of the 10x database on one cron minute, one real daemon. */
export const STORM_ENV: Record<string, string> = {
  // far above what 2 000 listings in a minute need: the daemon's own scheduling is what is measured
  API_RATE_PER_SECOND: '1000',
  API_RATE_BURST: '1000',
  LOG_LEVEL: 'info',
};
/**
 * The storm daemon keeps history forever when the tree has retention: its daily prune would
 * otherwise start the year's catch-up (measured on its own above) under the storm.
 */
export const STORM_RETENTION_OFF_ENV: Record<string, string> = { RAW_RETENTION_DAYS: '0', HISTORY_RETENTION_DAYS: '0' };
/** At least this long between the daemon's start and the cron minute, so its schedulers are in place, ms. */
export const STORM_LEAD_MS = 40_000;
/** Longest the storm may take after the cron minute before it is given up, ms. */
export const STORM_TIMEOUT_MS = 5 * 60_000;
/** Log lines that mean the pool or a statement ran out of time. */
export const STORM_TROUBLE_RE =
  /pool|exhaust|timeout|timed out|CONNECT_TIMEOUT|too many clients|remaining connection slots/i;

/** Retention of issue #12, for the projection. */
export const RAW_RETENTION_DAYS = 90;
export const HISTORY_RETENTION_DAYS = 180;
/** credit_snapshots older than a week are thinned to one an hour. */
export const SNAPSHOT_THIN_AFTER_DAYS = 7;
