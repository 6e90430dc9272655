/**
 * Postgres is the system of record; Redis holds only work in flight. Reconcile rebuilds that
 * work from Postgres: a poll job for every batch not terminal, a sink job for every batch with
 * items landed but not sunk, and one job scheduler per source with a cron. Deterministic job IDs
 * make it a no-op when nothing was lost, so daemons run it at startup and then periodically.
 */
import type { Job, Queue } from 'bullmq';
import { inFlightJobIds } from '../db/batches.ts';
import { jobIdsWithLandedItems } from '../db/items.ts';
import { sourceSchedules } from '../db/sources.ts';
import { pollJobId, sinkJobId, sourceSchedulerId } from '../queues/names.ts';
import type { PipelineDeps } from './deps.ts';

export interface ReconcileResult {
  /** poll jobs created or revived */
  polls: number;
  /** sink jobs created or revived */
  sinks: number;
  /** job schedulers created, changed or removed */
  schedulers: number;
}

/** Make sure a job with this ID will run: add it when missing, retry it when it failed. */
async function ensureJob<T>(queue: Queue<T>, id: string, data: T, delayMs = 0): Promise<boolean> {
  const existing = (await queue.getJob(id)) as Job<T> | undefined;
  if (existing) {
    const state = await existing.getState();
    if (state === 'failed') {
      await existing.retry('failed');
      return true;
    }
    if (state !== 'completed' && state !== 'unknown') return false;
    await existing.remove().catch(() => undefined);
  }
  // The queue's generic name/data types are not inferrable here; the payload types are checked
  // by the callers.
  await (queue as unknown as Queue).add('job', data, { jobId: id, delay: delayMs });
  return true;
}

export async function reconcile(deps: PipelineDeps): Promise<ReconcileResult> {
  const { sql, queues, settings, log } = deps;
  const result: ReconcileResult = { polls: 0, sinks: 0, schedulers: 0 };

  for (const jobId of await inFlightJobIds(sql)) {
    if (await ensureJob(queues.poll, pollJobId(jobId), { jobId, delayMs: settings.pollInitialDelayMs })) result.polls++;
  }

  for (const jobId of await jobIdsWithLandedItems(sql)) {
    if (await ensureJob(queues.sink, sinkJobId(jobId, 'reconcile'), { jobId })) result.sinks++;
  }

  result.schedulers = await syncSchedulers(deps);
  if (result.polls + result.sinks + result.schedulers > 0) log.info({ event: 'reconcile.requeued', ...result }, 'reconciled queues with Postgres');
  return result;
}

/** Name of the jobs a source's scheduler fires: ticks, each of which queues a sync (src/pipeline/ticks.ts). */
export const TICK_JOB_NAME = 'tick';
/**
 * BullMQ priority of ticks. A worker takes jobs without a priority (the syncs) before any with
 * one, so syncs due at their offsets start on time instead of queueing behind the rest of the
 * tick's 2 000 ticks (in one queue without priorities the first syncs of 2 000 sources started
 * 5-10 s after the tick on a loaded 2-core machine, with a 15 s window);
 * a tick waits only while syncs are ready, and then nothing is lost: its sync's start is
 * counted from the tick, not from when the tick ran.
 */
export const TICK_PRIORITY = 1;
/**
 * Scheduler writes sent to Redis at once. One after the other, 2 000 new sources took 4-6 s on a
 * loaded 2-core machine (a round trip each); side by side they share round trips.
 */
export const SCHEDULER_WRITES_AT_ONCE = 50;

/**
 * One BullMQ job scheduler per source with a cron and not paused (BullMQ makes one fire per tick
 * however many daemons run); schedulers of removed, paused or cron-less sources are removed. A
 * scheduler is rewritten when its cron or its job changed (one written before ticks existed
 * fired the sync itself, without the jitter).
 */
export async function syncSchedulers(deps: Pick<PipelineDeps, 'sql' | 'queues'>): Promise<number> {
  const { sql, queues } = deps;
  const sources = await sourceSchedules(sql);
  const wanted = new Map<string, { id: number; cron: string }>();
  for (const s of sources) {
    if (s.cron !== null && !s.paused) wanted.set(sourceSchedulerId(s.id), { id: s.id, cron: s.cron });
  }
  const existing = await queues.schedule.getJobSchedulers(0, -1);
  const existingById = new Map(existing.map((e) => [e.key, e]));
  const writes: (() => Promise<unknown>)[] = [];
  for (const [id, s] of wanted) {
    const cur = existingById.get(id);
    if (cur && cur.pattern === s.cron && cur.name === TICK_JOB_NAME && cur.template?.opts?.priority === TICK_PRIORITY) continue;
    // a tick only queues the sync (idempotently), so it takes the queue's retries
    writes.push(() =>
      queues.schedule.upsertJobScheduler(
        id,
        { pattern: s.cron, tz: 'UTC' },
        { name: TICK_JOB_NAME, data: { sourceId: s.id, trigger: 'cron' }, opts: { priority: TICK_PRIORITY } },
      ),
    );
  }
  for (const e of existing) {
    if (!wanted.has(e.key)) writes.push(() => queues.schedule.removeJobScheduler(e.key));
  }
  for (let i = 0; i < writes.length; i += SCHEDULER_WRITES_AT_ONCE) {
    await Promise.all(writes.slice(i, i + SCHEDULER_WRITES_AT_ONCE).map((w) => w()));
  }
  return writes.length;
}
