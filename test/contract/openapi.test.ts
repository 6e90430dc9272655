/**
 * The client and the simulator held to the provider's published interface
 * (`upstream/openapi-v1.json`, OpenAPI 3.1). The simulator runs with the production spelling of
 * the platform segment (`youtube`); a recording proxy of our own sits between it and the real
 * client, and every exchange that crossed the wire is checked against the document: the request
 * (path parameters, every query key and value, JSON body) against its operation, the answer's
 * status against those listed for that operation, its JSON body against that status's schema.
 *
 * Every operation of the document is driven through the client, through success and through
 * the error answers the document lists for it (400, 401, 404, 429, 206, 500) where the simulator
 * can give them. The validator is shown to fail on copies of the document broken on purpose, so
 * a pass means something.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient, type ApiClient } from '../../src/api/client.ts';
import { ApiError } from '../../src/api/errors.ts';
import { startSimulator, type Simulator, type VideoInfo } from '../../src/simulator/server.ts';
import { createContract, type Contract, type Problem } from '../helpers/openapi-contract.ts';
import { startRecordingProxy, type Exchange, type RecordingProxy } from '../helpers/recording-proxy.ts';

type Json = Record<string, unknown>;

const DOCUMENT: Json = JSON.parse(
  readFileSync(new URL('../../upstream/openapi-v1.json', import.meta.url), 'utf8'),
) as Json;

/** The production spelling of the platform segment, as the document has it. */
const PLATFORM = 'youtube';
/** A key the simulator does not know: 401. */
const UNKNOWN_KEY = 'contract-unknown-key-00';
/** An account without credits: every paid request is refused 429 `limit-exceeded`. */
const BROKE_KEY = 'contract-broke-key-0000';
/** An account whose rate limit allows one request, then 429 with Retry-After. */
const SLOW_KEY = 'contract-slow-key-00000';
const QUEUED_MS = 1_000;
const TRANSCRIPT_JOB_MS = 3_000;
const EXTRACT_JOB_MS = 5_000;
const CRAWL_PAGE_MS = 100;
/** Longest `videoIds` the simulator takes here, so that one more is a 400 */
const MAX_VIDEO_IDS = 20;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/**
 * Where the published document contradicts the interface it describes (the seed interface
 * v1.3.0 and UPSTREAM.md), which the simulator and the client follow. Applied to a copy of the
 * document before checking. Each names the value it expects to replace, so an erratum the
 * provider has since fixed fails loudly instead of hiding a change of the document.
 */
const ERRATA: ReadonlyArray<{ pointer: string; expected: unknown; replacement: unknown; why: string }> = [
  {
    pointer: '/components/schemas/YouTubeBatchResults/properties/results/items/properties/errorCode/enum',
    expected: [
      'invalid-request',
      'internal-error',
      'forbidden',
      'unauthorized',
      'upgrade-required',
      'transcript-unavailable',
      'not-found',
      'limit-exceeded',
    ],
    replacement: [
      'invalid-request',
      'internal-error',
      'forbidden',
      'unauthorized',
      'upgrade-required',
      'transcript-unavailable',
      'not-found',
      'limit-exceeded',
      null,
      'processing',
      'result-unavailable',
    ],
    why:
      "a batch item's errorCode is null on success (the document's own `type` allows null, its enum leaves it out), " +
      '`processing` while the item runs and `result-unavailable` once its result is discarded (interface v1.3.0, BatchItem)',
  },
];

function pointerParts(pointer: string): string[] {
  return pointer
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function getAt(doc: Json, pointer: string): unknown {
  return pointerParts(pointer).reduce<unknown>((node, part) => (node as Json | undefined)?.[part], doc);
}

function setAt(doc: Json, pointer: string, value: unknown): void {
  const parts = pointerParts(pointer);
  const parent = parts.slice(0, -1).reduce<unknown>((node, part) => (node as Json)[part], doc) as Json;
  parent[parts.at(-1)!] = value;
}

function withErrata(document: Json): Json {
  const doc = structuredClone(document);
  for (const e of ERRATA) {
    const found = getAt(doc, e.pointer);
    if (JSON.stringify(found) !== JSON.stringify(e.expected)) {
      throw new Error(
        `erratum at ${e.pointer} no longer applies (the document now has ${JSON.stringify(found)}): review it`,
      );
    }
    setAt(doc, e.pointer, e.replacement);
  }
  return doc;
}

let sim: Simulator;
let proxy: RecordingProxy;
let contract: Contract;
const clients: ApiClient[] = [];
/** every exchange the drive made, once it is over */
let exchanges: Exchange[] = [];
/** the media types of the `/metadata` answers seen */
const metadataTypes = new Set<string>();

function client(apiKey: string): ApiClient {
  const c = createApiClient({
    baseUrl: `${proxy.url}/v1`,
    apiKey,
    platform: PLATFORM,
    // one attempt each: every exchange is one the test chose
    retry: { maxAttempts: 1 },
  });
  clients.push(c);
  return c;
}

/**
 * One call through the client that must make exactly the exchanges answered `statuses`; a 2xx
 * (but 206) the client must accept, any other status it must throw as an ApiError of that status.
 */
async function drive<T>(label: string, statuses: number | number[], call: () => Promise<T>): Promise<T> {
  const want = Array.isArray(statuses) ? statuses : [statuses];
  const before = proxy.exchanges().length;
  let result: T | undefined;
  let error: unknown;
  try {
    result = await call();
  } catch (e: unknown) {
    error = e;
  }
  const got = proxy
    .exchanges()
    .slice(before)
    .map((x) => x.answer?.status ?? 0);
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    throw new Error(
      `${label}: expected answers ${JSON.stringify(want)}, saw ${JSON.stringify(got)}${error === undefined ? '' : ` (${String(error)})`}`,
    );
  }
  const last = want.at(-1)!;
  const success = last >= 200 && last < 300 && last !== 206;
  if (success && error !== undefined)
    throw new Error(`${label}: the client refused a ${last} answer: ${String(error)}`);
  if (!success && !(error instanceof ApiError && error.status === last)) {
    throw new Error(`${label}: expected an ApiError with status ${last}, got ${String(error)}`);
  }
  return result as T;
}

/** Every operation of the document once, with arguments that reach its handler. */
function oneCallPerOperation(
  c: ApiClient,
  ids: {
    video: string;
    playlist: string;
    channel: string;
    batch: string;
    crawl: string;
    transcriptJob: string;
    extractJob: string;
  },
): Array<[string, () => Promise<unknown>]> {
  const url = `https://www.${PLATFORM}.com/watch?v=${ids.video}`;
  return [
    ['video', () => c.getVideo({ id: ids.video })],
    ['playlist', () => c.getPlaylist({ id: ids.playlist })],
    ['playlist videos', () => c.getPlaylistVideos({ id: ids.playlist })],
    ['channel', () => c.getChannel({ id: ids.channel })],
    ['channel videos', () => c.getChannelVideos({ id: ids.channel })],
    ['transcript', () => c.getTranscript({ videoId: ids.video })],
    ['translate', () => c.translateTranscript({ videoId: ids.video, lang: 'de' })],
    ['transcript batch', () => c.createTranscriptBatch({ videoIds: [ids.video] })],
    ['video batch', () => c.createVideoBatch({ videoIds: [ids.video] })],
    ['batch', () => c.getBatch(ids.batch)],
    ['search', () => c.search({ query: 'cooking' })],
    ['scrape', () => c.scrape({ url: 'https://docs.test/' })],
    ['map', () => c.mapSite({ url: 'https://docs.test/' })],
    ['crawl', () => c.startCrawl({ url: 'https://docs.test/' })],
    ['crawl job', () => c.getCrawl(ids.crawl)],
    ['media transcript', () => c.getMediaTranscript({ url, mode: 'native' })],
    ['transcript job', () => c.getTranscriptJob(ids.transcriptJob)],
    ['metadata', () => c.getMetadata({ url })],
    ['extract', () => c.startExtract({ url, prompt: 'the main topics' })],
    ['extract job', () => c.getExtractJob(ids.extractJob)],
    ['me', () => c.me()],
  ];
}

async function driveEverything(): Promise<void> {
  const c = client(sim.apiKey);
  const channels = sim.catalog.channels();
  const ch = channels[0]!;
  const videos: VideoInfo[] = channels.flatMap((x) =>
    sim.catalog.videoIds(x.id)!.map((id) => sim.catalog.videoInfo(id)!),
  );
  const captioned = videos.filter((v) => v.fate === 'public' && v.transcriptLanguages.length > 0);
  const silent = videos.find((v) => v.fate === 'public' && v.transcriptLanguages.length === 0)!;
  const gone = videos.find((v) => v.fate === 'gone')!;
  const shortId = sim.catalog.videoIds(ch.id, 'short')![0]!;
  const playlist = ch.playlistIds[0]!;
  const watch = (id: string) => `https://www.${PLATFORM}.com/watch?v=${id}`;
  const video = captioned[0]!;
  const unknownPlaylist = `PL${'x'.repeat(32)}`;
  const unknownChannel = `UC${'x'.repeat(22)}`;

  // the platform's resources
  await drive('video', 200, () => c.getVideo({ id: video.id }));
  await drive('video by URL', 200, () => c.getVideo({ id: watch(captioned[1]!.id) }));
  await drive('video gone', 404, () => c.getVideo({ id: gone.id }));
  await drive('playlist', 200, () => c.getPlaylist({ id: playlist }));
  await drive('playlist unknown', 404, () => c.getPlaylist({ id: unknownPlaylist }));
  await drive('playlist videos', 200, () => c.getPlaylistVideos({ id: playlist, limit: 5 }));
  await drive('playlist videos, default limit', 200, () => c.getPlaylistVideos({ id: playlist }));
  await drive('playlist videos unknown', 404, () => c.getPlaylistVideos({ id: unknownPlaylist }));
  await drive('channel', 200, () => c.getChannel({ id: ch.id }));
  await drive('channel by handle', 200, () => c.getChannel({ id: ch.handle }));
  await drive('channel unknown', 404, () => c.getChannel({ id: unknownChannel }));
  await drive('channel videos', 200, () => c.getChannelVideos({ id: ch.id, limit: 10, type: 'short' }));
  await drive('channel videos, all', 200, () => c.getChannelVideos({ id: ch.handle }));
  await drive('channel videos unknown', 404, () => c.getChannelVideos({ id: unknownChannel }));

  // transcripts of the platform
  await drive('transcript', 200, () =>
    c.getTranscript({ videoId: video.id, lang: video.transcriptLanguages[0], chunkSize: 300 }),
  );
  await drive('transcript by URL, text', 200, () => c.getTranscript({ url: watch(video.id), text: true }));
  await drive('transcript unavailable', 206, () => c.getTranscript({ videoId: silent.id }));
  await drive('transcript gone', 404, () => c.getTranscript({ videoId: gone.id }));
  await drive('translate', 200, () => c.translateTranscript({ videoId: video.id, lang: 'de' }));
  await drive('translate, text', 200, () => c.translateTranscript({ url: watch(video.id), lang: 'fr', text: true }));
  await drive('translate unavailable', 206, () => c.translateTranscript({ videoId: silent.id, lang: 'de' }));
  await drive('translate gone', 404, () => c.translateTranscript({ videoId: gone.id, lang: 'de' }));
  await drive('translate to no language code', 400, () =>
    c.translateTranscript({ videoId: video.id, lang: 'english' }),
  );

  // batches, their lifecycle on the simulated clock
  const tooMany = videos.slice(0, MAX_VIDEO_IDS + 1).map((v) => v.id);
  const tb = await drive('transcript batch', 200, () =>
    c.createTranscriptBatch({ videoIds: [video.id, captioned[1]!.id, silent.id, gone.id], lang: 'en' }),
  );
  await drive('transcript batch of a channel, text', 200, () =>
    c.createTranscriptBatch({ channelId: ch.id, limit: 3, text: true }),
  );
  await drive('transcript batch too long', 400, () => c.createTranscriptBatch({ videoIds: tooMany }));
  const vb = await drive('video batch of a playlist', 200, () =>
    c.createVideoBatch({ playlistId: playlist, limit: 5 }),
  );
  await drive('video batch', 200, () => c.createVideoBatch({ videoIds: [video.id, shortId, gone.id] }));
  await drive('video batch too long', 400, () => c.createVideoBatch({ videoIds: tooMany }));
  await drive('video batch of an unknown playlist', 404, () => c.createVideoBatch({ playlistId: unknownPlaylist }));
  await drive('batch queued', 200, () => c.getBatch(tb.jobId));
  sim.clock.advance(QUEUED_MS + 20);
  await drive('batch active', 200, () => c.getBatch(tb.jobId));
  sim.clock.advance(QUEUED_MS);
  await drive('transcript batch completed', 200, () => c.getBatch(tb.jobId));
  await drive('video batch completed', 200, () => c.getBatch(vb.jobId));
  await drive('batch unknown', 404, () => c.getBatch('batch_unknown'));

  // search
  const page1 = await drive('search', 200, () => c.search({ query: 'cooking' }));
  await drive('search, next page', 200, () => c.search({ query: 'cooking', nextPageToken: page1.nextPageToken }));
  await drive('search with filters', 200, () =>
    c.search({
      query: 'guitar',
      type: 'video',
      uploadDate: 'month',
      duration: 'medium',
      sortBy: 'views',
      features: ['creative-commons', 'hd'],
      limit: 25,
    }),
  );
  await drive('search of channels', 200, () => c.search({ query: 'guitar', type: 'channel', limit: 3 }));
  await drive('search with a token of no search', 400, () =>
    c.search({ query: 'cooking', nextPageToken: 'bm90LWEtdG9rZW4' }),
  );

  // web pages
  await drive('scrape', 200, () => c.scrape({ url: 'https://docs.test/guide', noLinks: true, lang: 'en' }));
  await drive('scrape of no URL', 400, () => c.scrape({ url: 'docs.test without a scheme' }));
  const site = await drive('map', 200, () => c.mapSite({ url: 'https://docs.test/' }));
  await drive('map of no http URL', 400, () => c.mapSite({ url: 'ftp://docs.test/' }));
  const crawl = await drive('crawl', 200, () => c.startCrawl({ url: 'https://docs.test/', limit: 25 }));
  await drive('crawl of no http URL', 400, () => c.startCrawl({ url: 'ftp://docs.test/' }));
  await drive('crawl scraping', 200, () => c.getCrawl(crawl.jobId));
  sim.clock.advance(25 * CRAWL_PAGE_MS);
  const first = await drive('crawl completed', 200, () => c.getCrawl(crawl.jobId));
  expect(
    first.next,
    `docs.test must have more than one page of results (it has ${site.urls.length} pages)`,
  ).toBeDefined();
  await drive('crawl, second page', 200, () => c.getCrawl(crawl.jobId, { skip: 10 }));

  // transcripts of any media URL, and their jobs
  await drive('media transcript', 200, () =>
    c.getMediaTranscript({ url: watch(video.id), mode: 'native', lang: video.transcriptLanguages[0] }),
  );
  await drive('media transcript, text', 200, () =>
    c.getMediaTranscript({ url: watch(video.id), mode: 'auto', text: true }),
  );
  const tj = await drive('media transcript job', 202, () =>
    c.getMediaTranscript({ url: 'https://clips.test/v/7', mode: 'generate', lang: 'en', chunkSize: 500 }),
  );
  if (tj.kind !== 'job') throw new Error('a generated transcript must be a job');
  await drive('media transcript of a gone video', 404, () =>
    c.getMediaTranscript({ url: watch(gone.id), mode: 'native' }),
  );
  await drive('media transcript of no http URL', 400, () =>
    c.getMediaTranscript({ url: 'ftp://media.test/a.mp3', mode: 'native' }),
  );
  await drive('transcript job queued', 200, () => c.getTranscriptJob(tj.jobId));
  sim.clock.advance(QUEUED_MS);
  await drive('transcript job active', 200, () => c.getTranscriptJob(tj.jobId));
  sim.clock.advance(TRANSCRIPT_JOB_MS);
  await drive('transcript job completed', 200, () => c.getTranscriptJob(tj.jobId));
  await drive('transcript job unknown', 404, () => c.getTranscriptJob('tj_unknown'));

  // metadata of the platform and of the four social platforms
  for (const [label, url] of [
    ['metadata', watch(video.id)],
    ['metadata of a short', watch(shortId)],
    ...['clips', 'photos', 'micro', 'social'].flatMap((host) =>
      [0, 1, 2, 3].map((i) => [`metadata of ${host} ${i}`, `https://${host}.test/p/${i}`]),
    ),
  ] as Array<[string, string]>) {
    const m = await drive(label, 200, () => c.getMetadata({ url }));
    metadataTypes.add(m.type);
  }
  await drive('metadata of a gone video', 404, () => c.getMetadata({ url: watch(gone.id) }));
  await drive('metadata of an unsupported platform', 400, () => c.getMetadata({ url: 'https://unknown.test/p/1' }));

  // extract jobs
  const schema = {
    type: 'object',
    properties: {
      topics: { type: 'array', items: { type: 'string' } },
      mood: { type: 'string', enum: ['calm', 'loud'] },
      rating: { type: 'integer', minimum: 1, maximum: 5 },
    },
    required: ['topics'],
  };
  const ex1 = await drive('extract by prompt', 202, () =>
    c.startExtract({ url: watch(video.id), prompt: 'the main topics and takeaways' }),
  );
  const ex2 = await drive('extract by schema', 202, () => c.startExtract({ url: 'https://clips.test/v/7', schema }));
  await drive('extract by both', 202, () =>
    c.startExtract({ url: watch(captioned[1]!.id), prompt: 'the mood', schema }),
  );
  await drive('extract of a gone video', 404, () => c.startExtract({ url: watch(gone.id), prompt: 'anything' }));
  await drive('extract of an unsupported platform', 400, () =>
    c.startExtract({ url: 'https://unknown.test/v/1', prompt: 'anything' }),
  );
  await drive('extract job queued', 200, () => c.getExtractJob(ex1.jobId));
  sim.clock.advance(QUEUED_MS);
  await drive('extract job active', 200, () => c.getExtractJob(ex1.jobId));
  sim.clock.advance(EXTRACT_JOB_MS);
  await drive('extract job completed', 200, () => c.getExtractJob(ex1.jobId));
  await drive('extract job by schema completed', 200, () => c.getExtractJob(ex2.jobId));
  await drive('extract job unknown', 404, () => c.getExtractJob('ej_unknown'));

  await drive('me', 200, () => c.me());

  // account refusals where the document lists them: 401 a key the API does not know, 429 no
  // credits left, 429 the rate limit
  const stranger = client(UNKNOWN_KEY);
  await drive('scrape, unknown key', 401, () => stranger.scrape({ url: 'https://docs.test/' }));
  await drive('metadata, unknown key', 401, () => stranger.getMetadata({ url: watch(video.id) }));
  await drive('extract, unknown key', 401, () => stranger.startExtract({ url: watch(video.id), prompt: 'x' }));
  await drive('me, unknown key', 401, () => stranger.me());
  const broke = client(BROKE_KEY);
  await drive('scrape, no credits', 429, () => broke.scrape({ url: 'https://docs.test/' }));
  await drive('map, no credits', 429, () => broke.mapSite({ url: 'https://docs.test/' }));
  await drive('crawl, no credits', 429, () => broke.startCrawl({ url: 'https://docs.test/' }));
  await drive('metadata, no credits', 429, () => broke.getMetadata({ url: watch(video.id) }));
  await drive('extract, no credits', 429, () => broke.startExtract({ url: watch(video.id), prompt: 'x' }));
  const slow = client(SLOW_KEY);
  await drive('metadata within the rate limit', 200, () => slow.getMetadata({ url: watch(video.id) }));
  await drive('metadata over the rate limit', 429, () => slow.getMetadata({ url: watch(video.id) }));

  // 500 from every operation: the simulator's own internal-error answer
  const ids = {
    video: video.id,
    playlist,
    channel: ch.id,
    batch: tb.jobId,
    crawl: crawl.jobId,
    transcriptJob: tj.jobId,
    extractJob: ex1.jobId,
  };
  sim.setFaults({ errorRate: 1 });
  for (const [label, call] of oneCallPerOperation(c, ids)) await drive(`${label}, internal error`, 500, call);
  sim.setFaults({ errorRate: 0 });

  // what time does to jobs: an extract result is kept an hour, batch results a day
  sim.clock.advance(HOUR_MS);
  await drive('extract job an hour after completion', 404, () => c.getExtractJob(ex1.jobId));
  sim.clock.advance(DAY_MS);
  await drive('batch past its retention', 200, () => c.getBatch(tb.jobId));

  exchanges = proxy.exchanges();
}

beforeAll(async () => {
  sim = await startSimulator({
    seed: 26,
    platform: PLATFORM,
    // frozen: only the drive moves time
    clockSpeed: 0,
    catalog: {
      channels: 2,
      videosPerChannel: { min: 40, max: 40 },
      privateShare: 0.05,
      goneShare: 0.08,
      noTranscriptShare: 0.15,
      transcriptChunks: { min: 3, max: 6 },
    },
    jobs: {
      queuedMs: QUEUED_MS,
      transcriptJobMs: TRANSCRIPT_JOB_MS,
      extractJobMs: EXTRACT_JOB_MS,
      crawlPageMs: CRAWL_PAGE_MS,
    },
    maxVideoIds: MAX_VIDEO_IDS,
    accounts: { [BROKE_KEY]: { maxCredits: 0 }, [SLOW_KEY]: { rateLimit: { requestsPerSecond: 0.001, burst: 1 } } },
  });
  proxy = await startRecordingProxy(sim.url);
  contract = createContract(withErrata(DOCUMENT));
  await driveEverything();
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await proxy?.close();
  await sim?.close();
});

function problemsOf(c: Contract, list: readonly Exchange[]): Problem[] {
  return list.flatMap((x) => c.check(x));
}

function isSuccess(status: number): boolean {
  return status >= 200 && status < 300 && status !== 206;
}

describe('the published interface document (upstream/openapi-v1.json)', () => {
  it('every operation it lists was driven, through a success and through an error answer', () => {
    const seen = new Map<string, Set<number>>();
    for (const x of exchanges) {
      const op = contract.operationOf(x.request.method, x.request.path);
      if (op === undefined || x.answer === undefined) continue;
      let statuses = seen.get(op.key);
      if (statuses === undefined) seen.set(op.key, (statuses = new Set()));
      statuses.add(x.answer.status);
    }
    const lacking = contract.operations
      .map((op) => ({ op: op.key, statuses: [...(seen.get(op.key) ?? [])] }))
      .filter(({ statuses }) => !statuses.some(isSuccess) || !statuses.some((s) => !isSuccess(s)));
    expect(contract.operations.length).toBeGreaterThan(0);
    expect(lacking).toEqual([]);
  });

  it('every request the client sent is what its operation declares', () => {
    const problems = problemsOf(contract, exchanges).filter((p) => p.where.startsWith('request'));
    expect(problems).toEqual([]);
  });

  it("every answer's status is listed for its operation and its body matches that status's schema", () => {
    const problems = problemsOf(contract, exchanges).filter((p) => !p.where.startsWith('request'));
    expect(problems).toEqual([]);
    const pairs = new Set(
      exchanges.map((x) => `${contract.operationOf(x.request.method, x.request.path)?.key} ${x.answer?.status}`),
    );
    console.info(
      `contract: ${exchanges.length} exchanges validated over ${contract.operations.length} operations, ` +
        `${pairs.size} of ${contract.operations.reduce((n, o) => n + o.statuses.length, 0)} documented operation/status pairs`,
    );
  });

  it('the metadata answers cover every MediaType the document lists', () => {
    const listed = getAt(DOCUMENT, '/components/schemas/MediaType/enum') as string[];
    expect([...metadataTypes].sort()).toEqual([...listed].sort());
  });

  it('each erratum still names what the published document says', () => {
    expect(() => withErrata(DOCUMENT)).not.toThrow();
    for (const e of ERRATA) expect(getAt(DOCUMENT, e.pointer)).toEqual(e.expected);
  });

  it('search `features` goes out as repeated keys with hyphenated values, checked like every other query', () => {
    const withFeatures = exchanges.filter(
      (x) => x.request.path.endsWith('/search') && (x.request.query.features?.length ?? 0) > 0,
    );
    expect(withFeatures.length).toBeGreaterThan(0);
    for (const x of withFeatures) expect(x.request.query.features).toEqual(['creative-commons', 'hd']);
  });
});

/** Copies of the document broken on purpose, each with the exchanges it must then fail. */
const BREAKS: ReadonlyArray<{
  name: string;
  breakIt: (doc: Json) => void;
  fails: (x: Exchange) => boolean;
  where: string;
}> = [
  {
    name: 'a required field added to Metadata fails every 200 /metadata answer',
    breakIt: (doc) => (getAt(doc, '/components/schemas/Metadata/required') as string[]).push('sponsor'),
    fails: (x) => x.request.path === '/v1/metadata' && x.answer?.status === 200,
    where: 'response.body',
  },
  {
    name: 'the Error codes narrowed (no `not-found`) fail every 404 answer',
    breakIt: (doc) => {
      const codes = getAt(doc, '/components/schemas/Error/properties/error/enum') as string[];
      setAt(
        doc,
        '/components/schemas/Error/properties/error/enum',
        codes.filter((c) => c !== 'not-found'),
      );
    },
    fails: (x) => x.answer?.status === 404,
    where: 'response.body',
  },
  {
    name: 'the channel video types narrowed (no `short`) fail the requests that ask for shorts',
    breakIt: (doc) => {
      const params = getAt(doc, '/paths/~1youtube~1channel~1videos/get/parameters') as Array<{
        name: string;
        schema: Json;
      }>;
      params.find((p) => p.name === 'type')!.schema.enum = ['all', 'video', 'live'];
    },
    fails: (x) => x.request.path === '/v1/youtube/channel/videos' && x.request.query.type?.[0] === 'short',
    where: 'request.query.type',
  },
  {
    name: 'a required field added to the extract request fails every POST /extract',
    breakIt: (doc) => (getAt(doc, '/components/schemas/ExtractRequest/required') as string[]).push('language'),
    fails: (x) => x.request.method === 'POST' && x.request.path === '/v1/extract',
    where: 'request.body',
  },
  {
    name: '206 unlisted for the deprecated transcript fails its transcript-unavailable answers',
    breakIt: (doc) => delete (getAt(doc, '/paths/~1youtube~1transcript/get/responses') as Json)['206'],
    fails: (x) => x.request.path === '/v1/youtube/transcript' && x.answer?.status === 206,
    where: 'response.status',
  },
];

describe('the validator fails on a document broken on purpose', () => {
  it.each(BREAKS)('$name', ({ breakIt, fails, where }) => {
    const doc = withErrata(DOCUMENT);
    breakIt(doc);
    const broken = createContract(doc);
    const expected = exchanges.filter(fails).map((x) => x.seq);
    expect(expected.length).toBeGreaterThan(0);
    // only what the break adds: a defect the whole document sees is the other tests' to report
    const key = (p: Problem) => `${p.seq}|${p.where}|${p.message}`;
    const before = new Set(problemsOf(contract, exchanges).map(key));
    const added = problemsOf(broken, exchanges).filter((p) => !before.has(key(p)));
    expect([...new Set(added.map((p) => p.seq))].sort((a, b) => a - b)).toEqual(expected);
    expect(added.every((p) => p.where === where)).toBe(true);
  });
});
