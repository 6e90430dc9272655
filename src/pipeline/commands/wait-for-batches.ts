/**
 * Waiting for batches to end (backfill, replay): their progress is read from Postgres every
 * check interval until an exit rule says enough. The waiting reads Postgres only; poller and
 * sink workers (in this process or daemons elsewhere) do the work.
 */
import { batchProgress, isSettled, type BatchProgress } from '../../db/batch-progress.ts';
import type { Queryable } from '../../db/connection.ts';

/** How often the progress is read while waiting, ms. */
export const WAIT_CHECK_INTERVAL_MS = 1_000;

export interface WaitOptions {
  /** when to stop waiting; default: every batch settled (isSettled) */
  done?: (batches: readonly BatchProgress[]) => boolean;
  /** give up after this long, ms; default: no limit */
  timeoutMs?: number | undefined;
  /** stops the wait (after the current read) */
  signal?: AbortSignal | undefined;
  /** called with the first reading and whenever the progress changes */
  onProgress?: ((batches: BatchProgress[]) => void) | undefined;
  /** default WAIT_CHECK_INTERVAL_MS */
  checkIntervalMs?: number | undefined;
}

export interface WaitResult {
  /** the last reading */
  batches: BatchProgress[];
  /** stopped by `timeoutMs` before `done` said so */
  timedOut: boolean;
}

const everySettled = (batches: readonly BatchProgress[]): boolean => batches.every(isSettled);

/**
 * Read the batches' progress until `done`, the timeout or the signal; always reads once. A batch
 * once settled is not read again (nothing of it changes the wait): a backfill of thousands of
 * batches reads fewer as they end, not all of them every second.
 */
export async function waitForBatches(
  sql: Queryable,
  jobIds: readonly string[],
  opts: WaitOptions = {},
): Promise<WaitResult> {
  const done = opts.done ?? everySettled;
  const deadline = opts.timeoutMs !== undefined ? Date.now() + opts.timeoutMs : Infinity;
  let last = '';
  /** the latest reading of each batch recorded so far */
  const latest = new Map<string, BatchProgress>();
  for (;;) {
    const toRead = jobIds.filter((id) => {
      const b = latest.get(id);
      return b === undefined || !isSettled(b);
    });
    for (const b of await batchProgress(sql, toRead)) latest.set(b.jobId, b);
    // in the order they were submitted, as batchProgress gives them
    const batches = [...latest.values()].sort(
      (a, b) => a.submittedAt.localeCompare(b.submittedAt) || a.jobId.localeCompare(b.jobId),
    );
    if (opts.onProgress) {
      const key = JSON.stringify(batches);
      if (key !== last) {
        last = key;
        opts.onProgress(batches);
      }
    }
    if (done(batches)) return { batches, timedOut: false };
    if (Date.now() >= deadline) return { batches, timedOut: true };
    if (opts.signal?.aborted) return { batches, timedOut: false };
    await new Promise((r) => setTimeout(r, opts.checkIntervalMs ?? WAIT_CHECK_INTERVAL_MS));
  }
}
