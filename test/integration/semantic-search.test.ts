/**
 * Search by meaning (issue #32), with a real pgvector and the embeddings twin over HTTP: a passage
 * found by meaning and not by its words, with its moment and link; on a small labelled set,
 * hybrid's recall@10 at least text's, a place found both ways shown once; a change of model keeps
 * search answering with the previous model until the new one covers every passage; the filters;
 * `search --mode` without embeddings or without pgvector exits 2 naming what is missing.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.ts';
import { createMcpServer } from '../../src/mcp/server.ts';
import { Hono } from 'hono';
import { registerPageRoutes } from '../../src/admin/page-routes.ts';
import { EMBEDDINGS_CONCURRENCY, loadConfig, type EmbeddingsConfig } from '../../src/config.ts';
import { transcriptRowFromApi, upsertTranscripts } from '../../src/db/transcripts.ts';
import { createEmbeddingsClient } from '../../src/embeddings/client.ts';
import { startEmbeddingsTwin, type EmbeddingsTwin } from '../../src/embeddings/twin.ts';
import { tokenCount } from '../../src/domain/passages.ts';
import { drainSearchIndex } from '../../src/pipeline/services/search-index.ts';
import { searchCorpusIn, type CorpusHit, type SearchMode } from '../../src/pipeline/read/search.ts';
import { searchModel } from '../../src/pipeline/read/search-model.ts';
import { readEmbeddingsStatus } from '../../src/pipeline/read/status.ts';
import { describeEmbeddings } from '../../src/cli/status.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { embedPassages } from '../helpers/embeddings.ts';
import { runCli } from '../helpers/pipeline.ts';

const PASSAGES = loadConfig({}).pipeline.passages;
const URL_TEMPLATE = 'https://videos.example/watch?v={id}&t={seconds}';

/** One short transcript a video (one passage each), said from second 5 to 9. */
const CORPUS: Record<string, string> = {
  v01: 'we drove the automobile down the long highway at night',
  v02: 'the sedan needs new tyres before winter',
  v03: 'a physician explained how the illness spreads',
  v04: 'the surgeon washed her hands before the operation',
  v05: 'this movie was shot in black and white',
  v06: 'the cinema downtown shows old pictures on sundays',
  v07: 'toddlers learn words by listening to songs',
  v08: 'our kids love the melody of this tune',
  v09: 'we purchased a small dwelling near the coast',
  v10: 'buying a home takes months of paperwork',
  v11: 'the chef shows a recipe for rye bread',
  v12: 'bake the cake for forty minutes',
  v13: 'a laptop with a quick processor',
  v14: 'the smartphone battery lasts two days',
  v15: 'an instructor helps students with algebra',
  v16: 'the tutor assists with homework after school',
  v17: 'the marine reserve protects whales',
  v18: 'the sea was calm and the sailing was swift',
  v19: 'save cash for retirement every month',
  v20: 'the fund invested dollars in bonds',
  v21: 'the garden has tomatoes and beans',
  v22: 'bicycles are repaired in the workshop',
  v23: 'the mountain trail is steep and rocky',
  v24: 'the library opens at nine in the morning',
  v25: 'knitting a scarf with soft wool',
  v26: 'painting the fence red takes a weekend',
  v27: 'the train leaves from platform four',
  v28: 'chess openings for beginners',
  v29: 'planting trees in autumn',
  v30: 'the bridge was built in 1890 of iron',
};

/** Queries and the videos that answer them: some share words with them, some only meaning. */
const LABELLED: { query: string; relevant: string[] }[] = [
  { query: 'car', relevant: ['v01', 'v02'] },
  { query: 'doctor', relevant: ['v03', 'v04'] },
  { query: 'film', relevant: ['v05', 'v06'] },
  { query: 'children music', relevant: ['v07', 'v08'] },
  { query: 'buy house', relevant: ['v09', 'v10'] },
  { query: 'recipe', relevant: ['v11', 'v12'] },
  { query: 'smartphone battery', relevant: ['v14'] },
  { query: 'teacher', relevant: ['v15', 'v16'] },
  { query: 'sea', relevant: ['v17', 'v18'] },
  { query: 'money', relevant: ['v19', 'v20'] },
  { query: 'tomatoes garden', relevant: ['v21'] },
  { query: 'train platform', relevant: ['v27'] },
];

let database: TestDatabase;
let twin: EmbeddingsTwin;
let env: Record<string, string>;
let sourceId: number;

const embeddingsOf = (model: string): EmbeddingsConfig => ({
  baseUrl: twin.baseUrl,
  model,
  dimensions: undefined,
  apiKey: undefined,
  tokensPerDay: undefined,
  batchSize: 64,
  timeoutMs: 10_000,
  concurrency: EMBEDDINGS_CONCURRENCY,
});
const client = (model: string) => createEmbeddingsClient(embeddingsOf(model));
const videosOf = (hits: CorpusHit[]) =>
  hits.map((h) => (h.kind === 'video' ? h.hit.videoId : `${h.kind}:${h.hit.url}`));
const search = (
  words: string,
  mode: SearchMode,
  model = 'twin-a',
  more: { lang?: string; sourceId?: number; channelId?: string } = {},
) => searchCorpusIn(database.sql, { words, mode, limit: 10, ...more }, embeddingsOf(model));

/** Today's embeddings usage of a model: what a query by meaning is counted in. */
const usage = async (model: string) => {
  const [u] = await database.sql<{ requests: number; tokens: number }[]>`
    select requests::int as requests, tokens::int as tokens from embedding_usage
    where day = (now() at time zone 'utc')::date and model = ${model}`;
  return u ?? { requests: 0, tokens: 0 };
};

beforeAll(async () => {
  database = await createTestDatabase('semantic_search');
  twin = await startEmbeddingsTwin();
  env = { DATABASE_URL: database.url, LOG_LEVEL: 'warn', VIDEO_URL_TEMPLATE: URL_TEMPLATE };
  const [s] = await database.sql<{ id: number }[]>`
    insert into sources (kind, ref, external_id, max_videos) values ('playlist', 'PLsem', 'PLsem', 10) returning id`;
  sourceId = s!.id;
  let job = 0;
  for (const [id, text] of Object.entries(CORPUS)) {
    await database.sql`insert into videos (id, title, channel_id, channel_name)
      values (${id}, ${`video ${id}`}, ${id <= 'v10' ? 'UCa' : 'UCb'}, ${'Channel'})`;
    const content = [{ text, offset: 5_000, duration: 4_000 }];
    await upsertTranscripts(database.sql, [
      transcriptRowFromApi(id, { content, lang: 'en', availableLangs: ['en'] }, `job-sem-${++job}`),
    ]);
  }
  await database.sql`insert into source_videos (source_id, video_id) values (${sourceId}, 'v02'), (${sourceId}, 'v03')`;
  await drainSearchIndex({ sql: database.sql, passages: PASSAGES });
  await embedPassages(database.sql, client('twin-a'));
}, 60_000);

afterAll(async () => {
  await twin?.close();
  await database?.drop();
});

describe('search by meaning', () => {
  it('finds a passage by its meaning where text search finds nothing, with its moment and link', async () => {
    expect((await search('automobile physician', 'text')).hits).toEqual([]);
    const text = await runCli(['search', 'car', '--mode', 'text', '--json'], env, 60_000);
    expect(text.code).toBe(1);

    const before = await usage('twin-a');
    const r = await runCli(
      ['search', 'car', '--mode', 'semantic', '--json', '--limit', '2'],
      { ...env, EMBEDDINGS_BASE_URL: twin.baseUrl, EMBEDDINGS_MODEL: 'twin-a' },
      60_000,
    );
    expect(r.code).toBe(0);
    // the query's embedding is in the day's figures: one request, its tokens
    expect(await usage('twin-a')).toEqual({
      requests: before.requests + 1,
      tokens: before.tokens + tokenCount('car'),
    });
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.video_id).sort()).toEqual(['v01', 'v02']);
    for (const l of lines) {
      expect(l).toMatchObject({ mode: 'semantic', model: 'twin-a', seconds: 5, moment: '0:00:05' });
      expect(l.url).toBe(`https://videos.example/watch?v=${String(l.video_id)}&t=5`);
      expect(l.distance).toBeGreaterThanOrEqual(0);
      expect(l.distance).toBeLessThan(1);
    }
  });

  it("on a labelled set, hybrid's recall@10 is at least text's; a place found both ways is one hit", async () => {
    const recall = async (mode: SearchMode) => {
      let sum = 0;
      for (const { query, relevant } of LABELLED) {
        const found = new Set(videosOf((await search(query, mode)).hits));
        sum += relevant.filter((v) => found.has(v)).length / relevant.length;
      }
      return sum / LABELLED.length;
    };
    const [text, semantic, hybrid] = [await recall('text'), await recall('semantic'), await recall('hybrid')];
    console.log(
      `recall@10 on ${LABELLED.length} queries: text ${text.toFixed(3)}, semantic ${semantic.toFixed(3)}, hybrid ${hybrid.toFixed(3)}`,
    );
    expect(hybrid).toBeGreaterThanOrEqual(text);
    expect(hybrid).toBeGreaterThan(text);

    const both = await search('smartphone battery', 'hybrid');
    const v14 = both.hits.filter((h) => h.kind === 'video' && h.hit.videoId === 'v14');
    expect(v14).toHaveLength(1);
    // the text hit (the words marked) with the distance of the same passage found by meaning
    expect(v14[0]!.hit.snippet).toContain('smartphone');
    expect(v14[0]!.distance).toBeDefined();
    expect(both.hits[0]).toBe(v14[0]);
  });

  it('keeps the filters of text search', async () => {
    expect(videosOf((await search('doctor car', 'semantic', 'twin-a', { sourceId })).hits).sort()).toEqual([
      'v02',
      'v03',
    ]);
    const channel = videosOf((await search('money', 'semantic', 'twin-a', { channelId: 'UCa' })).hits);
    expect(channel.length).toBeGreaterThan(0);
    expect(channel.every((v) => v <= 'v10')).toBe(true);
    expect((await search('car', 'semantic', 'twin-a', { lang: 'de' })).hits).toEqual([]);
  });

  it('keeps answering through a change of model: the previous model until the new one covers every passage', async () => {
    const b = embeddingsOf('twin-b');
    expect(await searchModel(database.sql, b)).toMatchObject({ state: 'ready', model: 'twin-a', configured: false });
    // half the passages embedded by the new model: the previous one still answers, and by meaning
    await embedPassages(database.sql, client('twin-b'), (t) => t < 'm');
    expect(await searchModel(database.sql, b)).toMatchObject({ state: 'ready', model: 'twin-a', covers: true });
    const during = await searchCorpusIn(database.sql, { words: 'doctor', limit: 2 }, b);
    expect(during.mode).toBe('hybrid');
    expect(during.model).toBe('twin-a');
    expect(videosOf(during.hits).sort()).toEqual(['v03', 'v04']);
    // what `status` says meanwhile
    expect(describeEmbeddings(await readEmbeddingsStatus(database.sql, b))).toContain(
      'search by meaning uses twin-a until twin-b covers every passage',
    );

    await embedPassages(database.sql, client('twin-b'));
    expect(await searchModel(database.sql, b)).toEqual({
      state: 'ready',
      model: 'twin-b',
      dimensions: undefined,
      covers: true,
      configured: true,
    });
    const after = await searchCorpusIn(database.sql, { words: 'doctor', limit: 2 }, b);
    expect(after.model).toBe('twin-b');
    expect(describeEmbeddings(await readEmbeddingsStatus(database.sql, b))).toContain('search by meaning uses twin-b');
    expect(videosOf(after.hits).sort()).toEqual(['v03', 'v04']);
  });

  it('defaults to text until the model in use covers every passage', async () => {
    const fresh = embeddingsOf('twin-c');
    await database.sql`delete from embeddings where model <> 'twin-c'`;
    expect(await searchModel(database.sql, fresh)).toMatchObject({ model: 'twin-c', covers: false });
    expect((await searchCorpusIn(database.sql, { words: 'car', limit: 5 }, fresh)).mode).toBe('text');
  });
});

describe('the MCP search tool', () => {
  const callSearch = async (embeddings: EmbeddingsConfig | undefined, args: Record<string, unknown>) => {
    const server = createMcpServer({
      sql: database.sql,
      videoUrlTemplate: URL_TEMPLATE,
      embeddings,
      drainSearchIndex: async () => {},
      log: silentLogger(),
      version: 'test',
    });
    const [a, b] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'semantic-search-test', version: '1' });
    await Promise.all([server.connect(a), client.connect(b)]);
    try {
      return (await client.callTool({ name: 'search', arguments: args })) as CallToolResult;
    } finally {
      await client.close();
      await server.close();
    }
  };

  it('takes the mode, and refuses search by meaning without embeddings, naming EMBEDDINGS_BASE_URL', async () => {
    await embedPassages(database.sql, client('twin-a'));
    const before = await usage('twin-a');
    const r = await callSearch(embeddingsOf('twin-a'), { words: 'film', mode: 'semantic', limit: 2 });
    expect(r.isError).toBeFalsy();
    expect((await usage('twin-a')).requests).toBe(before.requests + 1);
    const s = r.structuredContent as {
      mode: string;
      model: string;
      hits: { video_id: string; url: string; distance: number }[];
    };
    expect(s).toMatchObject({ mode: 'semantic', model: 'twin-a' });
    expect(s.hits.map((h) => h.video_id).sort()).toEqual(['v05', 'v06']);
    expect(s.hits[0]!.url).toBe(`https://videos.example/watch?v=${s.hits[0]!.video_id}&t=5`);
    expect(s.hits[0]!.distance).toBeLessThan(1);

    const off = await callSearch(undefined, { words: 'film', mode: 'hybrid' });
    expect(off.isError).toBe(true);
    expect((off.content[0] as { text: string }).text).toContain('EMBEDDINGS_BASE_URL');
  });
});

describe('the admin search page', () => {
  const page = async (embeddings: EmbeddingsConfig | undefined, query: string) => {
    const app = new Hono();
    registerPageRoutes(app, {
      sql: database.sql,
      log: silentLogger(),
      queuesPath: '/admin/queues',
      videoUrlTemplate: URL_TEMPLATE,
      embeddings,
    });
    const res = await app.request(`/search?${query}`);
    return { status: res.status, text: await res.text() };
  };

  it('takes the mode: by meaning, each hit linked at its moment with its distance; without embeddings, what to set', async () => {
    await embedPassages(database.sql, client('twin-a'));
    const before = await usage('twin-a');
    const semantic = await page(embeddingsOf('twin-a'), 'q=doctor&mode=semantic&limit=2');
    expect(semantic.status).toBe(200);
    expect((await usage('twin-a')).requests).toBe(before.requests + 1);
    expect(semantic.text).toMatch(/id="search-mode">semantic · model <code>twin-a<\/code>/);
    expect(semantic.text).toContain('href="https://videos.example/watch?v=v03&amp;t=5"');
    expect(semantic.text).toContain('href="https://videos.example/watch?v=v04&amp;t=5"');
    expect(semantic.text).not.toContain('v=v01&amp;');
    // text search on the same words finds nothing
    expect((await page(embeddingsOf('twin-a'), 'q=doctor&mode=text')).text).toContain('id="no-matches"');
    // the default once every passage is embedded: hybrid
    expect((await page(embeddingsOf('twin-a'), 'q=doctor')).text).toMatch(/id="search-mode">hybrid/);
    const off = await page(undefined, 'q=doctor&mode=hybrid');
    expect(off.text).toContain('id="mode-problem"');
    expect(off.text).toContain('EMBEDDINGS_BASE_URL');
    expect((await page(undefined, 'q=doctor&mode=fuzzy')).status).toBe(400);
  });
});

describe('search --mode without what it needs', () => {
  it('exits 2 naming EMBEDDINGS_BASE_URL when embeddings are off', async () => {
    for (const mode of ['semantic', 'hybrid']) {
      const r = await runCli(['search', 'car', '--mode', mode], env, 60_000);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('EMBEDDINGS_BASE_URL');
    }
    // text search answers as before, and is the default
    expect((await runCli(['search', 'automobile'], env, 60_000)).code).toBe(0);
  });

  it('exits 2 naming pgvector when the database has no vectors table yet', async () => {
    const bare = await createTestDatabase('semantic_no_pgvector');
    try {
      // what migrate leaves where the server lacks pgvector
      await bare.sql`drop table embeddings cascade`;
      const r = await runCli(
        ['search', 'car', '--mode', 'semantic'],
        {
          DATABASE_URL: bare.url,
          LOG_LEVEL: 'warn',
          EMBEDDINGS_BASE_URL: twin.baseUrl,
        },
        60_000,
      );
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('pgvector');
      expect(r.stderr).toContain('not created in this database');
      // without --mode: text, which needs no pgvector
      expect(
        (
          await runCli(
            ['search', 'car'],
            { DATABASE_URL: bare.url, LOG_LEVEL: 'warn', EMBEDDINGS_BASE_URL: twin.baseUrl },
            60_000,
          )
        ).code,
      ).toBe(1);
    } finally {
      await bare.drop();
    }
  });

  it('--help names the modes and the default', async () => {
    const r = await runCli(['search', '--help'], env, 60_000);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('--mode <mode>');
    const help = r.stdout.replace(/\s+/g, ' ');
    expect(help).toContain('Default hybrid once the model in use has embedded every passage, else text');
    expect(help).toContain('2 on bad input or when search by meaning cannot run');
  });
});
