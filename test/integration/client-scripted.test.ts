/**
 * The client over real HTTP against a scripted local server: per-attempt answers shape resets,
 * gateway pages, timeouts and malformed bodies, so the retry and error rules are checked on the
 * wire (what the server saw, what the caller got), not on mocks of our own code.
 */
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createApiClient, type ApiClient, type ApiClientOptions, type RequestEvent } from '../../src/api/client.ts';
import {
  AbortedError,
  ApiError,
  ForbiddenError,
  InternalError,
  InvalidRequestError,
  LimitExceededError,
  NetworkError,
  NotFoundError,
  RAW_BODY_PREFIX_CHARS,
  SchemaMismatchError,
  TimeoutError,
  TranscriptUnavailableError,
  UnauthorizedError,
  UpgradeRequiredError,
} from '../../src/api/errors.ts';
import { createLogger } from '../../src/log.ts';
import { freePort, startScriptedServer, type ScriptedServer } from '../helpers/scripted-server.ts';
import type { LogLine } from '../helpers/proc.ts';

const API_KEY = 'scripted-secret-key-7f3a9c';
/** small timeouts keep the hanging-server cases fast */
const HEADERS_TIMEOUT_MS = 250;
const BODY_TIMEOUT_MS = 250;

const video = {
  id: 'vid00000001',
  title: 'A title',
  description: '',
  duration: 61,
  channel: { id: 'UC1', name: 'Chan' },
  tags: ['a'],
  uploadDate: null,
  viewCount: 10,
  transcriptLanguages: ['en'],
};
const transcript = {
  content: [{ text: 'hello', offset: 0, duration: 1200 }],
  lang: 'en',
  availableLangs: ['en', 'de'],
};
const errorBody = (error: string, message = 'refused') => ({ error, message, details: 'scripted' });

let server: ScriptedServer;
let clients: ApiClient[] = [];
let sleeps: number[];
let events: RequestEvent[];
let logLines: string[];
/** answers a test scripts on purpose and expects to stay unasked */
let leftOver: string[] = [];

function logBuffer(): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, cb) {
      logLines.push(chunk.toString());
      cb();
    },
  });
}

function makeClient(over: Partial<ApiClientOptions> = {}): ApiClient {
  const c = createApiClient({
    baseUrl: server.baseUrl,
    apiKey: API_KEY,
    headersTimeoutMs: HEADERS_TIMEOUT_MS,
    bodyTimeoutMs: BODY_TIMEOUT_MS,
    connectTimeoutMs: 1_000,
    retry: { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 5_000 },
    // Waits are recorded, not slept: the tests check the delays without spending them.
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    random: () => 0.5,
    log: createLogger({ level: 'debug', destination: logBuffer() }),
    onRequest: (e) => events.push(e),
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

beforeAll(async () => {
  server = await startScriptedServer();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  server.reset();
  sleeps = [];
  events = [];
  logLines = [];
});
afterEach(async () => {
  await Promise.all(clients.map((c) => c.close()));
  clients = [];
  // every scripted answer was asked for: a test did as many requests as it meant to
  expect(server.pending()).toEqual(leftOver);
  leftOver = [];
});

describe('wire format', () => {
  it('sends the key as x-api-key, parameters in the query, bodies as JSON', async () => {
    const c = makeClient();
    server.script('GET', '/videosite/playlist/videos', {
      status: 200,
      body: { videoIds: ['a'], shortIds: [], liveIds: ['l'] },
    });
    server.script('POST', '/videosite/transcript/batch', { status: 200, body: { jobId: 'j-1' } });

    await expect(c.getPlaylistVideos({ id: 'PL x&y', limit: 50 })).resolves.toEqual({
      videoIds: ['a'],
      shortIds: [],
      liveIds: ['l'],
    });
    await expect(c.createTranscriptBatch({ channelId: '@chan', limit: 20, lang: 'de', text: true })).resolves.toEqual({
      jobId: 'j-1',
    });

    const [get, post] = server.requests;
    expect(get?.headers['x-api-key']).toBe(API_KEY);
    expect(get?.query.get('id')).toBe('PL x&y');
    expect(get?.query.get('limit')).toBe('50');
    expect(post?.headers['x-api-key']).toBe(API_KEY);
    expect(post?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(post?.body ?? '')).toEqual({ channelId: '@chan', limit: 20, lang: 'de', text: true });
  });

  it('has a method for every endpoint, each on its own path', async () => {
    const c = makeClient({ platform: 'vs2' });
    const ids = { videoIds: [], shortIds: [], liveIds: [] };
    const cases: Array<[string, string, unknown, () => Promise<unknown>, unknown]> = [
      ['POST', '/vs2/video/batch', { jobId: 'b1' }, () => c.createVideoBatch({ videoIds: ['v'] }), { jobId: 'b1' }],
      [
        'POST',
        '/vs2/transcript/batch',
        { jobId: 'b2' },
        () => c.createTranscriptBatch({ videoIds: ['v'] }),
        { jobId: 'b2' },
      ],
      [
        'GET',
        // the job ID is one encoded path segment
        '/vs2/batch/b%2B1%3Fx',
        { status: 'queued', results: [], stats: { total: 0, succeeded: 0, failed: 0 } },
        () => c.getBatch('b+1?x'),
        { status: 'queued', results: [], stats: { total: 0, succeeded: 0, failed: 0 } },
      ],
      ['GET', '/vs2/playlist/videos', ids, () => c.getPlaylistVideos({ id: 'PL' }), ids],
      ['GET', '/vs2/channel/videos', ids, () => c.getChannelVideos({ id: 'UC', type: 'short' }), ids],
      ['GET', '/vs2/video', video, () => c.getVideo({ id: 'v' }), video],
      [
        'GET',
        '/vs2/playlist',
        { id: 'PL', title: 't', videoCount: 1, channel: { id: 'UC', name: 'n' } },
        () => c.getPlaylist({ id: 'PL' }),
        { id: 'PL', title: 't', videoCount: 1, channel: { id: 'UC', name: 'n' } },
      ],
      ['GET', '/vs2/channel', { id: 'UC', name: 'n' }, () => c.getChannel({ id: '@n' }), { id: 'UC', name: 'n' }],
      ['GET', '/vs2/transcript', transcript, () => c.getTranscript({ videoId: 'v', chunkSize: 500 }), transcript],
      [
        'GET',
        '/vs2/transcript/translate',
        { content: 'hallo', lang: 'de' },
        () => c.translateTranscript({ url: 'https://v.test/v', lang: 'de', text: true }),
        { content: 'hallo', lang: 'de' },
      ],
      [
        'GET',
        '/transcript',
        transcript,
        () => c.getMediaTranscript({ url: 'https://v.test/v', mode: 'auto' }),
        { kind: 'transcript', transcript },
      ],
      ['GET', '/transcript/t1', { status: 'active' }, () => c.getTranscriptJob('t1'), { status: 'active' }],
      [
        'GET',
        '/web/scrape',
        { url: 'https://w.test', content: '# x', countCharacters: 3, urls: [] },
        () => c.scrape({ url: 'https://w.test', noLinks: true }),
        { url: 'https://w.test', content: '# x', countCharacters: 3, urls: [] },
      ],
      [
        'GET',
        '/web/map',
        { urls: ['https://w.test/a'] },
        () => c.mapSite({ url: 'https://w.test' }),
        { urls: ['https://w.test/a'] },
      ],
      ['POST', '/web/crawl', { jobId: 'c1' }, () => c.startCrawl({ url: 'https://w.test', limit: 5 }), { jobId: 'c1' }],
      ['GET', '/web/crawl/c1', { status: 'scraping' }, () => c.getCrawl('c1', { skip: 10 }), { status: 'scraping' }],
      [
        'GET',
        '/vs2/search',
        { query: 'q', results: [] },
        () => c.search({ query: 'q', limit: 3 }),
        { query: 'q', results: [] },
      ],
      [
        'GET',
        '/metadata',
        { platform: 'videosite', type: 'video', id: 'v', title: null },
        () => c.getMetadata({ url: 'https://v.test/v' }),
        { platform: 'videosite', type: 'video', id: 'v', title: null },
      ],
      [
        'POST',
        '/extract',
        { jobId: 'e1' },
        () => c.startExtract({ url: 'https://v.test/v', prompt: 'topics' }),
        { jobId: 'e1' },
      ],
      [
        'GET',
        '/extract/e1',
        { status: 'completed', error: null, data: { topics: ['a'] } },
        () => c.getExtractJob('e1'),
        { status: 'completed', error: null, data: { topics: ['a'] } },
      ],
      [
        'GET',
        '/me',
        { organizationId: 'o', plan: 'pro', maxCredits: 10, usedCredits: 1 },
        () => c.me(),
        { organizationId: 'o', plan: 'pro', maxCredits: 10, usedCredits: 1 },
      ],
    ];
    for (const [method, path, body, call, expected] of cases) {
      server.script(method, path, { status: 200, body });
      await expect(call(), `${method} ${path}`).resolves.toEqual(expected);
    }
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual(cases.map(([m, p]) => `${m} ${p}`));
    expect(server.requests.every((r) => r.headers['x-api-key'] === API_KEY)).toBe(true);
    const crawl = server.requests.find((r) => r.path === '/web/crawl/c1');
    expect(crawl?.query.get('skip')).toBe('10');
    const channelVideos = server.requests.find((r) => r.path === '/vs2/channel/videos');
    expect(channelVideos?.query.get('type')).toBe('short');
  });

  it('sends search features as repeated keys, and refuses a value the interface does not list before sending', async () => {
    const c = makeClient();
    server.script('GET', '/videosite/search', { status: 200, body: { query: 'q', results: [] } });
    await c.search({ query: 'q', features: ['hd', 'creative-commons', '360'], uploadDate: 'week', sortBy: 'views' });
    const [sent] = server.requests;
    expect(sent?.query.getAll('features')).toEqual(['hd', 'creative-commons', '360']);
    expect(sent?.query.get('uploadDate')).toBe('week');
    expect(sent?.query.get('sortBy')).toBe('views');
    const e = await caught(c.search({ query: 'q', features: ['hd', 'creative_commons' as 'hd'] }));
    expect(e).toBeInstanceOf(InvalidRequestError);
    expect(e.path).toBe('features[1]');
    expect(server.requests).toHaveLength(1);
  });

  it('returns the 202 answer of GET /transcript as a job to poll', async () => {
    const c = makeClient();
    server.script('GET', '/transcript', { status: 202, body: { jobId: 'tj-9' } });
    await expect(c.getMediaTranscript({ url: 'https://v.test/x' })).resolves.toEqual({ kind: 'job', jobId: 'tj-9' });
  });

  it('always sends mode on GET /transcript: native unless asked (the interface defaults to auto, which may buy a generation)', async () => {
    const c = makeClient();
    server.script(
      'GET',
      '/transcript',
      { status: 200, body: transcript },
      { status: 200, body: transcript },
      { status: 202, body: { jobId: 'tj-1' } },
    );
    await c.getMediaTranscript({ url: 'https://v.test/a' });
    await c.readMediaTranscript({ url: 'https://v.test/b', lang: 'en' });
    await c.getMediaTranscript({ url: 'https://v.test/c', mode: 'generate' });
    expect(server.requests.map((r) => [r.query.get('url'), r.query.get('mode')])).toEqual([
      ['https://v.test/a', 'native'],
      ['https://v.test/b', 'native'],
      ['https://v.test/c', 'generate'],
    ]);
  });
});

describe('error answers', () => {
  const table: Array<[number, string, new (...a: never[]) => ApiError]> = [
    [400, 'invalid-request', InvalidRequestError],
    [401, 'unauthorized', UnauthorizedError],
    [402, 'upgrade-required', UpgradeRequiredError],
    [403, 'forbidden', ForbiddenError],
    [404, 'not-found', NotFoundError],
    [429, 'limit-exceeded', LimitExceededError],
    [500, 'internal-error', InternalError],
  ];
  it.each(table)('%i %s becomes its own class with status, endpoint and details', async (status, code, Cls) => {
    const c = makeClient({ retry: { maxAttempts: 1 } });
    server.script('GET', '/videosite/batch/job-42', { status, body: errorBody(code, `server says ${code}`) });
    const e = await caught(c.getBatch('job-42'));
    expect(e).toBeInstanceOf(Cls);
    expect(e.code).toBe(code);
    expect(e.status).toBe(status);
    expect(e.details).toBe('scripted');
    expect(e.endpoint).toBe('GET /videosite/batch/{jobId}');
    expect(e.message).toContain(`server says ${code}`);
    expect(e.message).not.toContain('job-42');
  });

  it('maps the 206 answer to transcript-unavailable and does not retry it', async () => {
    const c = makeClient();
    server.script('GET', '/videosite/transcript', {
      status: 206,
      body: errorBody('transcript-unavailable', 'no captions'),
    });
    const e = await caught(c.getTranscript({ videoId: 'v1' }));
    expect(e).toBeInstanceOf(TranscriptUnavailableError);
    expect(e.status).toBe(206);
    expect(server.count('GET', '/videosite/transcript')).toBe(1);
  });

  it('reads a non-JSON 502 from a gateway as internal-error with the raw body, after retrying the GET', async () => {
    const c = makeClient({ retry: { maxAttempts: 2 } });
    const html = '<html><body>502 Bad Gateway</body></html>';
    server.script('GET', '/me', { status: 502, body: html }, { status: 502, body: html });
    const e = await caught(c.me());
    expect(e).toBeInstanceOf(InternalError);
    expect(e.status).toBe(502);
    expect(e.rawBody).toBe(html);
    expect(server.count('GET', '/me')).toBe(2);
  });

  it('does not retry 4xx answers', async () => {
    const c = makeClient();
    server.script('GET', '/videosite/video', { status: 403, body: errorBody('forbidden', 'private video') });
    await expect(c.getVideo({ id: 'v' })).rejects.toBeInstanceOf(ForbiddenError);
    expect(server.count('GET', '/videosite/video')).toBe(1);
    expect(sleeps).toEqual([]);
  });
});

describe('answers that break their schema', () => {
  it('reports the failing path and keeps the raw body, without retrying', async () => {
    const c = makeClient();
    const body = {
      status: 'completed',
      stats: { total: 2, succeeded: 2, failed: 0 },
      results: [
        { videoId: 'a', video },
        { videoId: 'b', video: { ...video, duration: 'long' } },
      ],
    };
    server.script('GET', '/videosite/batch/j1', { status: 200, body });
    const e = await caught(c.getBatch('j1'));
    expect(e).toBeInstanceOf(SchemaMismatchError);
    expect(e.path).toBe('results[1].video.duration');
    expect(e.message).toContain('results[1].video.duration');
    expect(JSON.parse(e.rawBody ?? '')).toEqual(body);
    expect(server.count('GET', '/videosite/batch/j1')).toBe(1);
  });

  it('reports a 200 that is not JSON as schema-mismatch at the root', async () => {
    const c = makeClient();
    const junk = `not json ${'x'.repeat(1000)}`;
    server.script('GET', '/me', { status: 200, body: junk });
    const e = await caught(c.me());
    expect(e).toBeInstanceOf(SchemaMismatchError);
    expect(e.path).toBe('(root)');
    expect(e.rawBody).toBe(junk);
    expect(e.message.length).toBeLessThan(400);
  });

  it('treats a 2xx Error object as the error it names', async () => {
    const c = makeClient();
    server.script('GET', '/metadata', { status: 200, body: errorBody('not-found', 'no such media') });
    const e = await caught(c.getMetadata({ url: 'https://v.test/nope' }));
    expect(e).toBeInstanceOf(NotFoundError);
    expect(e.status).toBe(200);
  });
});

describe('GET retries', () => {
  it('survives a reset, then a 500, then answers 200', async () => {
    const c = makeClient();
    server.script(
      'GET',
      '/videosite/channel',
      { reset: true },
      { status: 500, body: errorBody('internal-error') },
      { status: 200, body: { id: 'UC1', name: 'Chan' } },
    );
    await expect(c.getChannel({ id: 'UC1' })).resolves.toEqual({ id: 'UC1', name: 'Chan' });
    expect(server.count('GET', '/videosite/channel')).toBe(3);
    // full jitter with random() = 0.5: half of base * 2^(n-1)
    expect(sleeps).toEqual([50, 100]);
    expect(events.map((e) => [e.attempt, e.status, e.errorCode])).toEqual([
      [1, undefined, 'network'],
      [2, 500, 'internal-error'],
      [3, 200, undefined],
    ]);
    const warns = logLines.map((l) => JSON.parse(l) as LogLine).filter((l) => l.event === 'upstream.retry');
    expect(warns.map((w) => [w.endpoint, w.attempt, w.delayMs, w.code])).toEqual([
      ['GET /videosite/channel', 1, 50, 'network'],
      ['GET /videosite/channel', 2, 100, 'internal-error'],
    ]);
  });

  it('gives up after maxAttempts and throws the last error', async () => {
    const c = makeClient();
    server.script(
      'GET',
      '/me',
      { reset: true },
      { reset: true },
      { status: 503, body: errorBody('internal-error', 'down') },
    );
    const e = await caught(c.me());
    expect(e).toBeInstanceOf(InternalError);
    expect(e.status).toBe(503);
    expect(server.count('GET', '/me')).toBe(3);
  });

  it('honours Retry-After', async () => {
    const c = makeClient();
    server.script(
      'GET',
      '/videosite/search',
      { status: 429, body: errorBody('limit-exceeded', 'slow down'), headers: { 'retry-after': '2' } },
      { status: 200, body: { query: 'q', results: [] } },
    );
    await expect(c.search({ query: 'q' })).resolves.toEqual({ query: 'q', results: [] });
    expect(sleeps).toEqual([2_000]);
  });

  it('does not sleep through a Retry-After longer than maxDelayMs: the caller gets it to pause', async () => {
    const c = makeClient();
    server.script('GET', '/me', {
      status: 429,
      body: errorBody('limit-exceeded', 'quota'),
      headers: { 'retry-after': '3600' },
    });
    const e = await caught(c.me());
    expect(e).toBeInstanceOf(LimitExceededError);
    expect(e.retryAfterMs).toBe(3_600_000);
    expect(sleeps).toEqual([]);
    expect(server.count('GET', '/me')).toBe(1);
  });

  it('retries a GET whose answer never starts (headers timeout)', async () => {
    const c = makeClient({ retry: { maxAttempts: 2 } });
    server.script('GET', '/videosite/playlist', { hang: true }, { hang: true });
    const e = await caught(c.getPlaylist({ id: 'PL' }));
    expect(e).toBeInstanceOf(TimeoutError);
    expect(server.count('GET', '/videosite/playlist')).toBe(2);
  });

  it('retries a GET whose body is cut short or stalls', async () => {
    const c = makeClient();
    server.script(
      'GET',
      '/videosite/video',
      { truncate: { status: 200, partial: '{"id":"vid' } },
      { stall: { status: 200, partial: '{"id":"vid' } },
      { status: 200, body: video },
    );
    await expect(c.getVideo({ id: 'v' })).resolves.toEqual(video);
    expect(server.count('GET', '/videosite/video')).toBe(3);
    expect(events.map((e) => e.errorCode)).toEqual(['network', 'timeout', undefined]);
  });

  it('asks beforeRequest (the shared rate limiter) before every attempt, retries included', async () => {
    const order: string[] = [];
    const c = makeClient({
      beforeRequest: async () => {
        order.push(`acquire ${server.requests.length}`);
      },
    });
    server.script(
      'GET',
      '/me',
      { status: 500, body: errorBody('internal-error') },
      {
        status: 200,
        body: { organizationId: 'o', plan: 'p', maxCredits: 1, usedCredits: 0 },
      },
    );
    await c.me();
    // each acquire happened before the request it let through
    expect(order).toEqual(['acquire 0', 'acquire 1']);
    expect(server.count('GET', '/me')).toBe(2);
  });

  it('sends nothing when the caller aborts while waiting for the limiter', async () => {
    const ac = new AbortController();
    const c = makeClient({
      beforeRequest: (signal) =>
        new Promise<void>((_, reject) => {
          signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
        }),
    });
    const p = c.getVideo({ id: 'v' }, { signal: ac.signal });
    ac.abort();
    await expect(p).rejects.toBeInstanceOf(AbortedError);
    expect(server.requests).toEqual([]);
  });

  it('stops waiting when the caller aborts', async () => {
    const c = makeClient({ sleep: undefined, retry: { maxAttempts: 5, baseDelayMs: 10_000, maxDelayMs: 10_000 } });
    server.script('GET', '/me', { status: 500, body: errorBody('internal-error') });
    const ac = new AbortController();
    const p = c.me({ signal: ac.signal });
    setTimeout(() => ac.abort(), 100);
    const e = await caught(p);
    expect(e).toBeInstanceOf(AbortedError);
    expect(server.count('GET', '/me')).toBe(1);
  });
});

describe('Retry-After is capped (API_RETRY_AFTER_MAX_MS)', () => {
  const YEAR_S = '31536000';
  const HOUR_MS = 3_600_000;
  const logged = () => logLines.map((l) => JSON.parse(l) as LogLine);

  it('exposes at most the cap, everywhere, and logs the capping once per answer', async () => {
    // default cap (1 h); the policy's maxDelayMs (5 s) is below it, so the caller gets it to pause
    const c = makeClient();
    server.script('GET', '/me', {
      status: 429,
      body: errorBody('limit-exceeded', 'slow down'),
      headers: { 'retry-after': YEAR_S },
    });
    const e = await caught(c.me());
    expect(e).toBeInstanceOf(LimitExceededError);
    expect(e.retryAfterMs).toBe(HOUR_MS);
    expect(JSON.stringify(e.toJSON())).not.toContain('31536000');
    expect(events.map((ev) => ev.retryAfterMs)).toEqual([HOUR_MS]);
    expect(sleeps).toEqual([]);
    const capped = logged().filter((l) => l.event === 'upstream.retry_after_capped');
    expect(capped).toHaveLength(1);
    expect(capped[0]).toMatchObject({ level: 40, endpoint: 'GET /me', receivedMs: 31_536_000_000, cappedMs: HOUR_MS });
  });

  it('waits the capped value when it fits the retry policy (one log line per capped answer)', async () => {
    const c = makeClient({ retryAfterMaxMs: 2_000 });
    server.script(
      'GET',
      '/videosite/search',
      { status: 429, body: errorBody('limit-exceeded', 'slow down'), headers: { 'retry-after': YEAR_S } },
      {
        status: 503,
        body: errorBody('internal-error', 'busy'),
        headers: { 'retry-after': 'Fri, 01 Jan 2100 00:00:00 GMT' },
      },
      { status: 200, body: { query: 'q', results: [] } },
    );
    await expect(c.search({ query: 'q' })).resolves.toEqual({ query: 'q', results: [] });
    expect(sleeps).toEqual([2_000, 2_000]);
    expect(events.map((ev) => ev.retryAfterMs)).toEqual([2_000, 2_000, undefined]);
    const capped = logged().filter((l) => l.event === 'upstream.retry_after_capped');
    expect(capped.map((l) => [l.endpoint, l.status, l.cappedMs])).toEqual([
      ['GET /videosite/search', 429, 2_000],
      ['GET /videosite/search', 503, 2_000],
    ]);
  });

  it('leaves a Retry-After under the cap alone, unlogged', async () => {
    const c = makeClient({ retryAfterMaxMs: 10_000 });
    server.script('GET', '/me', {
      status: 429,
      body: errorBody('limit-exceeded', 'quota'),
      headers: { 'retry-after': '7' },
    });
    const e = await caught(c.me());
    expect(e.retryAfterMs).toBe(7_000);
    expect(logged().filter((l) => l.event === 'upstream.retry_after_capped')).toEqual([]);
  });
});

describe('answer bodies are bounded', () => {
  const MAX = 64 * 1024;
  const flooded = async () => {
    await vi.waitFor(() => expect(server.floods).toHaveLength(1));
    return server.floods[0]!;
  };

  it('fails a JSON answer over API_MAX_BODY_BYTES without reading it all, and does not retry it', async () => {
    const c = makeClient({ maxBodyBytes: MAX });
    // valid JSON of 64 MiB, sent chunked: the size shows only while reading
    server.script('GET', '/videosite/search', {
      flood: { status: 200, prefix: '{"query":"q","results":[],"pad":"', fillBytes: 64 * 1024 * 1024, suffix: '"}' },
    });
    const e = await caught(c.search({ query: 'q' }));
    expect(e).toBeInstanceOf(SchemaMismatchError);
    expect(e.status).toBe(200);
    expect(e.message).toContain('API_MAX_BODY_BYTES');
    expect(e.message).toContain(String(MAX));
    expect(e.rawBody?.startsWith('{"query":"q"')).toBe(true);
    expect(e.rawBody?.length).toBe(RAW_BODY_PREFIX_CHARS);
    const f = await flooded();
    expect(f.complete).toBe(false);
    // what the server could push before the client hung up: the limit plus socket buffers
    expect(f.written).toBeLessThan(f.total / 4);
    expect(server.count('GET', '/videosite/search')).toBe(1);
  });

  it('fails an answer whose content-length is over the limit before reading it', async () => {
    const c = makeClient({ maxBodyBytes: MAX });
    server.script('GET', '/web/map', {
      status: 200,
      body: { urls: Array.from({ length: 10_000 }, (_, i) => `https://w.test/${i}`) },
    });
    const e = await caught(c.mapSite({ url: 'https://w.test' }));
    expect(e).toBeInstanceOf(SchemaMismatchError);
    expect(e.message).toContain('API_MAX_BODY_BYTES');
    expect(e.details).toMatch(/^content-length \d+$/);
    expect(e.rawBody).toBeUndefined();
    // the same client still works (the dropped connection is replaced)
    server.script('GET', '/web/map', { status: 200, body: { urls: [] } });
    await expect(c.mapSite({ url: 'https://w.test' })).resolves.toEqual({ urls: [] });
  });

  it('reads a JSON answer up to the limit as usual', async () => {
    const c = makeClient({ maxBodyBytes: MAX });
    const urls = Array.from({ length: 2_000 }, (_, i) => `https://w.test/${i}`);
    expect(JSON.stringify({ urls }).length).toBeLessThan(MAX);
    server.script('GET', '/web/map', { status: 200, body: { urls } });
    await expect(c.mapSite({ url: 'https://w.test' })).resolves.toEqual({ urls });
  });

  it('cuts a large error body to a prefix in rawBody, message and logs', async () => {
    const c = makeClient({ retry: { maxAttempts: 1 } });
    const page = `<html>${'gateway trouble '.repeat(64 * 1024)}</html>`;
    server.script('GET', '/me', { status: 502, body: page });
    const e = await caught(c.me());
    expect(e).toBeInstanceOf(InternalError);
    expect(e.errorBody).toBe(false);
    expect(e.rawBody).toBe(page.slice(0, RAW_BODY_PREFIX_CHARS));
    expect(e.rawBodyTruncated).toBe(true);
    expect(e.message.length).toBeLessThan(400);
    // logged the way the workers log a failed job: pino's err serialiser takes every field
    createLogger({ level: 'info', destination: logBuffer() }).error({ event: 'job.failed', err: e }, 'job failed');
    const line = logLines.at(-1)!;
    expect((JSON.parse(line) as { err: { rawBody: string } }).err.rawBody).toBe(e.rawBody);
    expect(line.length).toBeLessThan(RAW_BODY_PREFIX_CHARS + 4_000);
  });

  it('reads no more than a small bound of a chunked error body', async () => {
    const c = makeClient({ retry: { maxAttempts: 1 } });
    server.script('GET', '/me', { flood: { status: 500, prefix: '<html>', fillBytes: 64 * 1024 * 1024 } });
    const e = await caught(c.me());
    expect(e).toBeInstanceOf(InternalError);
    expect(e.rawBody).toBe(`<html>${'x'.repeat(RAW_BODY_PREFIX_CHARS - 6)}`);
    const f = await flooded();
    expect(f.complete).toBe(false);
    expect(f.written).toBeLessThan(f.total / 4);
  });

  it('tells a JSON not-found from a gateway 404 (errorBody, rawBody)', async () => {
    const c = makeClient();
    server.script('GET', '/videosite/batch/j-json', { status: 404, body: errorBody('not-found', 'unknown job') });
    server.script('GET', '/videosite/batch/j-gw', { status: 404, body: '<html>404 Not Found</html>' });
    const json = await caught(c.openBatch('j-json'));
    const gw = await caught(c.openBatch('j-gw'));
    expect([json, gw].map((e) => e.constructor)).toEqual([NotFoundError, NotFoundError]);
    expect([json.errorBody, json.rawBody]).toEqual([true, undefined]);
    expect([gw.errorBody, gw.rawBody]).toEqual([false, '<html>404 Not Found</html>']);
  });

  it('never keeps part of the key where a body is cut', async () => {
    const c = makeClient({ maxBodyBytes: 1_024, retry: { maxAttempts: 1 } });
    // the key straddles the 2 KiB rawBody prefix of an error body ...
    server.script('GET', '/me', {
      status: 502,
      body: `${'x'.repeat(RAW_BODY_PREFIX_CHARS - 6)}${API_KEY}${'y'.repeat(5_000)}`,
    });
    // ... and the 1 KiB read limit of a JSON answer
    server.script('GET', '/videosite/search', {
      flood: {
        status: 200,
        prefix: `{"pad":"${'x'.repeat(1_024 - 8 - 6)}${API_KEY}`,
        fillBytes: 1024 * 1024,
        suffix: '"}',
      },
    });
    const [gateway, large] = [await caught(c.me()), await caught(c.search({ query: 'q' }))];
    // replaced before the prefix was taken: the cut falls inside '[redacted]', not inside the key
    expect(gateway.rawBody).toBe(`${'x'.repeat(RAW_BODY_PREFIX_CHARS - 6)}[redac`);
    // cut by the read limit after the key's first 6 characters: those are dropped
    expect(large.rawBody).toBe(`{"pad":"${'x'.repeat(1_024 - 8 - 6)}`);
    for (const e of [gateway, large]) {
      expect([e.message, e.details, e.rawBody, JSON.stringify(e.toJSON())].join('\n')).not.toContain(API_KEY);
    }
    expect(logLines.join('')).not.toContain(API_KEY);
    await flooded();
  });
});

describe('job-creating POSTs', () => {
  it('are not retried after a timeout: the server sees exactly one request', async () => {
    const c = makeClient();
    server.script('POST', '/videosite/video/batch', { hang: true }, { status: 200, body: { jobId: 'second' } });
    leftOver = ['POST /videosite/video/batch'];
    const e = await caught(c.createVideoBatch({ playlistId: 'PL1', limit: 100 }));
    expect(e).toBeInstanceOf(TimeoutError);
    expect(server.count('POST', '/videosite/video/batch')).toBe(1);
  });

  it('are not retried after a reset once sent, nor after a gateway page', async () => {
    const c = makeClient();
    server.script('POST', '/videosite/video/batch', { reset: true }, { status: 502, body: '<html>bad gateway</html>' });
    await expect(c.createVideoBatch({ videoIds: ['a'] })).rejects.toBeInstanceOf(NetworkError);
    await expect(c.createVideoBatch({ videoIds: ['a'] })).rejects.toBeInstanceOf(InternalError);
    expect(server.count('POST', '/videosite/video/batch')).toBe(2);
  });

  it('are retried when the API answered 429/5xx with its own Error object', async () => {
    const c = makeClient();
    server.script(
      'POST',
      '/web/crawl',
      { status: 503, body: errorBody('internal-error', 'busy') },
      { status: 429, body: errorBody('limit-exceeded', 'rate'), headers: { 'retry-after': '1' } },
      { status: 200, body: { jobId: 'crawl-1' } },
    );
    await expect(c.startCrawl({ url: 'https://w.test' })).resolves.toEqual({ jobId: 'crawl-1' });
    expect(server.count('POST', '/web/crawl')).toBe(3);
    expect(sleeps).toEqual([50, 1_000]);
  });

  it('are retried after a refused connection (the request never left)', async () => {
    const port = await freePort();
    let late: ScriptedServer | undefined;
    const c = makeClient({
      baseUrl: `http://127.0.0.1:${port}/v1`,
      // The server comes up during the first wait, as a restarted upstream would.
      sleep: async (ms) => {
        sleeps.push(ms);
        late ??= await startScriptedServer({ port });
        late.script('POST', '/videosite/transcript/batch', { status: 200, body: { jobId: 'tb-1' } });
      },
    });
    try {
      await expect(c.createTranscriptBatch({ videoIds: ['a', 'b'], lang: 'en' })).resolves.toEqual({ jobId: 'tb-1' });
      expect(late?.count('POST', '/videosite/transcript/batch')).toBe(1);
      expect(events.map((e) => e.errorCode)).toEqual(['network', undefined]);
    } finally {
      await c.close();
      await late?.close();
    }
  });
});

describe('openBatch (streaming)', () => {
  it('hands over the body as a stream after retrying up to the head', async () => {
    const c = makeClient();
    const body = {
      status: 'active',
      stats: { total: 1, succeeded: 0, failed: 0 },
      results: [{ videoId: 'a', errorCode: 'processing' }],
    };
    server.script('GET', '/videosite/batch/big', { reset: true }, { status: 200, body });
    const answer = await c.openBatch('big');
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('application/json');
    let text = '';
    for await (const chunk of answer.body) text += String(chunk);
    expect(JSON.parse(text)).toEqual(body);
    expect(server.count('GET', '/videosite/batch/big')).toBe(2);
  });

  it('throws error answers as ApiErrors', async () => {
    const c = makeClient();
    server.script('GET', '/videosite/batch/gone', { status: 404, body: errorBody('not-found', 'unknown job') });
    server.script('GET', '/videosite/batch/tu', { status: 206, body: errorBody('transcript-unavailable') });
    await expect(c.openBatch('gone')).rejects.toBeInstanceOf(NotFoundError);
    await expect(c.openBatch('tu')).rejects.toBeInstanceOf(TranscriptUnavailableError);
  });
});

describe('crawl pagination', () => {
  const page = (n: number) => ({ url: `https://w.test/${n}`, content: `# ${n}`, countCharacters: 3 });

  it('follows next until the last page', async () => {
    const c = makeClient();
    const self = `${server.baseUrl}/web/crawl/cr1`;
    server.script(
      'GET',
      '/web/crawl/cr1',
      { status: 200, body: { status: 'completed', pages: [page(1), page(2)], next: `${self}?skip=2` } },
      // a relative `next` resolves against the current page
      { status: 200, body: { status: 'completed', pages: [page(3)], next: '/v1/web/crawl/cr1?skip=3' } },
      { status: 200, body: { status: 'completed', pages: [page(4)] } },
    );
    const urls: string[] = [];
    for await (const p of c.crawlPages('cr1')) urls.push(p.url);
    expect(urls).toEqual([1, 2, 3, 4].map((n) => `https://w.test/${n}`));
    expect(server.requests.map((r) => r.query.get('skip'))).toEqual([null, '2', '3']);
  });

  it('never sends a request where next points: another origin gives only its offset, asked on our own path', async () => {
    const other = await startScriptedServer();
    try {
      const c = makeClient();
      server.script(
        'GET',
        '/web/crawl/cr2',
        { status: 200, body: { status: 'completed', pages: [page(1)], next: `${other.baseUrl}/crawl/cr2?skip=1` } },
        { status: 200, body: { status: 'completed', pages: [page(2)] } },
      );
      const seen: string[] = [];
      for await (const p of c.crawlPages('cr2')) seen.push(p.url);
      expect(seen).toEqual(['https://w.test/1', 'https://w.test/2']);
      expect(other.requests).toEqual([]);
      expect(server.requests.map((r) => `${r.path}?${r.query.toString()}`)).toEqual([
        '/web/crawl/cr2?',
        '/web/crawl/cr2?skip=1',
      ]);
    } finally {
      await other.close();
    }
  });

  it.each([
    ['the same skip twice', ['?skip=1', 'skip=1'], 2, 'asks for skip=1 again'],
    ['a skip going backwards', ['5', '/v1/crawl/cr3?skip=3'], 2, 'goes back from skip=5 to skip=3'],
    ['a skip of 0 (the first page again)', ['0'], 1, 'asks for skip=0 again'],
    ['another crawl', ['/v1/crawl/other-job?skip=1'], 1, 'names another crawl'],
    ['no offset at all', ['https://w.test/v1/crawl/cr3'], 1, 'carries no skip offset'],
    ['an offset that is not a number', ['skip=ten'], 1, 'carries no skip offset'],
  ])('stops with a clear error at next: %s', async (_what, nexts, requests, words) => {
    const c = makeClient();
    server.script(
      'GET',
      '/web/crawl/cr3',
      ...nexts.map((next, i) => ({ status: 200, body: { status: 'completed', pages: [page(i + 1)], next } })),
    );
    const e = await caught(
      (async () => {
        for await (const _ of c.crawlPages('cr3'));
      })(),
    );
    expect(e).toBeInstanceOf(SchemaMismatchError);
    expect(e.path).toBe('next');
    expect(e.message).toContain(words);
    expect(server.count('GET', '/web/crawl/cr3')).toBe(requests);
  });
});

describe('the API key', () => {
  it('appears in no error and no log line, even when a server echoes it back', async () => {
    const c = makeClient({ retry: { maxAttempts: 2 } });
    server.script(
      'GET',
      '/me',
      { status: 500, body: errorBody('internal-error', `bad key ${API_KEY}`) },
      { status: 502, body: `<html>upstream rejected x-api-key: ${API_KEY}</html>` },
    );
    server.script('GET', '/videosite/video', { status: 200, body: `{"echo":"${API_KEY}"` });
    server.script('POST', '/videosite/video/batch', {
      status: 401,
      body: { error: 'unauthorized', message: 'no', details: API_KEY },
    });
    server.script('GET', '/videosite/channel', { hang: true }, { reset: true });

    const errors = [
      await caught(c.me()),
      await caught(c.getVideo({ id: 'v' })),
      await caught(c.createVideoBatch({ videoIds: ['v'] })),
      await caught(c.getChannel({ id: 'c' })),
    ];
    expect(errors.map((e) => e.code)).toEqual(['internal-error', 'schema-mismatch', 'unauthorized', 'network']);
    // the key was sent on every request, so its absence below is not an accident
    expect(server.requests.length).toBe(6);
    expect(server.requests.every((r) => r.headers['x-api-key'] === API_KEY)).toBe(true);
    for (const e of errors) {
      const text = [e.message, e.stack, e.details, e.rawBody, JSON.stringify(e), JSON.stringify(e.toJSON())].join('\n');
      expect(text).not.toContain(API_KEY);
    }
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.join('')).not.toContain(API_KEY);
  });
});
