/**
 * Embeddings kept current (issue #32), with a real pgvector and the embeddings twin over HTTP:
 * transcripts stored through the sink's own upsert and cut into passages by the search indexer,
 * then embedded by the embedder (a drain, and the service a daemon runs). Every passage text gets
 * one vector; storing unchanged transcripts again embeds nothing; a changed transcript re-embeds
 * only its changed passages; a passage is found by meaning and not by its words; the daily token
 * budget refuses and records; a provider answering 500, 503, 429 or dropping the connection loses
 * nothing and is paid for no text twice; a dead embedder's claims lapse and its texts are
 * embedded; each model keeps its own vectors and HNSW index.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMBEDDINGS_CONCURRENCY, type EmbeddingsConfig } from '../../src/config.ts';
import { claimTexts, hnswIndexName, nearestEmbeddings, readEmbeddingsFacts } from '../../src/db/embeddings.ts';
import { transcriptRowFromApi, upsertTranscripts } from '../../src/db/transcripts.ts';
import { createEmbeddingsClient, embedQuery } from '../../src/embeddings/client.ts';
import { startEmbeddingsTwin, type EmbeddingsTwin, type TwinAnswer } from '../../src/embeddings/twin.ts';
import { silentLogger } from '../../src/log.ts';
import { drainEmbeddings, startEmbedder } from '../../src/pipeline/services/embedder.ts';
import { drainSearchIndex } from '../../src/pipeline/services/search-index.ts';
import { modelCoversPassages } from '../../src/db/semantic-search.ts';
import { createDb } from '../../src/db/connection.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { runCli, waitFor } from '../helpers/pipeline.ts';
import { expectExit } from '../helpers/cli.ts';
import { createMetrics } from '../../src/admin/metrics.ts';
import { loadOverview, renderOverview } from '../../src/admin/overview.ts';

const KEY = 'sk-embeddings-test-0123456789';
/** small passages, so a transcript of 40 lines has several */
const PASSAGES = { size: 48, overlap: 8 };

let database: TestDatabase;
let twin: EmbeddingsTwin;

const settings = (model: string, more: Partial<EmbeddingsConfig> = {}): EmbeddingsConfig => ({
  baseUrl: twin.baseUrl,
  model,
  dimensions: undefined,
  apiKey: KEY,
  tokensPerDay: undefined,
  batchSize: 8,
  timeoutMs: 10_000,
  concurrency: EMBEDDINGS_CONCURRENCY,
  ...more,
});
const drain = (model: string, more: Partial<EmbeddingsConfig> = {}) =>
  drainEmbeddings({ sql: database.sql, log: silentLogger(), embeddings: settings(model, more) });

/** Line i of a transcript: distinct per video and line, so texts repeat nowhere unless said to. */
const line = (video: string, i: number) => `${video} says line ${i} about topic ${(i * 7) % 13} and more`;

let job = 0;
async function store(videoId: string, lines: string[]): Promise<void> {
  const content = lines.map((text, i) => ({ text, offset: i * 2_000, duration: 1_900 }));
  await upsertTranscripts(database.sql, [
    transcriptRowFromApi(videoId, { content, lang: 'en', availableLangs: ['en'] }, `job-emb-${++job}`),
  ]);
  await drainSearchIndex({ sql: database.sql, passages: PASSAGES });
}

const VIDEOS = ['vidEmbAAAAA', 'vidEmbBBBBB', 'vidEmbCCCCC', 'vidEmbDDDDD'];
const linesOf = (v: string) => Array.from({ length: 40 }, (_, i) => line(v, i));

async function texts(): Promise<Set<string>> {
  const rows = await database.sql<{ sha256: string }[]>`select distinct sha256 from passages`;
  return new Set(rows.map((r) => r.sha256));
}
/** The `n` of a one-row query. */
async function count(query: string, params: string[] = []): Promise<number> {
  const [r] = await database.sql.unsafe<{ n: number }[]>(query, params);
  return r!.n;
}
async function vectorCount(model: string): Promise<number> {
  const [r] = await database.sql<{ n: number }[]>`select count(*)::int as n from embeddings where model = ${model}`;
  return r!.n;
}

beforeAll(async () => {
  database = await createTestDatabase('embeddings');
  twin = await startEmbeddingsTwin({ apiKey: KEY });
  for (const v of VIDEOS) {
    await database.sql`insert into videos (id, title) values (${v}, ${v})`;
    await store(v, linesOf(v));
  }
});
afterAll(async () => {
  await twin?.close();
  await database?.drop();
});

describe('embeddings kept current', () => {
  it('embeds each passage text once; unchanged transcripts stored again embed nothing', async () => {
    const all = await texts();
    expect(all.size).toBeGreaterThan(4 * 4);
    const first = await drain('twin-a');
    expect(first).toEqual({ embedded: all.size, stopped: 'done' });
    expect(await vectorCount('twin-a')).toBe(all.size);
    expect(twin.stats()).toMatchObject({ inputsAnswered: all.size, inputsRepeated: 0 });
    const facts = await readEmbeddingsFacts(database.sql, { model: 'twin-a' });
    const [p] = await database.sql<{ n: number }[]>`select count(*)::int as n from passages`;
    expect(facts).toMatchObject({ passages: p!.n, covered: p!.n, backlog: 0 });
    // the model's index was built with its first vectors
    const [ix] = await database.sql<{ n: number }[]>`
      select count(*)::int as n from pg_indexes where indexname = ${hnswIndexName('twin-a', 256)}`;
    expect(ix!.n).toBe(1);

    for (const v of VIDEOS) await store(v, linesOf(v));
    expect(await drain('twin-a')).toEqual({ embedded: 0, stopped: 'done' });
    expect(twin.stats().inputsAnswered).toBe(all.size);
  });

  it('a changed transcript re-embeds only its changed passages (the daemon service)', async () => {
    const before = await texts();
    const answered = twin.stats().inputsAnswered;
    const changed = linesOf(VIDEOS[1]!);
    changed[30] = 'my old car broke down on the highway, so I bought a new sedan';
    await store(VIDEOS[1]!, changed);
    const after = await texts();
    const fresh = [...after].filter((s) => !before.has(s));
    const ofVideo = await count(
      `
      select count(*)::int as n from passages where doc = $1`,
      [VIDEOS[1]!],
    );
    expect(fresh.length).toBeGreaterThan(0);
    expect(fresh.length).toBeLessThan(ofVideo);

    const embedder = startEmbedder(
      { sql: database.sql, log: silentLogger(), embeddings: settings('twin-a') },
      { idleMs: 50 },
    );
    try {
      await waitFor(
        async () => ((await readEmbeddingsFacts(database.sql, { model: 'twin-a' })).backlog === 0 ? true : undefined),
        30_000,
        'the changed passages embedded',
      );
    } finally {
      await embedder.stop();
    }
    expect(twin.stats().inputsAnswered - answered).toBe(fresh.length);
    expect(twin.stats().inputsRepeated).toBe(0);
  });

  /**
   * `run` embeds every text of `model` with CONCURRENT loops against a twin answering slowly
   * enough that their requests overlap; then each text has one vector, no claim is left, and the
   * twin saw CONCURRENT requests at once and no text twice.
   */
  const CONCURRENT = 3;
  async function embedConcurrently(model: string, run: (embeddings: EmbeddingsConfig) => Promise<void>): Promise<void> {
    const slow = await startEmbeddingsTwin({ apiKey: KEY, latencyMs: 300 });
    try {
      await run({ ...settings(model), baseUrl: slow.baseUrl, batchSize: 4, concurrency: CONCURRENT });
      const all = await texts();
      expect(slow.stats()).toMatchObject({ maxInFlight: CONCURRENT, inputsRepeated: 0, inputsAnswered: all.size });
      expect(await vectorCount(model)).toBe(all.size);
      expect(await count('select count(*)::int as n from embedding_claims where model = $1', [model])).toBe(0);
    } finally {
      await slow.close();
    }
  }

  it('EMBEDDINGS_CONCURRENCY requests in flight at once, one text per claim, and every loop stopped by stop()', async () => {
    const model = 'twin-concurrent';
    await embedConcurrently(model, async (embeddings) => {
      const embedder = startEmbedder({ sql: database.sql, log: silentLogger(), embeddings }, { idleMs: 50 });
      try {
        await waitFor(
          async () => ((await readEmbeddingsFacts(database.sql, { model })).backlog === 0 ? true : undefined),
          60_000,
          'every text embedded by the concurrent loops',
        );
      } finally {
        await embedder.stop();
      }
    });
  });

  it("a drain (backfill's wait) has EMBEDDINGS_CONCURRENCY requests in flight too, and returns when all are stored", async () => {
    await embedConcurrently('twin-drain-concurrent', async (embeddings) => {
      const r = await drainEmbeddings({ sql: database.sql, log: silentLogger(), embeddings });
      expect(r).toEqual({ embedded: (await texts()).size, stopped: 'done' });
    });
  });

  it('a 429 holds every loop until its Retry-After, not only the loop that met it', async () => {
    const answers: TwinAnswer[] = [];
    const slow = await startEmbeddingsTwin({ apiKey: KEY, latencyMs: 100, onAnswer: (a) => answers.push(a) });
    const retryAfterMs = 2_000;
    slow.script([{ status: 429, retryAfterMs }]);
    const model = 'twin-paused';
    const concurrency = 4;
    const embedder = startEmbedder(
      {
        sql: database.sql,
        log: silentLogger(),
        embeddings: { ...settings(model), baseUrl: slow.baseUrl, batchSize: 4, concurrency },
      },
      { idleMs: 50 },
    );
    try {
      await waitFor(
        async () => ((await readEmbeddingsFacts(database.sql, { model })).backlog === 0 ? true : undefined),
        60_000,
        'every text embedded after the pause',
      );
    } finally {
      await embedder.stop();
      await slow.close();
    }
    const limited = answers.filter((a) => a.status === 429);
    expect(limited).toHaveLength(1);
    const pausedFrom = limited[0]!.answeredAt;
    // requests sent before the 429 came back may still land; none is sent during the pause
    const during = answers.filter((a) => a.receivedAt > pausedFrom && a.receivedAt < pausedFrom + retryAfterMs - 100);
    expect(during.length).toBeLessThan(concurrency);
    expect(await vectorCount(model)).toBe((await texts()).size);
  });

  it('finds a passage by meaning, not by its words', async () => {
    const client = createEmbeddingsClient(settings('twin-a'));
    const { vector: q } = await embedQuery(client, 'automobile');
    const [hit] = await nearestEmbeddings(database.sql, 'twin-a', q.length, q, 5);
    const passages = await database.sql<{ text: string }[]>`select text from passages where sha256 = ${hit!.sha256}`;
    expect(passages[0]!.text).toContain('car broke down');
    expect(passages[0]!.text.toLowerCase()).not.toContain('automobile');
  });

  it('the daily token budget refuses, records the refusal and spends no more than it', async () => {
    const spent = await count(`
      select coalesce(sum(tokens), 0)::int as n from embedding_usage where day = (now() at time zone 'utc')::date`);
    const budget = spent + 200;
    const r = await drain('twin-budget', { tokensPerDay: budget });
    expect(r.stopped).toBe('refused');
    expect(r.embedded).toBeGreaterThan(0);
    expect(r.embedded).toBeLessThan((await texts()).size);
    const [refusal] = await database.sql<{ refusals: number; budget: number; tokens_spent: number }[]>`
      select refusals, budget::int, tokens_spent::int from embedding_refusals
      where day = (now() at time zone 'utc')::date and model = 'twin-budget'`;
    expect(refusal).toMatchObject({ budget });
    expect(refusal!.refusals).toBeGreaterThanOrEqual(1);
    const today = await count(`
      select sum(tokens)::int as n from embedding_usage where day = (now() at time zone 'utc')::date`);
    expect(today).toBeLessThanOrEqual(budget);
    const facts = await readEmbeddingsFacts(database.sql, { model: 'twin-budget' });
    expect(facts.refusedToday).toBeGreaterThanOrEqual(1);
    expect(facts.backlog).toBeGreaterThan(0);

    // what a person sees
    const status = await runCli(['status'], {
      DATABASE_URL: database.url,
      LOG_LEVEL: 'warn',
      EMBEDDINGS_BASE_URL: twin.baseUrl,
      EMBEDDINGS_MODEL: 'twin-budget',
      EMBEDDINGS_TOKENS_PER_DAY: String(budget),
    });
    expectExit(status, 0);
    const passages = await count('select count(*)::int as n from passages');
    expect(status.stdout).toContain(
      `embeddings: twin-budget: ${facts.covered}/${passages} passage(s) covered, ${facts.backlog} text(s) waiting; ` +
        `tokens today ${today} / ${budget} budget; REFUSED ${facts.refusedToday} request(s) today: the daily token budget is spent`,
    );
    // and the overview's tile
    const page = String(
      renderOverview(await loadOverview(database.sql, { embeddings: { model: 'twin-budget', tokensPerDay: budget } })),
    );
    expect(page).toMatch(new RegExp(`<span id="embeddings-covered">${facts.covered}</span>/${passages} passages`));
    expect(page).toContain('<span id="embeddings-backlog">' + String(facts.backlog) + '</span> waiting');
    expect(page).toContain('id="embeddings-refused"');
  });

  it('a provider answering 500, 503, 429 or dropping the connection loses nothing and is paid once per text', async () => {
    twin.resetStats();
    twin.script([{ status: 500 }, { status: 429, retryAfterMs: 300 }, { status: 503 }, { reset: 'before' }]);
    const all = await texts();
    const metrics = createMetrics({ processMetrics: false });
    const r = await drainEmbeddings({
      sql: database.sql,
      log: silentLogger(),
      embeddings: settings('twin-faults'),
      metrics,
    });
    expect(r).toEqual({ embedded: all.size, stopped: 'done' });
    expect(await vectorCount('twin-faults')).toBe(all.size);
    expect(twin.stats()).toMatchObject({ inputsAnswered: all.size, inputsRepeated: 0, rateLimited: 0 });
    expect(twin.stats().byStatus).toMatchObject({ 500: 1, 429: 1, 503: 1 });
    // the day's tokens are what the provider billed: the estimates of requests answered 5xx/429
    // given back
    const tokens = await count(`
      select tokens::int as n from embedding_usage where day = (now() at time zone 'utc')::date and model = 'twin-faults'`);
    // but for the request whose connection dropped: it may have arrived, so its estimate stays
    // counted (at most a batch of 8 passages of 48 tokens)
    expect(tokens).toBeGreaterThanOrEqual(twin.stats().tokensAnswered);
    expect(tokens - twin.stats().tokensAnswered).toBeLessThanOrEqual(8 * PASSAGES.size);
    // the process's counters: every request by outcome, the texts stored
    const scraped = await metrics.registry.metrics();
    expect(scraped).toContain('vsi_embedding_requests_total{outcome="rate-limited"} 1');
    expect(scraped).toContain('vsi_embedding_requests_total{outcome="failed"} 3');
    expect(scraped).toContain(`vsi_embedded_texts_total ${all.size}`);
    // a model change keeps the other models' vectors
    expect(await vectorCount('twin-a')).toBeGreaterThanOrEqual(all.size);
  });

  it('records that a model covered the corpus once a drain left nothing, so search keeps it while new passages wait', async () => {
    const model = 'twin-cover';
    const r = await drain(model);
    expect(r.stopped).toBe('done');
    const [rec] = await database.sql<{ through: number; newest: number }[]>`
      select through_passage_id::float8 as through, (select max(id) from passages)::float8 as newest
      from embedding_coverage where model = ${model} and dimensions = 0`;
    expect(rec).toBeDefined();
    expect(rec!.through).toBe(rec!.newest);
    // a new transcript's passages wait for their vectors: the model stays in use, as recorded ...
    await store('vidEmbCover', linesOf('vidEmbCover'));
    expect(await modelCoversPassages(database.sql, model)).toBe(true);
    // ... where, unrecorded, every passage is read and one lacks a vector
    await database.sql`delete from embedding_coverage where model = ${model}`;
    expect(await modelCoversPassages(database.sql, model)).toBe(false);
    expect(await drain(model)).toMatchObject({ stopped: 'done' });
    expect(await modelCoversPassages(database.sql, model)).toBe(true);
    expect(await count('select count(*)::int as n from embedding_coverage where model = $1', [model])).toBe(1);
  });

  it('a text the provider refuses is left alone with its error, every other embedded once, and the model covers the corpus', async () => {
    const model = 'twin-refusing';
    const [{ longest } = { longest: 0 }] = await database.sql<{ longest: number }[]>`
      select max(tokens)::int as longest from passages`;
    // a model whose context is one token short of the longest passages: the provider refuses those
    const refusing = await startEmbeddingsTwin({ apiKey: KEY, maxInputTokens: longest - 1 });
    try {
      const all = await texts();
      const refused = (
        await database.sql<{ sha256: string }[]>`
          select distinct sha256 from passages where tokens = ${longest} order by sha256`
      ).map((r) => r.sha256);
      expect(refused.length).toBeGreaterThan(0);
      expect(refused.length).toBeLessThan(all.size);

      const first = await drain(model, { baseUrl: refusing.baseUrl });
      expect(first).toEqual({ embedded: all.size - refused.length, stopped: 'done' });
      expect(refusing.stats()).toMatchObject({ inputsAnswered: all.size - refused.length, inputsRepeated: 0 });
      expect(refusing.stats().byStatus['400']).toBeGreaterThanOrEqual(refused.length);
      const claims = await database.sql<{ sha256: string; error: string }[]>`
        select sha256, error from embedding_claims where model = ${model} order by sha256`;
      expect(claims).toEqual(refused.map((sha256) => ({ sha256, error: 'rejected' })));
      expect(await readEmbeddingsFacts(database.sql, { model })).toMatchObject({ failed: refused.length });
      // what the provider refuses keeps no model from search: the coverage is recorded
      expect(await count('select count(*)::int as n from embedding_coverage where model = $1', [model])).toBe(1);
      await database.sql`delete from embedding_coverage where model = ${model}`;
      expect(await modelCoversPassages(database.sql, model)).toBe(true);

      // asked again only the next day: another drain asks nothing
      const requests = refusing.stats().requests;
      expect(await drain(model, { baseUrl: refusing.baseUrl })).toEqual({ embedded: 0, stopped: 'done' });
      expect(refusing.stats().requests).toBe(requests);
    } finally {
      await refusing.close();
    }
  });

  it("a dead embedder's claims lapse and its texts are embedded then", async () => {
    const claimed = await claimTexts(database.sql, { model: 'twin-crash' }, 5, 1_500);
    expect(claimed).toHaveLength(5);
    const first = await drain('twin-crash');
    const all = await texts();
    expect(first.embedded).toBe(all.size - 5);
    await waitFor(
      async () => {
        const [r] = await database.sql<{ lapsed: boolean }[]>`
          select bool_and(expires_at <= now()) as lapsed from embedding_claims where model = 'twin-crash'`;
        return r!.lapsed ? true : undefined;
      },
      30_000,
      'the claims to lapse',
    );
    expect(await drain('twin-crash')).toEqual({ embedded: 5, stopped: 'done' });
    expect(await vectorCount('twin-crash')).toBe(all.size);
  });
});

/**
 * The reads of `passages` so far, once two readings a moment apart agree (a backend flushes its
 * statistics as it exits, or about once a second): tuples read from the table and fetched through
 * its indexes, index entries read, index scans.
 */
function settledReads(reader: TestDatabase['sql']) {
  return waitFor(
    async () => {
      const read = async () => {
        const [r] = await reader<{ tuples: number; entries: number; scans: number }[]>`
          select (coalesce(t.seq_tup_read, 0) + coalesce(t.idx_tup_fetch, 0))::float8 as tuples,
            (select coalesce(sum(i.idx_tup_read), 0) from pg_stat_user_indexes i where i.relid = t.relid)::float8 as entries,
            coalesce(t.idx_scan, 0)::float8 as scans
          from pg_stat_user_tables t where t.relname = 'passages'`;
        return r!;
      };
      const a = await read();
      await new Promise((ok) => setTimeout(ok, 300));
      const b = await read();
      return b.tuples === a.tuples && b.entries === a.entries && b.scans === a.scans ? a : undefined;
    },
    20_000,
    'the statistics of passages to settle',
  );
}

/**
 * A database of its own for a test that reads its statistics: `videos`' transcripts stored and cut
 * into passages, then `prepare` run, by a setup client ended before `fn` runs (a backend flushes
 * its statistics as it exits; the database's own pool is never used). Dropped after.
 */
async function withOwnCorpus<T>(
  name: string,
  videos: readonly string[],
  prepare: (setup: TestDatabase['sql']) => Promise<T>,
  fn: (url: string, prepared: T) => Promise<void>,
): Promise<void> {
  const own = await createTestDatabase(name);
  const setupDb = createDb(own.url, { max: 1 });
  try {
    for (const v of videos) {
      const content = linesOf(v).map((text, i) => ({ text, offset: i * 2_000, duration: 1_900 }));
      await upsertTranscripts(setupDb.sql, [
        transcriptRowFromApi(v, { content, lang: 'en', availableLangs: ['en'] }, `job-${name}-${v}`),
      ]);
    }
    await drainSearchIndex({ sql: setupDb.sql, passages: PASSAGES });
    const prepared = await prepare(setupDb.sql);
    await setupDb.close();
    await fn(own.url, prepared);
  } finally {
    await setupDb.close().catch(() => undefined);
    await own.drop();
  }
}

/** A client of its own for `fn` (its own backend), ended after. */
async function withClient(url: string, max: number, fn: (sql: TestDatabase['sql']) => Promise<void>): Promise<void> {
  const db = createDb(url, { max });
  try {
    await fn(db.sql);
  } finally {
    await db.close();
  }
}

const passageCount = async (sql: TestDatabase['sql']) => {
  const [{ n } = { n: 0 }] = await sql<{ n: number }[]>`select count(*)::int as n from passages`;
  return n;
};

describe('an idle embedder', () => {
  it('does not read every passage on each look: it claims again only when a passage or a claim changed', async () => {
    const model = 'twin-idle';
    const prepare = async (setup: TestDatabase['sql']) => {
      const all = await drainEmbeddings({ sql: setup, log: silentLogger(), embeddings: settings(model) });
      expect(all.stopped).toBe('done');
      return passageCount(setup);
    };
    await withOwnCorpus('embeddings_idle', VIDEOS, prepare, async (url, passages) => {
      expect(passages).toBeGreaterThan(20);
      await withClient(url, 1, async (reader) => {
        const before = await settledReads(reader);
        await withClient(url, 2, async (idle) => {
          const embedder = startEmbedder(
            { sql: idle, log: silentLogger(), embeddings: settings(model) },
            { idleMs: 20, concurrency: 1 },
          );
          await new Promise((ok) => setTimeout(ok, 2_000));
          await embedder.stop();
        });
        const after = await settledReads(reader);
        // each look reads the newest passage id through the primary key (an index scan): it looked
        // every 20 ms or so ...
        expect(after.scans - before.scans).toBeGreaterThan(10);
        // ... and read no more tuples than about one claim reads (every passage), not one per look
        expect(after.tuples - before.tuples).toBeLessThan(5 * passages);
      });
    });
  });
});

describe('a busy embedder', () => {
  it('walks on from the last text it claimed: embedding a corpus reads each passage a few times, not once per claim', async () => {
    const model = 'twin-walk';
    const videos = Array.from({ length: 60 }, (_, i) => `vidWalk${String(i).padStart(4, '0')}`);
    const prepare = async (setup: TestDatabase['sql']) => {
      const [{ n: distinct } = { n: 0 }] = await setup<{ n: number }[]>`
        select count(distinct sha256)::int as n from passages`;
      return { passages: await passageCount(setup), distinct };
    };
    await withOwnCorpus('embeddings_walk', videos, prepare, async (url, { passages, distinct }) => {
      expect(passages).toBeGreaterThan(500);
      await withClient(url, 1, async (reader) => {
        const before = await settledReads(reader);
        let drained: Awaited<ReturnType<typeof drainEmbeddings>> | undefined;
        await withClient(url, 2, async (sql) => {
          drained = await drainEmbeddings({
            sql,
            log: silentLogger(),
            embeddings: settings(model, { concurrency: 1 }),
          });
        });
        expect(drained).toEqual({ embedded: distinct, stopped: 'done' });
        const after = await settledReads(reader);
        // a claim that walked from the first text would step over every one embedded before it:
        // about passages^2 / (2 x batch) reads over the drain (150 a passage here); walking on, a
        // few a passage (each claim's walk, its texts, the closing look from the start)
        const reads = after.tuples + after.entries - (before.tuples + before.entries);
        expect(reads).toBeLessThan(20 * passages);
      });
    });
  });
});
