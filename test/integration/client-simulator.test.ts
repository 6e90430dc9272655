/**
 * The client against the real simulator over real HTTP: one success per endpoint (checked
 * against what the catalog says), every error code with its status, the async transcript job
 * and the crawl followed to completion on the simulated clock, a batch lifecycle, and the
 * retry rules under the simulator's faults and scripts (its request statistics say what the
 * server saw).
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createApiClient, type ApiClient, type ApiClientOptions } from '../../src/api/client.ts';
import {
  ApiError,
  ForbiddenError,
  InternalError,
  InvalidRequestError,
  LimitExceededError,
  NetworkError,
  NotFoundError,
  SchemaMismatchError,
  TimeoutError,
  TranscriptUnavailableError,
  UnauthorizedError,
  UpgradeRequiredError,
} from '../../src/api/errors.ts';
import { BatchResultsSchema, type BatchResults } from '../../src/api/schemas.ts';
import { startSimulator, type Simulator, type VideoInfo } from '../../src/simulator/server.ts';

const QUEUED_MS = 1_000;
const ITEMS_PER_SECOND = 100;
const TRANSCRIPT_JOB_MS = 3_000;
const CRAWL_PAGE_MS = 100;
const CRAWL_PAGE_SIZE = 10;
const EXTRACT_JOB_MS = 5_000;

let sim: Simulator;
let clients: ApiClient[] = [];
let sleeps: number[] = [];

function makeClient(over: Partial<ApiClientOptions> = {}): ApiClient {
  const c = createApiClient({
    baseUrl: sim.baseUrl,
    apiKey: sim.apiKey,
    platform: sim.platform,
    headersTimeoutMs: 300,
    bodyTimeoutMs: 300,
    retry: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 10_000 },
    // Waiting moves the simulated clock: a Retry-After is waited out without real time passing.
    sleep: async (ms) => {
      sleeps.push(ms);
      sim.clock.advance(ms);
    },
    ...over,
  });
  clients.push(c);
  return c;
}

async function caught(p: Promise<unknown>): Promise<ApiError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ApiError);
  return e as ApiError;
}

/** Requests the simulator saw on one endpoint, by status (`reset` and `hang` included). */
function seen(endpoint: string): Record<string, number> {
  return sim.stats().byEndpoint[endpoint]?.byStatus ?? {};
}

function allVideos(): VideoInfo[] {
  return sim.catalog
    .channels()
    .flatMap((ch) => sim.catalog.videoIds(ch.id) ?? [])
    .map((id) => sim.catalog.videoInfo(id)!);
}

beforeAll(async () => {
  sim = await startSimulator({
    seed: 1,
    port: 0,
    // frozen: only the tests move time
    clockSpeed: 0,
    catalog: { privateShare: 0.1, goneShare: 0.05, noTranscriptShare: 0.15 },
    jobs: {
      queuedMs: QUEUED_MS,
      itemsPerSecond: ITEMS_PER_SECOND,
      transcriptJobMs: TRANSCRIPT_JOB_MS,
      crawlPageMs: CRAWL_PAGE_MS,
      extractJobMs: EXTRACT_JOB_MS,
    },
  });
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => {
  sleeps = [];
  sim.clearFaults();
  sim.resetStats();
});
afterEach(async () => {
  await Promise.all(clients.map((c) => c.close()));
  clients = [];
});

describe('one success per endpoint', () => {
  it('reads account, channel, playlist and video resources as the catalog has them', async () => {
    const c = makeClient();
    const [channel] = sim.catalog.channels();
    expect(channel).toBeDefined();
    const ch = channel!;

    const me = await c.me();
    expect(me.organizationId).toBe('org_dev');

    const byHandle = await c.getChannel({ id: ch.handle });
    expect(byHandle.id).toBe(ch.id);
    expect(byHandle.name).toBe(ch.name);

    const listing = await c.getChannelVideos({ id: ch.id, limit: 5000 });
    expect(listing.videoIds).toEqual(sim.catalog.videoIds(ch.id));
    expect(listing.shortIds).toEqual(sim.catalog.videoIds(ch.id, 'short'));
    expect(listing.liveIds).toEqual(sim.catalog.videoIds(ch.id, 'live'));
    const shortsOnly = await c.getChannelVideos({ id: ch.id, type: 'short' });
    expect(shortsOnly.videoIds).toEqual([]);
    expect(shortsOnly.shortIds.length).toBeGreaterThan(0);

    const plId = ch.playlistIds[0]!;
    const playlist = await c.getPlaylist({ id: plId });
    expect(playlist.id).toBe(plId);
    expect(playlist.channel.id).toBe(ch.id);
    const plVideos = await c.getPlaylistVideos({ id: plId, limit: 5000 });
    expect(plVideos.videoIds).toEqual(sim.catalog.playlistVideoIds(plId));

    const publicVideo = allVideos().find((v) => v.fate === 'public' && v.transcriptLanguages.length > 0)!;
    await expect(c.getVideo({ id: publicVideo.id })).resolves.toEqual(sim.catalog.video(publicVideo.id));
  });

  it('reads transcripts: deprecated endpoint, translation and GET /transcript (200)', async () => {
    const c = makeClient();
    const v = allVideos().find((x) => x.fate === 'public' && x.transcriptLanguages.length > 0)!;
    const t = await c.getTranscript({ videoId: v.id, chunkSize: 200 });
    expect(v.transcriptLanguages).toContain(t.lang);
    expect(t.availableLangs).toEqual(v.transcriptLanguages);
    expect(Array.isArray(t.content)).toBe(true);
    expect((t.content as Array<{ text: string }>).every((ch) => ch.text.length <= 200)).toBe(true);

    const tr = await c.translateTranscript({ videoId: v.id, lang: 'de', text: true });
    expect(tr.lang).toBe('de');
    expect(typeof tr.content).toBe('string');

    const media = await c.getMediaTranscript({
      url: `https://www.${sim.platform}.com/watch?v=${v.id}`,
      lang: v.transcriptLanguages[0],
    });
    expect(media.kind).toBe('transcript');
    if (media.kind === 'transcript') expect(media.transcript.lang).toBe(v.transcriptLanguages[0]);
  });

  it('reads search, metadata, scrape and map', async () => {
    const c = makeClient();
    const found = await c.search({ query: 'cooking', limit: 3 });
    expect(found.query).toBe('cooking');
    expect(found.results).toHaveLength(3);
    const paged = await c.search({ query: 'cooking' });
    expect(paged.nextPageToken).toBeDefined();
    const page2 = await c.search({ query: 'cooking', nextPageToken: paged.nextPageToken });
    expect(page2.results[0]?.id).not.toBe(paged.results[0]?.id);

    // `photos.*` stands for a social platform, answered by its published identifier
    const meta = await c.getMetadata({ url: 'https://photos.test/p/1' });
    expect(meta.platform).toBe('instagram');

    const scraped = await c.scrape({ url: 'https://docs.test/', noLinks: true });
    expect(scraped.countCharacters).toBe(scraped.content.length);
    const map = await c.mapSite({ url: 'https://docs.test/' });
    expect(map.urls.length).toBeGreaterThan(1);
    expect(map.urls.every((u) => u.startsWith('https://docs.test/'))).toBe(true);
  });

  it('follows a 202 transcript job to completion on the simulated clock', async () => {
    const c = makeClient();
    const started = await c.getMediaTranscript({ url: 'https://clips.test/v/42', lang: 'en' });
    expect(started.kind).toBe('job');
    if (started.kind !== 'job') return;
    expect((await c.getTranscriptJob(started.jobId)).status).toBe('queued');
    sim.clock.advance(QUEUED_MS);
    expect((await c.getTranscriptJob(started.jobId)).status).toBe('active');
    sim.clock.advance(TRANSCRIPT_JOB_MS);
    const done = await c.getTranscriptJob(started.jobId);
    expect(done.status).toBe('completed');
    expect(done.lang).toBe('en');
    expect(Array.isArray(done.content) && done.content.length > 0).toBe(true);
  });

  it('follows an extract job to completion: data by the schema given, 5 credits a started minute, kept an hour', async () => {
    const c = makeClient();
    const long = allVideos().find((v) => v.fate === 'public' && v.durationS > 600)!;
    const schema = {
      type: 'object',
      properties: {
        topics: { type: 'array', items: { type: 'string' } },
        rating: { type: 'integer', minimum: 1, maximum: 5 },
      },
      required: ['topics', 'rating'],
    };
    const before = sim.stats().creditsCharged;
    const bySchema = await c.startExtract({ url: `https://www.${sim.platform}.com/watch?v=${long.id}`, schema });
    expect(sim.stats().creditsCharged - before).toBe(5 * Math.ceil(long.durationS / 60));
    const short = sim.catalog
      .channels()
      .flatMap((ch) => sim.catalog.videoIds(ch.id, 'short')!.map((id) => sim.catalog.videoInfo(id)!))
      .find((v) => v.fate === 'public')!;
    expect(short.durationS).toBeLessThanOrEqual(60);
    const byPrompt = await c.startExtract({
      url: `https://www.${sim.platform}.com/shorts/${short.id}`,
      prompt: 'the main topics',
    });
    // a short of under a minute costs a minute's worth
    expect(sim.stats().creditsCharged - before).toBe(5 * Math.ceil(long.durationS / 60) + 5);
    expect(seen('POST /extract')).toEqual({ '202': 2 });

    expect(await c.getExtractJob(bySchema.jobId)).toEqual({ status: 'queued', error: null });
    sim.clock.advance(QUEUED_MS);
    expect((await c.getExtractJob(bySchema.jobId)).status).toBe('active');
    sim.clock.advance(EXTRACT_JOB_MS);
    const done = await c.getExtractJob(bySchema.jobId);
    expect(done.status).toBe('completed');
    expect(Array.isArray(done.data?.topics)).toBe(true);
    expect(done.data?.rating).toSatisfy(
      (r: unknown) => Number.isInteger(r) && (r as number) >= 1 && (r as number) <= 5,
    );
    // the job wrote no schema of its own: the request had one
    expect(done.schema).toBeUndefined();
    const prompted = await c.getExtractJob(byPrompt.jobId);
    expect(prompted.schema).toMatchObject({ type: 'object' });
    expect(Object.keys(prompted.data ?? {})).toEqual(expect.arrayContaining(['summary', 'topics']));

    sim.clock.advance(3_600_000 - 1);
    expect((await c.getExtractJob(bySchema.jobId)).status).toBe('completed');
    sim.clock.advance(1);
    expect(await caught(c.getExtractJob(bySchema.jobId))).toBeInstanceOf(NotFoundError);
  });

  it('keeps a transcript job result 1 hour after the job ends, then answers 404', async () => {
    const c = makeClient();
    const started = await c.getMediaTranscript({ url: 'https://clips.test/v/43', lang: 'en', mode: 'generate' });
    if (started.kind !== 'job') throw new Error('expected a job');
    sim.clock.advance(QUEUED_MS + TRANSCRIPT_JOB_MS);
    expect((await c.getTranscriptJob(started.jobId)).status).toBe('completed');
    sim.clock.advance(3_600_000 - 1);
    expect((await c.getTranscriptJob(started.jobId)).status).toBe('completed');
    sim.clock.advance(1);
    const gone = await caught(c.getTranscriptJob(started.jobId));
    expect(gone).toBeInstanceOf(NotFoundError);
    // the API's own Error object, not a gateway's page
    expect(gone.errorBody).toBe(true);
  });

  it('crawls a site and reads every page through next', async () => {
    const c = makeClient();
    const site = 'https://b.test/';
    const map = await c.mapSite({ url: site });
    // enough pages that the answer is paged several times
    expect(map.urls.length).toBeGreaterThan(2 * CRAWL_PAGE_SIZE);
    const { jobId } = await c.startCrawl({ url: site, limit: 5000 });
    expect((await c.getCrawl(jobId)).status).toBe('scraping');
    sim.clock.advance(map.urls.length * CRAWL_PAGE_MS);

    const first = await c.getCrawl(jobId);
    expect(first.status).toBe('completed');
    expect(first.pages).toHaveLength(CRAWL_PAGE_SIZE);
    const second = await c.getCrawl(jobId, { skip: CRAWL_PAGE_SIZE });
    expect(second.pages?.[0]?.url).toBe(map.urls[CRAWL_PAGE_SIZE]);

    sim.resetStats();
    const urls: string[] = [];
    for await (const p of c.crawlPages(jobId)) urls.push(p.url);
    expect(urls).toEqual(map.urls);
    expect(seen('GET /web/crawl/{jobId}')['200']).toBe(Math.ceil(map.urls.length / CRAWL_PAGE_SIZE));
  });

  it.each(['absolute', 'published', 'relative', 'token', 'offset'] as const)(
    'reads every page of a crawl whose next is given %s, always asking its own path',
    async (shape) => {
      const c = makeClient();
      const site = 'https://b.test/';
      const map = await c.mapSite({ url: site });
      expect(map.urls.length).toBeGreaterThan(2 * CRAWL_PAGE_SIZE);
      const { jobId } = await c.startCrawl({ url: site, limit: 5000 });
      sim.clock.advance(map.urls.length * CRAWL_PAGE_MS);
      sim.setJobSettings({ crawlNext: shape });
      try {
        const first = await c.getCrawl(jobId);
        // the premise: the simulator gives next in that shape
        const expected = {
          absolute: `${sim.baseUrl}/web/crawl/${jobId}?skip=10`,
          published: `${sim.baseUrl.replace(/\/v1$/, '')}/v1/crawl/${jobId}?skip=10`,
          relative: `/v1/web/crawl/${jobId}?skip=10`,
          token: 'skip=10',
          offset: '10',
        };
        expect(first.next).toBe(expected[shape]);
        sim.resetStats();
        const urls: string[] = [];
        for await (const p of c.crawlPages(jobId)) urls.push(p.url);
        expect(urls).toEqual(map.urls);
        // every page asked on the crawl's own endpoint (the published shape's /v1/crawl/... is not one)
        expect(sim.stats().byEndpoint['GET /web/crawl/{jobId}']?.byStatus).toEqual({
          '200': Math.ceil(map.urls.length / CRAWL_PAGE_SIZE),
        });
        expect(sim.stats().total).toBe(Math.ceil(map.urls.length / CRAWL_PAGE_SIZE));
      } finally {
        sim.setJobSettings({ crawlNext: 'absolute' });
      }
    },
  );
});

describe('a batch through the client', () => {
  it('creates a channel batch, polls it to completion, and is charged 1 + videos', async () => {
    const c = makeClient();
    const ch = sim.catalog.channels()[1]!;
    const limit = 40;
    const before = sim.stats().creditsCharged;
    const { jobId } = await c.createVideoBatch({ channelId: ch.id, limit });
    expect(sim.stats().creditsCharged - before).toBe(1 + limit);

    const queued = await c.getBatch(jobId);
    expect(queued.status).toBe('queued');
    expect(queued.results.every((r) => r.errorCode === 'processing')).toBe(true);

    sim.clock.advance(QUEUED_MS + (limit / ITEMS_PER_SECOND) * 1000);
    const done = await c.getBatch(jobId);
    expect(done.status).toBe('completed');
    expect(done.stats.total).toBe(limit);
    expect(done.results.map((r) => r.videoId)).toEqual(sim.catalog.videoIds(ch.id)!.slice(0, limit));
    for (const item of done.results) {
      const info = sim.catalog.videoInfo(item.videoId)!;
      if (info.fate === 'public') expect(item.video).toEqual(sim.catalog.video(item.videoId));
      else expect(item.errorCode).toBe(info.fate === 'private' ? 'forbidden' : 'not-found');
    }
    expect(done.stats.succeeded + done.stats.failed).toBe(limit);
  });

  it('streams a transcript batch through openBatch', async () => {
    const c = makeClient();
    const videos = allVideos().slice(0, 30);
    const { jobId } = await c.createTranscriptBatch({ videoIds: videos.map((v) => v.id), lang: 'en' });
    sim.clock.advance(QUEUED_MS + 1_000);
    const answer = await c.openBatch(jobId);
    expect(answer.status).toBe(200);
    let text = '';
    for await (const chunk of answer.body) text += String(chunk);
    const batch: BatchResults = BatchResultsSchema.parse(JSON.parse(text));
    expect(batch.status).toBe('completed');
    const byId = new Map(batch.results.map((r) => [r.videoId, r]));
    for (const v of videos) {
      const item = byId.get(v.id)!;
      if (v.fate === 'public' && v.transcriptLanguages.length > 0)
        expect(item.transcript?.availableLangs).toEqual(v.transcriptLanguages);
      if (v.fate === 'public' && v.transcriptLanguages.length === 0)
        expect(item.errorCode).toBe('transcript-unavailable');
    }
  });
});

describe('every error code with its HTTP status', () => {
  it('401 for a key the API does not know', async () => {
    const c = makeClient({ apiKey: 'not-a-real-key-000' });
    const e = await caught(c.me());
    expect(e).toBeInstanceOf(UnauthorizedError);
    expect(e.status).toBe(401);
    expect(seen('GET /me')).toEqual({ '401': 1 });
  });

  it('402 for a batch on the free plan, charging nothing', async () => {
    sim.setAccount('free-plan-key-0001', { plan: 'free' });
    const c = makeClient({ apiKey: 'free-plan-key-0001' });
    const e = await caught(c.createVideoBatch({ videoIds: [allVideos()[0]!.id] }));
    expect(e).toBeInstanceOf(UpgradeRequiredError);
    expect(e.status).toBe(402);
    expect(sim.stats().creditsCharged).toBe(0);
  });

  it('403 for a private video, 404 for a removed one and for an unknown job', async () => {
    const c = makeClient();
    const priv = allVideos().find((v) => v.fate === 'private')!;
    const gone = allVideos().find((v) => v.fate === 'gone')!;
    const e403 = await caught(c.getVideo({ id: priv.id }));
    expect(e403).toBeInstanceOf(ForbiddenError);
    expect(e403.status).toBe(403);
    const e404 = await caught(c.getVideo({ id: gone.id }));
    expect(e404).toBeInstanceOf(NotFoundError);
    expect(e404.status).toBe(404);
    const job404 = await caught(c.getBatch('batch_does_not_exist'));
    expect(job404).toBeInstanceOf(NotFoundError);
    expect(job404.endpoint).toBe(`GET /${sim.platform}/batch/{jobId}`);
    expect(seen(`GET /${sim.platform}/batch/{jobId}`)).toEqual({ '404': 1 });
  });

  it('429 when the credits are used up (and /me, which is free, still answers)', async () => {
    sim.setAccount('broke-key-000001', { maxCredits: 10, usedCredits: 10 });
    const c = makeClient({ apiKey: 'broke-key-000001', retry: { maxAttempts: 1 } });
    const e = await caught(c.getChannel({ id: sim.catalog.channels()[0]!.id }));
    expect(e).toBeInstanceOf(LimitExceededError);
    expect(e.status).toBe(429);
    await expect(c.me()).resolves.toMatchObject({ maxCredits: 10, usedCredits: 10 });
  });

  it('429 from the rate limit: Retry-After is waited out (on the simulated clock), then it answers', async () => {
    sim.setAccount('slow-key-0000001', { rateLimit: { requestsPerSecond: 0.5, burst: 1 } });
    const c = makeClient({ apiKey: 'slow-key-0000001' });
    await c.me();
    await expect(c.me()).resolves.toMatchObject({ plan: 'pro' });
    expect(sleeps).toEqual([2_000]);
    expect(seen('GET /me')).toEqual({ '200': 2, '429': 1 });
  });

  it('400 when the server refuses what local validation lets through', async () => {
    const c = makeClient();
    const e = await caught(c.getMetadata({ url: 'https://unknown.test/p/1' }));
    expect(e).toBeInstanceOf(InvalidRequestError);
    expect(e.status).toBe(400);
    expect(e.message).toContain('url');
  });

  it('206 transcript-unavailable for a video without transcripts, not retried', async () => {
    const c = makeClient();
    const v = allVideos().find((x) => x.fate === 'public' && x.transcriptLanguages.length === 0)!;
    const e = await caught(c.getTranscript({ videoId: v.id }));
    expect(e).toBeInstanceOf(TranscriptUnavailableError);
    expect(e.status).toBe(206);
    expect(seen(`GET /${sim.platform}/transcript`)).toEqual({ '206': 1 });
  });

  it('500 and non-JSON 502 from faults, after the GET retries', async () => {
    const c = makeClient({ retry: { maxAttempts: 2 } });
    sim.setFaults({ errorRate: 1 });
    const e500 = await caught(c.me());
    expect(e500).toBeInstanceOf(InternalError);
    expect(e500.status).toBe(500);
    sim.setFaults({ errorRate: 0, badGatewayRate: 1 });
    const e502 = await caught(c.me());
    expect(e502).toBeInstanceOf(InternalError);
    expect(e502.status).toBe(502);
    expect(e502.rawBody).toContain('502 Bad Gateway');
    expect(seen('GET /me')).toEqual({ '500': 2, '502': 2 });
  });
});

describe('retries against the simulator', () => {
  it('GET: reset, then 500, then 200', async () => {
    const c = makeClient();
    sim.script([
      { match: 'GET /me', reset: true },
      { match: 'GET /me', status: 500, body: { error: 'internal-error', message: 'boom', details: 'scripted' } },
    ]);
    await expect(c.me()).resolves.toMatchObject({ organizationId: 'org_dev' });
    expect(seen('GET /me')).toEqual({ reset: 1, '500': 1, '200': 1 });
  });

  it('POST: not retried after a timeout, nor after the answer was lost once processed', async () => {
    const c = makeClient();
    const endpoint = `POST /${sim.platform}/video/batch`;
    sim.script([{ match: `POST /${sim.platform}/video/batch`, hang: true }]);
    const timeout = await caught(c.createVideoBatch({ videoIds: [allVideos()[0]!.id] }));
    expect(timeout).toBeInstanceOf(TimeoutError);
    expect(seen(endpoint)).toEqual({ hang: 1 });

    // The batch is created and charged, then the connection drops: a retry would charge twice.
    sim.resetStats();
    sim.script([{ match: `POST /${sim.platform}/video/batch`, process: true, reset: true }]);
    const lost = await caught(c.createVideoBatch({ videoIds: [allVideos()[0]!.id, allVideos()[1]!.id] }));
    expect(lost).toBeInstanceOf(NetworkError);
    expect(seen(endpoint)).toEqual({ reset: 1 });
    expect(sim.stats().creditsCharged).toBe(3);
  });

  it('POST: retried when the API refused it with its own 503 Error object', async () => {
    const c = makeClient();
    sim.script([
      {
        match: 'POST /web/crawl',
        status: 503,
        body: { error: 'internal-error', message: 'busy', details: 'scripted' },
      },
    ]);
    const { jobId } = await c.startCrawl({ url: 'https://a.test/', limit: 3 });
    expect(jobId).toMatch(/^crawl_/);
    expect(seen('POST /web/crawl')).toEqual({ '503': 1, '200': 1 });
  });

  it('reports a schema-violating answer with its path, without retrying', async () => {
    const c = makeClient();
    sim.setFaults({ schemaViolationRate: 1 });
    const e = await caught(c.me());
    expect(e).toBeInstanceOf(SchemaMismatchError);
    expect(e.path).toBe('organizationId');
    expect(JSON.parse(e.rawBody ?? '')).toMatchObject({ organizationId: { violated: true } });
    expect(seen('GET /me')).toEqual({ '200': 1 });
  });

  it('retries a GET whose body was cut short', async () => {
    const c = makeClient({ retry: { maxAttempts: 2 } });
    sim.setFaults({ truncateRate: 1 });
    const e = await caught(c.getChannel({ id: sim.catalog.channels()[0]!.id }));
    expect(e.code).toBe('network');
    expect(seen(`GET /${sim.platform}/channel`)).toEqual({ '200': 2 });
  });
});
