/**
 * Accounts of the simulator: keys, plans, credits and the per-key rate limit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountSchema, ErrorBodySchema, JobIdSchema } from '../../src/api/schemas.ts';
import { SIMULATOR_DEV_API_KEY } from '../../src/config.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { admin, call } from '../helpers/sim-http.ts';

let sim: Simulator;
let videoId: string;
let channelId: string;

beforeAll(async () => {
  sim = await startSimulator({
    clockSpeed: 0,
    catalog: { privateShare: 0, goneShare: 0 },
    accounts: {
      'test-free': { plan: 'free', maxCredits: 100 },
      'test-small': { maxCredits: 10 },
      'test-slow': { rateLimit: { requestsPerSecond: 1, burst: 2 } },
    },
  });
  channelId = sim.catalog.channels()[0]!.id;
  videoId = sim.catalog.videoIds(channelId)![0]!;
});
afterAll(async () => {
  await sim.close();
});

function watchUrl(id: string): string {
  return `https://www.videosite.com/watch?v=${id}`;
}

/** A catalog video without captions (a generated transcript is all it can get), longer than a minute. */
function withoutCaptions() {
  for (const ch of sim.catalog.channels()) {
    for (const id of sim.catalog.videoIds(ch.id)!) {
      const v = sim.catalog.videoInfo(id)!;
      if (v.transcriptLanguages.length === 0 && v.durationS > 60 && v.durationS % 60 !== 0) return v;
    }
  }
  throw new Error('the catalog has no video without captions');
}

async function me(key: string) {
  const r = await call(sim, 'GET', '/me', { key });
  expect(r.status).toBe(200);
  return AccountSchema.parse(r.json);
}

describe('keys', () => {
  it('the documented development key works without setup, on a paid plan', async () => {
    expect(sim.apiKey).toBe(SIMULATOR_DEV_API_KEY);
    const a = await me(SIMULATOR_DEV_API_KEY);
    expect(a).toMatchObject({ plan: 'pro', maxCredits: 1_000_000, usedCredits: 0 });
  });

  it('a missing or unknown key gets 401, and the answer never repeats the key', async () => {
    const missing = await call(sim, 'GET', '/videosite/video', { key: null, query: { id: videoId } });
    expect(missing.status).toBe(401);
    expect(ErrorBodySchema.parse(missing.json).error).toBe('unauthorized');
    const secret = 'sk-live-do-not-echo-me-123';
    const unknown = await call(sim, 'GET', '/me', { key: secret });
    expect(unknown.status).toBe(401);
    expect(ErrorBodySchema.parse(unknown.json).error).toBe('unauthorized');
    expect(unknown.text).not.toContain(secret);
  });

  it('the apiKey option replaces the development key', async () => {
    const other = await startSimulator({ apiKey: 'my-own-key' });
    try {
      expect(other.apiKey).toBe('my-own-key');
      expect((await call(other, 'GET', '/me', { key: 'my-own-key' })).status).toBe(200);
      expect((await call(other, 'GET', '/me', { key: SIMULATOR_DEV_API_KEY })).status).toBe(401);
    } finally {
      await other.close();
    }
  });
});

describe('credits', () => {
  it('charges 1 per answered request, nothing for /me, polls, and refused requests', async () => {
    const key = 'test-credits';
    sim.setAccount(key, { maxCredits: 1000 });
    const k = { key };
    expect((await call(sim, 'GET', '/videosite/video', { ...k, query: { id: videoId } })).status).toBe(200);
    expect((await me(key)).usedCredits).toBe(1);
    // refused: 400, 404 and 401 cost nothing
    expect((await call(sim, 'GET', '/videosite/video', { ...k, query: {} })).status).toBe(400);
    expect((await call(sim, 'GET', '/videosite/video', { ...k, query: { id: 'ZZZZZZZZZZZ' } })).status).toBe(404);
    expect(
      (await call(sim, 'GET', '/videosite/channel/videos', { ...k, query: { id: channelId, limit: 0 } })).status,
    ).toBe(400);
    expect((await me(key)).usedCredits).toBe(1);
    // a batch costs 1 + videos at creation; polling is free
    const created = await call(sim, 'POST', '/videosite/video/batch', { ...k, body: { channelId, limit: 4 } });
    const { jobId } = JobIdSchema.parse(created.json);
    expect((await me(key)).usedCredits).toBe(1 + 5);
    for (let i = 0; i < 3; i++) expect((await call(sim, 'GET', `/videosite/batch/${jobId}`, k)).status).toBe(200);
    // a crawl and its polls, a transcript job and its polls
    const crawl = JobIdSchema.parse(
      (await call(sim, 'POST', '/web/crawl', { ...k, body: { url: 'https://example.org/', limit: 3 } })).json,
    );
    await call(sim, 'GET', `/web/crawl/${crawl.jobId}`, k);
    const silent = withoutCaptions();
    const tj = await call(sim, 'GET', '/transcript', { ...k, query: { url: watchUrl(silent.id), mode: 'generate' } });
    expect(tj.status).toBe(202);
    await call(sim, 'GET', `/transcript/${JobIdSchema.parse(tj.json).jobId}`, k);
    // a generated transcript: 2 credits per started minute of the video (UPSTREAM.md)
    const generated = 2 * Math.ceil(silent.durationS / 60);
    expect((await me(key)).usedCredits).toBe(6 + 1 + generated);
    expect(sim.stats().creditsCharged).toBeGreaterThanOrEqual(7 + generated);
  });

  it('prices a generated transcript at 2 credits per started minute, captions at 1, a refused one at nothing', async () => {
    const key = 'test-generated';
    sim.setAccount(key, { maxCredits: 100_000 });
    const k = { key };
    const silent = withoutCaptions();
    const captioned = sim.catalog
      .videoIds(channelId)!
      .map((id) => sim.catalog.videoInfo(id)!)
      .find((v) => v.transcriptLanguages.length > 0 && v.fate === 'public')!;
    const perMinute = (v: { durationS: number }) => 2 * Math.ceil(v.durationS / 60);
    let used = 0;
    const spent = async () => {
      const now = (await me(key)).usedCredits;
      const d = now - used;
      used = now;
      return d;
    };
    // auto without captions is generated; generate is generated even when captions exist
    expect(
      (await call(sim, 'GET', '/transcript', { ...k, query: { url: watchUrl(silent.id), mode: 'auto' } })).status,
    ).toBe(202);
    expect(await spent()).toBe(perMinute(silent));
    expect(
      (await call(sim, 'GET', '/transcript', { ...k, query: { url: watchUrl(captioned.id), mode: 'generate' } }))
        .status,
    ).toBe(202);
    expect(await spent()).toBe(perMinute(captioned));
    // captions (auto or native) cost 1, like any answer
    expect(
      (await call(sim, 'GET', '/transcript', { ...k, query: { url: watchUrl(captioned.id), mode: 'auto' } })).status,
    ).toBe(200);
    expect(
      (await call(sim, 'GET', '/transcript', { ...k, query: { url: watchUrl(captioned.id), mode: 'native' } })).status,
    ).toBe(200);
    expect(await spent()).toBe(2);
    // not enough credits left for the minutes: refused, nothing charged
    sim.setAccount(key, { maxCredits: used + perMinute(silent) - 1 });
    const refused = await call(sim, 'GET', '/transcript', {
      ...k,
      query: { url: watchUrl(silent.id), mode: 'generate' },
    });
    expect(refused.status).toBe(429);
    expect(ErrorBodySchema.parse(refused.json).error).toBe('limit-exceeded');
    expect(await spent()).toBe(0);
  });

  it('exhausted credits give 429 limit-exceeded without Retry-After, and charge nothing', async () => {
    const key = 'test-small';
    const created = await call(sim, 'POST', '/videosite/video/batch', { key, body: { channelId, limit: 8 } });
    expect(created.status).toBe(200);
    expect((await me(key)).usedCredits).toBe(9);
    const tooBig = await call(sim, 'POST', '/videosite/video/batch', { key, body: { channelId, limit: 1 } });
    expect(tooBig.status).toBe(429);
    expect(ErrorBodySchema.parse(tooBig.json).error).toBe('limit-exceeded');
    expect(tooBig.headers['retry-after']).toBeUndefined();
    expect((await call(sim, 'GET', '/videosite/video', { key, query: { id: videoId } })).status).toBe(200);
    const exhausted = await call(sim, 'GET', '/videosite/video', { key, query: { id: videoId } });
    expect(exhausted.status).toBe(429);
    expect(exhausted.headers['retry-after']).toBeUndefined();
    expect(await me(key)).toMatchObject({ usedCredits: 10, maxCredits: 10 });
  });

  it('a free plan gets 402 upgrade-required on batches, but answers elsewhere', async () => {
    const key = 'test-free';
    for (const kind of ['video', 'transcript']) {
      const r = await call(sim, 'POST', `/videosite/${kind}/batch`, { key, body: { videoIds: [videoId] } });
      expect(r.status).toBe(402);
      expect(ErrorBodySchema.parse(r.json).error).toBe('upgrade-required');
    }
    expect((await call(sim, 'GET', '/videosite/video', { key, query: { id: videoId } })).status).toBe(200);
    expect(await me(key)).toMatchObject({ plan: 'free', usedCredits: 1 });
  });

  it('an account set through the admin API takes effect at once', async () => {
    const put = await admin(sim, 'PUT', '/accounts/test-admin', { plan: 'free', maxCredits: 5, usedCredits: 2 });
    expect(put.status).toBe(200);
    expect(await me('test-admin')).toMatchObject({ plan: 'free', maxCredits: 5, usedCredits: 2 });
    expect((await call(sim, 'POST', '/videosite/video/batch', { key: 'test-admin', body: { channelId } })).status).toBe(
      402,
    );
    await admin(sim, 'PUT', '/accounts/test-admin', { plan: 'business' });
    expect(
      (await call(sim, 'POST', '/videosite/video/batch', { key: 'test-admin', body: { channelId, limit: 2 } })).status,
    ).toBe(200);
    expect((await me('test-admin')).usedCredits).toBe(5);
    const bad = await admin(sim, 'PUT', '/accounts/test-admin', { maxCredits: -1 });
    expect(bad.status).toBe(400);
    expect((bad.json as { message: string }).message).toContain('maxCredits');
  });
});

describe('rate limit', () => {
  it('answers 429 with Retry-After once the burst is spent, and lets requests through after that time', async () => {
    const key = 'test-slow';
    expect((await call(sim, 'GET', '/me', { key })).status).toBe(200);
    expect((await call(sim, 'GET', '/me', { key })).status).toBe(200);
    const limited = await call(sim, 'GET', '/videosite/video', { key, query: { id: videoId } });
    expect(limited.status).toBe(429);
    expect(ErrorBodySchema.parse(limited.json).error).toBe('limit-exceeded');
    const retryAfterS = Number(limited.headers['retry-after']);
    expect(retryAfterS).toBeGreaterThanOrEqual(1);
    // rate-limited requests are not charged
    sim.clock.advance(retryAfterS * 1000);
    expect((await me(key)).usedCredits).toBe(0);
    expect((await call(sim, 'GET', '/me', { key })).status).toBe(429);
  });
});
