/**
 * What a Postgres error means for the caller, by SQLSTATE, decided here once. Errors come from
 * postgres.js (`PostgresError.code`) directly or wrapped by drizzle (`cause`), so the cause chain
 * is followed.
 */

/** SQLSTATE 25006 read_only_sql_transaction: a write on a standby or under `default_transaction_read_only`. */
export const PG_READ_ONLY_SQL_TRANSACTION = '25006';
/** SQLSTATE 42883 undefined_function and 42P01 undefined_table: a schema older than this build. */
const PG_UNDEFINED_FUNCTION = '42883';
const PG_UNDEFINED_TABLE = '42P01';
/** SQLSTATE 55P03 lock_not_available: `lock_timeout` expired (or NOWAIT found the lock taken). */
export const PG_LOCK_NOT_AVAILABLE = '55P03';

/** The SQLSTATE of `e` or of the first error in its cause chain that has one. */
export function pgErrorCode(e: unknown): string | undefined {
  let cur: unknown = e;
  for (let depth = 0; depth < 5 && cur !== null && typeof cur === 'object'; depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * The database refused a write because it is read-only right now (a standby, a primary being
 * demoted, `default_transaction_read_only`). Transient: nothing is wrong with the work, which is
 * retried unchanged once writes work again, and never counted as a failed attempt.
 */
export function isReadOnlyError(e: unknown): boolean {
  return pgErrorCode(e) === PG_READ_ONLY_SQL_TRANSACTION;
}

/** A `lock_timeout` expired: another transaction held a lock this one needed. */
export function isLockTimeout(e: unknown): boolean {
  return pgErrorCode(e) === PG_LOCK_NOT_AVAILABLE;
}

/** The database lacks a function or table this build uses: its schema is older (not migrated). */
export function isSchemaBehind(e: unknown): boolean {
  const code = pgErrorCode(e);
  return code === PG_UNDEFINED_FUNCTION || code === PG_UNDEFINED_TABLE;
}
