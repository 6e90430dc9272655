/**
 * A cron tick becomes a sync. Each source's BullMQ job scheduler (src/pipeline/reconcile.ts)
 * fires a tick job on every tick of its cron, once whatever the number of daemons. The tick
 * itself syncs nothing: it queues the source's sync job, delayed to the source's offset in the
 * jitter window (src/domain/schedule.ts), and returns at once, so 2 000 ticks of one cron pass
 * through the schedule workers in seconds and the syncs then start spread over the window.
 *
 * One scheduled sync per source at a time: the sync job carries a deduplication ID per source,
 * so while the source's previous sync is still delayed, waiting or running, the tick adds
 * nothing and says so (`schedule.tick_skipped`). That is also what keeps a backlog fair: when
 * syncs take longer than the cron's period, no source queues a second sync before every other
 * source has had its first, the queue never holds more than one sync per source, and a slow
 * source occupies at most one schedule worker, never all of them.
 */
import type { Job, JobSchedulerJobOptions } from 'bullmq';
import { CronExpressionParser } from 'cron-parser';
import { jitterWindowMs, syncOffsetMs } from '../domain/schedule.ts';
import { scheduledSyncDedupId, scheduledSyncJobId } from '../queues/names.ts';
import type { SyncJob } from '../queues/payloads.ts';
import type { PipelineDeps } from './deps.ts';

/** A scheduler's tick job ID ends with the tick, epoch ms (`repeat:<scheduler>:<ms>`). */
const TICK_JOB_ID_RE = /:(\d+)$/;

export interface TickResult {
  sourceId: number;
  tickAt: number;
  /** the sync job that stands for this tick: the one queued, or the earlier one still pending */
  syncJobId: string;
  /** false: a sync of the source was still pending or running; nothing was added */
  queued: boolean;
  /** when the queued sync may start, epoch ms */
  startAt: number;
}

/**
 * When the tick fired (what its scheduler planned, not when a worker got to it): BullMQ's
 * internal `prevMillis` option, or the same time as the tick job's ID carries it.
 */
function tickTimeOf(job: Pick<Job, 'id' | 'opts' | 'timestamp'>): number {
  if (typeof job.opts.prevMillis === 'number') return job.opts.prevMillis;
  const m = TICK_JOB_ID_RE.exec(job.id ?? '');
  return m ? Number(m[1]) : job.timestamp;
}

/** Time from `tickAt` to the cron's next tick; undefined when the pattern cannot be read. */
function cronPeriodMs(pattern: string | undefined, tz: string | undefined, tickAt: number): number | undefined {
  if (pattern === undefined) return undefined;
  try {
    return CronExpressionParser.parse(pattern, { tz: tz ?? 'UTC', currentDate: new Date(tickAt) }).next().getTime() - tickAt;
  } catch {
    return undefined;
  }
}

/** Queue the sync of a tick job's source at its offset, unless one is still pending. */
export async function queueTickSync(deps: Pick<PipelineDeps, 'queues' | 'settings' | 'log'>, tick: Job, sourceId: number): Promise<TickResult> {
  const tickAt = tickTimeOf(tick);
  // a scheduler's job carries the scheduler's repeat settings (BullMQ's internal option type)
  const repeat = (tick.opts as JobSchedulerJobOptions).repeat;
  const periodMs = cronPeriodMs(repeat?.pattern, repeat?.tz, tickAt);
  const startAt = tickAt + syncOffsetMs(sourceId, jitterWindowMs(deps.settings.scheduleJitterMs, periodMs));
  const jobId = scheduledSyncJobId(sourceId, tickAt);
  const data: SyncJob = { sourceId, trigger: 'cron', tickAt };
  const job = await deps.queues.schedule.add('sync', data, {
    jobId,
    delay: Math.max(0, startAt - Date.now()),
    deduplication: { id: scheduledSyncDedupId(sourceId) },
    // a sync is never retried by the queue: the next tick diffs again (see workers.ts)
    attempts: 1,
  });
  const syncJobId = job.id ?? jobId;
  const queued = syncJobId === jobId;
  if (queued) {
    deps.log.debug({ event: 'schedule.sync_queued', sourceId, tickAt, startAt, bullJobId: jobId }, 'cron tick: sync queued');
  } else {
    // rare (syncs not keeping up with the cron), so worth the extra read: waiting means a
    // backlog, active a sync that outlasts the period
    const pendingState = await deps.queues.schedule.getJobState(syncJobId).catch(() => 'unknown');
    deps.log.info(
      { event: 'schedule.tick_skipped', sourceId, tickAt, pendingJobId: syncJobId, pendingState },
      "cron tick skipped: the source's previous sync is still waiting or running",
    );
  }
  return { sourceId, tickAt, syncJobId, queued, startAt };
}
