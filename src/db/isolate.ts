/**
 * Writing many items where one bad value must not block the rest: each write runs in a
 * savepoint, and when Postgres rejects the data the items are split in halves and written again,
 * down to the single items it rejects. n items with one poison value take about 2·log2(n) extra
 * statements; clean chunks take one savepoint more than before.
 */
import type postgres from 'postgres';

/**
 * SQLSTATE classes that mean "this data", not "this connection": 22 data exception (numeric
 * overflow, a date out of range, bad text), 23 integrity constraint (a check or not-null), 54
 * program limit (a value too large for an index or a row).
 */
const DATA_ERROR_CLASSES = ['22', '23', '54'];

export function isDataError(e: unknown): e is Error & { code: string } {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.length === 5 && DATA_ERROR_CLASSES.includes(code.slice(0, 2));
}

/** A transaction (or a savepoint of one): what the writes here run in. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the driver's own default for custom types
export type Transaction = postgres.TransactionSql<any>;

export interface Rejected<T> {
  item: T;
  /** Postgres's own words */
  message: string;
}

/**
 * `write(sp, items)` in a savepoint of `tx`; on a data error, bisect. Returns the results of the
 * writes that committed to the savepoint and the items Postgres rejected one by one. Any other
 * error (a lost connection, a deadlock) is thrown as is.
 */
export async function writeIsolating<T, R>(
  tx: Transaction,
  items: readonly T[],
  write: (sp: Transaction, items: readonly T[]) => Promise<R>,
): Promise<{ results: R[]; rejected: Rejected<T>[] }> {
  const results: R[] = [];
  const rejected: Rejected<T>[] = [];
  const attempt = async (part: readonly T[]): Promise<void> => {
    if (part.length === 0) return;
    try {
      results.push((await tx.savepoint((sp) => write(sp, part))) as R);
    } catch (e: unknown) {
      if (!isDataError(e)) throw e;
      if (part.length === 1) {
        rejected.push({ item: part[0]!, message: e.message });
        return;
      }
      const mid = Math.ceil(part.length / 2);
      await attempt(part.slice(0, mid));
      await attempt(part.slice(mid));
    }
  };
  await attempt(items);
  return { results, rejected };
}
