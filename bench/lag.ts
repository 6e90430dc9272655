/**
 * How long finished items waited before they landed.
 *
 * The simulator finishes a batch's items at a steady rate: once the batch starts (after
 * `queuedMs`), the k-th item (0-based, in finishing order) is done at
 * `start + ceil((k + 1) * 1000 / itemsPerSecond)`, and the batch completes at
 * `start + ceil(total * 1000 / itemsPerSecond)` (its `completedAt`, which the poller stores).
 *
 * Every `poll.landed` log event carries the batch's finished count at that poll (`finished`)
 * and is written after the poll's transaction committed. The items a poll recorded are those
 * whose finishing index lies between the previous poll's count and this one's; the earliest of
 * them waited longest, so per poll: lag = log time - finish time of index (previous count).
 */
import type { LogLine } from './procs.ts';

export interface BatchTimes {
  jobId: string;
  total: number;
  /** upstream completedAt, epoch ms */
  completedAtMs: number;
}

export interface LagResult {
  /** longest wait of any item, ms; undefined when no poll line carried the counts */
  maxLagMs: number | undefined;
  /** the batch with the longest wait */
  worstJobId: string | undefined;
  /** batches without usable poll lines (older log format, or never polled) */
  unmeasured: number;
}

/** Finish time (epoch ms) of the item at finishing index `k` of a batch. */
export function finishTimeMs(b: BatchTimes, itemsPerSecond: number, k: number): number {
  const startMs = b.completedAtMs - Math.ceil((b.total / itemsPerSecond) * 1000);
  return startMs + Math.ceil(((k + 1) * 1000) / itemsPerSecond);
}

export function landingLag(batches: BatchTimes[], events: LogLine[], itemsPerSecond: number): LagResult {
  const byJob = new Map<string, LogLine[]>();
  for (const e of events) {
    if (e.event !== 'poll.landed' || typeof e.jobId !== 'string' || typeof e.finished !== 'number') continue;
    const list = byJob.get(e.jobId) ?? [];
    list.push(e);
    byJob.set(e.jobId, list);
  }
  let maxLagMs: number | undefined;
  let worstJobId: string | undefined;
  let unmeasured = 0;
  for (const b of batches) {
    const polls = (byJob.get(b.jobId) ?? []).sort((x, y) => x.time - y.time);
    if (polls.length === 0 || b.total === 0) {
      unmeasured += b.total === 0 ? 0 : 1;
      continue;
    }
    let previous = 0;
    for (const p of polls) {
      const finished = p.finished as number;
      if (finished <= previous) continue;
      const lag = p.time - finishTimeMs(b, itemsPerSecond, previous);
      if (maxLagMs === undefined || lag > maxLagMs) {
        maxLagMs = lag;
        worstJobId = b.jobId;
      }
      previous = finished;
    }
  }
  return { maxLagMs, worstJobId, unmeasured };
}
