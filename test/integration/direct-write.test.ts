/**
 * The poller writes `videos` and `transcripts` itself, in the transaction that lands the items,
 * so no sink is needed for a batch's rows; the sink queue only finishes what is left `landed`
 * (a crash of an older version between landing and sinking, a replay). Real simulator, Postgres,
 * Redis, and a real daemon process for the role test.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchProgress, isSettled } from '../../src/db/batch-progress.ts';
import type { UpsertCounts } from '../../src/db/videos.ts';
import { pollBatch } from '../../src/pipeline/ingest/poll-batch.ts';
import { reconcile } from '../../src/pipeline/services/reconcile.ts';
import { syncSource } from '../../src/pipeline/ingest/sync-source.ts';
import { registerSource } from '../../src/pipeline/commands/sources.ts';
import { createPipelineHarness, waitFor, type PipelineHarness } from '../helpers/pipeline.ts';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

let h: PipelineHarness;
beforeAll(async () => {
  h = await createPipelineHarness('direct', { catalog: { channels: 3, channelSizes: [60, 40, 30] } });
});
afterAll(async () => {
  await h?.close();
});

/** Public videos of a channel, and those with a transcript in English. */
function expected(channelIndex: number): { videos: string[]; transcripts: string[] } {
  const ch = h.sim.catalog.channels()[channelIndex]!;
  const infos = h.sim.catalog.videoIds(ch.id)!.map((id) => h.sim.catalog.videoInfo(id)!);
  const pub = infos.filter((v) => v.fate === 'public');
  return {
    videos: pub.map((v) => v.id).sort(),
    transcripts: pub
      .filter((v) => v.transcriptLanguages.length > 0)
      .map((v) => v.id)
      .sort(),
  };
}

/** Rows that differ from the raw item they were written from (`v:<id>`, `t:<id>`), and rows without one. */
async function rowsVsItems(sourceId: number): Promise<string[]> {
  const { sql } = h.database;
  const rows = await sql<{ k: string }[]>`
    with items as (
      select i.video_id, b.kind, i.payload from batch_items i join batches b using (job_id)
      where b.source_id = ${sourceId} and i.state = 'sunk')
    select 'v:' || i.video_id as k from items i left join videos v on v.id = i.video_id
    where i.kind = 'video' and (v.id is null or (v.title, v.description, v.view_count::numeric)
      is distinct from (i.payload->'video'->>'title', i.payload->'video'->>'description', (i.payload->'video'->>'viewCount')::numeric))
    union all
    select 't:' || i.video_id from items i left join transcripts t on t.video_id = i.video_id and t.lang = i.payload->'transcript'->>'lang'
    where i.kind = 'transcript' and (t.video_id is null or t.chunks is distinct from i.payload->'transcript'->'content'
      or t.text is distinct from (select string_agg(c->>'text', ' ' order by o) from jsonb_array_elements(i.payload->'transcript'->'content') with ordinality as e(c, o)))`;
  return rows.map((r) => r.k);
}

/** Deliveries `video_sync` (what the next sync diffs against) does not record as stored. */
async function notSunkInVideoSync(videoIds: string[], transcriptIds: string[]): Promise<number> {
  const [r] = await h.database.sql<{ n: number }[]>`
    select count(*)::int as n from video_sync
    where ((kind = 'video' and video_id = any(${videoIds}::text[])) or (kind = 'transcript' and video_id = any(${transcriptIds}::text[])))
      and last_state <> 'sunk'`;
  return r!.n;
}

describe('the poller writes the rows', () => {
  it('a daemon with --role scheduler,poller (no sink) fills videos and transcripts, each item sunk as it lands', async () => {
    const ch = h.sim.catalog.channels()[0]!;
    const s = await registerSource(h.deps, {
      kind: 'channel',
      ref: ch.id,
      limit: 5000,
      langs: ['en'],
      textOnly: false,
      cron: '* * * * * *',
    });
    const want = expected(0);
    const child = spawn(process.execPath, ['bin/videosite-ingest.js', 'daemon', '--role', 'scheduler,poller'], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...h.env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    try {
      await waitFor(
        async () => {
          const [r] = await h.database.sql<{ v: number; t: number; open: number }[]>`
          select (select count(*)::int from videos where channel_id = ${ch.id}) as v,
            (select count(distinct video_id)::int from transcripts where video_id = any(${want.transcripts}::text[])) as t,
            (select count(*)::int from batches where source_id = ${s.id} and status in ('submitted', 'queued', 'active')) as open`;
          return r!.v === want.videos.length && r!.t === want.transcripts.length && r!.open === 0 ? true : undefined;
        },
        45_000,
        'the channel to be stored by the poller',
      );
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, stderr).toBe(0);

    const videos = await h.database.sql<
      { id: string }[]
    >`select id from videos where channel_id = ${ch.id} order by id`;
    expect(videos.map((v) => v.id)).toEqual(want.videos);
    // every delivered item went landed → sunk in one transaction: one clock reading for both
    const items = await h.database.sql<{ state: string; n: number; same_tx: number }[]>`
      select i.state, count(*)::int as n, count(*) filter (where i.landed_at = i.sunk_at)::int as same_tx
      from batch_items i join batches b using (job_id) where b.source_id = ${s.id} group by i.state order by i.state`;
    const sunk = items.find((r) => r.state === 'sunk');
    expect(sunk?.n).toBe(want.videos.length + want.transcripts.length);
    expect(sunk?.same_tx).toBe(sunk?.n);
    expect(items.map((r) => r.state).filter((st) => st !== 'sunk' && st !== 'failed')).toEqual([]);
    expect(await rowsVsItems(s.id)).toEqual([]);
    // what the next sync diffs against says delivered, not pending
    expect(await notSunkInVideoSync(want.videos, want.transcripts)).toBe(0);
  });

  it('a chunk landed but not written (a crash between the steps) is finished by the sink, from the raw copy', async () => {
    const ch = h.sim.catalog.channels()[1]!;
    const s = await registerSource(h.deps, {
      kind: 'channel',
      ref: ch.id,
      limit: 5000,
      langs: ['en'],
      textOnly: false,
      cron: null,
    });
    const pollers = h.startWorkers(['poller']);
    const r = await syncSource(h.deps, s.id);
    await waitFor(
      async () => ((await batchProgress(h.database.sql, r.jobIds)).every(isSettled) ? true : undefined),
      30_000,
      'the batches to settle',
    );
    await pollers.close(2_000);
    const want = expected(1);
    const { sql } = h.database;
    // the state a crash right after landing would leave: items landed, their rows never written
    const ids = want.transcripts.slice(0, 10);
    const vids = want.videos.slice(0, 10);
    await sql`
      update batch_items i set state = 'landed', sunk_at = null from batches b
      where b.job_id = i.job_id and b.source_id = ${s.id} and i.video_id = any(${[...ids, ...vids]}::text[]) and i.state = 'sunk'`;
    await sql`
      update video_sync set last_state = 'landed'
      where (kind = 'video' and video_id = any(${vids}::text[])) or (kind = 'transcript' and video_id = any(${ids}::text[]))`;
    await sql`delete from transcripts where video_id = any(${ids}::text[])`;
    await sql`delete from videos where id = any(${vids}::text[])`;

    // reconcile (a daemon's start, or its minute) finds them and a sink worker stores them
    const rec = await reconcile(h.deps);
    expect(rec.sinks).toBe(2);
    h.startWorkers(['sink']);
    await waitFor(
      async () => {
        const [n] = await sql<{ n: number }[]>`
        select count(*)::int as n from batch_items i join batches b using (job_id) where b.source_id = ${s.id} and i.state = 'landed'`;
        return n!.n === 0 ? true : undefined;
      },
      30_000,
      'the sink to finish the landed items',
    );
    const t = await sql<
      { video_id: string }[]
    >`select distinct video_id from transcripts where video_id = any(${ids}::text[]) order by video_id`;
    expect(t.map((x) => x.video_id)).toEqual([...ids].sort());
    const v = await sql<{ id: string }[]>`select id from videos where id = any(${vids}::text[]) order by id`;
    expect(v.map((x) => x.id)).toEqual([...vids].sort());
    expect(await rowsVsItems(s.id)).toEqual([]);
    expect(await notSunkInVideoSync(vids, ids)).toBe(0);
  });

  it('two polls of the same answer at once land and write each item once', async () => {
    const ch = h.sim.catalog.channels()[2]!;
    const s = await registerSource(h.deps, {
      kind: 'channel',
      ref: ch.id,
      limit: 5000,
      langs: ['en'],
      textOnly: false,
      cron: null,
    });
    const r = await syncSource(h.deps, s.id);
    // finished upstream, never polled (no poll worker runs)
    await new Promise((res) => setTimeout(res, 500));
    const written: UpsertCounts = { inserted: 0, updated: 0, unchanged: 0 };
    const deps = {
      ...h.deps,
      metrics: {
        rowsUpserted: (_table: 'videos' | 'transcripts', c: UpsertCounts) => {
          written.inserted += c.inserted;
          written.updated += c.updated;
          written.unchanged += c.unchanged;
        },
      },
    };
    // a stalled poll job run twice: both read the whole answer and land it
    for (const jobId of r.jobIds) {
      const [a, b] = await Promise.all([pollBatch(deps, jobId), pollBatch(deps, jobId)]);
      expect(a.sunk + b.sunk).toBe(a.landed + b.landed);
      expect(Math.min(a.sunk, b.sunk)).toBe(0);
    }
    const want = expected(2);
    expect(written.inserted).toBe(want.videos.length + want.transcripts.length);
    expect(written.updated).toBe(0);
    // rows are written only by the poll whose statement landed their items
    expect(written.unchanged).toBe(0);
    const { sql } = h.database;
    const [rows] = await sql<{ v: number; t: number; rewritten: number }[]>`
      select (select count(*)::int from videos where channel_id = ${ch.id}) as v,
        (select count(*)::int from transcripts where video_id = any(${want.transcripts}::text[])) as t,
        (select count(*)::int from transcripts where video_id = any(${want.transcripts}::text[]) and updated_at <> first_seen_at) as rewritten`;
    expect(rows).toEqual({ v: want.videos.length, t: want.transcripts.length, rewritten: 0 });
    expect(await rowsVsItems(s.id)).toEqual([]);
  });
});
