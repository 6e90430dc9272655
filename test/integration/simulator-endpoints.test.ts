/**
 * Every endpoint of the simulator answers what the client's schemas accept, with the
 * behaviour UPSTREAM.md describes (references in all accepted forms, transcript shaping, 206,
 * async transcript and crawl jobs, paging), and the catalog is deterministic.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AccountSchema,
  ChannelSchema,
  CrawlJobSchema,
  ErrorBodySchema,
  JobIdSchema,
  JobResultSchema,
  MetadataSchema,
  PlaylistSchema,
  ScrapeSchema,
  SearchResultsSchema,
  SiteMapSchema,
  TranscriptSchema,
  TranslatedTranscriptSchema,
  VideoIdsSchema,
  VideoSchema,
  type TranscriptChunk,
  type Video,
} from '../../src/api/schemas.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { admin, call } from '../helpers/sim-http.ts';

let sim: Simulator;
let ch: ReturnType<Simulator['catalog']['channels']>[number];
/** videos of the first channel by what they answer */
let pub: string[];
let privateId: string;
let goneId: string;
let noTranscriptId: string;

beforeAll(async () => {
  sim = await startSimulator({
    seed: 7,
    clockSpeed: 0,
    catalog: {
      channelSizes: [400],
      privateShare: 0.05,
      goneShare: 0.05,
      noTranscriptShare: 0.15,
      transcriptChunks: { min: 20, max: 40 },
    },
  });
  ch = sim.catalog.channels()[0]!;
  const infos = sim.catalog.videoIds(ch.id)!.map((id) => sim.catalog.videoInfo(id)!);
  pub = infos.filter((i) => i.fate === 'public' && i.transcriptLanguages.length > 0).map((i) => i.id);
  privateId = infos.find((i) => i.fate === 'private')!.id;
  goneId = infos.find((i) => i.fate === 'gone')!.id;
  noTranscriptId = infos.find((i) => i.fate === 'public' && i.transcriptLanguages.length === 0)!.id;
});
afterAll(async () => {
  await sim.close();
});

describe('platform resources', () => {
  it('GET video answers a Video for an ID or a URL; 403 private, 404 gone or unknown', async () => {
    const id = pub[0]!;
    for (const ref of [id, `https://www.videosite.com/watch?v=${id}`, `https://youtu.example/${id}`]) {
      const r = await call(sim, 'GET', '/videosite/video', { query: { id: ref } });
      expect(r.status).toBe(200);
      expect(VideoSchema.parse(r.json).id).toBe(id);
    }
    expect((await call(sim, 'GET', '/videosite/video', { query: { id: privateId } })).status).toBe(403);
    expect((await call(sim, 'GET', '/videosite/video', { query: { id: goneId } })).status).toBe(404);
    expect((await call(sim, 'GET', '/videosite/video', { query: { id: 'not a video' } })).status).toBe(404);
  });

  it('videos have realistic fields: nulls, absent optionals, unicode, long descriptions, no transcript', async () => {
    const videos: Video[] = sim.catalog.videoIds(ch.id)!.map((id) => VideoSchema.parse(sim.catalog.video(id)));
    expect(videos.some((v) => v.uploadDate === null)).toBe(true);
    expect(videos.some((v) => !('uploadDate' in v))).toBe(true);
    expect(videos.some((v) => v.likeCount === null)).toBe(true);
    expect(videos.some((v) => v.viewCount === null)).toBe(true);
    expect(videos.some((v) => !('thumbnail' in v))).toBe(true);
    expect(videos.some((v) => v.description === '')).toBe(true);
    expect(videos.some((v) => v.description.length > 1000)).toBe(true);
    expect(videos.some((v) => /[^\x00-\x7f]/.test(v.title))).toBe(true);
    expect(videos.some((v) => v.tags.length === 0)).toBe(true);
    expect(videos.some((v) => v.transcriptLanguages.length === 0)).toBe(true);
    expect(videos.some((v) => v.transcriptLanguages.length >= 2)).toBe(true);
    // IDs look like the platform's
    for (const v of videos) expect(v.id).toMatch(/^[A-Za-z0-9_-]{11}$/);
    expect(ch.id).toMatch(/^UC[A-Za-z0-9_-]{22}$/);
    expect(ch.playlistIds[0]).toMatch(/^PL[A-Za-z0-9_-]{32}$/);
    expect(ch.handle).toMatch(/^@/);
  });

  it('GET channel resolves an ID, a URL, a handle with and without @, and a custom-name URL', async () => {
    const refs = [
      ch.id,
      `https://www.videosite.com/channel/${ch.id}`,
      ch.handle,
      ch.handle.slice(1),
      `https://www.videosite.com/${ch.handle}`,
      `https://www.videosite.com/c/${ch.customName}`,
    ];
    for (const id of refs) {
      const r = await call(sim, 'GET', '/videosite/channel', { query: { id } });
      expect(r.status, id).toBe(200);
      const c = ChannelSchema.parse(r.json);
      expect(c).toMatchObject({ id: ch.id, name: ch.name, handle: ch.handle });
      expect(c.videoCount).toBe(ch.videoCount + ch.shortCount + ch.liveCount);
    }
    expect((await call(sim, 'GET', '/videosite/channel', { query: { id: '@nobody-at-all' } })).status).toBe(404);
  });

  it('every channel of a larger catalog resolves by handle, bare handle and custom-name URL', async () => {
    const many = await startSimulator({ seed: 3, catalog: { channels: 40, videosPerChannel: { min: 1, max: 2 } } });
    try {
      for (const c of many.catalog.channels()) {
        for (const id of [c.handle, c.handle.slice(1), `https://www.videosite.com/c/${c.customName}`]) {
          const r = await call(many, 'GET', '/videosite/channel', { query: { id } });
          expect(r.status, id).toBe(200);
          expect(ChannelSchema.parse(r.json).id).toBe(c.id);
        }
      }
    } finally {
      await many.close();
    }
  });

  it('GET playlist and playlist/videos', async () => {
    const id = ch.playlistIds[0]!;
    const p = PlaylistSchema.parse((await call(sim, 'GET', '/videosite/playlist', { query: { id } })).json);
    expect(p.channel.id).toBe(ch.id);
    const all = VideoIdsSchema.parse((await call(sim, 'GET', '/videosite/playlist/videos', { query: { id } })).json);
    expect(all.videoIds.length + all.shortIds.length + all.liveIds.length).toBe(p.videoCount);
    const two = VideoIdsSchema.parse(
      (await call(sim, 'GET', '/videosite/playlist/videos', { query: { id, limit: 2 } })).json,
    );
    expect(two.videoIds).toEqual(all.videoIds.slice(0, 2));
    expect((await call(sim, 'GET', '/videosite/playlist', { query: { id: 'PL' + 'x'.repeat(32) } })).status).toBe(404);
  });

  it('GET channel/videos: limit default 30, type filters the lists', async () => {
    const all = VideoIdsSchema.parse(
      (await call(sim, 'GET', '/videosite/channel/videos', { query: { id: ch.handle } })).json,
    );
    expect(all.videoIds).toHaveLength(30);
    expect(all.shortIds).toHaveLength(ch.shortCount);
    expect(all.liveIds).toHaveLength(ch.liveCount);
    expect(all.videoIds).toEqual(sim.catalog.videoIds(ch.id)!.slice(0, 30));
    const shorts = VideoIdsSchema.parse(
      (await call(sim, 'GET', '/videosite/channel/videos', { query: { id: ch.id, type: 'short' } })).json,
    );
    expect(shorts).toEqual({ videoIds: [], shortIds: all.shortIds, liveIds: [] });
    const bad = await call(sim, 'GET', '/videosite/channel/videos', { query: { id: ch.id, type: 'reels' } });
    expect(bad.status).toBe(400);
    expect(ErrorBodySchema.parse(bad.json).message).toContain('type');
  });
});

describe('transcripts', () => {
  it('GET transcript: chunks by default, chunkSize merges, text joins; lang falls back to the first available', async () => {
    const id = pub[0]!;
    const info = sim.catalog.videoInfo(id)!;
    const r = await call(sim, 'GET', '/videosite/transcript', { query: { videoId: id } });
    expect(r.status).toBe(200);
    const t = TranscriptSchema.parse(r.json);
    expect(t.lang).toBe(info.transcriptLanguages[0]);
    expect(t.availableLangs).toEqual(info.transcriptLanguages);
    const chunks = t.content as TranscriptChunk[];
    expect(chunks.length).toBeGreaterThanOrEqual(20);

    const merged = TranscriptSchema.parse(
      (
        await call(sim, 'GET', '/videosite/transcript', {
          query: { url: `https://www.videosite.com/watch?v=${id}`, chunkSize: 400 },
        })
      ).json,
    ).content as TranscriptChunk[];
    expect(merged.length).toBeLessThan(chunks.length);
    expect(merged.map((c) => c.text).join(' ')).toBe(chunks.map((c) => c.text).join(' '));
    for (const c of merged) expect(c.text.length <= 400 || chunks.some((o) => o.text === c.text)).toBe(true);
    expect(merged[0]!.offset).toBe(chunks[0]!.offset);

    const text = TranscriptSchema.parse(
      (await call(sim, 'GET', '/videosite/transcript', { query: { videoId: id, text: true, lang: 'xx' } })).json,
    );
    expect(text.content).toBe(chunks.map((c) => c.text).join(' '));
    expect(text.lang).toBe(info.transcriptLanguages[0]);

    const bad = await call(sim, 'GET', '/videosite/transcript', { query: { videoId: id, text: true, chunkSize: 100 } });
    expect(bad.status).toBe(400);
    expect(ErrorBodySchema.parse(bad.json).message).toContain('chunkSize');
  });

  it('a video without transcripts answers 206 with an Error body (and costs a credit)', async () => {
    const before = AccountSchema.parse((await call(sim, 'GET', '/me')).json).usedCredits;
    const r = await call(sim, 'GET', '/videosite/transcript', { query: { videoId: noTranscriptId } });
    expect(r.status).toBe(206);
    expect(ErrorBodySchema.parse(r.json).error).toBe('transcript-unavailable');
    expect(AccountSchema.parse((await call(sim, 'GET', '/me')).json).usedCredits).toBe(before + 1);
    expect((await call(sim, 'GET', '/videosite/transcript', { query: { videoId: privateId } })).status).toBe(403);
  });

  it('translate answers the target language with the same timings', async () => {
    const id = pub[1]!;
    const orig = TranscriptSchema.parse(
      (await call(sim, 'GET', '/videosite/transcript', { query: { videoId: id } })).json,
    );
    const target = orig.availableLangs.includes('ja') ? 'ko' : 'ja';
    const r = await call(sim, 'GET', '/videosite/transcript/translate', { query: { videoId: id, lang: target } });
    expect(r.status).toBe(200);
    const tr = TranslatedTranscriptSchema.parse(r.json);
    expect(tr.lang).toBe(target);
    expect((tr.content as TranscriptChunk[]).map((c) => c.offset)).toEqual(
      (orig.content as TranscriptChunk[]).map((c) => c.offset),
    );
    expect((await call(sim, 'GET', '/videosite/transcript/translate', { query: { videoId: id } })).status).toBe(400);
  });

  it('GET /transcript: 200 for a catalog video, 202 job for generate mode and other URLs, job completes on the clock', async () => {
    const id = pub[2]!;
    const native = await call(sim, 'GET', '/transcript', {
      query: { url: `https://www.videosite.com/watch?v=${id}`, mode: 'native' },
    });
    expect(native.status).toBe(200);
    TranscriptSchema.parse(native.json);
    expect(
      (
        await call(sim, 'GET', '/transcript', {
          query: { url: `https://www.videosite.com/watch?v=${noTranscriptId}`, mode: 'native' },
        })
      ).status,
    ).toBe(206);

    const jobQueries: Array<Record<string, string | boolean>> = [
      { url: `https://www.videosite.com/watch?v=${id}`, mode: 'generate' },
      { url: 'https://clips.example.net/v/123', text: true },
    ];
    for (const query of jobQueries) {
      const r = await call(sim, 'GET', '/transcript', { query });
      expect(r.status).toBe(202);
      const { jobId } = JobIdSchema.parse(r.json);
      const seen: string[] = [];
      for (let i = 0; i < 3; i++) {
        const j = await call(sim, 'GET', `/transcript/${jobId}`);
        expect(j.status).toBe(200);
        const res = JobResultSchema.parse(j.json);
        seen.push(res.status);
        if (res.status === 'completed') {
          expect(res.content).toBeDefined();
          expect(typeof res.lang).toBe('string');
        }
        sim.clock.advance(2000);
      }
      expect(seen).toEqual(['queued', 'active', 'completed']);
    }
    expect((await call(sim, 'GET', '/transcript/tj_unknown')).status).toBe(404);
    expect((await call(sim, 'GET', '/transcript', { query: { url: 'not a url' } })).status).toBe(400);
  });
});

describe('web, search, metadata, me', () => {
  it('scrape and map', async () => {
    const s = ScrapeSchema.parse(
      (await call(sim, 'GET', '/web/scrape', { query: { url: 'https://example.org/docs' } })).json,
    );
    expect(s.countCharacters).toBe(s.content.length);
    expect(s.urls.length).toBeGreaterThan(0);
    expect(s.content).toMatch(/\]\(https?:/);
    const noLinks = ScrapeSchema.parse(
      (await call(sim, 'GET', '/web/scrape', { query: { url: 'https://example.org/docs', noLinks: true } })).json,
    );
    expect(noLinks.content).not.toMatch(/\]\(https?:/);
    const m = SiteMapSchema.parse(
      (await call(sim, 'GET', '/web/map', { query: { url: 'https://example.org/' } })).json,
    );
    expect(m.urls.length).toBeGreaterThan(1);
    expect((await call(sim, 'GET', '/web/scrape', { query: { url: 'ftp://example.org/' } })).status).toBe(400);
  });

  it('crawl: scraping, then completed pages paged with an absolute next URL until none is left', async () => {
    const created = await call(sim, 'POST', '/web/crawl', { body: { url: 'https://example.org/', limit: 25 } });
    const { jobId } = JobIdSchema.parse(created.json);
    expect(CrawlJobSchema.parse((await call(sim, 'GET', `/web/crawl/${jobId}`)).json).status).toBe('scraping');
    sim.clock.advance(60_000);
    const pages: string[] = [];
    let next: string | undefined = `${sim.baseUrl}/web/crawl/${jobId}`;
    while (next !== undefined) {
      expect(next.startsWith(`${sim.baseUrl}/web/crawl/${jobId}`)).toBe(true);
      const job = CrawlJobSchema.parse((await call(sim, 'GET', next)).json);
      expect(job.status).toBe('completed');
      pages.push(...job.pages!.map((p) => p.url));
      next = job.next;
    }
    const expected = Math.min(
      25,
      SiteMapSchema.parse((await call(sim, 'GET', '/web/map', { query: { url: 'https://example.org/' } })).json).urls
        .length,
    );
    expect(pages).toHaveLength(expected);
    expect(new Set(pages).size).toBe(expected);
  });

  it('search pages with nextPageToken only without limit', async () => {
    const first = SearchResultsSchema.parse(
      (await call(sim, 'GET', '/videosite/search', { query: { query: 'coffee 🔥' } })).json,
    );
    expect(first.query).toBe('coffee 🔥');
    expect(first.results.length).toBeGreaterThan(0);
    expect(first.nextPageToken).toBeDefined();
    const second = SearchResultsSchema.parse(
      (
        await call(sim, 'GET', '/videosite/search', {
          query: { query: 'coffee 🔥', nextPageToken: first.nextPageToken! },
        })
      ).json,
    );
    expect(second.results[0]).not.toEqual(first.results[0]);
    const limited = SearchResultsSchema.parse(
      (await call(sim, 'GET', '/videosite/search', { query: { query: 'coffee', limit: 7, type: 'video' } })).json,
    );
    expect(limited.results).toHaveLength(7);
    expect(limited.results.every((i) => i.type === 'video')).toBe(true);
    expect(limited.nextPageToken).toBeUndefined();
  });

  it('search takes the interface filter values, features as repeated keys (one key is a list of one)', async () => {
    const search = (qs: string) => call(sim, 'GET', `${sim.baseUrl}/videosite/search?query=coffee&limit=3&${qs}`);
    for (const qs of [
      'features=hd&features=creative-commons&features=4k',
      'features=vr180',
      'uploadDate=week&type=movie&duration=long&sortBy=views',
    ]) {
      const r = await search(qs);
      expect(r.status, qs).toBe(200);
      expect(SearchResultsSchema.parse(r.json).results).toHaveLength(3);
    }
    // one bad element of the list is named by its place; the old underscore spelling is not the interface's
    const bad = await search('features=hd&features=creative_commons');
    expect(bad.status).toBe(400);
    expect(ErrorBodySchema.parse(bad.json).message).toContain('features[1]');
    for (const qs of ['uploadDate=yesterday', 'type=short', 'duration=forever', 'sortBy=likes']) {
      const r = await search(qs);
      expect(r.status, qs).toBe(400);
      expect(ErrorBodySchema.parse(r.json).message, qs).toContain(qs.split('=')[0]!);
    }
  });

  it('metadata and me', async () => {
    const m = MetadataSchema.parse(
      (await call(sim, 'GET', '/metadata', { query: { url: `https://www.videosite.com/watch?v=${pub[0]}` } })).json,
    );
    expect(m).toMatchObject({ platform: 'videosite', id: pub[0] });
    MetadataSchema.parse(
      (await call(sim, 'GET', '/metadata', { query: { url: 'https://photos.example.com/p/abc' } })).json,
    );
    expect(
      (await call(sim, 'GET', '/metadata', { query: { url: `https://www.videosite.com/watch?v=${goneId}` } })).status,
    ).toBe(404);
    AccountSchema.parse((await call(sim, 'GET', '/me')).json);
  });

  it('unknown endpoints answer 404 with an Error body', async () => {
    const r = await call(sim, 'GET', '/videosite/nothing');
    expect(r.status).toBe(404);
    ErrorBodySchema.parse(r.json);
    expect((await call(sim, 'DELETE', '/me')).status).toBe(404);
  });
});

describe('options', () => {
  it('--platform sets the path segment', async () => {
    const other = await startSimulator({ platform: 'vidz', catalog: { channels: 1 } });
    try {
      const c = other.catalog.channels()[0]!;
      expect((await call(other, 'GET', '/vidz/channel', { query: { id: c.id } })).status).toBe(200);
      expect((await call(other, 'GET', '/videosite/channel', { query: { id: c.id } })).status).toBe(404);
    } finally {
      await other.close();
    }
  });

  it('the same seed gives the same catalog, videos and transcripts; another seed does not', async () => {
    const [a, b, c] = await Promise.all([
      startSimulator({ seed: 99 }),
      startSimulator({ seed: 99 }),
      startSimulator({ seed: 100 }),
    ]);
    try {
      const ca = (await admin(a, 'GET', '/catalog')).json;
      expect((await admin(b, 'GET', '/catalog')).json).toEqual(ca);
      expect((await admin(c, 'GET', '/catalog')).json).not.toEqual(ca);
      const chId = a.catalog.channels()[1]!.id;
      const ids = a.catalog.videoIds(chId)!;
      expect(b.catalog.videoIds(chId)).toEqual(ids);
      for (const id of ids.slice(0, 10)) {
        const q = { query: { id } };
        expect((await call(b, 'GET', '/videosite/video', q)).text).toBe(
          (await call(a, 'GET', '/videosite/video', q)).text,
        );
      }
      const withTranscript = ids.find(
        (id) => a.catalog.videoInfo(id)!.transcriptLanguages.length > 0 && a.catalog.videoInfo(id)!.fate === 'public',
      )!;
      const tq = { query: { videoId: withTranscript } };
      expect((await call(b, 'GET', '/videosite/transcript', tq)).text).toBe(
        (await call(a, 'GET', '/videosite/transcript', tq)).text,
      );
    } finally {
      await Promise.all([a.close(), b.close(), c.close()]);
    }
  });

  it('refuses invalid options naming the setting', async () => {
    await expect(startSimulator({ jobs: { itemsPerSecond: -1 } })).rejects.toThrow(/itemsPerSecond/);
    await expect(startSimulator({ platform: 'Bad Segment' })).rejects.toThrow(/platform/);
  });
});
