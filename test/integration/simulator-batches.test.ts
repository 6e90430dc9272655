/**
 * Batch jobs of the simulator, on the wire: lifecycle, expiry, retention, purge, limits,
 * expansion of channels and playlists, and what they cost on /me.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AccountSchema,
  BatchResultsSchema,
  JobIdSchema,
  VideoIdsSchema,
  type BatchResults,
} from '../../src/api/schemas.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { call } from '../helpers/sim-http.ts';

const RETENTION_MS = 10 * 60_000;
const PURGE_MS = 60 * 60_000;
const LIFETIME_MS = 60_000;

let sim: Simulator;
let big: { id: string; handle: string };

beforeAll(async () => {
  sim = await startSimulator({
    seed: 42,
    catalog: { channelSizes: [300, 40], playlistSize: { min: 20, max: 20 } },
    jobs: {
      queuedMs: 1000,
      itemsPerSecond: 100,
      lifetimeMs: LIFETIME_MS,
      retentionMs: RETENTION_MS,
      purgeMs: PURGE_MS,
    },
    // a frozen clock: time moves only when a test advances it
    clockSpeed: 0,
  });
  const c = sim.catalog.channels()[0]!;
  big = { id: c.id, handle: c.handle };
});
afterAll(async () => {
  await sim.close();
});

async function usedCredits(): Promise<number> {
  const r = await call(sim, 'GET', '/me');
  expect(r.status).toBe(200);
  return AccountSchema.parse(r.json).usedCredits;
}

async function createBatch(kind: 'video' | 'transcript', body: unknown): Promise<string> {
  const r = await call(sim, 'POST', `/videosite/${kind}/batch`, { body });
  expect(r.status, r.text).toBe(200);
  return JobIdSchema.parse(r.json).jobId;
}

async function poll(jobId: string): Promise<BatchResults> {
  const r = await call(sim, 'GET', `/videosite/batch/${jobId}`);
  expect(r.status, r.text).toBe(200);
  return BatchResultsSchema.parse(r.json);
}

function countStates(b: BatchResults) {
  const processing = b.results.filter((i) => i.errorCode === 'processing').length;
  const succeeded = b.results.filter((i) => !i.errorCode && (i.video || i.transcript)).length;
  const failed = b.results.filter((i) => i.errorCode && i.errorCode !== 'processing').length;
  return { processing, succeeded, failed };
}

describe('batch lifecycle', () => {
  it('a 300-video channel batch with limit 250 goes queued -> active -> completed, stats match, credits rise by 251', async () => {
    const before = await usedCredits();
    const jobId = await createBatch('video', { channelId: big.handle, limit: 250 });
    expect(await usedCredits()).toBe(before + 251);

    const queued = await poll(jobId);
    expect(queued.status).toBe('queued');
    expect(queued.results).toHaveLength(250);
    expect(countStates(queued)).toEqual({ processing: 250, succeeded: 0, failed: 0 });
    expect(queued.stats).toEqual({ total: 250, succeeded: 0, failed: 0 });

    sim.clock.advance(1000 + 1000); // queued 1 s, then 1 s at 100 items/s
    const active = await poll(jobId);
    expect(active.status).toBe('active');
    const a = countStates(active);
    expect(a.processing).toBe(150);
    expect(active.stats).toEqual({ total: 250, succeeded: a.succeeded, failed: a.failed });
    expect(active.completedAt ?? null).toBeNull();

    sim.clock.advance(1500);
    const done = await poll(jobId);
    expect(done.status).toBe('completed');
    expect(done.errorCode).toBeUndefined();
    expect(typeof done.completedAt).toBe('string');
    const d = countStates(done);
    expect(d.processing).toBe(0);
    expect(done.stats).toEqual({ total: 250, succeeded: d.succeeded, failed: d.failed });
    expect(d.succeeded + d.failed).toBe(250);
    // the items are the channel's 250 newest regular videos, each with its own metadata
    expect(done.results.map((i) => i.videoId)).toEqual(sim.catalog.videoIds(big.id)!.slice(0, 250));
    for (const item of done.results) {
      if (item.video) expect(item.video.id).toBe(item.videoId);
      else expect(['forbidden', 'not-found']).toContain(item.errorCode);
    }
    // polling is free
    expect(await usedCredits()).toBe(before + 251);
  });

  it('a batch still running past its lifetime is failed with job-expired; finished items result-unavailable', async () => {
    sim.setJobSettings({ itemsPerSecond: 1 }); // 250 items would take 250 s, the lifetime is 60 s
    try {
      const jobId = await createBatch('video', { channelId: big.id, limit: 250 });
      sim.clock.advance(30_000);
      expect((await poll(jobId)).status).toBe('active');
      sim.clock.advance(LIFETIME_MS);
      const expired = await poll(jobId);
      expect(expired.status).toBe('failed');
      expect(expired.errorCode).toBe('job-expired');
      const finished = Math.floor((LIFETIME_MS - 1000) / 1000);
      const codes = expired.results.map((i) => i.errorCode);
      expect(codes.filter((c) => c === 'result-unavailable')).toHaveLength(finished);
      expect(codes.filter((c) => c === 'processing')).toHaveLength(250 - finished);
      expect(expired.results.every((i) => i.video == null)).toBe(true);
    } finally {
      sim.setJobSettings({ itemsPerSecond: 100 });
    }
  });

  it('a completed batch answers result-unavailable after the retention period, then 404 after the purge', async () => {
    const jobId = await createBatch('video', { channelId: big.id, limit: 20 });
    sim.clock.advance(2000);
    const done = await poll(jobId);
    expect(done.status).toBe('completed');
    expect(done.results.some((i) => i.video)).toBe(true);

    sim.clock.advance(RETENTION_MS);
    const gone = await poll(jobId);
    expect(gone.status).toBe('completed');
    expect(gone.results.map((i) => i.errorCode)).toEqual(new Array(20).fill('result-unavailable'));
    expect(gone.stats).toEqual(done.stats);

    sim.clock.advance(PURGE_MS);
    const r = await call(sim, 'GET', `/videosite/batch/${jobId}`);
    expect(r.status).toBe(404);
    expect(r.json).toMatchObject({ error: 'not-found' });
  });

  it('an unknown job ID answers 404', async () => {
    const r = await call(sim, 'GET', '/videosite/batch/no-such-job');
    expect(r.status).toBe(404);
    expect(r.json).toMatchObject({ error: 'not-found' });
  });

  it('a batch that fails partway ends failed without errorCode; its unfinished items are internal-error', async () => {
    const failing = await startSimulator({
      seed: 5,
      clockSpeed: 0,
      catalog: { channelSizes: [100], privateShare: 0, goneShare: 0 },
      jobs: { failRate: 1, itemErrorRate: 0.2 },
    });
    try {
      const created = await call(failing, 'POST', '/videosite/video/batch', {
        body: { channelId: failing.catalog.channels()[0]!.id, limit: 100 },
      });
      const { jobId } = JobIdSchema.parse(created.json);
      failing.clock.advance(60_000);
      const b = BatchResultsSchema.parse((await call(failing, 'GET', `/videosite/batch/${jobId}`)).json);
      expect(b.status).toBe('failed');
      expect(b.errorCode).toBeUndefined();
      expect(b.completedAt ?? null).toBeNull();
      const withVideo = b.results.filter((i) => i.video).length;
      const errors = b.results.filter((i) => i.errorCode);
      expect(errors.length).toBeGreaterThan(0);
      expect(errors.every((i) => i.errorCode === 'internal-error')).toBe(true);
      expect(b.stats).toEqual({ total: 100, succeeded: withVideo, failed: errors.length });
      expect(withVideo + errors.length).toBe(100);
    } finally {
      await failing.close();
    }
  });

  it('another key cannot read a batch', async () => {
    sim.setAccount('other-key', { plan: 'pro' });
    const jobId = await createBatch('video', { channelId: big.id, limit: 1 });
    expect((await call(sim, 'GET', `/videosite/batch/${jobId}`, { key: 'other-key' })).status).toBe(404);
  });
});

describe('batch contents', () => {
  it('a channel batch without limit takes 10 videos, and skips shorts and lives', async () => {
    const before = await usedCredits();
    const jobId = await createBatch('video', { channelId: big.id });
    expect(await usedCredits()).toBe(before + 11);
    const ids = VideoIdsSchema.parse(
      (await call(sim, 'GET', '/videosite/channel/videos', { query: { id: big.id, limit: 5000 } })).json,
    );
    expect(ids.shortIds.length).toBeGreaterThan(0);
    expect(ids.liveIds.length).toBeGreaterThan(0);
    sim.clock.advance(5000);
    const b = await poll(jobId);
    expect(b.stats.total).toBe(10);
    expect(b.results.map((i) => i.videoId)).toEqual(ids.videoIds.slice(0, 10));
  });

  it('a playlist batch holds only the playlist regular videos', async () => {
    const playlistId = sim.catalog.channels()[0]!.playlistIds[0]!;
    const listing = VideoIdsSchema.parse(
      (await call(sim, 'GET', '/videosite/playlist/videos', { query: { id: playlistId } })).json,
    );
    expect(listing.videoIds.length + listing.shortIds.length + listing.liveIds.length).toBe(20);
    const jobId = await createBatch('video', {
      playlistId: `https://www.videosite.com/playlist?list=${playlistId}`,
      limit: 50,
    });
    sim.clock.advance(5000);
    const b = await poll(jobId);
    expect(b.results.map((i) => i.videoId)).toEqual(listing.videoIds);
    for (const id of [...listing.shortIds, ...listing.liveIds])
      expect(b.results.map((i) => i.videoId)).not.toContain(id);
  });

  it('videoIds accepts IDs and URLs, counts a video once, and reports unknown IDs as not-found', async () => {
    const [a, b, c] = sim.catalog.videoIds(big.id)!;
    const before = await usedCredits();
    const jobId = await createBatch('video', {
      videoIds: [
        a,
        `https://www.videosite.com/watch?v=${a}&t=10`,
        `https://vs.be/${b}`,
        `https://www.videosite.com/shorts/${c}`,
        `https://www.videosite.com/embed/${c}`,
        'AAAAAAAAAAA',
      ],
    });
    expect(await usedCredits()).toBe(before + 1 + 4);
    sim.clock.advance(5000);
    const r = await poll(jobId);
    expect(r.results.map((i) => i.videoId)).toEqual([a, b, c, 'AAAAAAAAAAA']);
    expect(r.results[3]).toMatchObject({ videoId: 'AAAAAAAAAAA', errorCode: 'not-found' });
    expect(r.stats.total).toBe(4);
  });

  it('refuses more videoIds than the maximum, naming the field', async () => {
    const small = await startSimulator({ maxVideoIds: 3 });
    try {
      const ids = small.catalog.videoIds(small.catalog.channels()[0]!.id)!.slice(0, 4);
      const r = await call(small, 'POST', '/videosite/video/batch', { body: { videoIds: ids } });
      expect(r.status).toBe(400);
      expect(r.json).toMatchObject({ error: 'invalid-request' });
      expect((r.json as { message: string }).message).toContain('videoIds');
      expect(AccountSchema.parse((await call(small, 'GET', '/me')).json).usedCredits).toBe(0);
    } finally {
      await small.close();
    }
  });

  it('answers 400 naming the field for an invalid body, and 404 for an unknown channel, charging nothing', async () => {
    const before = await usedCredits();
    const both = await call(sim, 'POST', '/videosite/video/batch', { body: { channelId: big.id, playlistId: 'PLx' } });
    expect(both.status).toBe(400);
    expect((both.json as { message: string }).message).toContain('playlistId');
    const badLimit = await call(sim, 'POST', '/videosite/video/batch', { body: { channelId: big.id, limit: 5001 } });
    expect(badLimit.status).toBe(400);
    expect((badLimit.json as { message: string }).message).toContain('limit');
    const notJson = await call(sim, 'POST', '/videosite/video/batch', { rawBody: '{"channelId":' });
    expect(notJson.status).toBe(400);
    const unknown = await call(sim, 'POST', '/videosite/video/batch', { body: { channelId: '@nobody-here' } });
    expect(unknown.status).toBe(404);
    expect(await usedCredits()).toBe(before);
  });

  it('transcript batch items carry transcripts in the asked language when available, else the first one', async () => {
    const ids = sim.catalog.videoIds(big.id)!.slice(0, 120);
    const jobId = await createBatch('transcript', { videoIds: ids, lang: 'fr', text: true });
    sim.clock.advance(10_000);
    const b = await poll(jobId);
    expect(b.status).toBe('completed');
    let withTranscript = 0;
    for (const item of b.results) {
      const info = sim.catalog.videoInfo(item.videoId)!;
      if (info.fate === 'private') expect(item).toMatchObject({ errorCode: 'forbidden', transcript: null });
      else if (info.fate === 'gone') expect(item).toMatchObject({ errorCode: 'not-found', transcript: null });
      else if (info.transcriptLanguages.length === 0) {
        expect(item).toMatchObject({ errorCode: 'transcript-unavailable', transcript: null });
      } else {
        withTranscript++;
        const want = info.transcriptLanguages.includes('fr') ? 'fr' : info.transcriptLanguages[0];
        expect(item.transcript?.lang).toBe(want);
        expect(item.transcript?.availableLangs).toEqual(info.transcriptLanguages);
        expect(typeof item.transcript?.content).toBe('string');
      }
    }
    expect(withTranscript).toBeGreaterThan(50);
    const failed = b.results.filter((i) => i.errorCode).length;
    expect(b.stats).toEqual({ total: 120, succeeded: 120 - failed, failed });
    expect(failed).toBeGreaterThan(0);
  });

  it('a 5000-video channel batch streams 5000 items', async () => {
    const huge = await startSimulator({ catalog: { channelSizes: [5000], channels: 1 }, clockSpeed: 0 });
    try {
      const ch = huge.catalog.channels()[0]!;
      expect(ch.videoCount).toBe(5000);
      const created = await call(huge, 'POST', '/videosite/video/batch', { body: { channelId: ch.id, limit: 5000 } });
      const { jobId } = JobIdSchema.parse(created.json);
      huge.clock.advance(60_000);
      const r = await call(huge, 'GET', `/videosite/batch/${jobId}`);
      expect(r.headers['transfer-encoding']).toBe('chunked');
      const b = BatchResultsSchema.parse(r.json);
      expect(b.status).toBe('completed');
      expect(b.results).toHaveLength(5000);
      expect(new Set(b.results.map((i) => i.videoId)).size).toBe(5000);
      expect(AccountSchema.parse((await call(huge, 'GET', '/me')).json).usedCredits).toBe(5001);
    } finally {
      await huge.close();
    }
  });

  it('addVideos puts new videos at the front of the channel listing and of the next channel batch', async () => {
    const added = sim.catalog.addVideos(big.id, 3)!;
    expect(added).toHaveLength(3);
    const listing = VideoIdsSchema.parse(
      (await call(sim, 'GET', '/videosite/channel/videos', { query: { id: big.id, type: 'video', limit: 5 } })).json,
    );
    expect(listing.videoIds.slice(0, 3)).toEqual(added);
    expect(listing.shortIds).toEqual([]);
    const jobId = await createBatch('video', { channelId: big.id, limit: 3 });
    sim.clock.advance(5000);
    expect((await poll(jobId)).results.map((i) => i.videoId)).toEqual(added);
  });
});
