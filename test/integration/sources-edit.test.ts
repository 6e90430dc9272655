/**
 * `sources edit`, and sources named by reference in `edit`, `pause`, `resume` and `remove`: the
 * CLI as real processes against the simulator over real HTTP, real Postgres and Redis. What is
 * checked is what a user pays for and keeps: the same source ID, its history untouched, and the
 * next sync buying only what the new settings make due (the simulator's POSTs per video and the
 * credits it charged). Syncs run in this process (runBackfill), as `backfill` runs them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBackfill } from '../../src/pipeline/commands/backfill.ts';
import { registerSource } from '../../src/pipeline/commands/sources.ts';
import { cronSchedulerId } from '../../src/queues/names.ts';
import { expectCleanError, expectExit } from '../helpers/cli.ts';
import { postsPerVideo } from '../helpers/posts.ts';
import { createPipelineHarness, runCli, type CliResult, type PipelineHarness } from '../helpers/pipeline.ts';

let h: PipelineHarness;

beforeAll(async () => {
  h = await createPipelineHarness('sources-edit', { catalog: { channels: 4, channelSizes: [12, 12, 12, 12] } });
  h.startWorkers(['poller', 'sink']);
});

afterAll(async () => {
  await h?.close();
});

const cli = (args: string[]): Promise<CliResult> => runCli(args, h.env, 30_000);

function channel(i: number) {
  return h.sim.catalog.channels()[i]!;
}

async function usedCredits(): Promise<number> {
  return (await h.api.me()).usedCredits;
}

function batchPosts(): number {
  const stats = h.sim.stats();
  return (
    (stats.byEndpoint['POST /videosite/video/batch']?.total ?? 0) +
    (stats.byEndpoint['POST /videosite/transcript/batch']?.total ?? 0)
  );
}

async function sync(sourceId: number): Promise<void> {
  const report = await runBackfill(h.deps, {
    sourceIds: [sourceId],
    wait: true,
    timeoutMs: 30_000,
    checkIntervalMs: 100,
  });
  expect(report.exitCode, report.problems.join('; ')).toBe(0);
}

/** What a source has kept: its row's identity and every piece of history an edit must leave alone. */
async function history(sourceId: number) {
  const [r] = await h.database.sql<
    {
      sources: number;
      batches: number;
      runs: number;
      listed: number;
      videos: number;
      transcripts: number;
      items: number;
    }[]
  >`
    select (select count(*) from sources where id = ${sourceId})::int as sources,
      (select count(*) from batches where source_id = ${sourceId})::int as batches,
      (select count(*) from sync_runs where source_id = ${sourceId})::int as runs,
      (select count(*) from source_videos where source_id = ${sourceId})::int as listed,
      (select count(*) from videos v join source_videos sv on sv.video_id = v.id where sv.source_id = ${sourceId})::int as videos,
      (select count(*) from transcripts t join source_videos sv on sv.video_id = t.video_id where sv.source_id = ${sourceId})::int as transcripts,
      (select count(*) from batch_items i join batches b on b.job_id = i.job_id where b.source_id = ${sourceId})::int as items`;
  return r!;
}

async function settings(sourceId: number) {
  const rows = await h.database.sql<
    {
      max_videos: number;
      langs: string[];
      text_only: boolean;
      cron: string | null;
      include: string[];
      max_credits_per_day: number | null;
    }[]
  >`
    select max_videos, langs, text_only, cron, include, max_credits_per_day from sources where id = ${sourceId}`;
  return rows[0];
}

async function listedBy(sourceId: number): Promise<string[]> {
  const rows = await h.database.sql<
    { video_id: string }[]
  >`select video_id from source_videos where source_id = ${sourceId} order by video_id`;
  return rows.map((r) => r.video_id);
}

async function schedulerPattern(cron: string): Promise<string | undefined> {
  const all = await h.queues.schedule.getJobSchedulers(0, -1);
  return all.find((s) => s.key === cronSchedulerId(cron))?.pattern ?? undefined;
}

describe('sources edit', () => {
  it('by handle and by URL: same row, history kept; a cron edit costs the next sync only its listing, a higher limit only the new videos', async () => {
    const ch = channel(0);
    const s = await registerSource(h.deps, {
      kind: 'channel',
      ref: ch.handle,
      limit: 5,
      langs: ['en'],
      textOnly: false,
      cron: null,
    });
    await sync(s.id);
    const first = await listedBy(s.id);
    expect(first).toHaveLength(5);
    const kept = await history(s.id);
    expect(kept).toMatchObject({ sources: 1, batches: 2, runs: 1, listed: 5, videos: 5, transcripts: 5 });

    // the handle in another case
    const byHandle = await cli(['sources', 'edit', ch.handle.toUpperCase(), '--cron', '0 5 * * *']);
    expectExit(byHandle, 0);
    expect(byHandle.stdout).toMatch(
      new RegExp(
        `^source ${s.id}: cron none -> "0 5 \\* \\* \\*"\\n  next syncs \\(UTC\\): (\\d{4}-\\d\\d-\\d\\d 05:00(, )?){3}\\n$`,
      ),
    );
    expect(await settings(s.id)).toMatchObject({ cron: '0 5 * * *', max_videos: 5, langs: ['en'] });
    expect(await schedulerPattern('0 5 * * *')).toBe('0 5 * * *');
    expect(await history(s.id)).toEqual(kept);

    // nothing new is due: the next sync pays its listing and posts no batch
    let credits = await usedCredits();
    let posts = batchPosts();
    await sync(s.id);
    expect((await usedCredits()) - credits).toBe(1);
    expect(batchPosts()).toBe(posts);
    expect(await history(s.id)).toEqual({ ...kept, runs: kept.runs + 1 });

    // a channel URL naming the handle; the limit raised from 5 to 8
    const byUrl = await cli(['sources', 'edit', `https://www.videosite.com/${ch.handle}/videos`, '--limit', '8']);
    expectExit(byUrl, 0);
    expect(byUrl.stdout).toBe(`source ${s.id}: limit 5 -> 8\n`);
    credits = await usedCredits();
    posts = batchPosts();
    await sync(s.id);
    const now = await listedBy(s.id);
    const added = now.filter((id) => !first.includes(id));
    expect(added).toHaveLength(3);
    // one video batch and one transcript batch, of the 3 new videos only: listing 1 + 2 x (1 + 3)
    expect(batchPosts() - posts).toBe(2);
    expect((await usedCredits()) - credits).toBe(1 + 2 * (1 + 3));
    for (const what of ['video', 'transcript:en']) {
      const byVideo = postsPerVideo(h.sim, what);
      for (const id of now) expect(byVideo.get(id), `${what} ${id}`).toBe(1);
    }
    const [row] = await h.database.sql<{ id: number }[]>`select id from sources where external_id = ${ch.id}`;
    expect(row!.id).toBe(s.id);
  });

  it('an added language buys that language only, one batch; a dropped one buys nothing', async () => {
    const playlistId = channel(1).playlistIds[0]!;
    const s = await registerSource(h.deps, {
      kind: 'playlist',
      ref: playlistId,
      limit: 4,
      langs: ['en'],
      textOnly: false,
      cron: null,
    });
    await sync(s.id);
    const listed = await listedBy(s.id);
    expect(listed.length).toBeGreaterThan(0);
    const kept = await history(s.id);

    const r = await cli([
      'sources',
      'edit',
      `https://www.videosite.com/playlist?list=${playlistId}`,
      '--lang',
      'en,de',
    ]);
    expectExit(r, 0);
    expect(r.stdout).toMatch(
      new RegExp(
        `^source ${s.id}: langs en -> en,de\\n  next sync buys de transcripts .*\\n  the credits first: videosite-ingest backfill --source ${s.id} --dry-run\\n$`,
      ),
    );
    expect(await history(s.id)).toEqual(kept);

    const before = h.sim.stats().postsByVideo;
    const posts = batchPosts();
    await sync(s.id);
    expect(batchPosts() - posts).toBe(1);
    const after = h.sim.stats().postsByVideo;
    for (const id of listed) {
      expect(after['transcript:de']?.[id], `de ${id}`).toBe(1);
      expect(after['transcript:en']?.[id]).toBe(before['transcript:en']?.[id]);
      expect(after['video']?.[id]).toBe(before['video']?.[id]);
    }
    const batches = await h.database
      .sql`select kind, lang from batches where source_id = ${s.id} order by submitted_at`;
    expect(batches.slice(kept.batches)).toEqual([{ kind: 'transcript', lang: 'de' }]);

    const dropped = await cli(['sources', 'edit', String(s.id), '--lang', 'de']);
    expectExit(dropped, 0);
    expect(dropped.stdout).toBe(`source ${s.id}: langs en,de -> de\n`);
    const credits = await usedCredits();
    await sync(s.id);
    expect(batchPosts() - posts).toBe(1);
    expect((await usedCredits()) - credits).toBe(1);
  });

  it('prints each change, or "nothing changed" with exit 0; --text flips text_only; --no-cron and --no-max-credits-per-day clear', async () => {
    const playlistId = channel(1).playlistIds[1]!;
    const s = await registerSource(h.deps, {
      kind: 'playlist',
      ref: playlistId,
      limit: 10,
      langs: [],
      textOnly: false,
      cron: '0 6 * * *',
    });
    const [same, changed] = [
      await cli(['sources', 'edit', playlistId, '--limit', '10', '--cron', '0 6 * * *']),
      await cli([
        'sources',
        'edit',
        playlistId,
        '--text',
        '--no-cron',
        '--include',
        'shorts',
        '--max-credits-per-day',
        '50',
      ]),
    ];
    expectExit(same, 0);
    expect(same.stdout).toBe(`source ${s.id}: nothing changed\n`);
    expectExit(changed, 0);
    expect(changed.stdout).toBe(
      `source ${s.id}: cron "0 6 * * *" -> none, transcripts chunks -> text, include none -> shorts, credits/day no cap -> 50\n`,
    );
    expect(await settings(s.id)).toEqual({
      max_videos: 10,
      langs: [],
      text_only: true,
      cron: null,
      include: ['shorts'],
      max_credits_per_day: 50,
    });
    const back = await cli(['sources', 'edit', playlistId, '--chunks', '--no-max-credits-per-day', '--no-include']);
    expectExit(back, 0);
    expect(back.stdout).toMatch(
      new RegExp(`^source ${s.id}: transcripts text -> chunks, include shorts -> none, credits/day 50 -> no cap\\n`),
    );
    expect(await settings(s.id)).toMatchObject({ text_only: false, include: [], max_credits_per_day: null });
  });

  it('refuses a four-field cron naming the field count, a too frequent cron, an option the kind does not take, and no option; nothing changes', async () => {
    const videoIds = h.sim.catalog.playlistVideoIds(channel(2).playlistIds[0]!)!.slice(0, 2);
    const videos = await registerSource(h.deps, {
      kind: 'videos',
      refs: videoIds.map((value) => ({ value, where: 'test' })),
      langs: [],
      textOnly: false,
      cron: null,
    });
    const search = await registerSource(h.deps, {
      kind: 'search',
      ref: 'edit refusals',
      limit: 10,
      langs: [],
      textOnly: false,
      cron: null,
    });
    const rows = async () => [await settings(videos.id), await settings(search.id)];
    const unchanged = await rows();
    const [four, often, limit, include, none, both] = await Promise.all([
      cli(['sources', 'edit', String(search.id), '--cron', '0 3 * *']),
      cli(['sources', 'edit', String(search.id), '--cron', '*/2 * * * *']),
      cli(['sources', 'edit', String(videos.id), '--limit', '5']),
      cli(['sources', 'edit', 'edit refusals', '--include', 'live']),
      cli(['sources', 'edit', String(search.id)]),
      cli(['sources', 'edit', String(search.id), '--text', '--chunks']),
    ]);
    expectCleanError(
      four!,
      2,
      "argument '0 3 * *' is invalid",
      'has 4 fields; expected five fields: minute hour day-of-month month day-of-week',
    );
    expectCleanError(
      often!,
      2,
      '--cron "*/2 * * * *" fires every 2 min at its closest, more often than SOURCE_MIN_INTERVAL_MS allows (5 min)',
    );
    expectCleanError(limit!, 2, `--limit does not apply to a videos source (source ${videos.id})`);
    expectCleanError(
      include!,
      2,
      `--include does not apply to a search source (source ${search.id}); it applies to playlist, channel sources`,
    );
    expectCleanError(none!, 2, 'nothing to change: give one or more of --cron');
    expectCleanError(both!, 2, "option '--text' cannot be used with option '--chunks'");
    expect(await rows()).toEqual(unchanged);
  });
});

describe('a source named by reference', () => {
  it('an unknown reference exits 2 naming it and pointing at sources list', async () => {
    const [unknown, unknownId] = await Promise.all([
      cli(['sources', 'edit', '@nobody-has-this', '--limit', '3']),
      cli(['sources', 'pause', '99999']),
    ]);
    expectCleanError(unknown!, 2, 'no source is "@nobody-has-this"', 'see: sources list');
    expectCleanError(unknownId!, 2, 'source 99999 does not exist (see: sources list)');
  });

  it('a handle that names a channel and a search exits 2 listing both, with ID, kind and external ID; each ID still names one', async () => {
    const ch = channel(2);
    const byChannel = await registerSource(h.deps, {
      kind: 'channel',
      ref: ch.id,
      limit: 5,
      langs: [],
      textOnly: false,
      cron: null,
    });
    const bySearch = await registerSource(h.deps, {
      kind: 'search',
      ref: ch.handle,
      limit: 5,
      langs: [],
      textOnly: false,
      cron: null,
    });
    const r = await cli(['sources', 'pause', ch.handle]);
    expectCleanError(r, 2, `"${ch.handle}" names 2 sources; give the ID of the one you mean`);
    expect(r.stderr).toMatch(new RegExp(`^ +${byChannel.id} +channel +${ch.id} `, 'm'));
    expect(r.stderr).toMatch(
      new RegExp(`^ +${bySearch.id} +search +${bySearch.externalId.replace(/[?*.]/g, '\\$&')}`, 'm'),
    );
    const paused = await h.database
      .sql`select id from sources where paused and id = any(${[byChannel.id, bySearch.id]}::int[])`;
    expect(paused).toHaveLength(0);

    const one = await cli(['sources', 'pause', String(bySearch.id)]);
    expectExit(one, 0);
    expect(one.stdout).toBe(`source ${bySearch.id} paused: search ${bySearch.externalId} (${bySearch.title})\n`);
  });

  it('pause by handle, resume by channel URL, remove by channel ID', async () => {
    const ch = channel(3);
    const s = await registerSource(h.deps, {
      kind: 'channel',
      ref: ch.id,
      limit: 5,
      langs: [],
      textOnly: false,
      cron: '0 7 * * *',
    });
    const isPaused = async () =>
      (await h.database.sql<{ paused: boolean }[]>`select paused from sources where id = ${s.id}`)[0]?.paused;

    const p = await cli(['sources', 'pause', ch.handle.toUpperCase()]);
    expectExit(p, 0);
    expect(p.stdout).toBe(`source ${s.id} paused: channel ${ch.id} (${ch.name})\n`);
    expect(await isPaused()).toBe(true);
    expect(await schedulerPattern('0 7 * * *')).toBeUndefined();

    const r = await cli(['sources', 'resume', `https://m.videosite.com/${ch.handle}`]);
    expectExit(r, 0);
    expect(r.stdout).toBe(`source ${s.id} resumed: channel ${ch.id} (${ch.name})\n`);
    expect(await isPaused()).toBe(false);
    expect(await schedulerPattern('0 7 * * *')).toBe('0 7 * * *');

    const d = await cli(['sources', 'remove', ch.id]);
    expectExit(d, 0);
    expect(d.stdout).toBe(`source ${s.id} removed: channel ${ch.id} (${ch.name})\n`);
    expect(await isPaused()).toBeUndefined();
    expect(await schedulerPattern('0 7 * * *')).toBeUndefined();
  });
});
