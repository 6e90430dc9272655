/**
 * Scenario 24: `prune` under a running pipeline loses nothing that is not yet sunk. A daemon
 * ingests two channels (metadata and ~20 KB transcripts) from a simulator slowed so that items
 * land over many seconds, while the test, again and again, back-dates every item's landing and
 * sinking by 100 days (the time retention waits for, passed in SQL) and runs the real `prune`
 * CLI with the default RAW_RETENTION_DAYS (90). Every item is old enough at once; only its state
 * may protect it. At the end every video and transcript that should be stored is stored, and
 * every stored item's raw payload has been pruned, its sha256 and size kept.
 *
 * How it fails when the property breaks: a trigger installed for the test records every row
 * whose payload is pruned while its state is not `sunk` or `failed` (`pruned_unsettled`). A
 * prune that took landed items (its state condition dropped or widened) would show there, and
 * the sink would then find those items without a payload and quarantine them (`quarantined`),
 * so `videos`/`transcripts` would fall short of the catalog. Checked by hand: with `'landed'`
 * added to the prunable states in src/db/prune.ts, this scenario fails on all three. A prune that
 * never overlapped the ingestion would prove nothing: `overlapping_runs` counts runs that began
 * with items still landing and pruned some, and must be at least 2.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectedTranscripts, settle } from '../helpers/fault-checks.ts';
import { countOf, figures, publicVideoIds, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import type { PruneReport } from '../../src/pipeline/commands/prune.ts';

/** Simulated items finished per second per batch: a 600-video batch lands over ~24 s. */
const ITEMS_PER_SECOND = 25;
/** How far each round back-dates the items it has not back-dated yet (beyond RAW_RETENTION_DAYS=90). */
const BACKDATE_DAYS = 100;

let rig: FaultRig;
beforeAll(async () => {
  rig = await startFaultRig('24-prune', {
    sim: {
      catalog: { channels: 2, channelSizes: [600, 600], transcriptChunks: { min: 140, max: 160 } },
      jobs: { queuedMs: 100, itemsPerSecond: ITEMS_PER_SECOND },
    },
  });
});
afterAll(async () => {
  await rig?.close();
});

/**
 * A row pruned while not settled, recorded by a trigger of the test (not of the product): it
 * sees the row as it was just before the prune's update.
 */
async function installPruneAudit(): Promise<void> {
  const { sql } = rig.db();
  await sql`create table prune_audit (job_id text, video_id text, state text, at timestamptz default clock_timestamp())`;
  await sql.unsafe(`
    create function prune_audit_row() returns trigger language plpgsql as $$
    begin
      insert into prune_audit (job_id, video_id, state) values (old.job_id, old.video_id, old.state);
      return new;
    end $$`);
  await sql.unsafe(`
    create trigger prune_audit before update on batch_items for each row
    when (old.payload_pruned_at is null and new.payload_pruned_at is not null and old.state not in ('sunk', 'failed'))
    execute function prune_audit_row()`);
}

/**
 * Time passes for every item landed or sunk since the last round: `BACKDATE_DAYS` earlier.
 * Rows another transaction holds (the poller, the sink, prune) are skipped, never waited for,
 * so the test adds no lock the pipeline could queue on.
 */
async function backdate(): Promise<void> {
  const { sql } = rig.db();
  const fresh = sql`now() - make_interval(days => ${BACKDATE_DAYS / 2})`;
  await sql`
    update batch_items b set landed_at = b.landed_at - make_interval(days => ${BACKDATE_DAYS})
    from (select job_id, video_id from batch_items where landed_at > ${fresh} for update skip locked) p
    where b.job_id = p.job_id and b.video_id = p.video_id`;
  await sql`
    update batch_items b set sunk_at = b.sunk_at - make_interval(days => ${BACKDATE_DAYS})
    from (select job_id, video_id from batch_items where sunk_at > ${fresh} for update skip locked) p
    where b.job_id = p.job_id and b.video_id = p.video_id`;
}

const unsettled = () =>
  countOf(rig.db().sql`select count(*)::int as n from batch_items where state in ('processing', 'landed')`);
const openBatches = () =>
  countOf(rig.db().sql`select count(*)::int as n from batches where status in ('submitted', 'queued', 'active')`);

it('24 prune again and again while a daemon lands and sinks: nothing not yet sunk loses its payload, every row stored', async () => {
  await rig.migrate();
  await installPruneAudit();
  const channels = rig.sim.catalog.channels();
  for (const ch of channels) await rig.addSource({ ref: ch.id });
  const daemon = rig.cli(['daemon'], {}, 'daemon');
  await daemon.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
  const submit = await rig.run(['backfill', '--all', '--no-wait']);
  expect(submit.code, submit.stderr).toBe(0);

  const runs: { unsettledAtStart: number; pruned: number; code: number | null }[] = [];
  const deadline = Date.now() + 180_000;
  for (;;) {
    const before = await unsettled();
    const open = await openBatches();
    await backdate();
    const r = await rig.run(['prune', '--json']);
    const report = r.code === 0 ? (JSON.parse(r.stdout) as PruneReport) : undefined;
    runs.push({ unsettledAtStart: before, pruned: report?.freed.batch_items.rows ?? 0, code: r.code });
    expect(r.code, r.stderr.slice(-2000)).toBe(0);
    if ((before === 0 && open === 0) || Date.now() > deadline) break;
  }
  const s = await settle(rig, [], 60_000);
  // the last items sunk since the last round: one more, so every stored item is past retention
  await backdate();
  const last = await rig.run(['prune', '--json']);
  expect(last.code, last.stderr).toBe(0);

  const { sql } = rig.db();
  const prunedUnsettled = await countOf(sql`select count(*)::int as n from prune_audit`);
  const [items] = await sql<
    { sunk: number; sunk_kept: number; pruned: number; pruned_unsettled: number; pruned_without_sha: number }[]
  >`
    select
      count(*) filter (where state = 'sunk')::int as sunk,
      count(*) filter (where state = 'sunk' and payload_pruned_at is null)::int as sunk_kept,
      count(*) filter (where payload_pruned_at is not null)::int as pruned,
      count(*) filter (where payload_pruned_at is not null and state not in ('sunk', 'failed'))::int as pruned_unsettled,
      count(*) filter (where payload_pruned_at is not null and (payload_sha256 is null or payload_bytes is null
        or payload is not null or payload_raw is not null))::int as pruned_without_sha
    from batch_items`;
  const wantVideos = channels.reduce((n, c) => n + publicVideoIds(rig.sim, c.id).length, 0);
  const wantTranscripts = channels.reduce((n, c) => n + expectedTranscripts(rig.sim, c.id), 0);
  const overlapping = runs.filter((r) => r.unsettledAtStart > 0 && r.pruned > 0).length;
  const [freed] = await sql<{ bytes: number }[]>`
    select coalesce(sum((freed->'batch_items'->>'bytes')::float8), 0) as bytes from prune_runs where not dry_run`;
  figures('24 prune-under-load', {
    prune_runs: runs.length + 1,
    overlapping_runs: overlapping,
    items_pruned: items!.pruned,
    mb_freed: freed!.bytes / 1e6,
    pruned_unsettled: prunedUnsettled + items!.pruned_unsettled,
    quarantined: s.itemStates.quarantined ?? 0,
    videos: s.videos,
    want_videos: wantVideos,
    transcripts: s.transcripts,
    want_transcripts: wantTranscripts,
  });
  expect(prunedUnsettled).toBe(0);
  expect(items!.pruned_unsettled).toBe(0);
  expect(s.itemStates.quarantined ?? 0).toBe(0);
  expect(s.videos).toBe(wantVideos);
  expect(s.transcripts).toBe(wantTranscripts);
  expect(overlapping).toBeGreaterThanOrEqual(2);
  // every stored item ended pruned, its sha256 and size kept
  expect(items!.sunk).toBe(wantVideos + wantTranscripts);
  expect(items!.sunk_kept).toBe(0);
  expect(items!.pruned_without_sha).toBe(0);
  daemon.kill('SIGTERM');
  expect((await daemon.exited).code).toBe(0);
});
