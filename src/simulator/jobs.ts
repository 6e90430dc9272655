/**
 * Batch jobs and their life, computed from the clock instead of driven by timers:
 *
 *   created --queuedMs--> active (items finish at itemsPerSecond, in a shuffled order)
 *     --> completed (completedAt set) | failed (failRate: stops partway, the rest internal-error)
 *     | failed + job-expired (still running when lifetimeMs has passed since creation)
 *   then results kept retentionMs after the end (later: items `result-unavailable`),
 *   then the job is forgotten purgeMs after the end (404).
 *
 * Each job snapshots the timings in effect when it was created, so changing them at runtime
 * affects only new jobs. Item outcomes are decided at creation (a byte per item), and the
 * payloads (videos, transcripts) are generated only while the answer is streamed.
 */
import { randomUUID } from 'node:crypto';
import type { BatchStats, ItemErrorCode, JobStatus } from '../api/schemas.ts';
import type { Catalog, VideoRef } from './catalog.ts';
import type { JobSettings } from './options.ts';
import { rngFor } from './prng.ts';

export type BatchKind = 'video' | 'transcript';

/** One entry of a batch: the ID as the answer reports it, and the catalog video if known. */
export interface BatchEntry {
  videoId: string;
  ref: VideoRef | undefined;
}

/** Outcome codes kept per item: 0 = success, otherwise an index into OUTCOME_ERRORS. */
const OUTCOME_ERRORS = ['not-found', 'forbidden', 'transcript-unavailable', 'internal-error'] as const;
const OK = 0;

export interface BatchJob {
  id: string;
  kind: BatchKind;
  /** the key that created it (a job is readable by its creator only) */
  apiKey: string;
  entries: BatchEntry[];
  lang: string | undefined;
  text: boolean | undefined;
  createdMs: number;
  timings: JobSettings;
  /** finishing position of each item */
  rank: Uint32Array;
  outcome: Uint8Array;
  /** items finished when a failing job stops; undefined when it does not fail */
  failAfter: number | undefined;
}

export type ItemView = { state: 'processing' } | { state: 'ok' } | { state: 'error'; errorCode: ItemErrorCode };

/** What a poll sees at one instant. */
export interface BatchView {
  status: JobStatus;
  expired: boolean;
  completedAtMs: number | undefined;
  stats: BatchStats;
  item(i: number): ItemView;
}

interface Timeline {
  startMs: number;
  endMs: number;
  end: 'completed' | 'failed' | 'expired';
  /** items finished at the end */
  finishedAtEnd: number;
}

export class BatchJobs {
  private readonly jobs = new Map<string, BatchJob>();
  private seq = 0;

  constructor(
    private readonly seed: number,
    private readonly catalog: Catalog,
  ) {}

  create(args: {
    kind: BatchKind;
    apiKey: string;
    entries: BatchEntry[];
    lang?: string | undefined;
    text?: boolean | undefined;
    nowMs: number;
    timings: JobSettings;
  }): BatchJob {
    this.sweep(args.nowMs);
    const seq = this.seq++;
    const r = rngFor(this.seed, 'batch', seq);
    const n = args.entries.length;
    // a Fisher-Yates shuffle decides the finishing order, so items do not land in list order
    const order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[i] = i;
    for (let i = n - 1; i > 0; i--) {
      const j = r.int(0, i);
      const t = order[i]!;
      order[i] = order[j]!;
      order[j] = t;
    }
    const rank = new Uint32Array(n);
    for (let k = 0; k < n; k++) rank[order[k]!] = k;
    const outcome = new Uint8Array(n);
    for (let i = 0; i < n; i++) {
      outcome[i] = this.decide(args.kind, args.entries[i]!, r.chance(args.timings.itemErrorRate));
    }
    const failAfter = r.chance(args.timings.failRate) ? Math.floor(n * r.next()) : undefined;
    const job: BatchJob = {
      id: `batch_${randomUUID()}`,
      kind: args.kind,
      apiKey: args.apiKey,
      entries: args.entries,
      lang: args.lang,
      text: args.text,
      createdMs: args.nowMs,
      timings: { ...args.timings },
      rank,
      outcome,
      failAfter,
    };
    this.jobs.set(job.id, job);
    return job;
  }

  private decide(kind: BatchKind, e: BatchEntry, internalError: boolean): number {
    if (!e.ref) return 1 + OUTCOME_ERRORS.indexOf('not-found');
    const f = this.catalog.facts(e.ref);
    if (f.fate === 'gone') return 1 + OUTCOME_ERRORS.indexOf('not-found');
    if (f.fate === 'private') return 1 + OUTCOME_ERRORS.indexOf('forbidden');
    if (internalError) return 1 + OUTCOME_ERRORS.indexOf('internal-error');
    if (kind === 'transcript' && f.transcriptLanguages.length === 0) {
      return 1 + OUTCOME_ERRORS.indexOf('transcript-unavailable');
    }
    return OK;
  }

  /** The job, unless unknown, purged, or created by another key. */
  get(id: string, apiKey: string, nowMs: number): BatchJob | undefined {
    const job = this.jobs.get(id);
    if (!job || job.apiKey !== apiKey) return undefined;
    const t = timeline(job);
    if (nowMs >= t.endMs + job.timings.purgeMs) {
      this.jobs.delete(id);
      return undefined;
    }
    return job;
  }

  /** Drop purged jobs, so a long-running simulator does not grow without bound. */
  private sweep(nowMs: number): void {
    for (const [id, job] of this.jobs) {
      if (nowMs >= timeline(job).endMs + job.timings.purgeMs) this.jobs.delete(id);
    }
  }
}

function durationOf(items: number, itemsPerSecond: number): number {
  return Math.ceil((items / itemsPerSecond) * 1000);
}

function finishedBy(job: BatchJob, startMs: number, atMs: number): number {
  if (atMs < startMs) return 0;
  return Math.min(job.entries.length, Math.floor(((atMs - startMs) * job.timings.itemsPerSecond) / 1000));
}

function timeline(job: BatchJob): Timeline {
  const n = job.entries.length;
  const startMs = job.createdMs + job.timings.queuedMs;
  const stopItems = job.failAfter ?? n;
  const stopMs = startMs + durationOf(stopItems, job.timings.itemsPerSecond);
  const expireMs = job.createdMs + job.timings.lifetimeMs;
  if (stopMs > expireMs) {
    return { startMs, endMs: expireMs, end: 'expired', finishedAtEnd: finishedBy(job, startMs, expireMs) };
  }
  return {
    startMs,
    endMs: stopMs,
    end: job.failAfter === undefined ? 'completed' : 'failed',
    finishedAtEnd: stopItems,
  };
}

/** The state of a batch at `nowMs`. */
export function viewBatch(job: BatchJob, nowMs: number): BatchView {
  const t = timeline(job);
  const n = job.entries.length;
  const ended = nowMs >= t.endMs;
  const finished = ended ? t.finishedAtEnd : finishedBy(job, t.startMs, nowMs);
  const status: JobStatus = ended
    ? t.end === 'completed'
      ? 'completed'
      : 'failed'
    : nowMs < t.startMs
      ? 'queued'
      : 'active';
  // an expired batch's results are gone at once; the others' after the retention period
  const resultsGone = ended && (t.end === 'expired' || nowMs >= t.endMs + job.timings.retentionMs);
  const stoppedByFailure = ended && t.end === 'failed';

  let succeeded = 0;
  let failed = 0;
  for (let i = 0; i < n; i++) {
    if (job.rank[i]! < finished) {
      if (job.outcome[i] === OK) succeeded++;
      else failed++;
    } else if (stoppedByFailure) failed++;
  }

  return {
    status,
    expired: ended && t.end === 'expired',
    completedAtMs: ended && t.end === 'completed' ? t.endMs : undefined,
    stats: { total: n, succeeded, failed },
    item(i: number): ItemView {
      const done = job.rank[i]! < finished;
      if (!done) return stoppedByFailure ? { state: 'error', errorCode: 'internal-error' } : { state: 'processing' };
      if (resultsGone) return { state: 'error', errorCode: 'result-unavailable' };
      const o = job.outcome[i]!;
      return o === OK ? { state: 'ok' } : { state: 'error', errorCode: OUTCOME_ERRORS[o - 1]! };
    },
  };
}
