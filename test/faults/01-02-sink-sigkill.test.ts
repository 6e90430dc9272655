/**
 * Scenarios 1 and 2: a sink worker is SIGKILLed while it writes a 5000-item batch (once, then
 * twice on the same BullMQ job). Every chunk is one transaction claimed with SKIP LOCKED, so a
 * killed chunk rolls back and is written again by the next worker: 0 rows missing, 0 written
 * twice; the job whose worker died is re-queued by the stalled check (never failed as "stalled
 * more than allowable limit"), and reconcile re-creates sink work from Postgres meanwhile.
 *
 * How scenario 1 fails when its property breaks:
 * - a row lost, or stored with other values than delivered (a chunk half-written, an item's
 *   fields mixed with another's): every `videos` / `transcripts` row is compared field by field
 *   with the raw item it was sunk from (`rows_mismatched`), and every raw item must have its row;
 * - a row or item written twice: the `updated_at` of every row and the `sunk_at` of every item
 *   committed before the kill are recorded at the kill and must not move while the resumed sink
 *   finishes, the killed job runs again (stalled check) and reconcile keeps looking
 *   (`stamps_moved`); a row written again after its insert has `updated_at` past
 *   `first_seen_at` (`rows_rewritten`). (A duplicate row cannot be counted: the primary key
 *   forbids it; a second write is what shows.)
 * - a video bought twice: two batches of the same kind holding it (`duplicate_items`).
 *
 * Postgres is reached through the fault proxy with a little latency, so a 5000-item sink takes
 * seconds and the kills land mid-write on any machine.
 *
 * The poller writes a batch's rows itself, in the transaction that lands its items
 * (src/pipeline/ingest/store-items.ts); the sink writes what is left `landed` (a replay, a crash of a
 * version that landed first and sank later). So each scenario first lets the poller store the
 * batch, then leaves it as such a crash would (every item landed, no row written) before the
 * sink workers start: their startup reconcile finds the batch and queues its sink job.
 */
import { Queue } from 'bullmq';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { QUEUE_SINK } from '../../src/queues/names.ts';
import {
  expectedTranscripts,
  ledger,
  movedStamps,
  rewrittenRows,
  rowsVsRaw,
  settle,
  writeStamps,
} from '../helpers/fault-checks.ts';
import { countOf, FAULT_ENV, figures, publicVideoIds, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { waitUntil, within, type CliProcess } from '../helpers/proc.ts';

const BATCH = 5000;
const SINK_ENV = { SINK_CHUNK_ITEMS: '100', SINK_CONCURRENCY: '4' };

// Each scenario gets a rig of its own (about 1.5 s to start): the checks below read whole tables,
// the sink queue and the simulator's counts, which another scenario's rows, jobs or dead workers
// would change; so the two pass in either order. Scenario 1 takes channel 0, scenario 2 channel 1.
let rig: FaultRig;
let sinkQueue: Queue;
beforeEach(async () => {
  rig = await startFaultRig('01-sink', {
    // the second scenario needs no 5000 items, only a job long enough to be killed twice
    sim: { catalog: { channels: 2, channelSizes: [BATCH, 3000] }, jobs: { queuedMs: 100, itemsPerSecond: 1_000_000 } },
  });
  sinkQueue = new Queue(QUEUE_SINK, { connection: rig.redis(), prefix: rig.prefix });
});
afterEach(async () => {
  await within(sinkQueue?.close(), 3_000);
  await rig?.close();
});

async function videoBatchOf(sourceId: number): Promise<string> {
  const { sql } = rig.db();
  return waitUntil(
    async () => {
      const [b] = await sql<
        { job_id: string }[]
      >`select job_id from batches where source_id = ${sourceId} and kind = 'video'`;
      return b?.job_id;
    },
    60_000,
    'the video batch to be recorded',
  );
}

/**
 * The batch as a crash between landing and writing leaves it: every stored item back to
 * `landed`, its rows gone. Waits for the poller to have stored it first.
 */
async function leaveLanded(jobId: string): Promise<void> {
  const { sql } = rig.db();
  await waitUntil(
    async () => {
      const [r] = await sql<{ open: number }[]>`
      select count(*)::int as open from batches b
      where b.job_id = ${jobId} and (b.status in ('submitted', 'queued', 'active')
        or exists (select 1 from batch_items i where i.job_id = b.job_id and i.state in ('processing', 'landed')))`;
      return r!.open === 0 ? true : undefined;
    },
    120_000,
    'the poller to store the batch',
  );
  await sql.begin(async (tx) => {
    await tx`update batch_items set state = 'landed', sunk_at = null where job_id = ${jobId} and state = 'sunk'`;
    await tx`update video_sync set last_state = 'landed' where last_job_id = ${jobId} and last_state = 'sunk'`;
    await tx`delete from videos where last_job_id = ${jobId}`;
  });
}

const sunkOf = (jobId: string) =>
  countOf(rig.db().sql`select count(*)::int as n from batch_items where job_id = ${jobId} and state = 'sunk'`);

/** The active sink job working on an upstream batch, if any. */
async function activeSinkJob(jobId: string) {
  const active = await sinkQueue.getActive();
  return active.find((j) => (j.data as { jobId?: string }).jobId === jobId);
}

const stalledLines = (p: CliProcess, id?: string) =>
  p.logs().filter((l) => l.event === 'job.stalled' && (id === undefined || l.bullJobId === id)).length;

async function startSink(label: string): Promise<CliProcess> {
  const p = rig.cli(['daemon', '--role', 'sink'], SINK_ENV, label);
  await p.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
  return p;
}

/** Nothing left for the sink: no job waiting, delayed or running (completed ones are removed). */
async function sinkQueueIdle(): Promise<boolean> {
  const c = await sinkQueue.getJobCounts('active', 'waiting', 'delayed', 'prioritized', 'waiting-children');
  return Object.values(c).every((n) => n === 0);
}

it('01 SIGKILL a sink worker while it writes a 5000-item batch: rows equal the raw items, none written twice', async () => {
  const ch = rig.sim.catalog.channels()[0]!;
  const source = await rig.addSource({ ref: ch.id });
  rig.pgProxy.set({ mode: 'latency', latencyMs: 15 });

  const poller = rig.cli(['daemon', '--role', 'scheduler,poller'], {}, 'poller');
  await poller.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
  const submit = await rig.run(['backfill', '--source', String(source.id), '--no-wait']);
  expect(submit.code, submit.stderr).toBe(0);
  const batch = await videoBatchOf(source.id);
  await leaveLanded(batch);
  const s1 = await startSink('sink-1');

  // mid-write: some chunks committed, most not
  const sunkAtKill = await waitUntil(
    async () => {
      const n = await sunkOf(batch);
      return n >= 300 ? n : undefined;
    },
    90_000,
    'the sink to be writing the batch',
    50,
  );
  s1.kill('SIGKILL');
  await s1.exited;
  expect(sunkAtKill).toBeLessThan(BATCH - 500);
  // what the killed worker committed: none of it may be written again
  const atKill = await writeStamps(rig);
  expect([...atKill.keys()].filter((k) => k.startsWith('i:')).length).toBeGreaterThanOrEqual(sunkAtKill);

  const s2 = await startSink('sink-2');
  const s = await settle(rig, [source.id], 180_000);
  // the killed worker's job comes back through the stalled check, possibly after the rows are
  // all there: wait until it ran (a second write would happen then) and the queue is empty
  await waitUntil(
    async () => (stalledLines(s2) > 0 && (await sinkQueueIdle()) ? true : undefined),
    60_000,
    'the killed job to run again and the sink queue to empty',
    250,
  );
  const afterResume = await writeStamps(rig);
  // a second pass: more reconcile rounds and stalled checks over the finished batch write nothing
  await new Promise((r) => setTimeout(r, 2 * Number(FAULT_ENV.RECONCILE_INTERVAL_MS)));
  const later = await writeStamps(rig);
  const reconciled = s2.logs().find((l) => l.event === 'reconcile.requeued');
  const reexecuted = stalledLines(s2) + Number(reconciled?.sinks ?? 0);

  const wantVideos = publicVideoIds(rig.sim, ch.id).length;
  const wantTranscripts = expectedTranscripts(rig.sim, ch.id);
  const missing = wantVideos - s.videos + (wantTranscripts - s.transcripts);
  const cmp = await rowsVsRaw(rig);
  const moved = [...movedStamps(atKill, afterResume), ...movedStamps(afterResume, later)];
  const rewritten = await rewrittenRows(rig);
  figures('01 sink-sigkill', {
    rows_missing: missing,
    rows_mismatched: cmp.mismatched.length + cmp.orphans.length,
    stamps_moved: moved.length,
    rows_rewritten: rewritten.length,
    duplicate_items: s.duplicateItems,
    sunk_at_kill: sunkAtKill,
    jobs_reexecuted: reexecuted,
  });
  expect(missing).toBe(0);
  expect(s.unsettledItems).toBe(0);
  // every deliverable item was sunk, and every row is exactly its raw item
  expect([cmp.videoItems, cmp.transcriptItems]).toEqual([wantVideos, wantTranscripts]);
  expect(cmp.mismatched.slice(0, 10)).toEqual([]);
  expect(cmp.orphans.slice(0, 10)).toEqual([]);
  // nothing written twice: not what was committed before the kill, not what came after
  expect(moved.slice(0, 10)).toEqual([]);
  expect(rewritten.slice(0, 10)).toEqual([]);
  expect(later.size).toBe(afterResume.size);
  expect(s.duplicateItems).toBe(0);
  expect(reexecuted).toBeGreaterThan(0);
  for (const p of [poller, s2]) p.kill('SIGTERM');
  await Promise.all([poller.exited, s2.exited]);
});

it('02 SIGKILL the same sink job twice: it is completed, not failed as stalled', async () => {
  const ch = rig.sim.catalog.channels()[1]!;
  const source = await rig.addSource({ ref: ch.id });
  // slower still: the job must be handed back (lock expiry + two stalled checks) while work remains
  rig.pgProxy.set({ mode: 'latency', latencyMs: 40 });

  const poller = rig.cli(['daemon', '--role', 'scheduler,poller'], {}, 'poller-2');
  await poller.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
  const submit = await rig.run(['backfill', '--source', String(source.id), '--no-wait']);
  expect(submit.code, submit.stderr).toBe(0);
  const batch = await videoBatchOf(source.id);
  await leaveLanded(batch);
  const s1 = await startSink('sink-a');

  // first kill: the job writing the video batch
  const job = await waitUntil(
    async () => {
      const j = await activeSinkJob(batch);
      return j && (await sunkOf(batch)) >= 200 ? j : undefined;
    },
    90_000,
    'the sink job of the batch to be writing',
    50,
  );
  s1.kill('SIGKILL');
  await s1.exited;
  const sunkAfterFirst = await sunkOf(batch);
  expect(sunkAfterFirst).toBeLessThan(2000);

  // second kill: the same job, taken up again by the next worker, mid-write again. Its dead
  // worker's lock expires first, so the new worker's first stalled checks hand it back at once.
  await waitUntil(
    async () => ((await rig.redis().exists(`${rig.prefix}:${QUEUE_SINK}:${job.id}:lock`)) === 0 ? true : undefined),
    30_000,
    "the killed worker's lock to expire",
  );
  const s2 = await startSink('sink-b');
  await waitUntil(
    async () => {
      const j = await sinkQueue.getJob(job.id!);
      if (!j || (await j.getState()) !== 'active' || j.attemptsStarted <= job.attemptsStarted) return undefined;
      return (await sunkOf(batch)) >= sunkAfterFirst + 100 ? true : undefined;
    },
    90_000,
    'the same job to be running again',
    50,
  );
  s2.kill('SIGKILL');
  await s2.exited;
  const sunkAfterSecond = await sunkOf(batch);
  // killed mid-write again: not every deliverable video stored yet
  expect(sunkAfterSecond).toBeLessThan(publicVideoIds(rig.sim, ch.id).length);

  const s3 = await startSink('sink-c');
  await settle(rig, [source.id], 180_000);
  // the rows are all there (reconcile's sink job wrote them); the job itself ends once its dead
  // worker's lock expires and the stalled check hands it to the new worker
  await waitUntil(
    async () => {
      const j = await sinkQueue.getJob(job.id!);
      const st = j ? await j.getState() : 'removed';
      return st === 'active' || st === 'waiting' ? undefined : true;
    },
    60_000,
    'the twice-killed job to end',
  );
  const s = await ledger(rig);
  const stalls = stalledLines(s2, job.id!) + stalledLines(s3, job.id!);
  const failed = await sinkQueue.getFailed();
  const left = await sinkQueue.getJob(job.id!);
  const state = left ? await left.getState() : 'completed (removed)';
  const failedLines = poller
    .logs()
    .concat(s2.logs(), s3.logs())
    .filter((l) => l.event === 'job.failed');
  const failedJobs = failedLines.length;
  const { sql } = rig.db();
  const [mine] = await sql<{ n: number }[]>`select count(*)::int as n from videos where last_job_id = ${batch}`;
  const cmp = await rowsVsRaw(rig);
  figures('02 sink-sigkill-twice', {
    stalls_of_job: stalls,
    job_state: state.replace(/ /g, '_'),
    failed_jobs: failed.length + failedJobs,
    rows_missing: publicVideoIds(rig.sim, ch.id).length - mine!.n,
    rows_mismatched: cmp.mismatched.length + cmp.orphans.length,
  });
  expect(stalls).toBe(2);
  expect(state).not.toBe('failed');
  expect(failed).toHaveLength(0);
  expect(failedJobs, JSON.stringify(failedLines)).toBe(0);
  expect(mine!.n).toBe(publicVideoIds(rig.sim, ch.id).length);
  expect(s.unsettledItems).toBe(0);
  expect(cmp.mismatched.slice(0, 10)).toEqual([]);
  expect(cmp.orphans.slice(0, 10)).toEqual([]);
  for (const p of [poller, s3]) p.kill('SIGTERM');
  await Promise.all([poller.exited, s3.exited]);
});
