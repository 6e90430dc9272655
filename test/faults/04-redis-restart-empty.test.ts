/**
 * Scenario 4: Redis is SIGKILLed mid-run and comes back empty (no persistence). Postgres is the
 * system of record: the daemon notices the reconnect, rebuilds the poll and sink work of every
 * batch not yet terminal, and the run completes with nothing lost and nothing paid twice.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { countOf, figures, publicVideoIds, requestsTo, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { waitUntil } from '../helpers/proc.ts';
import { expectedTranscripts, settle } from '../helpers/fault-checks.ts';

let rig: FaultRig;
beforeAll(async () => {
  rig = await startFaultRig('04-redis', { sim: { catalog: { channels: 1, channelSizes: [400] } } });
});
afterAll(async () => {
  await rig?.close();
});

it('04 SIGKILL Redis and restart it empty: 0 items lost, every batch resumes from Postgres', async () => {
  const { sql } = rig.db();
  const ch = rig.sim.catalog.channels()[0]!;
  const source = await rig.addSource({ ref: ch.id, langs: ['en'] });
  // slow enough that both batches are mid-way when Redis dies
  rig.sim.setJobSettings({ itemsPerSecond: 40 });

  const daemon = rig.cli(['daemon'], {}, 'daemon');
  await daemon.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
  const submit = await rig.run(['backfill', '--source', String(source.id), '--no-wait']);
  expect(submit.code, submit.stderr).toBe(0);

  await waitUntil(
    async () =>
      (await countOf(sql`select count(*)::int as n from batch_items where state in ('landed', 'sunk')`)) >= 60
        ? true
        : undefined,
    60_000,
    'the first items to land',
  );
  const before = await countOf(
    sql`select count(*)::int as n from batches where status in ('submitted', 'queued', 'active')`,
  );
  expect(before).toBe(2);

  await rig.redisServer.kill();
  await rig.redisServer.start();
  const restartedAt = Date.now();
  expect((await rig.redisServer.command('DBSIZE')).trim()).toBe(':0');

  // processing has resumed when a batch is polled again after the restart
  const resumedAt = await waitUntil(
    async () => {
      const [r] = await sql<{ at: Date | null }[]>`
      select max(last_polled_at) as at from batches where last_polled_at > ${new Date(restartedAt)}`;
      return r?.at ? Date.now() : undefined;
    },
    60_000,
    'a poll after the Redis restart',
  );
  await daemon.waitForLog((l) => l.event === 'reconcile.after_reconnect', 30_000, 'the reconnect reconcile');

  const s = await settle(rig, [source.id], 120_000);
  const wantVideos = publicVideoIds(rig.sim, ch.id).length;
  const wantTranscripts = expectedTranscripts(rig.sim, ch.id);
  const lost = wantVideos - s.videos + (wantTranscripts - s.transcripts);
  const posts =
    requestsTo(rig.sim, 'POST /videosite/video/batch') + requestsTo(rig.sim, 'POST /videosite/transcript/batch');
  const duplicates = posts - s.batches + s.duplicateItems;
  const resumedAfterS = (resumedAt - restartedAt) / 1000;
  figures('04 redis-restart-empty', { lost, duplicates, resumed_after_s: resumedAfterS, items: s.items });

  expect(s.statuses).toEqual({ completed: 2 });
  expect(s.items).toBe(2 * 400);
  expect(s.unsettledItems).toBe(0);
  expect(lost).toBe(0);
  expect(duplicates).toBe(0);
  expect(resumedAfterS).toBeLessThan(30);
  daemon.kill('SIGTERM');
  expect((await daemon.exited).code).toBe(0);
});
