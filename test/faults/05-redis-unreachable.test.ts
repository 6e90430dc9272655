/**
 * Scenario 5: Redis becomes unreachable for 60 s (the proxy swallows every packet, as a network
 * partition does; when it heals, the connections that lost data are reset). The daemon is not
 * restarted: its connections reconnect, its workers take jobs again, reconcile rebuilds what the
 * outage lost, and the run completes with nothing lost.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectedTranscripts, settle } from '../helpers/fault-checks.ts';
import { countOf, figures, publicVideoIds, requestsTo, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { waitUntil } from '../helpers/proc.ts';

const OUTAGE_MS = 60_000;

let rig: FaultRig;
beforeAll(async () => {
  rig = await startFaultRig('05-redis-down', { sim: { catalog: { channels: 1, channelSizes: [400] } } });
});
afterAll(async () => {
  await rig?.close();
});

it('05 Redis unreachable for 60 s: workers resume without a restart', async () => {
  const ch = rig.sim.catalog.channels()[0]!;
  const source = await rig.addSource({ ref: ch.id, langs: ['en'] });
  // slow enough that the batches are still running when Redis comes back
  rig.sim.setJobSettings({ itemsPerSecond: 4 });
  const daemon = rig.cli(['daemon'], {}, 'daemon');
  await daemon.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
  const submit = await rig.run(['backfill', '--source', String(source.id), '--no-wait']);
  expect(submit.code, submit.stderr).toBe(0);
  const { sql } = rig.db();
  await waitUntil(
    async () =>
      (await countOf(sql`select count(*)::int as n from batch_items where state = 'sunk'`)) >= 20 ? true : undefined,
    60_000,
    'the first items to be stored',
  );

  rig.redisProxy.set({ mode: 'blackhole' });
  await new Promise((r) => setTimeout(r, OUTAGE_MS));
  const landedAtHeal = await countOf(sql`select count(*)::int as n from batch_items where state in ('landed', 'sunk')`);
  // upstream, the batches finish meanwhile (their clock jumps ahead: no waiting for the rest)
  rig.sim.clock.advance(200_000);
  rig.redisProxy.set({ mode: 'pass' });
  const healedAt = Date.now();

  const resumedAt = await waitUntil(
    async () => {
      const [r] = await sql<{ at: Date | null }[]>`
      select max(last_polled_at) as at from batches where last_polled_at > ${new Date(healedAt)}`;
      return r?.at ? Date.now() : undefined;
    },
    60_000,
    'a poll after Redis came back',
  );
  const s = await settle(rig, [source.id], 120_000);
  const settledAt = Date.now();
  const lost = publicVideoIds(rig.sim, ch.id).length - s.videos + (expectedTranscripts(rig.sim, ch.id) - s.transcripts);
  const posts =
    requestsTo(rig.sim, 'POST /videosite/video/batch') + requestsTo(rig.sim, 'POST /videosite/transcript/batch');
  figures('05 redis-unreachable', {
    outage_s: OUTAGE_MS / 1000,
    resumed_after_s: (resumedAt - healedAt) / 1000,
    finished_after_s: (settledAt - healedAt) / 1000,
    lost,
    duplicates: posts - s.batches + s.duplicateItems,
    restarts: daemon.running() ? 0 : 1,
    landed_before_heal: landedAtHeal,
  });
  expect(daemon.running()).toBe(true);
  expect(lost).toBe(0);
  expect(posts - s.batches + s.duplicateItems).toBe(0);
  expect(s.unsettledItems).toBe(0);
  expect(resumedAt - healedAt).toBeLessThan(30_000);
  daemon.kill('SIGTERM');
  expect((await daemon.exited).code).toBe(0);
});
