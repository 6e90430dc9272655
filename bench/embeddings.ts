/**
 * The embeddings figure (issue #32): W1's passages embedded against the embeddings twin started
 * with a rate limit, by the embedder a daemon runs (startEmbedder, EMBEDDINGS_CONCURRENCY loops,
 * in this process), for a bounded window or until nothing is left. Figures: texts embedded per
 * second over the window once the twin's burst allowance is spent, the twin's limit in texts/s
 * (requests/min x batch / 60) and the ratio; the 429s the twin answered; and, the rest set aside,
 * the lag from a transcript stored while the embedder idles to its vectors.
 */
import { EMBEDDINGS_CONCURRENCY, type EmbeddingsConfig } from '../src/config.ts';
import { readEmbeddingsFacts } from '../src/db/embeddings.ts';
import { transcriptRowFromApi, upsertTranscripts } from '../src/db/transcripts.ts';
import type { PassageOptions } from '../src/domain/passages.ts';
import { startEmbeddingsTwin } from '../src/embeddings/twin.ts';
import { silentLogger } from '../src/log.ts';
import { EMBEDDER_IDLE_MS, startEmbedder } from '../src/pipeline/services/embedder.ts';
import { drainSearchIndex } from '../src/pipeline/services/search-index.ts';
import type { BenchEnv } from './setup.ts';

/** The twin's limit: the issue's measure (1200 requests/min at batch 8 = 160 texts/s). */
export const EMBED_REQUESTS_PER_MINUTE = 1200;
export const EMBED_BATCH = 8;
/** A provider's answer takes about this long. */
export const EMBED_TWIN_LATENCY_MS = 50;
/** The pipeline keeps embedding at least this share of the provider's rate limit. */
export const EMBED_TARGET_SHARE = 0.9;
/** The twin's bucket holds this many seconds' worth: a long burst would inflate the sustained rate. */
const EMBED_BURST_S = 1;
/** The measure starts once the twin's bucket is spent (its first 429) or after this. */
const WARMUP_MS = 5_000;
const MODEL = 'bench-embed';
/**
 * The backlog is read this often: until the model's coverage is recorded each read is a pass over
 * the passages against the vectors, a load on the database the measured embedder shares, which a
 * daemon's scrapes (every 15 s or so) do not add.
 */
const BACKLOG_READ_MS = 1_000;
/** Transcripts timed to their vectors; the figure is the slowest. */
const LAG_SAMPLES = 3;

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
  /** the slowest of LAG_SAMPLES transcripts stored while the embedder idles, to its last vector, s (undefined: over a minute) */
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
    rateLimit: { requestsPerMinute: EMBED_REQUESTS_PER_MINUTE, burstSeconds: EMBED_BURST_S },
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
  // the daemon's idle wait: the lag is what a daemon shows
  const start = () => startEmbedder({ sql, log: silentLogger(), embeddings });
  let embedder = start();
  const limitTextsPerS = (EMBED_REQUESTS_PER_MINUTE * EMBED_BATCH) / 60;
  try {
    const t0 = Date.now();
    while (Date.now() - t0 < WARMUP_MS && twin.stats().rateLimited === 0 && (await backlog()) > 0)
      await sleep(BACKLOG_READ_MS / 2);
    const from = { at: Date.now(), texts: twin.stats().inputsAnswered };
    while (Date.now() - from.at < windowMs && (await backlog()) > 0) await sleep(BACKLOG_READ_MS);
    const windowS = (Date.now() - from.at) / 1000;
    const textsInWindow = twin.stats().inputsAnswered - from.texts;
    const textsPerS = textsInWindow / Math.max(0.001, windowS);
    const { rateLimited } = twin.stats();
    // a new transcript waits behind the backlog: the rest is set aside (claimed, as by another
    // embedder) so that the lag is the pipeline's, not the backlog's; with the embedder stopped,
    // since so many claims at once deadlock with its own
    await embedder.stop();
    await sql`
      insert into embedding_claims (model, sha256, expires_at)
      select distinct ${MODEL}, p.sha256, now() + interval '1 hour' from passages p
      where not exists (select 1 from embeddings e where e.model = ${MODEL} and e.sha256 = p.sha256)
      on conflict (model, sha256) do update set expires_at = excluded.expires_at`;
    embedder = start();
    // a few transcripts, each stored at a different point of the embedder's idle wait
    let lagS: number | undefined = 0;
    for (let i = 0; i < LAG_SAMPLES && lagS !== undefined; i++) {
      await sleep(EMBEDDER_IDLE_MS * (0.5 + i / LAG_SAMPLES));
      const one = await lagOf(env, passages, i);
      lagS = one === undefined ? undefined : Math.max(lagS, one);
    }
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
 * One transcript stored and cut into passages while the embedder idles (the daemon's indexer's
 * work, done here at once), timed to its last vector.
 */
async function lagOf(env: BenchEnv, passages: PassageOptions, n: number): Promise<number | undefined> {
  const { sql } = env.db;
  const videoId = `benchEmb${n}${Date.now().toString(36).slice(-2)}`;
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
  for (;;) {
    const [r] = await sql<{ n: number }[]>`
      select count(*)::int as n from passages p
      where p.doc = ${videoId}
        and not exists (select 1 from embeddings e where e.model = ${MODEL} and e.sha256 = p.sha256)`;
    if (r!.n === 0) return round((Date.now() - started) / 1000);
    if (Date.now() > deadline) return undefined;
    await sleep(20);
  }
}

export function renderEmbeddings(e: EmbeddingsFigures): string {
  return (
    `Embeddings: ${e.textsInWindow} of ${e.texts} passage texts in ${e.windowS} s = ${e.textsPerS} texts/s against the twin's limit ` +
    `${e.requestsPerMinute} requests/min x ${e.batch} = ${e.limitTextsPerS} texts/s: ${round(e.share * 100, 1)}% ` +
    `(${e.concurrency} requests in flight, ${e.rateLimited} 429s); lag from a stored transcript to its vectors (slowest of ${LAG_SAMPLES}) ` +
    `${e.lagS === undefined ? 'over a minute' : `${e.lagS} s`}\n`
  );
}
