/**
 * Outcomes of a source's sync: what `sync_runs.outcome` records, and what a sync returns to its
 * caller (which also covers the syncs that record no run: a source locked by another process, or
 * paused, or held by an upstream refusal).
 */

/**
 * `sync_runs.outcome` of a finished run. `refused-credits`: the credit guard refused it before a
 * paid call (the account, or a daily budget: `detail` says which; src/domain/refusals.ts).
 */
export const SYNC_RUN_OUTCOMES = ['submitted', 'up-to-date', 'refused-credits', 'refused-upstream', 'error'] as const;
export type SyncRunOutcome = (typeof SYNC_RUN_OUTCOMES)[number];

/** What `syncSource` returns; `refused-upstream` and `error` are thrown, not returned. */
export type SyncOutcome = Exclude<SyncRunOutcome, 'refused-upstream' | 'error'> | 'in-flight' | 'paused';
