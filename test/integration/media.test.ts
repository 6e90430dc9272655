/**
 * Media of every platform through the CLI against the simulator over real HTTP, with real
 * Postgres, Redis and workers: a media list of 8 URLs on 5 platforms (transcript jobs answered
 * 202, an image, a video without speech) stores each item's metadata and its transcript, billed
 * exactly the published prices, as the simulator's `x-billable-requests` says; a second sync buys
 * nothing; a video-platform URL already stored through a channel is not bought again; search and
 * `export --kind media` return media beside videos and pages; `auto` without a minutes budget is
 * refused before anything is registered.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/admin/metrics.ts';
import { startAdminServer } from '../../src/admin/server.ts';
import { silentLogger } from '../../src/log.ts';
import { bearer, parseMetrics, value } from '../helpers/admin.ts';
import { expectCleanError, expectExit } from '../helpers/cli.ts';
import { once } from '../helpers/once.ts';
import { createPipelineHarness, runCli, type CliResult, type PipelineHarness } from '../helpers/pipeline.ts';

let h: PipelineHarness;

beforeAll(async () => {
  h = await createPipelineHarness('media', {
    catalog: { channels: 1, channelSizes: [6], noTranscriptShare: 0, privateShare: 0, goneShare: 0 },
    jobs: { queuedMs: 100, itemsPerSecond: 2000, transcriptJobMs: 200 },
  });
  h.startWorkers(['poller', 'sink']);
});

afterAll(async () => {
  await h?.close();
});

const cli = (args: string[]): Promise<CliResult> => runCli(args, h.env, 120_000);
const usedCredits = async () => (await h.api.me()).usedCredits;

function addedSourceId(r: CliResult): number {
  expectExit(r, 0);
  return Number(/^source (\d+) added/m.exec(r.stdout)![1]);
}

/** The first URL of `make(n)` for which `ok` holds, by the simulator's own facts. */
function pick(make: (n: number) => string, ok: (url: string) => boolean): string {
  for (let n = 1000; n < 2000; n++) if (ok(make(n))) return make(n);
  throw new Error('no such URL in the simulator');
}

const typeOf = (url: string) => h.sim.media.metadata(url)!.type;
const watch = (id: string) => `https://www.${h.sim.platform}.com/watch?v=${id}`;

/** The 8 URLs: 1 of the video platform, 7 of the four social platforms (picked once). */
let picked: ReturnType<typeof pickMedia> | undefined;
const media = () => (picked ??= pickMedia());
function pickMedia() {
  const [channel] = h.sim.catalog.channels();
  const videoId = h.sim.catalog.videoIds(channel!.id)![0]!;
  const social = {
    tiktokSpeech: pick(
      (n) => `https://www.tiktok.com/@user/video/${n}`,
      (u) => h.sim.media.hasSpeech(u),
    ),
    tiktokSilent: pick(
      (n) => `https://www.tiktok.com/@user/video/${n}`,
      (u) => !h.sim.media.hasSpeech(u),
    ),
    reel: pick(
      (n) => `https://www.instagram.com/reel/R${n}`,
      (u) => h.sim.media.hasSpeech(u),
    ),
    image: `https://www.facebook.com/photo/4242/`,
    fbVideo: pick(
      (n) => `https://www.facebook.com/i/videos/${n}`,
      (u) => h.sim.media.hasSpeech(u),
    ),
    tweet: pick(
      (n) => `https://twitter.com/user/status/${n}`,
      (u) => typeOf(u) === 'post',
    ),
    xPost: pick(
      (n) => `https://x.com/user/status/${n}`,
      (u) => typeOf(u) === 'carousel',
    ),
  };
  return { videoId, video: watch(videoId), social };
}

/** What the published prices say the list costs: per social item 1 + (1 for a video's native transcript); the video 2 batches of 1. */
function expectedCredits(urls: readonly string[]): number {
  return urls.reduce((n, u) => n + 1 + (typeOf(u) === 'video' ? 1 : 0), 0) + 2 * 2;
}

describe('a media list of 8 URLs on 5 platforms', () => {
  const synced = once(async () => {
    const { video, social } = media();
    const urls = Object.values(social);
    const r = await cli(['sources', 'add', 'media', video, ...urls]);
    const sourceId = addedSourceId(r);
    expect(r.stdout).toContain('8 media, transcripts native');
    const statsBefore = h.sim.stats().creditsCharged;
    const before = await usedCredits();
    const run = await cli(['backfill', '--source', String(sourceId), '--timeout', '60s']);
    expectExit(run, 0);
    return {
      sourceId,
      urls,
      spent: (await usedCredits()) - before,
      header: h.sim.stats().creditsCharged - statsBefore,
      run,
    };
  });

  it('stores each item with its platform, type, author, stats, media, tags and creation time', async () => {
    const { urls } = await synced();
    const rows = await h.database.sql<
      {
        url: string;
        platform: string;
        type: string;
        authorUsername: string | null;
        views: number | null;
        tags: string[];
        postedAt: Date | null;
        mediaInfo: { type: string } | null;
        transcriptState: string;
      }[]
    >`
      select url, platform, type, author_username as "authorUsername", views, tags, posted_at as "postedAt",
        media_info as "mediaInfo", transcript_state as "transcriptState"
      from media order by url`;
    expect(rows.map((r) => r.url).sort()).toEqual([...urls].sort());
    expect(new Set(rows.map((r) => r.platform))).toEqual(new Set(['tiktok', 'instagram', 'twitter', 'facebook']));
    for (const r of rows) {
      const m = h.sim.media.metadata(r.url)!;
      expect(r.platform).toBe(m.platform);
      expect(r.type).toBe(m.type);
      expect(r.authorUsername).toBe(m.author?.username ?? null);
      expect(r.views).toBe(m.stats?.views ?? null);
      expect(r.tags).toEqual(m.tags ?? []);
      expect(r.postedAt?.toISOString() ?? null).toBe(m.createdAt ?? null);
      expect(r.mediaInfo?.type).toBe(m.media?.type);
    }
  });

  it('a video gets its transcript (a 202 job polled and landed), one without speech is recorded empty, images and carousels none', async () => {
    const { social } = media();
    await synced();
    const rows = new Map(
      (
        await h.database.sql<{ url: string; state: string; text: string | null; jobId: string | null }[]>`
          select url, transcript_state as state, transcript_text as text, transcript_job_id as "jobId" from media`
      ).map((r) => [r.url, r]),
    );
    expect(rows.get(social.tiktokSpeech)!.state).toBe('stored');
    expect(rows.get(social.tiktokSpeech)!.text!.length).toBeGreaterThan(0);
    expect(rows.get(social.tiktokSpeech)!.jobId).toMatch(/^tj_/);
    expect(rows.get(social.reel)!.state).toBe('stored');
    expect(rows.get(social.fbVideo)!.state).toBe('stored');
    expect(rows.get(social.tiktokSilent)).toMatchObject({ state: 'empty', text: '' });
    expect(rows.get(social.image)!.state).toBe('none');
    expect(rows.get(social.xPost)!.state).toBe('none');
    const jobs = await h.database.sql<{ status: string; n: number }[]>`
      select status, count(*)::int as n from batches where kind = 'media' and mode = 'generate' group by status`;
    expect(jobs).toEqual([{ status: 'completed', n: [...rows.values()].filter((r) => r.jobId !== null).length }]);
  });

  it('the video-platform URL is stored as the video, in videos and transcripts', async () => {
    const { videoId } = media();
    await synced();
    const [v] = await h.database.sql<{ n: number }[]>`select count(*)::int as n from videos where id = ${videoId}`;
    const [t] = await h.database.sql<{ n: number }[]>`
      select count(*)::int as n from transcripts where video_id = ${videoId}`;
    expect(v!.n).toBe(1);
    expect(t!.n).toBe(1);
    const [m] = await h.database.sql<{ n: number }[]>`select count(*)::int as n from media where url like '%watch%'`;
    expect(m!.n).toBe(0);
  });

  it('bills exactly the published prices, as the x-billable-requests header says, recorded in Postgres', async () => {
    const { sourceId, urls, spent, header } = await synced();
    const expected = expectedCredits(urls);
    expect(spent).toBe(expected);
    expect(header).toBe(expected);
    const [c] = await h.database.sql<{ billed: number; headers: number }[]>`
      select coalesce(sum(credits), 0)::int as billed, count(*) filter (where basis <> 'header')::int as headers
      from credit_charges where source_id = ${sourceId}`;
    expect(c!.billed).toBe(expected);
    expect(c!.headers).toBe(0);
    const [run] = await h.database.sql<{ billed: number }[]>`
      select coalesce(sum(credits_billed), 0)::int as billed from sync_runs where source_id = ${sourceId}`;
    expect(run!.billed).toBe(expected);
  });

  it('media.added once per item; a second sync buys nothing and makes no event', async () => {
    const { sourceId, urls } = await synced();
    const added = await h.database.sql<{ url: string }[]>`
      select data->>'url' as url from events where type = 'media.added' order by id`;
    expect(added.map((a) => a.url).sort()).toEqual([...urls].sort());
    const [last] = await h.database.sql<{ id: number }[]>`select coalesce(max(id), 0)::float8 as id from events`;
    const before = await usedCredits();
    expectExit(await cli(['backfill', '--source', String(sourceId)]), 0);
    expect((await usedCredits()) - before).toBe(0);
    const after = await h.database.sql<{ type: string }[]>`
      select type from events where id > ${last!.id} and type like 'media.%'`;
    expect(after).toEqual([]);
  });

  it('status shows the media column and the media line; backfill --dry-run plans nothing more', async () => {
    const { sourceId } = await synced();
    const text = await cli(['status']);
    expectExit(text, 0);
    expect(text.stdout).toMatch(/^id\s+kind\s+title\s+videos\s+transcripts\s+media\s/m);
    expect(text.stdout).toMatch(new RegExp(`^${sourceId}\\s+media\\s+.*\\s7\\s`, 'm'));
    expect(text.stdout).toMatch(/Media: 7 stored, transcripts: 3 stored, 1 empty \(no speech\)/);
    const dry = await cli(['backfill', '--source', String(sourceId), '--dry-run']);
    expectExit(dry, 0);
    expect(dry.stdout).toContain('total: 0 batches');
  });

  it('the overview and /metrics count the media by platform and transcript state, as the table holds them', async () => {
    await synced();
    const token = 'media-admin-token-0123456789';
    const admin = await startAdminServer({
      port: 0,
      token,
      sql: h.database.sql,
      redis: h.redis,
      queues: h.queues,
      metrics: createMetrics({ processMetrics: false }),
      secrets: [h.sim.apiKey],
      log: silentLogger(),
    });
    try {
      const get = async (path: string) => {
        const res = await fetch(`${admin.url}${path}`, { headers: bearer(token) });
        return { status: res.status, text: await res.text() };
      };
      const rows = await h.database.sql<{ platform: string; state: string; n: number }[]>`
        select platform, transcript_state as state, count(*)::int as n from media group by 1, 2`;
      const total = (keep: (r: (typeof rows)[number]) => boolean) => rows.filter(keep).reduce((n, r) => n + r.n, 0);
      expect(total(() => true)).toBe(7);

      const page = await get('/');
      expect(page.status).toBe(200);
      expect(page.text).toContain(`<div class="v" id="media-stored">${total(() => true)}</div>`);
      expect(page.text).toContain(
        `<span id="media-transcripts">${total((r) => r.state === 'stored')}</span> transcripts`,
      );
      expect(page.text).toContain(`<span id="media-empty">${total((r) => r.state === 'empty')}</span> no speech`);
      const platforms = /<div class="s" id="media-platforms">([^<]*)<\/div>/.exec(page.text)?.[1];
      for (const p of ['tiktok', 'instagram', 'twitter', 'facebook'])
        expect(platforms).toContain(`${p} ${total((r) => r.platform === p)}`);

      const metrics = await get('/metrics');
      expect(metrics.status).toBe(200);
      const m = parseMetrics(metrics.text);
      for (const platform of ['tiktok', 'instagram', 'twitter', 'facebook', 'file'])
        for (const transcript of ['none', 'pending', 'stored', 'empty', 'failed', 'expired', 'over-budget', 'retry'])
          expect(value(m, 'vsi_media', { platform, transcript }), `${platform} ${transcript}`).toBe(
            total((r) => r.platform === platform && r.state === transcript),
          );
    } finally {
      await admin.close();
    }
  });

  it('replay --quarantined stores a media item an older build set aside from its raw copy: free, no API call', async () => {
    const { sourceId } = await synced();
    const { social } = media();
    const url = social.reel;
    const title = h.sim.media.metadata(url)!.title ?? null;
    const { sql } = h.database;
    const [batch] = await sql<{ jobId: string }[]>`
      select job_id as "jobId" from batches where source_id = ${sourceId} and kind = 'media' and mode = 'media'
      order by submitted_at limit 1`;
    // as a stricter build left it: the metadata read kept raw, quarantined, its row not written
    await sql`
      update batch_items set state = 'quarantined', reason = 'metadata does not match the interface at stats.views',
        reason_code = 'schema'
      where job_id = ${batch!.jobId} and video_id = ${url}`;
    await sql`update media set title = 'left by the older build', metadata_sha256 = 'older' where url = ${url}`;
    const before = await usedCredits();
    const requests = h.sim.stats().total;

    const dry = await cli(['replay', '--quarantined', '--dry-run']);
    expectExit(dry, 0);
    const [still] = await sql<{ state: string }[]>`
      select state from batch_items where job_id = ${batch!.jobId} and video_id = ${url}`;
    expect(still!.state).toBe('quarantined');

    const replay = await cli(['replay', '--quarantined']);
    expectExit(replay, 0);
    const [item] = await sql<{ state: string }[]>`
      select state from batch_items where job_id = ${batch!.jobId} and video_id = ${url}`;
    expect(item!.state).toBe('sunk');
    const [row] = await sql<{ title: string | null; state: string }[]>`
      select title, transcript_state as state from media where url = ${url}`;
    expect(row).toEqual({ title, state: 'stored' });
    expect((await usedCredits()) - before).toBe(0);
    expect(h.sim.stats().total - requests).toBe(1); // the /me of usedCredits() above
  });

  it('search finds words said in a media item, naming the platform and the moment', async () => {
    const { social } = media();
    await synced();
    const [chunk] = await h.database.sql<{ text: string; offsetMs: number }[]>`
      select s.text, s.offset_ms::float8 as "offsetMs" from media_segments s
      where s.url = ${social.tiktokSpeech} and s.offset_ms is not null and s.n > 1 order by s.n limit 1`;
    const phrase = chunk!.text
      .split(/\s+/)
      .filter((w) => /^[a-z]+$/i.test(w))
      .slice(0, 3)
      .join(' ');
    const r = await cli(['search', `"${phrase}"`, '--json', '--limit', '50']);
    expectExit(r, 0);
    const hits = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { kind?: string; url?: string; platform?: string; seconds?: number | null });
    const hit = hits.find((x) => x.kind === 'media' && x.url === social.tiktokSpeech);
    expect(hit, r.stdout).toBeDefined();
    expect(hit!.platform).toBe('tiktok');
    expect(typeof hit!.seconds).toBe('number');
  });

  it('export --kind media writes one record per item; the default JSONL holds videos, pages and media', async () => {
    const { urls } = await synced();
    const r = await cli(['export', '--format', 'jsonl', '--kind', 'media', '--out', '-']);
    expectExit(r, 0);
    const records = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { kind: string; url: string; platform: string; transcript_state: string });
    expect(records.map((x) => x.url).sort()).toEqual([...urls].sort());
    expect(records.every((x) => x.kind === 'media')).toBe(true);
    const all = await cli(['export', '--format', 'jsonl', '--out', '-']);
    expectExit(all, 0);
    const kinds = all.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { kind?: string }).kind ?? 'video');
    expect(kinds.filter((k) => k === 'media')).toHaveLength(urls.length);
    expect(kinds.filter((k) => k === 'video').length).toBeGreaterThan(0);
    const csv = await cli(['export', '--format', 'csv', '--kind', 'media', '--out', '-']);
    expectExit(csv, 0);
    expect(csv.stdout.split('\n')[0]).toMatch(/^url,platform,type,/);
  });
});

describe('a media URL of the video platform already stored through a channel', () => {
  it('is not bought again: the media list pays only for its other items', async () => {
    const [channel] = h.sim.catalog.channels();
    const ch = addedSourceId(await cli(['sources', 'add', 'channel', channel!.id]));
    expectExit(await cli(['backfill', '--source', String(ch), '--timeout', '60s']), 0);
    const stored = h.sim.catalog.videoIds(channel!.id)![2]!;
    const [v] = await h.database.sql<{ n: number }[]>`select count(*)::int as n from videos where id = ${stored}`;
    expect(v!.n).toBe(1);
    const post = pick(
      (n) => `https://www.tiktok.com/@other/video/${n}`,
      (u) => h.sim.media.hasSpeech(u),
    );
    const id = addedSourceId(await cli(['sources', 'add', 'media', watch(stored), post]));
    const before = await usedCredits();
    expectExit(await cli(['backfill', '--source', String(id), '--timeout', '60s']), 0);
    // the TikTok video's metadata and native transcript; nothing for the stored video
    expect((await usedCredits()) - before).toBe(2);
    const charges = await h.database.sql<{ endpoint: string }[]>`
      select endpoint from credit_charges where source_id = ${id} order by id`;
    expect(charges.map((c) => c.endpoint)).toEqual(['GET /metadata', 'GET /transcript']);
  });
});

describe('sources add media refusals', () => {
  it('auto or generate without --max-generate-minutes, or a URL of no platform: exit 2, nothing registered', async () => {
    const [before] = await h.database.sql<{ n: number }[]>`select count(*)::int as n from sources`;
    expectCleanError(
      await cli(['sources', 'add', 'media', 'https://www.tiktok.com/@u/video/1', '--mode', 'auto']),
      2,
      '--max-generate-minutes',
    );
    expectCleanError(
      await cli(['sources', 'add', 'media', 'https://example.com/page.html']),
      2,
      'not a media URL',
      'example.com/page.html',
    );
    expectCleanError(
      await cli(['sources', 'add', 'media', 'https://www.tiktok.com/@u/video/1', '--generate-missing']),
      2,
      '--mode auto',
    );
    const [after] = await h.database.sql<{ n: number }[]>`select count(*)::int as n from sources`;
    expect(after!.n).toBe(before!.n);
  });
});

describe('sources list and edit of a media source', () => {
  it('list shows each source transcript mode, minutes budget and translate setting (table and JSON)', async () => {
    const url = pick(
      (n) => `https://www.tiktok.com/@listed/video/${n}`,
      (u) => h.sim.media.hasSpeech(u),
    );
    const m = addedSourceId(
      await cli(['sources', 'add', 'media', url, '--mode', 'auto', '--max-generate-minutes', '40']),
    );
    const [channel] = h.sim.catalog.channels();
    const v = addedSourceId(
      await cli([
        'sources',
        'add',
        'videos',
        watch(h.sim.catalog.videoIds(channel!.id)![3]!),
        '--translate',
        'de',
        '--max-translate-minutes',
        '50',
      ]),
    );
    const list = await cli(['sources', 'list']);
    expectExit(list, 0);
    const header = list.stdout.split('\n')[0]!;
    expect(header).toMatch(/\blangs\s+transcripts\s+translate\s+credits\/day\b/);
    const row = (id: number) => list.stdout.split('\n').find((l) => new RegExp(`^${id}\\s`).test(l))!;
    expect(row(m)).toMatch(/\bmedia\b.*\bauto \(max 40 min\)\s+none\s/);
    expect(row(v)).toMatch(/\bvideos\b.*\bnative\s+de \(max 50 min\)\s/);

    const json = await cli(['sources', 'list', '--json']);
    expectExit(json, 0);
    const rows = JSON.parse(json.stdout) as {
      id: number;
      mediaMode: string | null;
      maxGenerateMinutes: number | null;
      translateLangs: string[];
      maxTranslateMinutes: number | null;
    }[];
    expect(rows.find((r) => r.id === m)).toMatchObject({
      mediaMode: 'auto',
      maxGenerateMinutes: 40,
      translateLangs: [],
    });
    expect(rows.find((r) => r.id === v)).toMatchObject({ translateLangs: ['de'], maxTranslateMinutes: 50 });
  });

  it('edit --mode generate --max-generate-minutes applies from the next sync: its transcript bought generated, within the budget', async () => {
    const url = pick(
      (n) => `https://www.tiktok.com/@edited/video/${n}`,
      (u) => h.sim.media.hasSpeech(u),
    );
    const id = addedSourceId(await cli(['sources', 'add', 'media', url]));
    const settings = async () =>
      (
        await h.database.sql<{ mode: string | null; minutes: number | null }[]>`
          select media_mode as mode, max_generate_minutes as minutes from sources where id = ${id}`
      )[0];
    const before = await settings();

    // a mode that generates needs a budget; a budget needs a mode that generates: refused, nothing changed
    expectCleanError(
      await cli(['sources', 'edit', String(id), '--mode', 'generate']),
      2,
      '--max-generate-minutes N',
      `source ${id} has none`,
    );
    expectCleanError(
      await cli(['sources', 'edit', String(id), '--max-generate-minutes', '10']),
      2,
      'needs --mode auto or --mode generate',
    );
    expectCleanError(
      await cli(['sources', 'edit', String(id), '--mode', 'loud']),
      2,
      "'loud'",
      'native, auto, generate',
    );
    expect(await settings()).toEqual(before);

    const edit = await cli(['sources', 'edit', String(id), '--mode', 'generate', '--max-generate-minutes', '30']);
    expectExit(edit, 0);
    expect(edit.stdout).toContain(`source ${id}: mode native -> generate, max generate minutes none -> 30`);
    expect(edit.stdout).toContain('next sync buys the media transcripts still due in --mode generate');
    expect(await settings()).toEqual({ mode: 'generate', minutes: 30 });

    expectExit(await cli(['backfill', '--source', String(id), '--timeout', '60s']), 0);
    const [job] = await h.database.sql<{ mode: string; minutes: number }[]>`
      select request->>'mode' as mode, ceil((request->>'durationS')::float8 / 60)::int as minutes
      from batches where source_id = ${id} and kind = 'media' and mode = 'generate'`;
    expect(job?.mode).toBe('generate');
    const [row] = await h.database.sql<{ state: string; mode: string }[]>`
      select transcript_state as state, transcript_mode as mode from media where url = ${url}`;
    expect(row).toEqual({ state: 'stored', mode: 'generate' });
    const [charged] = await h.database.sql<{ credits: number }[]>`
      select coalesce(sum(credits), 0)::int as credits from credit_charges where source_id = ${id} and endpoint = 'GET /transcript'`;
    expect(charged!.credits).toBe(2 * job!.minutes);
  });

  it('edit refuses --mode and --max-generate-minutes on a source that is not media, naming the flag and the kind', async () => {
    const [channel] = h.sim.catalog.channels();
    const id = addedSourceId(await cli(['sources', 'add', 'videos', watch(h.sim.catalog.videoIds(channel!.id)![4]!)]));
    expectCleanError(
      await cli(['sources', 'edit', String(id), '--mode', 'auto', '--max-generate-minutes', '5']),
      2,
      `--mode does not apply to a videos source (source ${id})`,
    );
    expectCleanError(
      await cli(['sources', 'edit', String(id), '--max-generate-minutes', '5']),
      2,
      `--max-generate-minutes does not apply to source ${id} (a videos source without --generate-missing)`,
    );
    const [s] = await h.database.sql<{ mode: string | null; minutes: number | null }[]>`
      select media_mode as mode, max_generate_minutes as minutes from sources where id = ${id}`;
    expect(s).toEqual({ mode: null, minutes: null });
  });
});
