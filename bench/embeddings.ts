/**
 * The embeddings figure (issue #32): W1's passages embedded against the embeddings twin started
 * with a rate limit, by the embedder a daemon runs (startEmbedder, EMBEDDINGS_CONCURRENCY loops,
 * in this process), for a bounded window or until nothing is left. Figures: texts embedded per
 * second over the window once the twin's burst allowance is spent, the twin's limit in texts/s
 * (requests/min x batch / 60) and the ratio; the 429s the twin answered; and, once the rest is
 * embedded without the limit, the lag from a transcript stored while the embedder idles to its
 * vectors.
 */
import { EMBEDDINGS_CONCURRENCY, type EmbeddingsConfig } from '../src/config.ts';
import { readEmbeddingsFacts } from '../src/db/embeddings.ts';
import { transcriptRowFromApi, upsertTranscripts } from '../src/db/transcripts.ts';
import type { PassageOptions } from '../src/domain/passages.ts';
import { startEmbeddingsTwin } from '../src/embeddings/twin.ts';
import { silentLogger } from '../src/log.ts';
import { startEmbedder } from '../src/pipeline/services/embedder.ts';
import { drainSearchIndex } from '../src/pipeline/services/search-index.ts';
import type { BenchEnv } from './setup.ts';

/** The twin's limit: the issue's measure (1200 requests/min at batch 8 = 160 texts/s). */
export const EMBED_REQUESTS_PER_MINUTE = 1200;
export const EMBED_BATCH = 8;
/** A provider's answer takes about this long. */
export const EMBED_TWIN_LATENCY_MS = 50;
/** The pipeline keeps embedding at least this share of the provider's rate limit. */
export const EMBED_TARGET_SHARE = 0.9;
/** The twin's bucket starts full (ten seconds' worth); the measure starts once it is spent or after this. */
const WARMUP_MS = 12_000;
const MODEL = 'bench-embed';

export interface EmbeddingsFigures {
  /** distinct passage texts in the database */
  texts: number;
  concurrency: number;
  batch: number;
  requestsPerMinute: number;
  limitTextsPerS: number;
  /** over the measured window */
  windowS: number;
  textsInWindow: number;
  textsPerS: number;
  /** textsPerS / limitTextsPerS */
  share: number;
  /** 429s the twin answered while it limited the rate */
  rateLimited: number;
  /** a transcript stored while the embedder ran, to its last vector, s (undefined: not measured) */
  lagS: number | undefined;
}

const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runEmbeddingsWorkload(
  env: BenchEnv,
  passages: PassageOptions,
  windowMs: number,
): Promise<EmbeddingsFigures> {
  const { sql } = env.db;
  await drainSearchIndex({ sql, passages });
  const twin = await startEmbeddingsTwin({
    rateLimit: { requestsPerMinute: EMBED_REQUESTS_PER_MINUTE },
    latencyMs: EMBED_TWIN_LATENCY_MS,
  });
  const embeddings: EmbeddingsConfig = {
    baseUrl: twin.baseUrl,
    model: MODEL,
    dimensions: undefined,
    apiKey: undefined,
    tokensPerDay: undefined,
    batchSize: EMBED_BATCH,
    timeoutMs: 30_000,
    concurrency: EMBEDDINGS_CONCURRENCY,
  };
  const backlog = async () => (await readEmbeddingsFacts(sql, { model: MODEL })).backlog;
  const [t] = await sql<{ n: number }[]>`select count(distinct sha256)::int as n from passages`;
  const embedder = startEmbedder({ sql, log: silentLogger(), embeddings }, { idleMs: 100 });
  const limitTextsPerS = (EMBED_REQUESTS_PER_MINUTE * EMBED_BATCH) / 60;
  try {
    const t0 = Date.now();
    while (Date.now() - t0 < WARMUP_MS && twin.stats().rateLimited === 0 && (await backlog()) > 0) await sleep(200);
    const from = { at: Date.now(), texts: twin.stats().inputsAnswered };
    while (Date.now() - from.at < windowMs && (await backlog()) > 0) await sleep(200);
    const windowS = (Date.now() - from.at) / 1000;
    const textsInWindow = twin.stats().inputsAnswered - from.texts;
    const textsPerS = textsInWindow / Math.max(0.001, windowS);
    const { rateLimited } = twin.stats();
    // the lag of a new transcript is the backlog's while one is left: the rest is embedded
    // without the limit (for at most another window) before it is measured
    twin.setRateLimit({});
    const drainFrom = Date.now();
    while (Date.now() - drainFrom < windowMs && (await backlog()) > 0) await sleep(200);
    const lagS = await lagOf(env, passages, backlog);
    return {
      texts: t!.n,
      concurrency: embeddings.concurrency,
      batch: EMBED_BATCH,
      requestsPerMinute: EMBED_REQUESTS_PER_MINUTE,
      limitTextsPerS: round(limitTextsPerS, 1),
      windowS: round(windowS, 1),
      textsInWindow,
      textsPerS: round(textsPerS, 1),
      share: round(textsPerS / limitTextsPerS, 3),
      rateLimited,
      lagS,
    };
  } finally {
    await embedder.stop();
    await twin.close();
  }
}

/**
 * One transcript stored and cut into passages while the embedder runs (the daemon's indexer's
 * work, done here at once), timed to its last vector; undefined when the backlog is not empty
 * (the window ended first: the lag would be the backlog's).
 */
async function lagOf(
  env: BenchEnv,
  passages: PassageOptions,
  backlog: () => Promise<number>,
): Promise<number | undefined> {
  if ((await backlog()) > 0) return undefined;
  const { sql } = env.db;
  const videoId = `benchEmb${Date.now().toString(36).slice(-3)}`;
  const content = Array.from({ length: 60 }, (_, i) => ({
    text: `bench lag line ${i} of ${videoId} on topic ${(i * 11) % 17}`,
    offset: i * 2_000,
    duration: 1_900,
  }));
  await sql`insert into videos (id, title) values (${videoId}, ${videoId}) on conflict do nothing`;
  const started = Date.now();
  await upsertTranscripts(sql, [
    transcriptRowFromApi(videoId, { content, lang: 'en', availableLangs: ['en'] }, `bench-emb-${videoId}`),
  ]);
  await drainSearchIndex({ sql, passages });
  const deadline = started + 60_000;
  while ((await backlog()) > 0) {
    if (Date.now() > deadline) return undefined;
    await sleep(20);
  }
  return round((Date.now() - started) / 1000);
}

export function renderEmbeddings(e: EmbeddingsFigures): string {
  return (
    `Embeddings: ${e.textsInWindow} of ${e.texts} passage texts in ${e.windowS} s = ${e.textsPerS} texts/s against the twin's limit ` +
    `${e.requestsPerMinute} requests/min x ${e.batch} = ${e.limitTextsPerS} texts/s: ${round(e.share * 100, 1)}% ` +
    `(${e.concurrency} requests in flight, ${e.rateLimited} 429s); lag from a stored transcript to its vectors ` +
    `${e.lagS === undefined ? 'not measured (backlog left)' : `${e.lagS} s`}\n`
  );
}
