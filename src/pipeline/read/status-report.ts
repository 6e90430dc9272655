/**
 * What `status` shows that its presenters need without collecting it (issue #34: `status --help`
 * loads only this, not the queries of ./status.ts): how many sources it lists, and the latest
 * prune with its one-line description. ./status.ts re-exports them.
 */

/**
 * Sources `status` lists unless asked for every one (`--all-sources`): at 2 000 sources every
 * row with its counts took 9.5x the time of 200 (bench:scale), and a person reads the first
 * screens, where those needing attention are.
 */
export const STATUS_SOURCES_SHOWN = 50;

/** The latest prune that could free anything (not a dry run). */
export interface PruneStatus {
  id: number;
  /** 'daily' (a daemon's job) or 'cli' */
  trigger: string;
  startedAt: string;
  /** null while it runs (or when its process died before the end) */
  finishedAt: string | null;
  /** per table: rows affected and bytes freed; null until it finishes */
  freed: Record<string, { rows: number; bytes: number }> | null;
  error: string | null;
}

/**
 * One line for a person: what the latest prune freed (or that it runs, or failed), without the
 * time, which each presenter shows its own way. Bytes are formatted by `bytes`.
 */
export function describePrune(p: PruneStatus, bytes: (n: number) => string): string {
  if (p.error !== null) return `${p.trigger} prune failed: ${p.error}`;
  if (p.finishedAt === null || p.freed === null) return `${p.trigger} prune running (or stopped with its process)`;
  const parts = Object.entries(p.freed)
    .filter(([, f]) => f.rows > 0)
    .map(([table, f]) => `${table} ${f.rows} row(s), ${bytes(f.bytes)}`);
  const total = Object.values(p.freed).reduce((n, f) => n + f.bytes, 0);
  return parts.length === 0
    ? `${p.trigger} prune: nothing to free`
    : `${p.trigger} prune freed ${bytes(total)}: ${parts.join('; ')}`;
}
