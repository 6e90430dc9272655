/**
 * How each drill-down page reads Postgres: its sections one after the other in one read-only
 * transaction under a `statement_timeout` (src/db/statement-timeout.ts), each in its own
 * savepoint, so a section Postgres cancels is logged (`admin.section_failed`) and left out while
 * the rest is shown, as on the overview.
 */
import type { Queryable } from '../db/connection.ts';
import { isQueryCanceled, readSections, type Pool } from '../db/statement-timeout.ts';
import { silentLogger, type Logger } from '../log.ts';

/** Longest one statement of a page may run before Postgres cancels it (its section is left out), ms. */
export const PAGE_STATEMENT_TIMEOUT_MS = 2_000;

export interface PageReadOptions {
  /** per statement, ms; default PAGE_STATEMENT_TIMEOUT_MS */
  timeoutMs?: number;
  /** where a section that could not be read is logged; default: nowhere */
  log?: Logger;
  /** the fingerprint of the configured API key: its holds are the banner, another key's a dim line */
  keyFingerprint?: string | undefined;
}

/** The sections read, and the names of those left out. */
export interface PageSections<R> {
  values: Partial<R>;
  unavailable: (keyof R & string)[];
}

export async function readPageSections<R extends Record<string, unknown>>(
  pool: Pool,
  page: string,
  opts: PageReadOptions,
  readers: { [K in keyof R]: (q: Queryable) => Promise<R[K]> },
): Promise<PageSections<R>> {
  const { values, failed } = await readSections<R>(pool, opts.timeoutMs ?? PAGE_STATEMENT_TIMEOUT_MS, readers);
  const log = opts.log ?? silentLogger();
  for (const { section, error } of failed) {
    log.warn(
      {
        event: 'admin.section_failed',
        page,
        section,
        cancelled: isQueryCanceled(error),
        err: { message: error instanceof Error ? error.message : String(error) },
      },
      'admin page section left out',
    );
  }
  return { values, unavailable: failed.map((f) => f.section) };
}
