/**
 * Live progress of a backfill, on stderr. On a terminal: a block with one progress bar per batch,
 * redrawn in place with ANSI cursor movement. Anywhere else (a log file, CI, a pipe): one plain
 * line per batch whose progress changed, so the log reads as a history. No dependency.
 *
 * "Done" counts items that reached their end: stored, or ended with an error (failed,
 * retryable, quarantined). Items landed but not yet stored are still in progress.
 */
import { erroredItems, isSettled, type BatchProgress } from '../db/batch-progress.ts';
import type { PassageOptions } from '../domain/passages.ts';
import type { Queryable } from '../db/connection.ts';
import { isReadOnlyError, isSchemaBehind } from '../db/pg-errors.ts';
import { drainSearchIndex } from '../pipeline/services/search-index.ts';
import { terminalSafe } from '../terminal-text.ts';

/** What the view writes to: process.stderr, or anything shaped like it. */
export interface ProgressOutput {
  write(chunk: string): unknown;
  isTTY?: boolean;
  /** terminal width in characters (lines are cut to fit, or the redraw would be off) */
  columns?: number;
  /** terminal height in lines (the block never grows beyond it) */
  rows?: number;
}

export interface ProgressViewOptions {
  /** default: out.isTTY */
  tty?: boolean;
  /** when the backfill started (for the elapsed time); default: now */
  startedAtMs?: number;
  now?: () => number;
}

export interface ProgressView {
  /** the batches as they are now (call it on every change; a terminal block ends with a newline, so output can follow at once) */
  update(batches: readonly BatchProgress[]): void;
}

/** Characters of a progress bar. */
export const PROGRESS_BAR_WIDTH = 24;
/** Width assumed when the terminal does not say. */
const DEFAULT_COLUMNS = 100;
const DEFAULT_ROWS = 24;

const CURSOR_UP = (n: number) => `\x1b[${n}A`;
const CLEAR_LINE_END = '\x1b[K';
const CLEAR_BELOW = '\x1b[J';

/** Items that reached their end: stored, or ended with an error. */
export function doneOf(b: BatchProgress): number {
  return b.sunk + erroredItems(b);
}

/** `[████▒▒░░░░]`: stored, ended with an error, not done yet. */
export function progressBar(b: BatchProgress, width = PROGRESS_BAR_WIDTH): string {
  if (b.total === null || b.total <= 0) return `[${'░'.repeat(width)}]`;
  const cells = (n: number) => Math.round((Math.min(n, b.total!) / b.total!) * width);
  const errors = cells(erroredItems(b));
  const done = Math.max(errors, cells(doneOf(b)));
  return `[${'█'.repeat(done - errors)}${'▒'.repeat(errors)}${'░'.repeat(width - done)}]`;
}

function statusText(b: BatchProgress): string {
  if (b.total === null) return `${b.status}, waiting for the first poll`;
  return b.status + (b.errorCode ? ` (${b.errorCode})` : '') + (b.landed > 0 ? `, ${b.landed} storing` : '');
}

function kindText(b: BatchProgress): string {
  return b.kind + (b.lang ? ` ${b.lang}` : '');
}

function counts(b: BatchProgress): string {
  const errors = erroredItems(b);
  return `${doneOf(b)}/${b.total ?? '?'} done${errors > 0 ? `, ${errors} error${errors === 1 ? '' : 's'}` : ''}`;
}

/** One line of the terminal block (job IDs and error codes come from the upstream). */
export function batchLine(b: BatchProgress): string {
  return terminalSafe(
    `  ${kindText(b).padEnd(13)} source ${String(b.sourceId ?? '-').padEnd(4)} ${progressBar(b)} ${counts(b).padEnd(22)} ${statusText(b)}  ${b.jobId}`,
  );
}

/** The plain line written when a batch changed (not a terminal). */
export function changeLine(b: BatchProgress, elapsedS: number): string {
  return terminalSafe(
    `backfill [${elapsedS}s] batch ${b.jobId} (${kindText(b)}, source ${b.sourceId ?? '-'}): ${counts(b)}; ${statusText(b)}`,
  );
}

export function summaryLine(batches: readonly BatchProgress[], elapsedS: number): string {
  const settled = batches.filter(isSettled).length;
  const stored = batches.reduce((n, b) => n + b.sunk, 0);
  const errors = batches.reduce((n, b) => n + erroredItems(b), 0);
  const total = batches.reduce((n, b) => n + (b.total ?? 0), 0);
  return `backfill [${elapsedS}s] ${settled}/${batches.length} batches done · ${stored}${total ? `/${total}` : ''} items stored · ${errors} error${errors === 1 ? '' : 's'}`;
}

function fit(line: string, columns: number): string {
  // one character short of the edge: a full line would wrap on some terminals and break the redraw
  return line.length < columns ? line : `${line.slice(0, Math.max(0, columns - 2))}…`;
}

export function createProgressView(out: ProgressOutput, opts: ProgressViewOptions = {}): ProgressView {
  const tty = opts.tty ?? out.isTTY === true;
  const now = opts.now ?? Date.now;
  const startedAt = opts.startedAtMs ?? now();
  const elapsed = () => Math.round((now() - startedAt) / 1000);
  let drawn = 0;
  const lastKey = new Map<string, string>();

  const draw = (batches: readonly BatchProgress[]) => {
    const columns = out.columns ?? DEFAULT_COLUMNS;
    const maxLines = Math.max(3, (out.rows ?? DEFAULT_ROWS) - 2);
    let shown: readonly BatchProgress[] = batches;
    let more = '';
    if (batches.length + 1 > maxLines) {
      // the unfinished ones matter most; the rest is summed up in one line
      const open = batches.filter((b) => !isSettled(b));
      const room = maxLines - 2;
      shown = [...open, ...batches.filter(isSettled)].slice(0, room);
      const hidden = batches.filter((b) => !shown.includes(b));
      const hiddenOpen = hidden.filter((b) => !isSettled(b)).length;
      more = `  … ${hidden.length} more batches (${hidden.length - hiddenOpen} done, ${hiddenOpen} in progress)`;
    }
    const lines = [summaryLine(batches, elapsed()), ...shown.map(batchLine), ...(more ? [more] : [])];
    let chunk = drawn > 0 ? `${CURSOR_UP(drawn)}\r` : '';
    for (const l of lines) chunk += `${fit(l, columns)}${CLEAR_LINE_END}\n`;
    out.write(`${chunk}${CLEAR_BELOW}`);
    drawn = lines.length;
  };

  const log = (batches: readonly BatchProgress[]) => {
    let chunk = '';
    for (const b of batches) {
      const key = `${b.status}|${b.errorCode}|${b.total}|${doneOf(b)}|${erroredItems(b)}|${b.landed}`;
      if (lastKey.get(b.jobId) === key) continue;
      lastKey.set(b.jobId, key);
      chunk += `${changeLine(b, elapsed())}\n`;
    }
    if (chunk) out.write(chunk);
  };

  return {
    update(batches) {
      if (batches.length === 0) return;
      if (tty) draw(batches);
      else log(batches);
    },
  };
}

/** While a drain of the search index has transcripts left, a line on stderr this often at most. */
const SEARCH_DRAIN_LINE_MS = 2_000;

/**
 * Indexes (cuts the passages of) every transcript stored before now (src/pipeline/services/search-index.ts),
 * so that what a command stored is found by `search` when it returns: a line on `out` while
 * transcripts are left (every SEARCH_DRAIN_LINE_MS), one at the end if it built any. A database
 * that cannot take writes (a standby) or does not have the queue yet (not migrated) leaves the
 * index as it is, said on `out`; other errors propagate.
 */
export async function drainSearchIndexShowingProgress(
  index: { sql: Queryable; passages: PassageOptions },
  out: ProgressOutput,
  signal?: AbortSignal,
): Promise<number> {
  const startedAt = Date.now();
  let lineAt = startedAt;
  try {
    const indexed = await drainSearchIndex(index, {
      signal,
      onProgress: ({ indexed, pending }) => {
        if (pending === 0 || Date.now() - lineAt < SEARCH_DRAIN_LINE_MS) return;
        lineAt = Date.now();
        out.write(`search index: ${indexed} transcript(s) indexed, ${pending} left\n`);
      },
    });
    if (indexed > 0)
      out.write(
        `search index: ${indexed} transcript(s) indexed in ${((Date.now() - startedAt) / 1000).toFixed(1)} s\n`,
      );
    return indexed;
  } catch (e: unknown) {
    if (!isReadOnlyError(e) && !isSchemaBehind(e)) throw e;
    out.write(
      `search index: not brought up to date (${isReadOnlyError(e) ? 'the database is read-only' : 'the database is not migrated: run videosite-ingest migrate'})\n`,
    );
    return 0;
  }
}
