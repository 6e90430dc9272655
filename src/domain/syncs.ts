/**
 * Outcomes of a source's sync: what `sync_runs.outcome` records, and what a sync returns to its
 * caller (which also covers the syncs that record no run: a source locked by another process, or
 * paused).
 */

/**
 * `sync_runs.outcome` of a finished run. `refused-credits`: the credit guard refused it before a
 * paid call (the account, or a daily budget: `detail` says which; src/domain/refusals.ts).
 * `held`: a scheduled sync skipped without an API call, an upstream hold applying to the
 * process's key (`detail` names the hold), so a skipped tick leaves a row like any other.
 */
export const SYNC_RUN_OUTCOMES = [
  'submitted',
  'up-to-date',
  'refused-credits',
  'refused-upstream',
  'error',
  'held',
] as const;
export type SyncRunOutcome = (typeof SYNC_RUN_OUTCOMES)[number];

/** What `syncSource` returns; `refused-upstream` and `error` are thrown, not returned. */
export type SyncOutcome = Exclude<SyncRunOutcome, 'refused-upstream' | 'error'> | 'in-flight' | 'paused';
