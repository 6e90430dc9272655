/**
 * Scenario 3: SIGTERM while a daemon writes a batch. Running polls and sinks stop at their next
 * safe point and hand their job back, so the daemon exits within the grace period leaving no job
 * locked by a dead worker (0 stalled jobs); and when Redis is unreachable at that moment, the
 * shutdown is still bounded by the grace period (workers' and connections' close are timed).
 */
import { Queue } from 'bullmq';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { QUEUE_NAMES } from '../../src/queues/names.ts';
import { settle } from '../helpers/fault-checks.ts';
import { countOf, figures, publicVideoIds, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { waitUntil, within, type CliProcess } from '../helpers/proc.ts';

const GRACE_MS = 5_000;
/** What "within the grace period" allows on top of it: process exit and a loaded machine. */
const EXIT_SLACK_MS = 1_000;

// Each scenario gets a rig of its own (about 1.5 s to start): 03a counts every active and
// stalled job, and a job left locked by 03b's daemon (killed with Redis unreachable) would be
// counted there if they shared one; so the two pass in either order.
let rig: FaultRig;
let queues: Queue[];
beforeEach(async () => {
  rig = await startFaultRig('03-sigterm', {
    sim: { catalog: { channels: 2, channelSizes: [2000, 2000] }, jobs: { queuedMs: 100, itemsPerSecond: 1_000_000 } },
  });
  queues = QUEUE_NAMES.map((n) => new Queue(n, { connection: rig.redis(), prefix: rig.prefix }));
});
afterEach(async () => {
  await within(Promise.allSettled(queues.map((q) => q.close())), 3_000);
  await rig?.close();
});

async function startDaemon(label: string): Promise<CliProcess> {
  const d = rig.cli(['daemon'], { SHUTDOWN_GRACE_MS: String(GRACE_MS), SINK_CHUNK_ITEMS: '100' }, label);
  await d.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
  return d;
}

/** Submit the source's batches and wait until the sink is writing them. */
async function startWriting(sourceId: number): Promise<void> {
  const submit = await rig.run(['backfill', '--source', String(sourceId), '--no-wait']);
  expect(submit.code, submit.stderr).toBe(0);
  await waitUntil(
    async () => {
      const n = await countOf(rig.db().sql`
      select count(*)::int as n from batch_items i join batches b using (job_id)
      where b.source_id = ${sourceId} and i.state = 'sunk'`);
      return n >= 200 ? true : undefined;
    },
    90_000,
    'the sink to be writing',
    50,
  );
}

async function activeJobIds(): Promise<string[]> {
  const ids: string[] = [];
  for (const q of queues) for (const j of await q.getActive()) ids.push(String(j.id));
  return ids;
}

it('03a SIGTERM during a batch: exit within the grace period, 0 stalled jobs', async () => {
  const ch = rig.sim.catalog.channels()[0]!;
  const source = await rig.addSource({ ref: ch.id });
  rig.pgProxy.set({ mode: 'latency', latencyMs: 20 });
  const d1 = await startDaemon('daemon-1');
  await startWriting(source.id);

  const t0 = Date.now();
  d1.kill('SIGTERM');
  const exit = await d1.exited;
  const exitMs = Date.now() - t0;
  // no worker of any process runs now: a job d1 left locked is still in the active list
  const leftActive = await activeJobIds();
  const handedBack = d1.logs().filter((l) => l.event === 'job.handed_back').length;

  // the work goes on in another daemon, and none of the jobs d1 held comes back stalled
  const d2 = await startDaemon('daemon-2');
  const s = await settle(rig, [source.id], 180_000);
  const stalledIds = d2
    .logs()
    .filter((l) => l.event === 'job.stalled')
    .map((l) => String(l.bullJobId));
  const handedBackIds = new Set(
    d1
      .logs()
      .filter((l) => l.event === 'job.handed_back')
      .map((l) => String(l.bullJobId)),
  );
  // d2's own locks (4 s in the rig) can lapse on a starved machine; those stalls are not d1's
  const stalledOfD1 = stalledIds.filter((id) => leftActive.includes(id) || handedBackIds.has(id));
  figures('03a sigterm', {
    exit_s: exitMs / 1000,
    exit_code: exit.code ?? -1,
    left_active: leftActive.length,
    stalled_of_d1: stalledOfD1.length,
    stalled_of_d2: stalledIds.length - stalledOfD1.length,
    handed_back: handedBack,
  });
  expect(exit.code, d1.stderr().slice(-2000)).toBe(0);
  expect(exitMs).toBeLessThan(GRACE_MS + EXIT_SLACK_MS);
  expect(leftActive).toEqual([]);
  expect(stalledOfD1).toEqual([]);
  expect(handedBack).toBeGreaterThan(0);
  expect(s.videos).toBe(publicVideoIds(rig.sim, ch.id).length);
  expect(s.unsettledItems).toBe(0);
  d2.kill('SIGTERM');
  expect((await d2.exited).code).toBe(0);
});

it('03b SIGTERM with Redis unreachable: still exits within the grace period', async () => {
  const ch = rig.sim.catalog.channels()[1]!;
  const source = await rig.addSource({ ref: ch.id });
  rig.pgProxy.set({ mode: 'latency', latencyMs: 20 });
  const d3 = await startDaemon('daemon-3');
  await startWriting(source.id);

  rig.redisProxy.set({ mode: 'blackhole' });
  const t0 = Date.now();
  d3.kill('SIGTERM');
  const exit = await d3.exited;
  const exitMs = Date.now() - t0;

  // Redis back: the jobs it could not hand back are stalled and taken up; nothing is lost
  rig.redisProxy.set({ mode: 'pass' });
  const d4 = await startDaemon('daemon-4');
  const s = await settle(rig, [source.id], 180_000);
  figures('03b sigterm-redis-unreachable', {
    exit_s: exitMs / 1000,
    exit_code: exit.code ?? -1,
    rows_missing: publicVideoIds(rig.sim, ch.id).length - s.videos,
  });
  expect(exitMs, d3.stderr().slice(-3000)).toBeLessThan(GRACE_MS + EXIT_SLACK_MS);
  expect(exit.code).toBe(0);
  expect(s.unsettledItems).toBe(0);
  expect(s.videos).toBe(publicVideoIds(rig.sim, ch.id).length);
  d4.kill('SIGTERM');
  expect((await d4.exited).code).toBe(0);
});
