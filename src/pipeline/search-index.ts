/**
 * The search indexer: builds the search windows of stored transcripts after the transaction that
 * stored them, not in it (issue #12). Storing a 150-chunk transcript queues its key
 * (`search_index_queue`, migrations/0015); building its windows (to_tsvector, the GIN index) is
 * ~3.5 ms of Postgres CPU, and was ~80% of landing it while it ran in the landing transaction.
 *
 * It runs beside the poll and sink workers (every daemon with the poller or sink role, and
 * backfill and replay while they wait), in transactions of SEARCH_INDEX_CHUNK transcripts;
 * indexers of several processes share the queue (SKIP LOCKED). Backfill and replay drain what
 * they stored before they exit, and `search` drains before it searches, so what a command stored
 * is found when it returns.
 */
import { sleepMs } from '../api/retry.ts';
import { databaseNow, type Queryable } from '../db/connection.ts';
import { isReadOnlyError } from '../db/pg-errors.ts';
import { anyBatchInFlight } from '../db/batches.ts';
import { indexQueuedTranscripts, searchBacklog } from '../db/search.ts';
import type { Logger } from '../log.ts';

/**
 * Transcripts one indexing transaction takes: ~90 ms for 150-chunk transcripts on the test
 * machine. A landing transaction that stores a key being indexed waits for that transaction, so
 * it stays short; per transcript, larger transactions were not cheaper (100: 3.5 ms each).
 */
export const SEARCH_INDEX_CHUNK = 25;
/**
 * While items may be landing (a batch in flight, polled by any process), an indexer builds for
 * at most this share of the time: after a transaction of t ms it pauses 4t. Building windows is Postgres CPU the landing transactions need too: in the
 * benchmark (2 cores), with two indexers at half time beside the landings, W1's and W2's items
 * waited up to 12.5 and 10.9 s to land; at a fifth of the time while a batch is in flight,
 * 10.7-10.9 and 8.2-8.8 s (a tenth: 11.5 s for W1, within the noise between runs). Otherwise it
 * builds at full speed, and the index catches up in the gaps. Drains (backfill, replay, search)
 * always run at full speed: someone waits for them.
 */
export const SEARCH_INDEX_DUTY_WHILE_LANDING = 0.2;
/** An indexer that found the queue empty (or failed) looks again after this long. */
export const SEARCH_INDEX_IDLE_MS = 1_000;
/** While a drain waits for keys another indexer is building, it looks again after this long. */
const DRAIN_RECHECK_MS = 100;

export interface SearchIndexDeps {
  sql: Queryable;
  log: Logger;
}

export interface SearchIndexer {
  /** stop after the transaction in flight */
  stop(): Promise<void>;
}

/**
 * Builds queued windows until stopped: while keys wait, continuously (SEARCH_INDEX_DUTY_WHILE_LANDING
 * of the time while items may be landing), and every SEARCH_INDEX_IDLE_MS otherwise.
 */
export function startSearchIndexer(deps: SearchIndexDeps, opts: { idleMs?: number } = {}): SearchIndexer {
  const idleMs = opts.idleMs ?? SEARCH_INDEX_IDLE_MS;
  const stopping = new AbortController();
  let failing = false;
  const loop = async (): Promise<void> => {
    while (!stopping.signal.aborted) {
      let built = 0;
      const startedAt = performance.now();
      try {
        built = await indexQueuedTranscripts(deps.sql, SEARCH_INDEX_CHUNK);
        if (failing) deps.log.info({ event: 'search_index.resumed' }, 'search indexer working again');
        failing = false;
      } catch (err: unknown) {
        if (stopping.signal.aborted) return;
        // logged once per outage (a read-only standby or an unreachable Postgres lasts a while)
        if (!failing) {
          deps.log.warn({ event: 'search_index.failed', readOnly: isReadOnlyError(err), err }, 'search indexer failed; it tries again');
        }
        failing = true;
      }
      const tookMs = performance.now() - startedAt;
      // a poll runs only for a batch in flight, in whichever process
      const landing = built > 0 && (await anyBatchInFlight(deps.sql).catch(() => false));
      const duty = landing ? SEARCH_INDEX_DUTY_WHILE_LANDING : 1;
      await pause(built === 0 ? idleMs : (tookMs * (1 - duty)) / duty, stopping.signal);
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
  deps: Pick<SearchIndexDeps, 'sql'>,
  opts: { signal?: AbortSignal; onProgress?: (p: DrainProgress) => void } = {},
): Promise<number> {
  const before = await databaseNow(deps.sql);
  let indexed = 0;
  for (;;) {
    if (opts.signal?.aborted) return indexed;
    const built = await indexQueuedTranscripts(deps.sql, SEARCH_INDEX_CHUNK);
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
