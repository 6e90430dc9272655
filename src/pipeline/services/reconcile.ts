/**
 * Postgres is the system of record; Redis holds only work in flight. Reconcile rebuilds that
 * work from Postgres: a poll job for every batch not terminal, a sink job for every batch with
 * items landed but not sunk, and one job scheduler per cron pattern some source runs on.
 * Deterministic job and scheduler IDs make it a no-op when nothing was lost, so daemons run it at
 * startup and then periodically.
 */
import type { Job, Queue } from 'bullmq';
import { inFlightJobIds } from '../../db/batches.ts';
import { jobIdsWithLandedItems } from '../../db/items.ts';
import { activeCrons } from '../../db/sources.ts';
import { cronSchedulerId, pollJobId, sinkJobId } from '../../queues/names.ts';
import type { TickJob } from '../../queues/payloads.ts';
import type { PipelineDeps } from '../deps.ts';

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
  if (result.polls + result.sinks + result.schedulers > 0)
    log.info({ event: 'reconcile.requeued', ...result }, 'reconciled queues with Postgres');
  return result;
}

/** Name of the jobs a cron's scheduler fires: ticks, each of which queues its sources' syncs (src/pipeline/services/cron-ticks.ts). */
export const TICK_JOB_NAME = 'tick';
/**
 * BullMQ priority of ticks. A worker takes jobs without a priority (the syncs) before any with
 * one, so syncs due at their offsets start on time instead of queueing behind ticks. (With a
 * tick per source and no priorities, the first syncs of 2 000 sources started 5-10 s after the
 * tick on a loaded 2-core machine, with a 15 s window; a tick per cron pattern is one job, but
 * many patterns may fire on the same second.) A tick waits only while syncs are ready, and then
 * nothing is lost: its syncs' starts are counted from the tick, not from when the tick ran.
 */
export const TICK_PRIORITY = 1;
/**
 * Scheduler writes sent to Redis at once. One after the other, 2 000 of them (when there was a
 * scheduler per source) took 4-6 s on a loaded 2-core machine (a round trip each); side by side
 * they share round trips. Per cron pattern there are few, except when removing an upgrade's
 * per-source schedulers.
 */
export const SCHEDULER_WRITES_AT_ONCE = 50;

/**
 * One BullMQ job scheduler per distinct cron pattern of the sources not paused (BullMQ makes one
 * fire per tick however many daemons run); its ticks read the pattern's sources from Postgres
 * when they fire (src/pipeline/services/cron-ticks.ts), so a source added, paused, resumed or removed needs no
 * Redis write unless its pattern gains its first source or loses its last. Schedulers of
 * patterns no source runs on any more are removed, and so is any other key: the per-source
 * schedulers (`source.<id>`) of releases before this one. A scheduler is rewritten when its
 * pattern or its job changed. Returns the writes: creations, rewrites and removals.
 *
 * Its cost does not grow with the sources: 2 000 sources on one pattern are one scheduler. With
 * a scheduler per source, reconcile at start with Redis empty was 2.58x slower at 2 000 sources
 * than at 200 (bench:scale), this function alone 250-480 ms at 200 and 565-1 080 ms at 2 000;
 * per pattern it takes 3-19 ms at either (loaded 2-core machine).
 */
export async function syncSchedulers(deps: Pick<PipelineDeps, 'sql' | 'queues'>): Promise<number> {
  const { sql, queues } = deps;
  const wanted = new Map((await activeCrons(sql)).map((cron) => [cronSchedulerId(cron), cron]));
  const schedule = queues.schedule;
  const existing = await schedule.getJobSchedulers(0, -1);
  const existingById = new Map(existing.map((e) => [e.key, e]));
  const writes: (() => Promise<unknown>)[] = [];
  for (const [id, cron] of wanted) {
    const cur = existingById.get(id);
    if (cur && cur.pattern === cron && cur.name === TICK_JOB_NAME && cur.template?.opts?.priority === TICK_PRIORITY)
      continue;
    const data: TickJob = { cron };
    // a tick only queues syncs (idempotently), so it takes the queue's retries
    writes.push(() =>
      schedule.upsertJobScheduler(
        id,
        { pattern: cron, tz: 'UTC' },
        { name: TICK_JOB_NAME, data, opts: { priority: TICK_PRIORITY } },
      ),
    );
  }
  for (const e of existing) {
    if (!wanted.has(e.key)) writes.push(() => schedule.removeJobScheduler(e.key));
  }
  for (let i = 0; i < writes.length; i += SCHEDULER_WRITES_AT_ONCE) {
    await Promise.all(writes.slice(i, i + SCHEDULER_WRITES_AT_ONCE).map((w) => w()));
  }
  return writes.length;
}
