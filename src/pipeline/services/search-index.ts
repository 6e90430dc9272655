/**
 * The search indexer: cuts the passages (issue #31) of stored transcripts, which are also the
 * search index (each with its tsvector, migrations/0025), after the transaction that stored them,
 * not in it (issue #12). Storing a transcript queues its key (`search_index_queue`,
 * migrations/0015); indexing it (to_tsvector, the GIN index) was ~80% of landing it while it ran
 * in the landing transaction.
 *
 * It runs beside the poll and sink workers (every daemon with the poller or sink role, and
 * backfill and replay while they wait), in transactions of SEARCH_INDEX_CHUNK transcripts;
 * indexers of several processes share the queue (SKIP LOCKED). Backfill and replay drain what
 * they stored before they exit, and `search` drains before it searches, so what a command stored
 * is found when it returns.
 */
import { sleepMs } from '../../api/retry.ts';
import { databaseNow, type Queryable } from '../../db/connection.ts';
import { isReadOnlyError } from '../../db/pg-errors.ts';
import { indexQueuedTranscripts } from '../../db/passages.ts';
import { searchBacklog, searchIndexDueInMs } from '../../db/search.ts';
import type { PassageOptions } from '../../domain/passages.ts';
import type { Logger } from '../../log.ts';
import { withSpan } from '../../tracing.ts';

/**
 * Transcripts one indexing transaction takes: ~90 ms for 150-chunk transcripts on the test
 * machine. A landing transaction that stores a key being indexed waits for that transaction, so
 * it stays short; per transcript, larger transactions were not cheaper (100: 3.5 ms each).
 */
export const SEARCH_INDEX_CHUNK = 25;
/**
 * While items may be landing (a batch in flight, polled by any process), the indexers leave
 * Postgres's CPU to the landings: they build only once the oldest waiting transcript has waited
 * this long, and then at full speed until what waits is younger again. Building windows is
 * Postgres CPU the landing transactions need too: in the benchmark (2 cores), W1's items waited
 * up to 8.6-10.2 s to land with the two processes' indexers each building a fifth of the time
 * while a batch was in flight, 7.8-8.2 s with neither building then. A daemon that always has a
 * batch in flight still makes what it stores searchable within about this long (plus the
 * building). Otherwise they build at full speed. Drains (backfill, replay, search) always run at
 * full speed: someone waits for them.
 */
export const SEARCH_INDEX_DEFER_WHILE_LANDING_MS = 30_000;
/** An indexer that found the queue empty (or failed) looks again after this long. */
export const SEARCH_INDEX_IDLE_MS = 1_000;
/** While a drain waits for keys another indexer is building, it looks again after this long. */
const DRAIN_RECHECK_MS = 100;

export interface SearchIndexDeps {
  sql: Queryable;
  log: Logger;
  /** passage size and overlap (PASSAGE_TOKENS, PASSAGE_OVERLAP_TOKENS: the pipeline settings) */
  passages: PassageOptions;
}

export interface SearchIndexer {
  /** stop after the transaction in flight */
  stop(): Promise<void>;
}

/**
 * Builds queued windows until stopped: at full speed while keys wait (while items may be landing,
 * only once the oldest has waited `deferWhileLandingMs`), and looks again every `idleMs` otherwise.
 */
export function startSearchIndexer(
  deps: SearchIndexDeps,
  opts: { idleMs?: number; deferWhileLandingMs?: number } = {},
): SearchIndexer {
  const idleMs = opts.idleMs ?? SEARCH_INDEX_IDLE_MS;
  const deferMs = opts.deferWhileLandingMs ?? SEARCH_INDEX_DEFER_WHILE_LANDING_MS;
  const { passages } = deps;
  const stopping = new AbortController();
  let failing = false;
  const loop = async (): Promise<void> => {
    while (!stopping.signal.aborted) {
      let waitMs = idleMs;
      try {
        const due = await searchIndexDueInMs(deps.sql, deferMs);
        if (due === 0) {
          // none built: every key queued is in another indexer's hands; look again later
          const built = await withSpan(
            'search_index',
            {},
            async (span) => {
              const r = await indexQueuedTranscripts(deps.sql, SEARCH_INDEX_CHUNK, passages);
              span.setAttribute('videosite.transcripts_indexed', r.transcripts);
              span.setAttribute('videosite.media_indexed', r.media);
              span.setAttribute('videosite.pages_indexed', r.pages);
              span.setAttribute('videosite.passages_cut', r.passagesCut);
              return r.transcripts + r.media + r.pages;
            },
            { root: true },
          );
          if (built > 0) waitMs = 0;
        } else if (due !== null) {
          // deferred: look again when due, or sooner (the landings may end before)
          waitMs = Math.min(due, idleMs);
        }
        if (failing) deps.log.info({ event: 'search_index.resumed' }, 'search indexer working again');
        failing = false;
      } catch (err: unknown) {
        if (stopping.signal.aborted) return;
        // logged once per outage (a read-only standby or an unreachable Postgres lasts a while)
        if (!failing) {
          deps.log.warn(
            { event: 'search_index.failed', readOnly: isReadOnlyError(err), err },
            'search indexer failed; it tries again',
          );
        }
        failing = true;
      }
      if (waitMs > 0) await pause(waitMs, stopping.signal);
    }
  };
  const running = loop();
  return {
    async stop() {
      stopping.abort();
      await running;
    },
  };
}

export interface DrainProgress {
  /** transcripts this drain indexed so far */
  indexed: number;
  /** keys queued before the drain started still waiting (some maybe being built elsewhere) */
  pending: number;
}

/**
 * Indexes every transcript queued before now (beside any other indexer), then returns how many
 * it built itself. Keys queued meanwhile are left to the indexers. `onProgress` is called after
 * every transaction with what is left.
 */
export async function drainSearchIndex(
  deps: Pick<SearchIndexDeps, 'sql' | 'passages'>,
  opts: { signal?: AbortSignal; onProgress?: (p: DrainProgress) => void } = {},
): Promise<number> {
  return withSpan('search_index', {}, async (span) => {
    const n = await drainOnce(deps, opts);
    span.setAttribute('videosite.transcripts_indexed', n);
    return n;
  });
}

async function drainOnce(
  deps: Pick<SearchIndexDeps, 'sql' | 'passages'>,
  opts: { signal?: AbortSignal; onProgress?: (p: DrainProgress) => void },
): Promise<number> {
  const { passages } = deps;
  const before = await databaseNow(deps.sql);
  let indexed = 0;
  for (;;) {
    if (opts.signal?.aborted) return indexed;
    const r = await indexQueuedTranscripts(deps.sql, SEARCH_INDEX_CHUNK, passages);
    const built = r.transcripts + r.media + r.pages;
    indexed += built;
    const { pending } = await searchBacklog(deps.sql, before);
    opts.onProgress?.({ indexed, pending });
    if (pending === 0) return indexed;
    // what is left is being built by another indexer (or was queued since): wait for its commit
    if (built === 0) await pause(DRAIN_RECHECK_MS, opts.signal);
  }
}

/** Sleeps `ms`, or less when the signal aborts (never throws). */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return sleepMs(ms, signal).catch(() => undefined);
}
