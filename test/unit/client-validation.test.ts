/**
 * Request validation happens before anything is sent: each rule is a local `invalid-request`
 * naming the field. No I/O: the client sends through an undici MockAgent that refuses real
 * connections, and the `onRequest` hook counts attempts.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { MockAgent } from 'undici';
import { createApiClient, type ApiClient } from '../../src/api/client.ts';
import { InvalidRequestError } from '../../src/api/errors.ts';

const ORIGIN = 'http://upstream.test';
const agent = new MockAgent();
agent.disableNetConnect();
const pool = agent.get(ORIGIN);
let attempts = 0;
const client: ApiClient = createApiClient({
  baseUrl: `${ORIGIN}/v1`,
  apiKey: 'unit-test-key-123456',
  dispatcher: agent,
  retry: { maxAttempts: 1 },
  onRequest: () => {
    attempts += 1;
  },
});

afterAll(async () => {
  await client.close();
  await agent.close();
});

async function rejectsOn(call: () => Promise<unknown>, field: string): Promise<void> {
  const before = attempts;
  const err = await call().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(InvalidRequestError);
  const e = err as InvalidRequestError;
  expect(e.code).toBe('invalid-request');
  expect(e.path).toBe(field);
  expect(e.message).toContain(field);
  expect(e.status).toBeUndefined();
  expect(attempts).toBe(before);
}

describe('batch bodies', () => {
  it('needs exactly one source', async () => {
    await rejectsOn(() => client.createVideoBatch({}), 'videoIds');
    await rejectsOn(() => client.createVideoBatch({ videoIds: ['a'], playlistId: 'PL1' }), 'playlistId');
    await rejectsOn(() => client.createTranscriptBatch({ playlistId: 'PL1', channelId: 'UC1' }), 'channelId');
  });

  it('bounds limit to 1..5000 and allows it only with a playlist or channel', async () => {
    await rejectsOn(() => client.createVideoBatch({ playlistId: 'PL1', limit: 0 }), 'limit');
    await rejectsOn(() => client.createVideoBatch({ channelId: 'UC1', limit: 5001 }), 'limit');
    await rejectsOn(() => client.createTranscriptBatch({ channelId: 'UC1', limit: 1.5 }), 'limit');
    await rejectsOn(() => client.createVideoBatch({ videoIds: ['a'], limit: 3 }), 'limit');
  });

  it('rejects an empty video list and empty IDs', async () => {
    await rejectsOn(() => client.createVideoBatch({ videoIds: [] }), 'videoIds');
    await rejectsOn(() => client.createVideoBatch({ videoIds: ['ok', ' '] }), 'videoIds[1]');
  });

  it('sends a valid body at the limits', async () => {
    pool
      .intercept({
        path: '/v1/videosite/video/batch',
        method: 'POST',
        body: JSON.stringify({ channelId: 'UC1', limit: 5000 }),
      })
      .reply(200, { jobId: 'job-1' });
    pool
      .intercept({
        path: '/v1/videosite/video/batch',
        method: 'POST',
        body: JSON.stringify({ playlistId: 'PL1', limit: 1 }),
      })
      .reply(200, { jobId: 'job-2' });
    await expect(client.createVideoBatch({ channelId: 'UC1', limit: 5000 })).resolves.toEqual({ jobId: 'job-1' });
    await expect(client.createVideoBatch({ playlistId: 'PL1', limit: 1 })).resolves.toEqual({ jobId: 'job-2' });
  });
});

describe('transcript queries', () => {
  it('bounds chunkSize to 50..10000', async () => {
    await rejectsOn(() => client.getTranscript({ videoId: 'v1', chunkSize: 49 }), 'chunkSize');
    await rejectsOn(() => client.getTranscript({ videoId: 'v1', chunkSize: 10_001 }), 'chunkSize');
    await rejectsOn(() => client.getMediaTranscript({ url: 'https://x.test/v', chunkSize: 10 }), 'chunkSize');
  });

  it('allows chunkSize only without text', async () => {
    await rejectsOn(() => client.getTranscript({ videoId: 'v1', text: true, chunkSize: 100 }), 'chunkSize');
    await rejectsOn(
      () => client.translateTranscript({ videoId: 'v1', lang: 'de', text: true, chunkSize: 100 }),
      'chunkSize',
    );
  });

  it('needs exactly one of url and videoId', async () => {
    await rejectsOn(() => client.getTranscript({}), 'url');
    await rejectsOn(() => client.getTranscript({ url: 'https://x.test/v', videoId: 'v1' }), 'videoId');
  });

  it('needs the required parameters', async () => {
    await rejectsOn(() => client.translateTranscript({ videoId: 'v1' } as never), 'lang');
    await rejectsOn(() => client.getMediaTranscript({} as never), 'url');
    await rejectsOn(() => client.search({ query: '  ' }), 'query');
    await rejectsOn(() => client.getMetadata({} as never), 'url');
    await rejectsOn(() => client.scrape({ url: '' }), 'url');
    await rejectsOn(() => client.mapSite({} as never), 'url');
    await rejectsOn(() => client.getVideo({ id: '' }), 'id');
    await rejectsOn(() => client.getPlaylistVideos({ id: 'PL1', limit: 0 }), 'limit');
    await rejectsOn(() => client.getChannelVideos({ id: 'UC1', type: 'reels' as never }), 'type');
    await rejectsOn(() => client.search({ query: 'cats', limit: 5001 }), 'limit');
  });

  it('sends only absolute URLs where the published document declares a URI', async () => {
    await rejectsOn(() => client.getMediaTranscript({ url: 'dQw4w9WgXcQ' }), 'url');
    await rejectsOn(() => client.getMetadata({ url: 'not a url at all' }), 'url');
    await rejectsOn(() => client.getTranscript({ url: '/watch?v=dQw4w9WgXcQ' }), 'url');
    await rejectsOn(() => client.translateTranscript({ url: 'https://x.test/a b', lang: 'de' }), 'url');
    await rejectsOn(() => client.startCrawl({ url: 'docs.test/guide' }), 'url');
    await rejectsOn(() => client.startExtract({ url: 'x.test/v', prompt: 'topics' }), 'url');
  });
});

describe('extract requests', () => {
  it('needs a prompt, a schema or both, and nothing else', async () => {
    await rejectsOn(() => client.startExtract({ url: 'https://x.test/v' }), 'prompt');
    await rejectsOn(() => client.startExtract({ url: 'https://x.test/v', prompt: '  ' }), 'prompt');
    await rejectsOn(() => client.startExtract({ url: 'https://x.test/v', schema: [] as never }), 'schema');
    await rejectsOn(() => client.startExtract({ url: 'https://x.test/v', prompt: 'x', lang: 'en' } as never), '(root)');
    await rejectsOn(() => client.getExtractJob('a/b'), 'jobId');
  });
});

describe('job IDs and crawls', () => {
  it('rejects an empty job ID or one with a slash', async () => {
    await rejectsOn(() => client.getBatch(''), 'jobId');
    await rejectsOn(() => client.openBatch('../me'), 'jobId');
    await rejectsOn(() => client.getTranscriptJob('a b'), 'jobId');
    await rejectsOn(() => client.getCrawl('x/y'), 'jobId');
  });

  it('bounds the crawl limit and skip', async () => {
    await rejectsOn(() => client.startCrawl({ url: 'https://x.test', limit: 0 }), 'limit');
    await rejectsOn(() => client.getCrawl('c1', { skip: -1 }), 'skip');
  });
});

describe('client options', () => {
  it('refuses a missing key without echoing anything', () => {
    expect(() => createApiClient({ baseUrl: `${ORIGIN}/v1`, apiKey: '', dispatcher: agent })).toThrow(
      /apiKey is required/,
    );
  });
  it('refuses a key a header cannot carry, without echoing it', () => {
    const key = 'secret-part\nsecond-line';
    let message = '';
    try {
      createApiClient({ baseUrl: `${ORIGIN}/v1`, apiKey: key, dispatcher: agent });
    } catch (e: unknown) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/apiKey/);
    expect(message).not.toContain('secret-part');
  });
});
