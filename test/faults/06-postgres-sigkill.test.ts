/**
 * Scenario 6: Postgres is SIGKILLed (every server process) while the sink upserts, then started
 * again (crash recovery from its WAL). Each sink chunk is one transaction: the interrupted one
 * rolls back and is written again; failed job attempts are retried with backoff; the daemon
 * reconnects by itself (same process throughout), and the final rows are exact.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectedTranscripts, settle } from '../helpers/fault-checks.ts';
import { countOf, figures, publicVideoIds, requestsTo, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { waitUntil } from '../helpers/proc.ts';

let rig: FaultRig;
beforeAll(async () => {
  rig = await startFaultRig('06-pgkill', {
    sim: { catalog: { channels: 1, channelSizes: [3000] }, jobs: { queuedMs: 100, itemsPerSecond: 1_000_000 } },
  });
});
afterAll(async () => {
  await rig?.close();
});

it('06 SIGKILL Postgres during an upsert and restart it: rows exact, 0 duplicates, reconnects by itself', async () => {
  const ch = rig.sim.catalog.channels()[0]!;
  const source = await rig.addSource({ ref: ch.id });
  rig.pgProxy.set({ mode: 'latency', latencyMs: 15 });
  const daemon = rig.cli(['daemon'], { SINK_CHUNK_ITEMS: '100' }, 'daemon');
  await daemon.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
  const submit = await rig.run(['backfill', '--source', String(source.id), '--no-wait']);
  expect(submit.code, submit.stderr).toBe(0);

  const sunkQuery = () => countOf(rig.db().sql`select count(*)::int as n from batch_items where state = 'sunk'`);
  const sunkAtKill = await waitUntil(
    async () => {
      const n = await sunkQuery();
      return n >= 200 ? n : undefined;
    },
    90_000,
    'the sink to be writing',
    50,
  );
  await rig.pg.kill();
  const downAt = Date.now();
  await new Promise((r) => setTimeout(r, 2_000));
  await rig.pg.start();
  const upAt = Date.now();

  const resumedAt = await waitUntil(
    async () => {
      try {
        return (await sunkQuery()) > sunkAtKill ? Date.now() : undefined;
      } catch (e) {
        if (process.env.DEBUG_FAULTS) console.log('test query failed', e);
        return undefined;
      }
    },
    90_000,
    'the sink to write again after the restart',
  ).catch((e: unknown) => {
    throw new Error(`${String(e)}\ndaemon stderr tail:\n${daemon.stderr().slice(-6000)}`);
  });
  const s = await settle(rig, [source.id], 180_000);
  const wantVideos = publicVideoIds(rig.sim, ch.id).length;
  const wantTranscripts = expectedTranscripts(rig.sim, ch.id);
  const posts =
    requestsTo(rig.sim, 'POST /videosite/video/batch') + requestsTo(rig.sim, 'POST /videosite/transcript/batch');
  const failedAttempts = daemon.logs().filter((l) => l.event === 'job.failed').length;
  figures('06 postgres-sigkill', {
    rows_missing: wantVideos - s.videos + (wantTranscripts - s.transcripts),
    duplicates: posts - s.batches + s.duplicateItems,
    down_s: (upAt - downAt) / 1000,
    resumed_after_s: (resumedAt - upAt) / 1000,
    attempts_retried: failedAttempts,
    same_process: daemon.running(),
  });
  expect(daemon.running()).toBe(true);
  expect(s.videos).toBe(wantVideos);
  expect(s.transcripts).toBe(wantTranscripts);
  expect(posts - s.batches + s.duplicateItems).toBe(0);
  expect(s.unsettledItems).toBe(0);
  daemon.kill('SIGTERM');
  expect((await daemon.exited).code).toBe(0);
});
