/**
 * A cron tick becomes syncs. Each cron pattern some source runs on has one BullMQ job scheduler
 * (src/pipeline/services/reconcile.ts), which fires one tick job on every tick, once whatever the number
 * of daemons. The tick syncs nothing itself: it reads from Postgres the sources on its pattern
 * that are not paused (when it fires, so a source added, paused or resumed since the last tick
 * joins or leaves without any Redis write), queues each one's sync job delayed to the source's
 * offset in the jitter window (src/domain/schedule.ts), and returns. The adds go to Redis
 * TICK_SYNC_ADDS_AT_ONCE at a time, those due first first, so the tick of 2 000 sources is one
 * job of about a second and the syncs then start spread over the window.
 *
 * Safe to run again (a retry after Redis failed midway through the adds, a stalled worker): a
 * sync's job ID is its source and tick, and a finished one is kept FINISHED_SYNC_KEPT_S, so an
 * add already made is a no-op and no source syncs twice for one tick.
 *
 * One scheduled sync per source at a time: the sync job carries a deduplication ID per source,
 * so while the source's previous sync is still delayed, waiting or running, the tick adds
 * nothing for it and says so (`schedule.tick_skipped`). That is also what keeps a backlog fair:
 * when syncs take longer than the cron's period, no source queues a second sync before every
 * other source has had its first, the queue never holds more than one sync per source, and a
 * slow source occupies at most one schedule worker, never all of them.
 */
import type { Job, JobSchedulerJobOptions } from 'bullmq';
import { CronExpressionParser } from 'cron-parser';
import { sourceIdsOnCron } from '../../db/sources.ts';
import { jitterWindowMs, syncOffsetMs } from '../../domain/schedule.ts';
import { scheduledSyncDedupId, scheduledSyncJobId } from '../../queues/names.ts';
import type { SyncJob } from '../../queues/payloads.ts';
import type { PipelineDeps } from '../deps.ts';

/** A scheduler's tick job ID ends with the tick, epoch ms (`repeat:<scheduler>:<ms>`). */
const TICK_JOB_ID_RE = /:(\d+)$/;

/**
 * Sync jobs a tick adds to Redis at once. One after the other, each add is a round trip: 2 000
 * took 450-770 ms on a loaded 2-core machine; 50 at once 185-225 ms, 200 at once hardly less
 * (170-195 ms). In a daemon, beside the syncs it starts, the tick of 2 000 sources took 0.9-1.1 s.
 */
export const TICK_SYNC_ADDS_AT_ONCE = 50;

/**
 * How long a finished sync's job stays in Redis, seconds. While it does, adding its ID again is a
 * no-op, which is what makes a tick safe to run again after some of its syncs finished; a tick's
 * retries span 254 s (JOB_ATTEMPTS with exponential backoff from JOB_RETRY_BASE_DELAY_MS,
 * src/queues/queues.ts). Other jobs are removed as soon as they complete.
 */
export const FINISHED_SYNC_KEPT_S = 600;

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

export interface CronTickResult {
  cron: string;
  tickAt: number;
  /** sources on the pattern and not paused when the tick ran */
  sources: number;
  /** syncs queued for this tick */
  queued: number;
  /** sources whose previous sync was still pending or running: nothing added */
  skipped: number;
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
    return (
      CronExpressionParser.parse(pattern, { tz: tz ?? 'UTC', currentDate: new Date(tickAt) })
        .next()
        .getTime() - tickAt
    );
  } catch {
    return undefined;
  }
}

/** A tick's time and the jitter window its syncs start in. */
function tickOf(deps: Pick<PipelineDeps, 'settings'>, tick: Job): { tickAt: number; windowMs: number } {
  const tickAt = tickTimeOf(tick);
  // a scheduler's job carries the scheduler's repeat settings (BullMQ's internal option type)
  const repeat = (tick.opts as JobSchedulerJobOptions).repeat;
  return {
    tickAt,
    windowMs: jitterWindowMs(deps.settings.scheduleJitterMs, cronPeriodMs(repeat?.pattern, repeat?.tz, tickAt)),
  };
}

/**
 * Queue the syncs of a cron pattern's tick: every source on the pattern and not paused, each at
 * its offset, unless its previous sync is still pending.
 */
export async function queueCronTick(
  deps: Pick<PipelineDeps, 'sql' | 'queues' | 'settings' | 'log'>,
  tick: Job,
  cron: string,
): Promise<CronTickResult> {
  const started = Date.now();
  const { tickAt, windowMs } = tickOf(deps, tick);
  const ids = await sourceIdsOnCron(deps.sql, cron);
  // those due first are added first: a sync due at the tick is not queued a second late
  const due = ids.map((id) => ({ id, offsetMs: syncOffsetMs(id, windowMs) })).sort((a, b) => a.offsetMs - b.offsetMs);
  let queued = 0;
  for (let i = 0; i < due.length; i += TICK_SYNC_ADDS_AT_ONCE) {
    const results = await Promise.all(
      due.slice(i, i + TICK_SYNC_ADDS_AT_ONCE).map((s) => queueSync(deps, s.id, tickAt, tickAt + s.offsetMs)),
    );
    queued += results.filter((r) => r.queued).length;
  }
  const result: CronTickResult = { cron, tickAt, sources: ids.length, queued, skipped: ids.length - queued };
  deps.log.info(
    { event: 'schedule.tick_done', ...result, ms: Date.now() - started },
    "cron tick: its sources' syncs queued",
  );
  return result;
}

/**
 * Queue the sync of one source for a tick job of its own: the job of a per-source scheduler (one
 * per source before schedulers were per cron pattern) that fires before reconcile removes it.
 */
export function queueTickSync(
  deps: Pick<PipelineDeps, 'queues' | 'settings' | 'log'>,
  tick: Job,
  sourceId: number,
): Promise<TickResult> {
  const { tickAt, windowMs } = tickOf(deps, tick);
  return queueSync(deps, sourceId, tickAt, tickAt + syncOffsetMs(sourceId, windowMs));
}

/** Queue a source's sync for a tick, to start at `startAt`, unless one is still pending. */
async function queueSync(
  deps: Pick<PipelineDeps, 'queues' | 'log'>,
  sourceId: number,
  tickAt: number,
  startAt: number,
): Promise<TickResult> {
  const jobId = scheduledSyncJobId(sourceId, tickAt);
  const data: SyncJob = { sourceId, trigger: 'cron', tickAt };
  const job = await deps.queues.schedule.add('sync', data, {
    jobId,
    delay: Math.max(0, startAt - Date.now()),
    deduplication: { id: scheduledSyncDedupId(sourceId) },
    // a sync is never retried by the queue: the next tick diffs again (see workers.ts)
    attempts: 1,
    removeOnComplete: { age: FINISHED_SYNC_KEPT_S },
  });
  const syncJobId = job.id ?? jobId;
  const queued = syncJobId === jobId;
  if (queued) {
    deps.log.debug(
      { event: 'schedule.sync_queued', sourceId, tickAt, startAt, bullJobId: jobId },
      'cron tick: sync queued',
    );
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
