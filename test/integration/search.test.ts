/**
 * Transcript search (issue #15): transcripts written through the sink's own upsert
 * (src/db/transcripts.ts), with chunk texts and timings chosen here, then found by
 * searchTranscripts, by the `search` CLI as a process and by the admin server's search page.
 * A phrase said in one chunk is found at that chunk's moment; a phrase across two chunks is found
 * at the first one's, also where one passage ends and the next begins; accented, CJK, Arabic and
 * Hebrew text is searchable; `-word` and "quoted phrase" behave as web search; a stored transcript is queued and found once the
 * indexer ran (a daemon's, or the `search` command's own); an updated transcript's old words are
 * gone from the index and its new ones found; while a batch is in flight the indexer defers what
 * waits (the landings get the CPU first) until the oldest has waited its deferral; VIDEO_URL_TEMPLATE links a hit to its second.
 */
import { loadConfig } from '../../src/config.ts';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/admin/metrics.ts';
import { registerPageRoutes } from '../../src/admin/page-routes.ts';
import { startAdminServer, type AdminServer } from '../../src/admin/server.ts';
import { searchTranscripts, type SearchHit } from '../../src/db/search.ts';
import { drainSearchIndex, startSearchIndexer } from '../../src/pipeline/services/search-index.ts';
import { transcriptPassages } from '../../src/db/passages.ts';
import { transcriptRowFromApi, upsertTranscripts } from '../../src/db/transcripts.ts';
import { SNIPPET_START, SNIPPET_STOP } from '../../src/domain/search.ts';
import { silentLogger } from '../../src/log.ts';
import { closeRedis, createRedis } from '../../src/queues/connection.ts';
import { createQueues, type PipelineQueues } from '../../src/queues/queues.ts';
import { bearer } from '../helpers/admin.ts';
import { expectCleanError, expectExit } from '../helpers/cli.ts';
import { createTestDatabase, insertNoisePassages, withPlan, type TestDatabase } from '../helpers/db.ts';
import { runCli, type CliResult } from '../helpers/pipeline.ts';

/** The search indexer cuts passages with the default settings here. */
const PASSAGES = loadConfig({}).pipeline.passages;

const TOKEN = 'search-page-token-0123456789abcdef';
const URL_TEMPLATE = 'https://videos.example/watch?v={id}&t={seconds}';

let database: TestDatabase;
let env: Record<string, string>;
let sourceId: number;
let redis: ReturnType<typeof createRedis>;
let queues: PipelineQueues;
let admin: AdminServer;

const cli = (args: string[], extra: Record<string, string> = {}): Promise<CliResult> =>
  runCli(args, { ...env, ...extra }, 60_000);

/** Chunks 0..n-1, each 2.5 s long, chunk i at `offsetMs(i)`; `said` puts texts at given indexes. */
function chunks(n: number, said: Record<number, string>, offsetMs = (i: number) => 10_000 + i * 2_500) {
  return Array.from({ length: n }, (_, i) => ({
    text: said[i] ?? `filler line number ${i} about nothing`,
    offset: offsetMs(i),
    duration: 2_400,
  }));
}

let job = 0;
async function store(videoId: string, lang: string, content: ReturnType<typeof chunks> | string): Promise<void> {
  const row = transcriptRowFromApi(videoId, { content, lang, availableLangs: [lang] }, `job-search-${++job}`);
  await upsertTranscripts(database.sql, [row]);
}

async function video(id: string, title: string, channelId: string, channelName: string): Promise<void> {
  await database.sql`insert into videos (id, title, channel_id, channel_name) values (${id}, ${title}, ${channelId}, ${channelName})`;
}

const search = (query: string, more: { lang?: string; sourceId?: number; channelId?: string; limit?: number } = {}) =>
  searchTranscripts(database.sql, { query, limit: 20, ...more });
const ids = (hits: SearchHit[]) => [...new Set(hits.map((h) => h.videoId))].sort();
const marked = (snippet: string) =>
  [...snippet.matchAll(new RegExp(`${SNIPPET_START}([^${SNIPPET_STOP}]*)${SNIPPET_STOP}`, 'g'))].map((m) => m[1]);

beforeAll(async () => {
  database = await createTestDatabase('search');
  env = { DATABASE_URL: database.url, LOG_LEVEL: 'warn', QUEUE_PREFIX: `{vsi-test-search-${process.pid}}` };
  const [s] = await database.sql<{ id: number }[]>`
    insert into sources (kind, ref, external_id, max_videos) values ('playlist', 'PLsearch', 'PLsearch', 10) returning id`;
  sourceId = s!.id;

  await video('vidCook', 'Cooking <b>pasta</b> & "sauce"', 'UCcook', 'Chef Anna');
  await video('vidFox', 'Animals at dawn', 'UCnature', 'Nature');
  await video('vidGarden', 'Garden tour', 'UCnature', 'Nature');
  await video('vidSnake', 'Garden snakes', 'UCnature', 'Nature');
  await video('vidFr', 'À l’école', 'UCfr', 'Chaîne');
  await video('vidJa', '東京の旅', 'UCja', 'Tabi');
  await video('vidAr', 'تحية', 'UCar', 'Qanat');
  await video('vidHe', 'ברכה', 'UChe', 'Arutz');
  await database.sql`insert into source_videos (source_id, video_id) values (${sourceId}, 'vidCook'), (${sourceId}, 'vidFox')`;

  // chunk 6 at 1:02:00 (3 720 000 ms); its window (chunks 4..8) starts at 3 715 000 ms
  await store(
    'vidCook',
    'en',
    chunks(12, { 6: 'now we whisk the saffron emulsion slowly' }, (i) => 3_705_000 + i * 2_500),
  );
  // phrases across chunks 3|4 and 4|5: chunk 4 ends window 0 (chunks 0..4) and starts window 1 (4..8)
  await store(
    'vidFox',
    'en',
    chunks(10, { 3: 'we saw a lazy', 4: 'dog and then the quick brown', 5: 'fox leapt over the fence' }),
  );
  await store('vidGarden', 'en', chunks(3, { 1: 'our garden has red apples and pears' }));
  await store('vidSnake', 'en', chunks(3, { 1: 'a garden snake under apples that are red' }));
  await store('vidFr', 'fr', chunks(3, { 2: 'les élèves étaient à l’école très tôt' }));
  await store('vidJa', 'ja', chunks(3, { 1: '今日は東京タワーに行きました' }));
  await store('vidAr', 'ar', chunks(3, { 1: 'مرحبا بالعالم من القاهرة' }));
  await store('vidHe', 'he', 'שלום עולם מירושלים ומהגליל');
  // what a daemon's indexer (or the search command) does after the landing transactions
  await drainSearchIndex({ sql: database.sql, passages: PASSAGES });

  redis = createRedis('redis://127.0.0.1:6379');
  queues = createQueues(redis, env.QUEUE_PREFIX!);
  admin = await startAdminServer({
    port: 0,
    token: TOKEN,
    sql: database.sql,
    redis,
    queues,
    metrics: createMetrics({ processMetrics: false }),
    log: silentLogger(),
  });
}, 60_000);

afterAll(async () => {
  await admin?.close();
  await queues?.close();
  if (redis) await closeRedis(redis);
  await database?.drop();
});

describe('the index and the query', () => {
  it('a phrase said in one chunk is found at that chunk’s moment, with its video, title, channel and marked words', async () => {
    const hits = await search('"saffron emulsion"');
    expect(hits).toHaveLength(1);
    const [h] = hits;
    expect(h).toMatchObject({
      videoId: 'vidCook',
      title: 'Cooking <b>pasta</b> & "sauce"',
      channelId: 'UCcook',
      channelName: 'Chef Anna',
      lang: 'en',
    });
    // chunk 6's offset, not its window's first chunk (3 715 s)
    expect(h!.seconds).toBe(3_720);
    expect(marked(h!.snippet)).toEqual(['saffron', 'emulsion']);
  });

  it('a phrase across two chunks is found, at the moment of the chunk it starts in', async () => {
    const hits = await search('"brown fox"');
    expect(ids(hits)).toEqual(['vidFox']);
    // no single chunk holds it: chunk 4, where it starts (10 s + 4 x 2.5 s)
    expect(hits[0]!.seconds).toBe(20);
    expect(marked(hits[0]!.snippet)).toEqual(['brown', 'fox']);
    const lazy = await search('"lazy dog"');
    // chunk 3 (10 s + 3 x 2.5 s)
    expect(lazy.map((h) => [h.videoId, h.seconds])).toEqual([['vidFox', 17.5]]);
  });

  it('a phrase across the chunks where one passage ends and the next begins is found, however big the chunks', async () => {
    // chunks of ~50 tokens, bigger than the overlap, each starting and ending with a word of its own
    const big = Array.from({ length: 24 }, (_, i) => ({
      text: `start${i} ${Array.from({ length: 40 }, (_, k) => `word${(i * 40 + k) % 97}`).join(' ')} end${i}`,
      offset: 5_000 + i * 4_000,
      duration: 3_900,
    }));
    const cut = transcriptPassages({ chunks: big, text: '' }, PASSAGES);
    // a boundary: passage k ends with chunk e, passage k + 1 holds only the end of chunk e
    const k = cut.findIndex((p, i) => i + 1 < cut.length && cut[i + 1]!.firstChunk === p.lastChunk);
    expect(k).toBeGreaterThanOrEqual(0);
    const e = cut[k]!.lastChunk!;
    expect(cut[k + 1]!.text.startsWith(big[e]!.text)).toBe(false);
    await video('vidBig', 'Long chunks', 'UCbig', 'Big');
    await store('vidBig', 'en', big);
    await drainSearchIndex({ sql: database.sql, passages: PASSAGES });
    const hits = await search(`"end${e} start${e + 1}"`);
    expect(hits.map((h) => [h.videoId, h.seconds])).toEqual([['vidBig', (5_000 + e * 4_000) / 1000]]);
    expect(marked(hits[0]!.snippet)).toEqual([`end${e}`, `start${e + 1}`]);
  });

  it('one hit per moment: a match in the chunk two windows share is shown once', async () => {
    const hits = await search('"quick brown"');
    expect(hits.map((h) => [h.videoId, h.seconds])).toEqual([['vidFox', 20]]);
  });

  it('"quoted phrase" requires the words side by side; without quotes any order does', async () => {
    expect(ids(await search('"red apples"'))).toEqual(['vidGarden']);
    expect(ids(await search('red apples'))).toEqual(['vidGarden', 'vidSnake']);
  });

  it('-word leaves out windows that say it; or takes either', async () => {
    expect(ids(await search('garden -snake'))).toEqual(['vidGarden']);
    expect(ids(await search('pears or snake'))).toEqual(['vidGarden', 'vidSnake']);
  });

  it('accented text, stemmed in its language: French élève finds élèves', async () => {
    const hits = await search('élève', { lang: 'fr' });
    expect(ids(hits)).toEqual(['vidFr']);
    expect(marked(hits[0]!.snippet)).toEqual(['élèves']);
    expect(ids(await search('école'))).toEqual(['vidFr']);
  });

  it('CJK without spaces: part of a sentence is found, and marked', async () => {
    const hits = await search('東京タワー');
    expect(ids(hits)).toEqual(['vidJa']);
    expect(hits[0]!.seconds).toBe(12.5);
    expect(marked(hits[0]!.snippet)).toEqual(['東京タワー']);
    expect(hits[0]!.snippet.replace(/[\uE000\uE001]/g, '')).toContain('東京タワーに行きました');
    expect(await search('京都')).toEqual([]);
  });

  it('right-to-left text: Arabic (its own configuration) and Hebrew (simple, a plain-text transcript)', async () => {
    const ar = await search('بالعالم');
    expect(ids(ar)).toEqual(['vidAr']);
    expect(marked(ar[0]!.snippet)).toEqual(['بالعالم']);
    const he = await search('מירושלים');
    expect(ids(he)).toEqual(['vidHe']);
    expect(he[0]!.seconds).toBeNull();
    const [row] = await database.sql<
      { config: string }[]
    >`select config::text from passages where kind = 'transcript' and doc = 'vidAr'`;
    expect(row!.config).toBe('arabic');
  });

  it('filters: --source, --channel, --lang', async () => {
    expect(ids(await search('filler', { sourceId }))).toEqual(['vidCook', 'vidFox']);
    expect(ids(await search('filler', { channelId: 'UCnature' }))).toEqual(['vidFox', 'vidGarden', 'vidSnake']);
    expect(ids(await search('filler', { lang: 'fr' }))).toEqual(['vidFr']);
    expect(await search('filler', { limit: 3 })).toHaveLength(3);
  });

  it('stored, a transcript is queued; the indexer builds its windows and takes it off the queue', async () => {
    await store('vidQueued', 'en', chunks(3, { 1: 'a lonely quokka smiles' }));
    const queued = await database.sql<{ video_id: string }[]>`select video_id from search_index_queue`;
    expect(queued.map((r) => r.video_id)).toEqual(['vidQueued']);
    expect(await search('quokka')).toEqual([]);
    expect(await drainSearchIndex({ sql: database.sql, passages: PASSAGES })).toBe(1);
    expect(ids(await search('quokka'))).toEqual(['vidQueued']);
    expect(await database.sql`select 1 from search_index_queue`).toHaveLength(0);
    // stored again unchanged: nothing queued, nothing rebuilt
    await store('vidQueued', 'en', chunks(3, { 1: 'a lonely quokka smiles' }));
    expect(await database.sql`select 1 from search_index_queue`).toHaveLength(0);
  });

  it('the indexer of a daemon builds what is queued by itself, within a second or so', async () => {
    const indexer = startSearchIndexer({ sql: database.sql, log: silentLogger(), passages: PASSAGES }, { idleMs: 50 });
    try {
      await store('vidLater', 'en', chunks(3, { 1: 'the axolotl regrows its gills' }));
      const started = Date.now();
      while ((await search('axolotl')).length === 0 && Date.now() - started < 10_000)
        await new Promise((r) => setTimeout(r, 50));
      expect(ids(await search('axolotl'))).toEqual(['vidLater']);
    } finally {
      await indexer.stop();
    }
  });

  it('while a batch is in flight, the indexer leaves what waits until the oldest has waited its deferral', async () => {
    await database.sql`
      insert into batches (job_id, kind, status, credits_estimated, request)
      values ('job-search-in-flight', 'transcript', 'active', 2, ${database.sql.json({ videoIds: ['vidWait'] })})`;
    const indexer = startSearchIndexer(
      { sql: database.sql, log: silentLogger(), passages: PASSAGES },
      { idleMs: 50, deferWhileLandingMs: 2_000 },
    );
    try {
      await store('vidWait', 'en', chunks(3, { 1: 'the narwhal dives under the ice' }));
      const stored = Date.now();
      while ((await search('narwhal')).length === 0 && Date.now() - stored < 10_000)
        await new Promise((r) => setTimeout(r, 50));
      const foundAfterMs = Date.now() - stored;
      expect(ids(await search('narwhal'))).toEqual(['vidWait']);
      expect(foundAfterMs).toBeGreaterThanOrEqual(1_900);
    } finally {
      await indexer.stop();
      await database.sql`delete from batches where job_id = 'job-search-in-flight'`;
    }
  });

  it('an updated transcript: once indexed, its old words are no longer found and its new ones are', async () => {
    await store('vidGarden', 'en', chunks(3, { 1: 'our orchard has green plums' }));
    // until the indexer runs, the windows are the old content's
    expect(ids(await search('pears'))).toEqual(['vidGarden']);
    await drainSearchIndex({ sql: database.sql, passages: PASSAGES });
    expect(ids(await search('pears'))).toEqual([]);
    const hits = await search('"green plums"');
    expect(ids(hits)).toEqual(['vidGarden']);
    // the passages are the new content's only
    const [n] = await database.sql<
      { n: number }[]
    >`select count(*)::int as n from passages where kind = 'transcript' and doc = 'vidGarden'`;
    expect(n!.n).toBe(1);
    // a rolled-back write queues nothing: the index stays as it was
    await database.sql
      .begin(async (tx) => {
        await upsertTranscripts(tx, [
          transcriptRowFromApi(
            'vidGarden',
            { content: chunks(3, { 1: 'rolled back turnips' }), lang: 'en', availableLangs: ['en'] },
            'job-rb',
          ),
        ]);
        expect(await tx`select 1 from search_index_queue where video_id = 'vidGarden'`).toHaveLength(1);
        throw new Error('roll back');
      })
      .catch(() => undefined);
    expect(await drainSearchIndex({ sql: database.sql, passages: PASSAGES })).toBe(0);
    expect(await search('turnips')).toEqual([]);
    expect(ids(await search('plums'))).toEqual(['vidGarden']);
  });

  it('a deleted transcript leaves no windows', async () => {
    await store('vidDel', 'en', chunks(3, { 1: 'ephemeral kumquats' }));
    await drainSearchIndex({ sql: database.sql, passages: PASSAGES });
    expect(ids(await search('kumquats'))).toEqual(['vidDel']);
    await database.sql`delete from transcripts where video_id = 'vidDel'`;
    // at once, not by the indexer
    expect(await search('kumquats')).toEqual([]);
    // deleted before it was indexed: its key leaves the queue too
    await store('vidDel2', 'en', chunks(3, { 1: 'fleeting rambutans' }));
    await database.sql`delete from transcripts where video_id = 'vidDel2'`;
    expect(await database.sql`select 1 from search_index_queue where video_id = 'vidDel2'`).toHaveLength(0);
  });

  it("reads the transcripts' passages only, not the pages' and media's that hold the same words (issue #34)", async () => {
    const { sql } = database;
    // page and media passages holding the phrase, among many that do not: through an index of
    // every passage, their rows were read only to be dropped by their kind
    const noisy = 3_000;
    const noise = { count: 10 * noisy, lang: '', doc: 'https://kind-noise.example/' };
    await insertNoisePassages(sql, {
      ...noise,
      kinds: ['page', 'media'],
      holding: noisy,
      words: 'the saffron emulsion',
    });
    // and transcripts enough that reading every transcript passage is not the cheaper plan
    await insertNoisePassages(sql, { ...noise, kinds: ['transcript'], lang: 'en', doc: 'vidKindNoise' });
    try {
      await sql`analyze passages`;
      // its plan, as Postgres ran it: the rows it read and dropped
      const {
        result: hits,
        plan,
        rowsDropped,
      } = await withPlan(database.url, 'from passages p', (tx) =>
        searchTranscripts(tx, { query: 'saffron emulsion', limit: 20 }),
      );
      expect(ids(hits)).toEqual(['vidCook']);
      expect(rowsDropped, plan).toBeLessThan(noisy / 10);
    } finally {
      await sql`delete from passages where doc like 'https://kind-noise.example/%' or doc like 'vidKindNoise%'`;
    }
  });
});

describe('the CLI', () => {
  it('search --json prints one JSON line per hit, with the moment and, with VIDEO_URL_TEMPLATE, the link', async () => {
    const r = await cli(['search', '"saffron emulsion"', '--json'], { VIDEO_URL_TEMPLATE: URL_TEMPLATE });
    expectExit(r, 0);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      video_id: 'vidCook',
      title: 'Cooking <b>pasta</b> & "sauce"',
      channel_name: 'Chef Anna',
      lang: 'en',
      moment: '1:02:00',
      seconds: 3_720,
      url: 'https://videos.example/watch?v=vidCook&t=3720',
    });
    expect(lines[0]!.snippet).toContain('«saffron» «emulsion»');
    expect(lines[0]!.snippet_plain).toContain('saffron emulsion');
    expect(lines[0]!.snippet_plain).not.toMatch(/[«»]/);
  });

  it('the human output names the video, moment and words; no VIDEO_URL_TEMPLATE, no url', async () => {
    const r = await cli(['search', 'bonjour or école', '--lang', 'fr']);
    expectExit(r, 0);
    expect(r.stdout).toContain('vidFr 0:00:15 [fr]');
    expect(r.stdout).toContain('«école»');
    const j = await cli(['search', 'école', '--json']);
    expect(JSON.parse(j.stdout.trim())).not.toHaveProperty('url');
  });

  it('search first indexes what is stored but not yet indexed (no daemon running)', async () => {
    await store('vidCli', 'en', chunks(3, { 1: 'a pangolin curls into a ball' }));
    const r = await cli(['search', 'pangolin', '--json']);
    expectExit(r, 0);
    expect(JSON.parse(r.stdout.trim()).video_id).toBe('vidCli');
    expect(r.stderr).toContain('search index: 1 transcript(s) indexed');
  });

  it('no match exits 1 with nothing on stdout; bad input exits 2 naming it', async () => {
    const none = await cli(['search', 'zzyzx', '--json']);
    expectExit(none, 1);
    expect(none.stdout).toBe('');
    expectCleanError(await cli(['search', 'x', '--limit', '0']), 2, /--limit/);
    expectCleanError(await cli(['search', 'x', '--lang', 'french']), 2, /--lang.*"french"/);
    expectCleanError(
      await cli(['search', 'x'], { VIDEO_URL_TEMPLATE: 'https://videos.example/watch' }),
      2,
      /VIDEO_URL_TEMPLATE/,
    );
  });
});

describe('the admin search page', () => {
  const get = async (path: string) => {
    const res = await fetch(`${admin.url}${path}`, { headers: bearer(TOKEN) });
    return { status: res.status, text: await res.text() };
  };

  it('every page has the box; /search?q= shows the hits, escaped, words marked', async () => {
    const overview = await get('/');
    expect(overview.text).toMatch(
      /<form class="search" action="\/search" method="get"[^>]*><input type="search" name="q"/,
    );
    const page = await get(`/search?q=${encodeURIComponent('"saffron emulsion"')}`);
    expect(page.status).toBe(200);
    const row = /<tr data-video-id="vidCook">[\s\S]*?<\/tr>/.exec(page.text)?.[0];
    expect(row).toBeDefined();
    expect(row).toContain('Cooking &lt;b&gt;pasta&lt;/b&gt; &amp; &quot;sauce&quot;');
    expect(row).toContain('1:02:00');
    expect(row).toContain('<mark>saffron</mark> <mark>emulsion</mark>');
    // the box shows what was searched, escaped
    expect(page.text).toContain('value="&quot;saffron emulsion&quot;"');
    expect((await get('/search?q=zzyzx')).text).toContain('id="no-matches"');
    const bad = await get('/search?q=x&limit=0');
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/^limit: /);
    expect((await fetch(`${admin.url}/search?q=x`)).status).toBe(401);
  });

  it('with a URL template, the moment links to the video at that second', async () => {
    const app = new Hono();
    registerPageRoutes(app, {
      sql: database.sql,
      log: silentLogger(),
      queuesPath: '/admin/queues',
      videoUrlTemplate: URL_TEMPLATE,
    });
    const res = await app.request('/search?q=saffron');
    const text = await res.text();
    expect(text).toContain('<a href="https://videos.example/watch?v=vidCook&amp;t=3720" rel="noreferrer">1:02:00</a>');
  });
});
