/**
 * Reads that Postgres itself stops when they run too long (`statement_timeout`, set for one
 * transaction only), for the pages people and monitors refresh: /metrics and the overview. A
 * deadline kept only by the client would leave the slow statement running on a connection of the
 * shared pool, holding it from the pipeline, and the next scrape would start another one.
 */
import type postgres from 'postgres';
import type { Queryable } from './connection.ts';

/** A client that can open a transaction (the pool, not a transaction). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Pool = postgres.Sql<any>;

/** SQLSTATE 57014: the statement was cancelled (by statement_timeout, or a cancel request). */
const QUERY_CANCELED = '57014';

export function isQueryCanceled(e: unknown): boolean {
  return (e as { code?: unknown } | null)?.code === QUERY_CANCELED;
}

/** Postgres's `statement_timeout` setting for `ms` (whole milliseconds, at least 1: 0 would mean none). */
function timeoutSetting(ms: number): string {
  return String(Math.max(1, Math.ceil(ms)));
}

/** `read` in a read-only transaction in which Postgres cancels any statement running longer than `timeoutMs`. */
export function readWithTimeout<T>(pool: Pool, timeoutMs: number, read: (tx: Queryable) => Promise<T>): Promise<T> {
  return pool.begin('read only', async (tx) => {
    await tx`select set_config('statement_timeout', ${timeoutSetting(timeoutMs)}, true)`;
    return read(tx);
  }) as Promise<T>;
}

export interface SectionsRead<R> {
  /** the sections that were read */
  values: Partial<R>;
  /** the sections that failed (a cancelled statement, or any other error), in order */
  failed: { section: keyof R & string; error: unknown }[];
}

/**
 * Each of `readers` in its own savepoint of one read-only transaction (one connection, one
 * timeout setting), so that a section Postgres cancels after `timeoutMs` is rolled back alone and
 * the others are still read. Sections run one after the other, in the order given.
 */
export async function readSections<R extends Record<string, unknown>>(
  pool: Pool,
  timeoutMs: number,
  readers: { [K in keyof R]: (q: Queryable) => Promise<R[K]> },
): Promise<SectionsRead<R>> {
  const values: Partial<R> = {};
  const failed: SectionsRead<R>['failed'] = [];
  await readWithTimeout(pool, timeoutMs, async (tx) => {
    const savepoints = tx as postgres.TransactionSql<Record<string, never>>;
    for (const section of Object.keys(readers) as (keyof R & string)[]) {
      try {
        values[section] = (await savepoints.savepoint((sp) => readers[section](sp))) as R[typeof section];
      } catch (error: unknown) {
        failed.push({ section, error });
      }
    }
  });
  return { values, failed };
}
