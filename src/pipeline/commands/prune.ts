/**
 * Retention (issue #12): the raw payloads of items settled longer ago than RAW_RETENTION_DAYS,
 * `sync_runs` and `credit_charges` older than HISTORY_RETENTION_DAYS, and `credit_snapshots` older than a week thinned
 * to one an hour, and change events older than EVENTS_RETENTION_DAYS that no webhook endpoint
 * still needs. `prune` runs it once (the CLI, or a dry run that counts the same without
 * changing anything); `startDailyPrune` runs it once a day in whichever daemon claims the day.
 * Every run is recorded in `prune_runs`.
 */
import {
  claimDailyPrune,
  deleteEvents,
  deleteHistoryRows,
  expiredEvents,
  expiredHistoryRows,
  finishPruneRun,
  prunableItemPayloads,
  pruneCutoffs,
  pruneItemPayloads,
  startPruneRun,
  thinCreditSnapshots,
  type Freed,
  type PruneCutoffs,
  type ThinCursor,
} from '../../db/prune.ts';
import {
  CREDIT_SNAPSHOT_THIN_AFTER_DAYS,
  HISTORY_TABLES,
  PRUNE_CHECK_INTERVAL_MS,
  PRUNE_CHUNK_ROWS,
  PRUNE_PERIOD_MS,
  PRUNED_TABLES,
  type PruneTrigger,
  type PrunedTable,
} from '../../domain/retention.ts';
import type { PipelineDeps } from '../deps.ts';

export type PruneDeps = Pick<PipelineDeps, 'sql' | 'log' | 'settings'>;

/** Where a run stands after each statement (the CLI's progress line). */
export interface PruneProgress {
  table: PrunedTable;
  /** that table so far */
  rows: number;
  bytes: number;
}

export interface PruneOptions {
  /** count and estimate; change nothing */
  dryRun: boolean;
  trigger: PruneTrigger;
  /** stops the run between two statements (a shutdown); what was done so far is recorded */
  signal?: AbortSignal | undefined;
  onProgress?: ((p: PruneProgress) => void) | undefined;
  /** rows per statement; default PRUNE_CHUNK_ROWS */
  chunkRows?: number | undefined;
  /** the `prune_runs` row already claimed for this run (the daily job's); default: one is written */
  runId?: number | undefined;
}

export interface PruneReport {
  runId: number;
  dryRun: boolean;
  trigger: PruneTrigger;
  /** the settings the run applied (0: kept forever) */
  rawRetentionDays: number;
  historyRetentionDays: number;
  eventsRetentionDays: number;
  cutoffs: PruneCutoffs;
  /** per table: rows changed or deleted, and the stored bytes they held (would, in a dry run) */
  freed: Record<PrunedTable, Freed>;
  total: Freed;
  durationMs: number;
  /** stopped by `signal` before the end */
  interrupted: boolean;
}

/** `prune_runs.error` of a run its signal stopped between two statements (what ran is committed). */
export const PRUNE_INTERRUPTED = 'stopped before it finished (shutdown or interrupt); the next run goes on from there';

/** A statement failed mid-run: what the run had freed by then is committed and recorded with the error. */
export class PruneFailedError extends Error {
  constructor(
    readonly runId: number,
    readonly freed: Record<PrunedTable, Freed>,
    cause: unknown,
  ) {
    super(
      `prune failed (run ${runId}, recorded in prune_runs): ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
    this.name = 'PruneFailedError';
  }
}

const emptyFreed = (): Record<PrunedTable, Freed> =>
  Object.fromEntries(PRUNED_TABLES.map((t) => [t, { rows: 0, bytes: 0 }])) as Record<PrunedTable, Freed>;

type Drain = (table: PrunedTable, step: () => Promise<{ freed: Freed; more: boolean }>) => Promise<void>;

/** Items first (the bulk of the room), then the history tables, credit snapshots and events. */
async function pruneEachTable(
  sql: PruneDeps['sql'],
  cutoffs: PruneCutoffs,
  o: { dryRun: boolean; chunkRows: number },
  drain: Drain,
): Promise<void> {
  const { rawBefore, historyBefore, snapshotsBefore, eventsBefore } = cutoffs;
  const { dryRun, chunkRows } = o;
  if (rawBefore !== null) {
    await drain('batch_items', async () => {
      if (dryRun) return { freed: await prunableItemPayloads(sql, rawBefore), more: false };
      // rows another transaction holds are skipped: the walk ends at the first statement that
      // finds nothing (a short one is not the end, some rows may have been skipped)
      const f = await pruneItemPayloads(sql, rawBefore, chunkRows);
      return { freed: f, more: f.rows > 0 };
    });
  }
  if (historyBefore !== null) {
    for (const table of HISTORY_TABLES) {
      await drain(table, async () => {
        if (dryRun) return { freed: await expiredHistoryRows(sql, table, historyBefore), more: false };
        const f = await deleteHistoryRows(sql, table, historyBefore, chunkRows);
        return { freed: f, more: f.rows > 0 };
      });
    }
  }
  let after: ThinCursor | null = null;
  await drain('credit_snapshots', async () => {
    const page = await thinCreditSnapshots(sql, { before: snapshotsBefore, after, limit: chunkRows, dryRun });
    after = page.next;
    return { freed: page, more: page.next !== null };
  });
  if (eventsBefore !== null) {
    await drain('events', async () => {
      if (dryRun) return { freed: await expiredEvents(sql, eventsBefore), more: false };
      const f = await deleteEvents(sql, eventsBefore, chunkRows);
      return { freed: f, more: f.rows > 0 };
    });
  }
}

/**
 * One run. Items go first (the bulk of the room), then sync runs, then credit snapshots, each in
 * statements of at most `chunkRows` rows. A statement that fails ends the run with
 * `PruneFailedError` (recorded in `prune_runs`; what ran before it stays done); a run stopped by
 * `signal` returns with `interrupted` set.
 */
export async function prune(deps: PruneDeps, o: PruneOptions): Promise<PruneReport> {
  const { sql, log, settings } = deps;
  const chunkRows = o.chunkRows ?? PRUNE_CHUNK_ROWS;
  const startedAt = Date.now();
  const runId = o.runId ?? (await startPruneRun(sql, { dryRun: o.dryRun, trigger: o.trigger }));
  const freed = emptyFreed();
  const base = { runId, dryRun: o.dryRun, trigger: o.trigger };
  log.info(
    {
      event: 'prune.started',
      ...base,
      rawRetentionDays: settings.rawRetentionDays,
      historyRetentionDays: settings.historyRetentionDays,
    },
    o.dryRun ? 'prune dry run started' : 'prune started',
  );

  const stopped = () => o.signal?.aborted === true;
  const add = (table: PrunedTable, f: Freed) => {
    freed[table].rows += f.rows;
    freed[table].bytes += f.bytes;
    o.onProgress?.({ table, ...freed[table] });
  };
  /** Runs `step` until it reports nothing more to do (or the run is stopped); logs the table's figures. */
  const drain: Drain = async (table, step) => {
    const t0 = Date.now();
    for (;;) {
      if (stopped()) return;
      const r = await step();
      add(table, r.freed);
      if (!r.more) break;
    }
    log.info(
      { event: 'prune.table_done', ...base, table, ...freed[table], durationMs: Date.now() - t0 },
      `prune: ${table} done`,
    );
  };

  let cutoffs: PruneCutoffs | undefined;
  try {
    cutoffs = await pruneCutoffs(sql, {
      rawRetentionDays: settings.rawRetentionDays,
      historyRetentionDays: settings.historyRetentionDays,
      snapshotThinAfterDays: CREDIT_SNAPSHOT_THIN_AFTER_DAYS,
      eventsRetentionDays: settings.eventsRetentionDays,
    });
    await pruneEachTable(sql, cutoffs, { dryRun: o.dryRun, chunkRows }, drain);
  } catch (e: unknown) {
    const message = e instanceof Error ? e.message : String(e);
    await finishPruneRun(sql, runId, freed, message).catch(() => undefined);
    log.error({ event: 'prune.failed', ...base, freed, err: e }, 'prune failed');
    throw new PruneFailedError(runId, freed, e);
  }

  const interrupted = stopped();
  const total = PRUNED_TABLES.reduce((t, k) => ({ rows: t.rows + freed[k].rows, bytes: t.bytes + freed[k].bytes }), {
    rows: 0,
    bytes: 0,
  });
  await finishPruneRun(sql, runId, freed, interrupted ? PRUNE_INTERRUPTED : null);
  const durationMs = Date.now() - startedAt;
  log.info(
    { event: 'prune.finished', ...base, ...total, freed, durationMs, interrupted },
    o.dryRun ? 'prune dry run finished: nothing changed' : interrupted ? 'prune stopped by shutdown' : 'prune finished',
  );
  return {
    ...base,
    rawRetentionDays: settings.rawRetentionDays,
    historyRetentionDays: settings.historyRetentionDays,
    eventsRetentionDays: settings.eventsRetentionDays,
    cutoffs,
    freed,
    total,
    durationMs,
    interrupted,
  };
}

export interface DailyPrune {
  /** One check now (or the one running): runs the prune when this daemon claims the day. Never throws. */
  check(): Promise<PruneReport | undefined>;
  /** Stop the timer, stop a running prune at its next statement, and wait for it. */
  stop(): Promise<void>;
}

/**
 * The daily job. Every daemon checks at once and then every PRUNE_CHECK_INTERVAL_MS; a check
 * claims the day (db/prune.ts `claimDailyPrune`: an advisory lock, then no daily run without
 * error in the last PRUNE_PERIOD_MS) and only the daemon that claims it prunes. A timer in the
 * daemon rather than a queue job: it needs Postgres only, so it runs whatever the daemon's roles,
 * and a Redis outage cannot skip or double it. The timer does not keep the process alive.
 */
export function startDailyPrune(deps: PruneDeps, opts: { checkIntervalMs?: number } = {}): DailyPrune {
  const abort = new AbortController();
  let running: Promise<PruneReport | undefined> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const once = async (): Promise<PruneReport | undefined> => {
    let runId: number | undefined;
    try {
      runId = await claimDailyPrune(deps.sql, PRUNE_PERIOD_MS);
    } catch (err: unknown) {
      deps.log.warn(
        { event: 'prune.daily_failed', err },
        'could not claim the daily prune; the next check tries again',
      );
      return undefined;
    }
    if (runId === undefined) return undefined;
    // a failure is logged (prune.failed) and recorded in prune_runs by prune(); the next check retries
    return prune(deps, { dryRun: false, trigger: 'daily', runId, signal: abort.signal }).catch(() => undefined);
  };
  const check = (): Promise<PruneReport | undefined> => {
    running ??= once().finally(() => {
      running = undefined;
    });
    return running;
  };
  const scheduleNext = (): void => {
    if (stopped) return;
    timer = setTimeout(() => void check().then(scheduleNext), opts.checkIntervalMs ?? PRUNE_CHECK_INTERVAL_MS);
    timer.unref();
  };
  void check().then(scheduleNext);

  return {
    check,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      abort.abort();
      await running;
    },
  };
}
