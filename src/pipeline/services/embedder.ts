/**
 * The embedder (issue #32): keeps a vector of every passage text under the configured model
 * (EMBEDDINGS_*), beside the search indexer that cuts the passages (every daemon with the poller
 * or sink role). Its only state is what Postgres holds: a text lacks a vector of the model
 * (`embeddings`), it is claimed while a request carries it (`embedding_claims`, lapsing when the
 * embedder dies), the day's tokens are counted before each request (`embedding_usage`), so a
 * crash loses nothing and a restart resumes where the rows say.
 *
 * EMBEDDINGS_CONCURRENCY requests in flight per process (a claim keeps two from carrying the
 * same text). A 429 pauses all of this process's embedding for its Retry-After and costs no
 * attempt (the claims are let go, the tokens given back); a 5xx or a failed
 * connection backs off and tries again, the texts claimed again later; a 4xx for a batch halves
 * the batch until the text the provider refuses is alone, which is then left for a day. The
 * daily token budget refuses (recorded in `embedding_refusals`) before a request, never after.
 * A new EMBEDDINGS_MODEL finds every text without its vectors and embeds them in the background;
 * the old model's rows stay.
 */
import { backoffDelayMs, sleepMs } from '../../api/retry.ts';
import type { EmbeddingsConfig } from '../../config.ts';
import type { Sql } from '../../db/connection.ts';
import {
  claimMark,
  claimTexts,
  ensureEmbeddingsStore,
  ensureModelIndex,
  failClaims,
  releaseClaims,
  reserveTokens,
  settleTokens,
  STORE_HINTS,
  storeVectors,
  type EmbeddingsStoreState,
  type ModelSpace,
  type TextToEmbed,
} from '../../db/embeddings.ts';
import { recordCoverage } from '../../db/semantic-search.ts';
import { createEmbeddingsClient, EmbeddingsError, type EmbeddingsClient } from '../../embeddings/client.ts';
import type { Logger } from '../../log.ts';
import type { PipelineMetrics } from '../deps.ts';

/** An embedder that found nothing to embed looks again after this long. */
export const EMBEDDER_IDLE_MS = 1_000;
/** Without pgvector, the embedder looks again this often (someone may install it). */
export const EMBEDDER_STORE_RECHECK_MS = 5 * 60_000;
/** After the budget refused, the embedder asks again this often (the day may end, the budget be raised). */
export const EMBEDDER_BUDGET_RECHECK_MS = 60_000;
/** A 429 without Retry-After pauses this long. */
export const EMBEDDER_RATE_LIMIT_DEFAULT_MS = 10_000;
/** Backoff after failures: first wait up to this, doubling (full jitter) up to EMBEDDER_BACKOFF_MAX_MS. */
export const EMBEDDER_BACKOFF_BASE_MS = 1_000;
export const EMBEDDER_BACKOFF_MAX_MS = 60_000;
/** A text the provider refuses alone (a 4xx) is asked again after this long. */
export const EMBEDDER_REJECTED_RETRY_MS = 24 * 3_600_000;
/**
 * A claim lapses this long after the request's own timeout: a live embedder has stored or let go
 * of its texts by then, so only a dead one's claims lapse.
 */
export const EMBEDDER_CLAIM_MARGIN_MS = 60_000;
/**
 * An idle embedder claims again only when `claimMark` moved (a new passage, a claim let go or
 * lapsed), and at least this often whatever it says: a passage whose id was taken before the
 * newest one's but committed after it leaves the mark as it was.
 */
export const EMBEDDER_IDLE_FULL_CLAIM_MS = 30_000;

export interface EmbedderDeps {
  sql: Sql;
  log: Logger;
  embeddings: EmbeddingsConfig;
  /** default: a client of `embeddings` */
  client?: EmbeddingsClient;
  /** where each request is counted (the daemon's Prometheus counters) */
  metrics?: PipelineMetrics | undefined;
}

/** What one round did. */
export type EmbedOutcome =
  | { kind: 'embedded'; texts: number; tokens: number }
  | { kind: 'idle' }
  | { kind: 'refused'; spent: number }
  | { kind: 'rate-limited'; pauseMs: number }
  | { kind: 'failed'; err: EmbeddingsError }
  /** the provider refused the batch: one of its texts, found by asking again with half as many */
  | { kind: 'halved'; texts: number; err: EmbeddingsError }
  | { kind: 'rejected'; texts: number; err: EmbeddingsError };

/** One process's embedding state: the batch size (halved while a batch is refused), the indexes known. */
interface Round {
  deps: EmbedderDeps;
  client: EmbeddingsClient;
  space: ModelSpace;
  batchSize: number;
  indexed: Set<string>;
  /** after a claim found nothing: the mark then, and when that claim ran (epoch ms) */
  idle: { mark: string; at: number } | undefined;
  /** the model's coverage of the corpus is recorded (`recordCoverage`): no need to look again */
  covered: boolean;
  /** the last text claimed (content-hash order): the next claim walks on from it ('' from the start) */
  after: string;
  /**
   * The last claim of this process's loops: they claim one after another, since two claiming at
   * once would pick the same texts, the second then finding them taken and idling for nothing.
   */
  claiming: Promise<unknown>;
}

function newRound(deps: EmbedderDeps): Round {
  const client = deps.client ?? createEmbeddingsClient(deps.embeddings);
  return {
    deps,
    client,
    space: { model: client.model, dimensions: client.dimensions },
    batchSize: deps.embeddings.batchSize,
    indexed: new Set(),
    idle: undefined,
    covered: false,
    after: '',
    claiming: Promise.resolve(),
  };
}

/**
 * One request's worth: claim texts, count their tokens against the budget, ask the provider,
 * store the vectors (or let the claims go, saying why).
 */
async function embedRound(r: Round): Promise<EmbedOutcome> {
  const { sql } = r.deps;
  const { model } = r.space;
  const ttlMs = r.deps.embeddings.timeoutMs + EMBEDDER_CLAIM_MARGIN_MS;
  const claim = r.claiming.then(() => claimIfAny(r, ttlMs));
  r.claiming = claim.catch(() => undefined);
  const claimed = await claim;
  if (claimed.length === 0) return { kind: 'idle' };
  const grant = await reserveTokens(
    sql,
    model,
    claimed.map((t) => t.tokens),
    r.deps.embeddings.tokensPerDay,
  ).catch(async (err: unknown) => {
    await letGo(
      r,
      claimed.map((t) => t.sha256),
    ).catch(() => undefined);
    throw err;
  });
  const texts = claimed.slice(0, grant.granted);
  await letGo(
    r,
    claimed.slice(grant.granted).map((t) => t.sha256),
  );
  if (texts.length === 0) return { kind: 'refused', spent: grant.spentBefore };
  const estimate = texts.reduce((n, t) => n + t.tokens, 0);
  const started = Date.now();
  try {
    const answer = await r.client.embed(texts.map((t) => t.text));
    await storeVectors(sql, model, rowsOf(texts, answer.vectors));
    await settleTokens(sql, model, grant.day, answer.tokens - estimate);
    r.batchSize = r.deps.embeddings.batchSize;
    r.deps.log.debug(
      { event: 'embedder.embedded', model, texts: texts.length, tokens: answer.tokens, ms: Date.now() - started },
      'passages embedded',
    );
    await indexModel(r, answer.vectors[0]!.length);
    return { kind: 'embedded', texts: texts.length, tokens: answer.tokens };
  } catch (err: unknown) {
    const shas = texts.map((t) => t.sha256);
    if (!(err instanceof EmbeddingsError)) {
      await letGo(r, shas).catch(() => undefined);
      throw err;
    }
    return afterError(r, texts, err, { day: grant.day, estimate });
  }
}

/**
 * The texts of one request, claimed; none without reading passages against embeddings when the
 * last claim found nothing and `claimMark` has not moved since (an idle daemon's every look would
 * otherwise read the whole of `passages`).
 */
async function claimIfAny(r: Round, ttlMs: number): Promise<TextToEmbed[]> {
  const { sql } = r.deps;
  const mark = await claimMark(sql, r.space.model);
  if (r.idle?.mark === mark && Date.now() - r.idle.at < EMBEDDER_IDLE_FULL_CLAIM_MS) return [];
  const at = Date.now();
  let claimed = await claimTexts(sql, r.space, r.batchSize, ttlMs, r.after);
  if (claimed.length === 0 && r.after !== '') {
    // the walk reached the last text: from the start again, for texts cut or let go behind it
    claimed = await claimTexts(sql, r.space, r.batchSize, ttlMs, '');
  }
  r.after = claimed.at(-1)?.sha256 ?? '';
  r.idle = claimed.length === 0 ? { mark, at } : undefined;
  if (claimed.length === 0 && !r.covered) r.covered = await recordCoverage(sql, r.space.model, r.space.dimensions);
  return claimed;
}

/** Claims let go without a vector: the next claim walks from the start, so that these come first again. */
async function letGo(r: Round, sha256s: readonly string[]): Promise<void> {
  try {
    await releaseClaims(r.deps.sql, r.space.model, sha256s);
  } finally {
    if (sha256s.length > 0) r.after = '';
  }
}

function rowsOf(texts: readonly TextToEmbed[], vectors: readonly number[][]) {
  return texts.map((t, i) => ({ sha256: t.sha256, vector: vectors[i]!, tokens: t.tokens }));
}

/** The claims and the tokens after a failed request, and what the loop does next. */
async function afterError(
  r: Round,
  texts: readonly TextToEmbed[],
  err: EmbeddingsError,
  reserved: { day: string; estimate: number },
): Promise<EmbedOutcome> {
  const { sql } = r.deps;
  const { model } = r.space;
  const shas = texts.map((t) => t.sha256);
  // a request that may have arrived may have been billed: its tokens stay counted
  if (err.code !== 'lost') await settleTokens(sql, model, reserved.day, -reserved.estimate, -texts.length);
  if (err.code === 'rejected' || err.code === 'invalid-answer') {
    if (texts.length > 1) {
      // one of them is refused: halve until it is alone (the claim order puts it first again);
      // an answer that does not parse says more of the provider than of a text: a failure
      await letGo(r, shas);
      r.batchSize = Math.max(1, Math.ceil(texts.length / 2));
      return err.code === 'rejected' ? { kind: 'halved', texts: texts.length, err } : { kind: 'failed', err };
    }
    await failClaims(sql, model, shas, err.code, EMBEDDER_REJECTED_RETRY_MS);
    r.batchSize = r.deps.embeddings.batchSize;
    return { kind: 'rejected', texts: texts.length, err };
  }
  await letGo(r, shas);
  if (err.code === 'rate-limited') {
    return { kind: 'rate-limited', pauseMs: err.retryAfterMs ?? EMBEDDER_RATE_LIMIT_DEFAULT_MS };
  }
  return { kind: 'failed', err };
}

/** The model's HNSW index at these dimensions, built once its first vectors are stored. */
async function indexModel(r: Round, dimensions: number): Promise<void> {
  const key = `${r.space.model}/${dimensions}`;
  if (r.indexed.has(key)) return;
  r.indexed.add(key);
  const { model } = r.space;
  const started = Date.now();
  try {
    if (await ensureModelIndex(r.deps.sql, model, dimensions)) {
      r.deps.log.info(
        { event: 'embedder.index_built', model, dimensions, ms: Date.now() - started },
        'HNSW index of the model built',
      );
    }
  } catch (err: unknown) {
    r.deps.log.warn({ event: 'embedder.index_failed', model, dimensions, err }, 'could not build the HNSW index');
  }
}

export interface Embedder {
  /** stop after the requests in flight */
  stop(): Promise<void>;
}

/**
 * Embeds until stopped: EMBEDDINGS_CONCURRENCY loops at full speed while texts wait, each looking
 * again every `idleMs` otherwise. The loops share one Round (batch size, indexes known) and one
 * pause: a 429, a failing provider or a spent budget holds every loop until the same moment, so
 * N loops cost one 429, not N.
 */
export function startEmbedder(deps: EmbedderDeps, opts: { idleMs?: number; concurrency?: number } = {}): Embedder {
  const idleMs = opts.idleMs ?? EMBEDDER_IDLE_MS;
  const concurrency = Math.max(1, opts.concurrency ?? deps.embeddings.concurrency);
  const stopping = new AbortController();
  const r = newRound(deps);
  const { log } = deps;
  log.info(
    {
      event: 'embedder.started',
      model: r.space.model,
      dimensions: r.space.dimensions,
      batchSize: deps.embeddings.batchSize,
      concurrency,
      tokensPerDay: deps.embeddings.tokensPerDay,
    },
    'embedder started',
  );
  let store: EmbeddingsStoreState | undefined;
  let storeCheck: Promise<EmbeddingsStoreState> | undefined;
  let failures = 0;
  let refusedDay: string | undefined;
  /** every loop waits for this moment before its next request (epoch ms) */
  let pausedUntil = 0;
  const holdAll = (ms: number) => {
    pausedUntil = Math.max(pausedUntil, Date.now() + ms);
  };
  // one check of the store for every loop: its warning is logged once
  const checkStore = async (): Promise<EmbeddingsStoreState> => {
    storeCheck ??= ensureEmbeddingsStore(deps.sql)
      .then((state) => {
        if (state !== 'ready' && state !== store) {
          log.warn({ event: 'embedder.store_unavailable', state, hint: STORE_HINTS[state] }, STORE_HINTS[state]);
        }
        store = state;
        if (state !== 'ready') holdAll(EMBEDDER_STORE_RECHECK_MS);
        return state;
      })
      .finally(() => {
        storeCheck = undefined;
      });
    return storeCheck;
  };
  const loop = async (): Promise<void> => {
    while (!stopping.signal.aborted) {
      const heldMs = pausedUntil - Date.now();
      if (heldMs > 0) {
        await pause(heldMs, stopping.signal);
        continue;
      }
      let waitMs = 0;
      try {
        if (store !== 'ready' && (await checkStore()) !== 'ready') continue;
        // the request in flight is not aborted by stop(): it may have been paid for, so its
        // vectors are stored (stop waits at most the request's timeout, the daemon its grace)
        const out = await embedRound(r);
        report(deps, out);
        const next = nextWait(out, failures);
        if (out.kind === 'idle') waitMs = idleMs;
        else if (next > 0) holdAll(next);
        if (out.kind === 'failed') {
          if (failures === 0) {
            log.warn(
              { event: 'embedder.failed', code: out.err.code, status: out.err.status, retryInMs: next, err: out.err },
              'embeddings request failed; it is tried again',
            );
          }
          failures++;
        } else if (out.kind !== 'rate-limited' && out.kind !== 'halved') {
          if (failures > 0) log.info({ event: 'embedder.resumed', failures }, 'embeddings requests succeed again');
          failures = 0;
        }
        if (out.kind === 'rate-limited') {
          log.info({ event: 'embedder.rate_limited', pauseMs: out.pauseMs }, 'embeddings provider rate limit: paused');
        } else if (out.kind === 'rejected') {
          log.warn(
            {
              event: 'embedder.texts_rejected',
              model: r.space.model,
              texts: out.texts,
              code: out.err.code,
              status: out.err.status,
              err: out.err,
            },
            'the provider refused a text; asked again tomorrow',
          );
        } else if (out.kind === 'refused') {
          const day = new Date().toISOString().slice(0, 10);
          if (refusedDay !== day) {
            log.warn(
              {
                event: 'embedder.budget_refused',
                model: r.space.model,
                tokensSpent: out.spent,
                budget: deps.embeddings.tokensPerDay,
              },
              'daily embeddings token budget spent: embedding waits',
            );
          }
          refusedDay = day;
        }
      } catch (err: unknown) {
        if (stopping.signal.aborted) return;
        if (failures === 0) {
          log.warn(
            { event: 'embedder.failed', code: 'database', retryInMs: idleMs, err },
            'embedder failed; it tries again',
          );
        }
        failures++;
        holdAll(backoff(failures));
      }
      if (waitMs > 0) await pause(waitMs, stopping.signal);
    }
  };
  const running = Promise.all(Array.from({ length: concurrency }, () => loop()));
  return {
    async stop() {
      stopping.abort();
      await running;
    },
  };
}

function report(deps: EmbedderDeps, out: EmbedOutcome): void {
  if (out.kind === 'idle') return;
  deps.metrics?.embeddingRequest?.(
    out.kind,
    out.kind === 'embedded' ? out.texts : 0,
    out.kind === 'embedded' ? out.tokens : 0,
  );
}

function backoff(failures: number): number {
  return backoffDelayMs(
    failures,
    { maxAttempts: Infinity, baseDelayMs: EMBEDDER_BACKOFF_BASE_MS, maxDelayMs: EMBEDDER_BACKOFF_MAX_MS },
    Math.random,
  );
}

/** How long to wait after a round (-1: the idle wait). */
function nextWait(out: EmbedOutcome, failuresBefore: number): number {
  switch (out.kind) {
    case 'embedded':
    case 'rejected':
    case 'halved':
      return 0;
    case 'idle':
      return -1;
    case 'refused':
      return EMBEDDER_BUDGET_RECHECK_MS;
    case 'rate-limited':
      return out.pauseMs;
    case 'failed':
      // a batch halved after an answer that did not parse goes again at once; a failing provider is given time
      return out.err.code === 'invalid-answer' ? 0 : backoff(failuresBefore + 1);
  }
}

export interface EmbedDrainResult {
  /** texts embedded by this drain */
  embedded: number;
  /** why it stopped: nothing left, the budget, pgvector missing, or the provider failing */
  stopped: 'done' | 'refused' | EmbeddingsStoreState | 'failing';
}

/** Consecutive failed requests after which a drain gives up (the daemons keep trying). */
export const DRAIN_MAX_FAILURES = 5;

/**
 * Embeds every text that lacks a vector now (beside any running embedder), EMBEDDINGS_CONCURRENCY
 * requests in flight like a daemon's embedder, waiting out 429s (every request of the drain
 * together) and backing off from failures, up to DRAIN_MAX_FAILURES in a row; for commands that
 * want what they stored searchable by meaning when they return.
 */
export async function drainEmbeddings(
  deps: EmbedderDeps,
  opts: { signal?: AbortSignal } = {},
): Promise<EmbedDrainResult> {
  const store = await ensureEmbeddingsStore(deps.sql);
  if (store !== 'ready') return { embedded: 0, stopped: store };
  const r = newRound(deps);
  let embedded = 0;
  let failures = 0;
  let stopped: EmbedDrainResult['stopped'] | undefined;
  /** every request of the drain waits for this moment (epoch ms) */
  let pausedUntil = 0;
  // each loop ends when it finds nothing left to claim; one whose texts failed claims them again
  const loop = async (): Promise<void> => {
    while (stopped === undefined && !opts.signal?.aborted) {
      const heldMs = pausedUntil - Date.now();
      if (heldMs > 0) {
        await pause(heldMs, opts.signal);
        continue;
      }
      const out = await embedRound(r);
      report(deps, out);
      if (out.kind === 'idle') return;
      if (out.kind === 'embedded') embedded += out.texts;
      if (out.kind === 'refused') stopped ??= 'refused';
      if (out.kind === 'failed') failures++;
      else if (out.kind !== 'rate-limited' && out.kind !== 'halved') failures = 0;
      if (failures >= DRAIN_MAX_FAILURES) stopped ??= 'failing';
      const waitMs = nextWait(out, failures - 1);
      if (waitMs > 0) pausedUntil = Math.max(pausedUntil, Date.now() + waitMs);
    }
  };
  const loops = await Promise.allSettled(
    Array.from({ length: Math.max(1, deps.embeddings.concurrency) }, () =>
      loop().catch((err: unknown) => {
        // the others stop after their request in flight, whose vectors are stored
        stopped ??= 'failing';
        throw err;
      }),
    ),
  );
  const failed = loops.find((l) => l.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
  return { embedded, stopped: stopped ?? 'done' };
}

/** Sleeps `ms`, or less when the signal aborts (never throws). */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return sleepMs(ms, signal).catch(() => undefined);
}
