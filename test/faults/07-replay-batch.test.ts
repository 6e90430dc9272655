/**
 * Scenario 7: `replay --batch` re-runs a completed batch's database writes from the stored raw
 * items, with no API call. Rows are damaged first (titles and view counts changed, fields
 * nulled, transcripts deleted, a transcript holding another's content, its languages nulled),
 * then each batch is replayed: every damaged row comes back exactly as delivered, every other
 * row is left alone (its `updated_at` does not move).
 *
 * How it fails when the property breaks: a replay that writes nothing (or only inserts, or
 * trusts a stored hash without comparing) leaves damaged rows that differ from their raw items
 * (`rows_mismatched`, checked field by field against `batch_items.payload`, and every row's
 * delivered columns compared with a copy taken before the damage); a replay that rewrites
 * everything moves the `updated_at` of undamaged rows (`untouched_moved`); one that calls the
 * API shows in the simulator's request count (`api_calls`). The damage itself is checked to be
 * visible before the replay, so the check cannot pass by not seeing it.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { rowsVsRaw } from '../helpers/fault-checks.ts';
import { figures, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';

let rig: FaultRig;
beforeAll(async () => {
  rig = await startFaultRig('07-replay', { sim: { catalog: { channels: 1, channelSizes: [300] } } });
});
afterAll(async () => {
  await rig?.close();
});

interface RowPrint {
  k: string;
  updated_at: string;
  /** md5 of the delivered columns (not first_seen_at / updated_at) */
  h: string;
}

async function fingerprint(): Promise<Map<string, RowPrint>> {
  const { sql } = rig.db();
  const rows = await sql<RowPrint[]>`
    select 'v:' || id as k, updated_at::text,
      md5(row(title, description, duration_s, channel_id, channel_name, tags, thumbnail, upload_date,
              view_count, like_count, transcript_languages, last_job_id)::text) as h
    from videos
    union all
    select 't:' || video_id || ':' || lang as k, updated_at::text,
      md5(row(text, chunks, available_langs, content_sha256, text_only, last_job_id)::text) as h
    from transcripts`;
  return new Map(rows.map((r) => [r.k, r]));
}

/** Damage rows as a bad migration or a careless hand would; returns the keys damaged. */
async function damage(): Promise<{ videos: string[]; deleted: string[]; transcripts: string[] }> {
  const { sql } = rig.db();
  const picked = await sql<{ id: string; n: number }[]>`
    select id, (row_number() over (order by id))::int as n from videos
    where description is not null and upload_date is not null and like_count is not null
    order by id limit 30`;
  const group = (g: number) => picked.filter((p) => p.n % 3 === g).map((p) => p.id);
  await sql`update videos set title = title || ' (damaged)' where id = any(${group(0)})`;
  await sql`update videos set view_count = coalesce(view_count, 0) + 1 where id = any(${group(1)})`;
  await sql`update videos set description = null, upload_date = null, like_count = null where id = any(${group(2)})`;

  const tr = await sql<{ video_id: string; lang: string; n: number }[]>`
    select video_id, lang, (row_number() over (order by video_id, lang))::int as n from transcripts
    where available_langs is not null and text <> ''
    order by video_id, lang limit 21`;
  const deleted = tr.filter((t) => t.n <= 10);
  const swapped = tr.filter((t) => t.n > 10 && t.n <= 15);
  const langsNulled = tr.filter((t) => t.n > 15 && t.n <= 20);
  const donor = tr[20]!;
  for (const t of deleted) await sql`delete from transcripts where video_id = ${t.video_id} and lang = ${t.lang}`;
  // another video's content, hash included: what a stale or mixed-up row looks like
  for (const t of swapped) {
    await sql`
      update transcripts t set text = d.text, chunks = d.chunks, content_sha256 = d.content_sha256
      from transcripts d
      where t.video_id = ${t.video_id} and t.lang = ${t.lang} and d.video_id = ${donor.video_id} and d.lang = ${donor.lang}`;
  }
  for (const t of langsNulled)
    await sql`update transcripts set available_langs = null where video_id = ${t.video_id} and lang = ${t.lang}`;
  const key = (t: { video_id: string; lang: string }) => `t:${t.video_id}:${t.lang}`;
  return {
    videos: picked.map((p) => `v:${p.id}`),
    deleted: deleted.map(key),
    transcripts: [...swapped, ...langsNulled].map(key),
  };
}

it('07 replay --batch after damaging rows: every damaged row restored exactly, the rest untouched, 0 API calls', async () => {
  const ch = rig.sim.catalog.channels()[0]!;
  const source = await rig.addSource({ ref: ch.id, langs: ['en'] });
  const backfill = await rig.run(['backfill', '--source', String(source.id), '--timeout', '120s']);
  expect(backfill.code, backfill.stdout + backfill.stderr).toBe(0);

  const { sql } = rig.db();
  const batches = await sql<{ job_id: string; kind: string; sunk: number }[]>`
    select b.job_id, b.kind, count(i.*) filter (where i.state = 'sunk')::int as sunk
    from batches b join batch_items i using (job_id) where b.status = 'completed' group by b.job_id, b.kind order by b.job_id`;
  expect(batches.map((b) => b.kind).sort()).toEqual(['transcript', 'video']);
  const intact = await rowsVsRaw(rig);
  expect(intact.mismatched).toEqual([]);
  const before = await fingerprint();
  expect(before.size).toBeGreaterThan(300);

  const damaged = await damage();
  const damagedKeys = [...damaged.videos, ...damaged.deleted, ...damaged.transcripts];
  expect(damaged.videos).toHaveLength(30);
  expect(damaged.deleted).toHaveLength(10);
  expect(damaged.transcripts).toHaveLength(10);
  // the comparison sees every damaged row (so it cannot pass by not looking)
  const seen = await rowsVsRaw(rig);
  expect(seen.mismatched.sort()).toEqual([...damagedKeys].sort());
  const callsBefore = rig.sim.stats().total;

  const counts = { items: 0, inserted: 0, updated: 0 };
  for (const b of batches) {
    const r = await rig.run(['replay', '--batch', b.job_id]);
    expect(r.code, r.stderr).toBe(0);
    const m = /(\d+) stored item\(s\) re-sunk from raw: (\d+) row\(s\) inserted, (\d+) updated, (\d+) unchanged/.exec(
      r.stdout,
    );
    expect(m, r.stdout).not.toBeNull();
    expect(Number(m![1])).toBe(b.sunk);
    counts.items += Number(m![1]);
    counts.inserted += Number(m![2]);
    counts.updated += Number(m![3]);
  }

  const after = await fingerprint();
  const restored = await rowsVsRaw(rig);
  const notRestored = damagedKeys.filter((k) => after.get(k)?.h !== before.get(k)?.h);
  // rows nobody damaged: same values, same updated_at (the replay wrote nothing to them)
  const untouchedMoved = [...before.keys()]
    .filter((k) => !damagedKeys.includes(k))
    .filter((k) => after.get(k)?.h !== before.get(k)!.h || after.get(k)?.updated_at !== before.get(k)!.updated_at);
  const calls = rig.sim.stats().total - callsBefore;
  const [notSunk] = await sql<{ n: number }[]>`select count(*)::int as n from batch_items where state = 'landed'`;
  figures('07 replay-batch', {
    rows_damaged: damagedKeys.length,
    rows_mismatched: restored.mismatched.length + restored.orphans.length,
    not_restored: notRestored.length,
    untouched_moved: untouchedMoved.length,
    api_calls: calls,
    items_resunk: counts.items,
  });
  expect(restored.mismatched).toEqual([]);
  expect(restored.orphans).toEqual([]);
  expect(notRestored).toEqual([]);
  expect(after.size).toBe(before.size);
  expect(untouchedMoved).toEqual([]);
  // what the replay says it did is what was damaged
  expect(counts.inserted).toBe(damaged.deleted.length);
  expect(counts.updated).toBe(damaged.videos.length + damaged.transcripts.length);
  expect(calls).toBe(0);
  expect(notSunk!.n).toBe(0);
});
