/**
 * A backfill: sync some sources now, then wait until every item of their batches has landed (or
 * ended with a recorded errorCode), and say whether everything landed. The waiting reads
 * Postgres only; the caller runs poller and sink workers (in this process, or daemons elsewhere).
 */
import { ApiError } from '../api/errors.ts';
import type { Queryable } from '../db/connection.ts';
import { REFUSED_UPSTREAM_CODES } from '../domain/refusals.ts';
import { recheckHolds } from './upstream-holds.ts';
import type { PipelineDeps } from './deps.ts';
import { CreditReservations, takeCreditSnapshot } from './credits.ts';
import { syncSource, type SyncResult } from './scheduler.ts';
import { BATCH_IN_FLIGHT_STATUSES } from '../domain/batches.ts';

/** `BATCH_IN_FLIGHT_STATUSES` as a query parameter. */
const IN_FLIGHT = BATCH_IN_FLIGHT_STATUSES as unknown as string[];

export const BACKFILL_CHECK_INTERVAL_MS = 1_000;
/**
 * Sources a backfill syncs side by side. Each sync mostly waits on the API (listing, /me, the
 * POSTs) and holds a pooled connection for its advisory lock, so a few at a time: one by one, a
 * backfill of 20 sources spent ~9 s submitting at 100 ms per request. Together they still keep
 * to the credit budget (CreditReservations), and the shared rate limiter still paces the requests.
 */
export const BACKFILL_SYNC_CONCURRENCY = 4;

/**
 * Syncs at once for a pool of `poolMax` connections: each sync keeps one reserved for its
 * advisory lock and runs its statements on the others, so at most half the pool (with all of
 * it reserved, the syncs would wait on each other for good).
 */
export function syncConcurrency(poolMax: number): number {
  return Math.max(1, Math.min(BACKFILL_SYNC_CONCURRENCY, Math.floor(poolMax / 2)));
}

/** `fn` over `items`, at most `limit` at once; results in the order of `items`. */
async function mapConcurrent<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return out;
}


export interface BatchProgress {
  jobId: string;
  sourceId: number | null;
  kind: string;
  lang: string | null;
  status: string;
  errorCode: string | null;
  /** the status the upstream last answered (it may be one this interface version does not list) */
  upstreamStatus: string | null;
  /** why the batch ended without the upstream saying so, or what the last poll ran into */
  reason: string | null;
  total: number | null;
  /** items finished upstream (succeeded + failed) as of the last poll */
  finished: number;
  polls: number;
  creditsEstimated: number;
  submittedAt: string;
  completedAt: string | null;
  /** items recorded in batch_items per state */
  processing: number;
  landed: number;
  sunk: number;
  failed: number;
  retryable: number;
  quarantined: number;
  /** failed items by errorCode */
  errors: Record<string, number>;
}

export interface BackfillReport {
  syncs: SyncResult[];
  syncErrors: { sourceId: number; code: string; message: string }[];
  batches: BatchProgress[];
  timedOut: boolean;
  /** whether the run waited for its batches (false with --no-wait) */
  waited: boolean;
  /** 0 all landed; 1 something did not land; 3 upstream refused */
  exitCode: 0 | 1 | 3;
  /** one line per reason the exit code is not 0 */
  problems: string[];
}

export interface BackfillOptions {
  sourceIds: number[];
  wait: boolean;
  /** give up waiting after this long; default: no limit */
  timeoutMs?: number | undefined;
  /** called whenever the progress changes while waiting */
  onProgress?: ((batches: BatchProgress[]) => void) | undefined;
  checkIntervalMs?: number;
  signal?: AbortSignal;
}

export async function runBackfill(deps: PipelineDeps, opts: BackfillOptions): Promise<BackfillReport> {
  const report: BackfillReport = { syncs: [], syncErrors: [], batches: [], timedOut: false, waited: opts.wait, exitCode: 0, problems: [] };
  // a person's run re-checks the account first (a free /me): a key fixed since, or credits back,
  // lift their holds, so batches in flight are polled again even when no source submits
  await recheckHolds(deps).catch((e: unknown) => deps.log.warn({ err: e }, 'could not re-check upstream holds'));
  // side by side (each sync is mostly waiting on the API); reported in the order given
  const reservations = new CreditReservations();
  const outcomes = await mapConcurrent(opts.sourceIds, syncConcurrency(deps.sql.options.max), async (sourceId) => {
    try {
      return { sourceId, result: await syncSource(deps, sourceId, { trigger: 'backfill', reservations }) };
    } catch (e: unknown) {
      return { sourceId, error: e };
    }
  });
  for (const o of outcomes) {
    if (o.result) {
      report.syncs.push(o.result);
      continue;
    }
    const e = o.error;
    const code = e instanceof ApiError ? e.code : 'error';
    report.syncErrors.push({ sourceId: o.sourceId, code, message: e instanceof Error ? e.message : String(e) });
  }

  // the batches to wait for: what this run submitted, and what was already in flight for its sources
  const submitted = report.syncs.flatMap((s) => s.jobIds);
  const inFlight = await deps.sql<{ job_id: string }[]>`
    select job_id from batches
    where source_id = any(${opts.sourceIds}::int[]) and status = any(${IN_FLIGHT}::text[])`;
  const jobIds = [...new Set([...submitted, ...inFlight.map((r) => r.job_id)])];

  const deadline = opts.timeoutMs !== undefined ? Date.now() + opts.timeoutMs : Infinity;
  let last = '';
  for (;;) {
    report.batches = await batchProgress(deps.sql, jobIds);
    const key = JSON.stringify(report.batches);
    if (key !== last) {
      last = key;
      opts.onProgress?.(report.batches);
    }
    if (!opts.wait || report.batches.every(isSettled)) break;
    if (Date.now() >= deadline) {
      report.timedOut = true;
      break;
    }
    if (opts.signal?.aborted) break;
    await new Promise((r) => setTimeout(r, opts.checkIntervalMs ?? BACKFILL_CHECK_INTERVAL_MS));
  }
  // a fresh reading of what the account has spent, for status (reading /me is free)
  await takeCreditSnapshot(deps, null, 'after-backfill').catch((err: unknown) =>
    deps.log.warn({ reason: err instanceof Error ? err.message : String(err) }, 'could not read /me after the backfill'),
  );
  judge(report, opts.wait);
  return report;
}

/** Terminal upstream, and nothing left landed-but-not-sunk. */
export function isSettled(b: BatchProgress): boolean {
  return ['completed', 'failed', 'expired'].includes(b.status) && b.landed === 0;
}

function judge(report: BackfillReport, waited: boolean): void {
  const p = report.problems;
  let refused = false;
  for (const s of report.syncs) {
    if (s.outcome === 'refused-credits') {
      refused = true;
      p.push(`source ${s.sourceId}: ${s.detail ?? 'refused: not enough credits'}`);
    }
  }
  for (const e of report.syncErrors) {
    if ((REFUSED_UPSTREAM_CODES as readonly string[]).includes(e.code)) refused = true;
    p.push(`source ${e.sourceId}: ${e.message}`);
  }
  if (waited) {
    if (report.timedOut) p.push('timed out before every batch finished');
    for (const b of report.batches) {
      const what = `batch ${b.jobId} (${b.kind}${b.lang ? ` ${b.lang}` : ''}, source ${b.sourceId ?? '-'})`;
      if (b.status === 'failed' || b.status === 'expired') p.push(`${what} ${b.status}${b.errorCode ? ` (${b.errorCode})` : ''}`);
      if (b.retryable > 0) p.push(`${what}: ${b.retryable} item(s) left retryable (re-submit: replay --failed)`);
      if (b.quarantined > 0) p.push(`${what}: ${b.quarantined} item(s) quarantined (kept raw with the reason)`);
      if (b.processing > 0 && !report.timedOut) p.push(`${what}: ${b.processing} item(s) never finished`);
    }
  }
  report.exitCode = refused ? 3 : p.length > 0 ? 1 : 0;
}

export async function batchProgress(sql: Queryable, jobIds: string[]): Promise<BatchProgress[]> {
  if (jobIds.length === 0) return [];
  const rows = await sql<
    {
      job_id: string; source_id: number | null; kind: string; lang: string | null; status: string; error_code: string | null;
      upstream_status: string | null; reason: string | null; total: number | null; finished: number; polls: number; credits_estimated: number; submitted_at: Date; completed_at: Date | null;
      processing: number; landed: number; sunk: number; failed: number; retryable: number; quarantined: number;
      errors: Record<string, number> | null;
    }[]
  >`
    select b.job_id, b.source_id, b.kind, b.lang, b.status, b.error_code, b.upstream_status, b.reason, b.total,
      coalesce(b.succeeded, 0) + coalesce(b.failed, 0) as finished, b.polls, b.credits_estimated,
      b.submitted_at, b.completed_at,
      count(i.*) filter (where i.state = 'processing')::int as processing,
      count(i.*) filter (where i.state = 'landed')::int as landed,
      count(i.*) filter (where i.state = 'sunk')::int as sunk,
      count(i.*) filter (where i.state = 'failed')::int as failed,
      count(i.*) filter (where i.state = 'retryable')::int as retryable,
      count(i.*) filter (where i.state = 'quarantined')::int as quarantined,
      (select jsonb_object_agg(e.error_code, e.n) from (
        select error_code, count(*)::int as n from batch_items
        where job_id = b.job_id and state = 'failed' and error_code is not null group by error_code) e) as errors
    from batches b left join batch_items i on i.job_id = b.job_id
    where b.job_id = any(${jobIds}::text[])
    group by b.job_id
    order by b.submitted_at, b.job_id`;
  return rows.map((r) => ({
    jobId: r.job_id,
    sourceId: r.source_id,
    kind: r.kind,
    lang: r.lang,
    status: r.status,
    errorCode: r.error_code,
    upstreamStatus: r.upstream_status,
    reason: r.reason,
    total: r.total,
    finished: r.finished,
    polls: r.polls,
    creditsEstimated: r.credits_estimated,
    submittedAt: r.submitted_at.toISOString(),
    completedAt: r.completed_at ? r.completed_at.toISOString() : null,
    processing: r.processing,
    landed: r.landed,
    sunk: r.sunk,
    failed: r.failed,
    retryable: r.retryable,
    quarantined: r.quarantined,
    errors: r.errors ?? {},
  }));
}
