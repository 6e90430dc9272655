/**
 * `prune [--dry-run] [--json]`: retention now, as the daemons' daily job does it. Prints per
 * table the rows it freed (with --dry-run: would free) and their stored bytes, and the totals.
 * On a terminal, a progress line on stderr while it runs. Ctrl-C stops it between two statements
 * (what ran stays done and is recorded); a second one kills it.
 */
import type { Command } from 'commander';
import { PRUNED_TABLES, type PrunedTable } from '../domain/retention.ts';
import { prune, type PruneProgress, type PruneReport } from '../pipeline/commands/prune.ts';
import { createContext } from './context.ts';
import { EXIT_NOT_LANDED } from './exit.ts';
import { renderTable, shortTime } from './table.ts';

/** The progress line is redrawn at most this often, ms. */
export const PRUNE_PROGRESS_REDRAW_MS = 200;

const BYTE_UNITS = ['B', 'kB', 'MB', 'GB', 'TB'] as const;

/** `1536` → `1.5 kB` (powers of 1000, as disk sizes are quoted). */
export function formatBytes(n: number): string {
  let v = n;
  let u = 0;
  while (v >= 1000 && u < BYTE_UNITS.length - 1) {
    v /= 1000;
    u++;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(1)} ${BYTE_UNITS[u]}`;
}

/** What each table's row stands for, with the cutoff and the setting behind it. */
function what(r: PruneReport, table: PrunedTable): string {
  const c = r.cutoffs;
  const at = (d: Date) => shortTime(d.toISOString());
  switch (table) {
    case 'batch_items':
      return c.rawBefore === null
        ? 'raw payloads kept (RAW_RETENTION_DAYS=0)'
        : `raw payloads of items stored or failed before ${at(c.rawBefore)} (RAW_RETENTION_DAYS=${r.rawRetentionDays})`;
    case 'sync_runs':
      return c.historyBefore === null
        ? 'kept (HISTORY_RETENTION_DAYS=0)'
        : `runs started before ${at(c.historyBefore)} (HISTORY_RETENTION_DAYS=${r.historyRetentionDays})`;
    case 'credit_charges':
      return c.historyBefore === null
        ? 'kept (HISTORY_RETENTION_DAYS=0)'
        : `billed requests before ${at(c.historyBefore)} (HISTORY_RETENTION_DAYS=${r.historyRetentionDays})`;
    case 'passage_removals':
      return c.historyBefore === null
        ? 'kept (HISTORY_RETENTION_DAYS=0)'
        : `passages removed before ${at(c.historyBefore)} (HISTORY_RETENTION_DAYS=${r.historyRetentionDays})`;
    case 'credit_snapshots':
      return `snapshots before ${at(c.snapshotsBefore)} beyond the first of each hour`;
    case 'events':
      return c.eventsBefore === null
        ? 'kept (EVENTS_RETENTION_DAYS=0)'
        : `change events before ${at(c.eventsBefore)} no webhook endpoint still needs (EVENTS_RETENTION_DAYS=${r.eventsRetentionDays})`;
  }
}

export function renderPruneReport(r: PruneReport): string {
  const run = `(run ${r.runId}, ${(r.durationMs / 1000).toFixed(1)} s)`;
  const head = r.dryRun
    ? `prune --dry-run ${run}: would free, nothing changed`
    : `prune ${run}: ${r.interrupted ? 'stopped before the end; freed so far' : 'freed'}`;
  const body = renderTable(
    ['table', 'rows', 'bytes', 'what'],
    [
      ...PRUNED_TABLES.map((t) => [t, r.freed[t].rows, formatBytes(r.freed[t].bytes), what(r, t)]),
      ['total', r.total.rows, formatBytes(r.total.bytes), ''],
    ],
  );
  const note = r.dryRun
    ? ''
    : 'bytes: the stored size of what went; Postgres reuses the room once (auto)vacuum has passed, files shrink only with VACUUM FULL\n';
  return `${head}\n${body}${note}`;
}

/** A line on stderr redrawn in place (a terminal only: elsewhere the logs tell the progress). */
function progressLine(out: NodeJS.WriteStream): { update(p: PruneProgress): void; clear(): void } {
  if (!out.isTTY) return { update: () => undefined, clear: () => undefined };
  const started = Date.now();
  let last = 0;
  let drawn = false;
  return {
    update(p) {
      const now = Date.now();
      if (now - last < PRUNE_PROGRESS_REDRAW_MS) return;
      last = now;
      drawn = true;
      out.write(
        `\rprune [${Math.round((now - started) / 1000)}s] ${p.table}: ${p.rows} rows, ${formatBytes(p.bytes)}\x1b[K`,
      );
    },
    clear() {
      if (drawn) out.write('\r\x1b[K');
      drawn = false;
    },
  };
}

export function registerPruneCommand(program: Command): void {
  program
    .command('prune')
    .description(
      'drop raw payloads of items stored more than RAW_RETENTION_DAYS ago, sync runs older than HISTORY_RETENTION_DAYS, ' +
        'credit snapshots beyond one an hour after a week, and change events older than EVENTS_RETENTION_DAYS no webhook still needs; prints rows and bytes freed per table',
    )
    .option('--dry-run', 'count what would be freed; change nothing', false)
    .option('--json', 'print the figures as JSON', false)
    .action(async (o: { dryRun: boolean; json: boolean }) => {
      const ctx = createContext();
      const stop = new AbortController();
      const onSigint = () => stop.abort();
      process.once('SIGINT', onSigint);
      const line = progressLine(process.stderr);
      try {
        const r = await prune(
          { sql: ctx.db().sql, log: ctx.log, settings: ctx.config.pipeline },
          { dryRun: o.dryRun, trigger: 'cli', signal: stop.signal, onProgress: (p) => line.update(p) },
        );
        line.clear();
        process.stdout.write(o.json ? `${JSON.stringify(r, null, 2)}\n` : renderPruneReport(r));
        if (r.interrupted) {
          process.stderr.write(
            'error: prune was interrupted before it finished; what is listed was freed (run prune again to go on)\n',
          );
          process.exitCode = EXIT_NOT_LANDED;
        }
      } finally {
        line.clear();
        process.off('SIGINT', onSigint);
        await ctx.close();
      }
    });
}
