/**
 * Queue names and deterministic BullMQ job IDs. An ID is derived from the work it stands for, so
 * adding the same work twice (two daemons, a reconcile after a Redis loss) is a no-op.
 *
 * BullMQ rejects custom IDs holding ':' (unless split in exactly three parts), so the parts are
 * joined with '.', and a ':' inside an upstream job ID is escaped.
 */
import { createHash } from 'node:crypto';

export const QUEUE_SCHEDULE = 'schedule';
export const QUEUE_POLL = 'poll';
export const QUEUE_SINK = 'sink';
export const QUEUE_NAMES = [QUEUE_SCHEDULE, QUEUE_POLL, QUEUE_SINK] as const;
export type QueueName = (typeof QUEUE_NAMES)[number];

function part(s: string): string {
  return s.replace(/%/g, '%25').replace(/:/g, '%3A');
}

/** The one poll job of an upstream batch. */
export function pollJobId(jobId: string): string {
  return `poll.${part(jobId)}`;
}

/** One unit of sink work for a batch; `chunk` is what made it (a poll number, a replay, a reconcile). */
export function sinkJobId(jobId: string, chunk: string | number): string {
  return `sink.${part(jobId)}.${part(String(chunk))}`;
}

/**
 * The job scheduler of a cron pattern: one tick job per tick, for every source on that pattern.
 * The pattern is hashed, not spelt out: cron text holds spaces, '*' and '/'. (Before, a scheduler
 * per source was keyed `source.<id>`; reconcile removes those as it removes any key not wanted.)
 */
export function cronSchedulerId(pattern: string): string {
  return `cron.${createHash('sha1').update(pattern).digest('hex').slice(0, 16)}`;
}

/** The sync job a tick queues: one per source and tick (a tick job run twice adds it once; a finished one is kept a while for that, src/pipeline/services/cron-ticks.ts). */
export function scheduledSyncJobId(sourceId: number, tickAt: number): string {
  return `sync.${sourceId}.${tickAt}`;
}

/**
 * BullMQ deduplication ID of a source's scheduled syncs: while one is delayed, waiting or running,
 * another is not added (BullMQ drops the key when the job completes or fails).
 */
export function scheduledSyncDedupId(sourceId: number): string {
  return `sync.${sourceId}`;
}
