/**
 * What `prune` may drop, and when. The retention periods themselves are settings
 * (RAW_RETENTION_DAYS, HISTORY_RETENTION_DAYS in src/config.ts); this is the policy around them.
 *
 * The raw item is the source of truth until the sink has stored it (DESIGN.md): an item is
 * prunable only once it is settled for good, stored (`sunk`) or answered with a permanent error
 * (`failed`). Landed and processing items are not yet stored, retryable ones may be re-submitted,
 * and quarantined ones wait for `replay --quarantined`: all of those keep their payload.
 */
import type { ItemState } from './items.ts';

/**
 * Item states whose raw payload retention drops. `batch_items_prunable_idx` (src/db/schema.ts)
 * lists the same states in its predicate: the two must stay equal, or prune's scan stops using it.
 */
export const PRUNABLE_ITEM_STATES = ['sunk', 'failed'] as const satisfies readonly ItemState[];

/** `credit_snapshots` older than this are thinned, days (the chart's recent week keeps every reading). */
export const CREDIT_SNAPSHOT_THIN_AFTER_DAYS = 7;

/**
 * Rows changed per prune statement, each statement its own transaction, so its row locks (on
 * settled items only, which no pipeline step writes) last that long. Measured: 100 000 items
 * (502 MB of payloads stored, a quarter of them 20 KB transcripts) pruned in 13.8 s, 0.7 s per
 * statement.
 */
export const PRUNE_CHUNK_ROWS = 5_000;

/** The daily job: one run per this period across every daemon, ms. */
export const PRUNE_PERIOD_MS = 24 * 3_600_000;

/** How often each daemon looks whether the daily run is due, ms (the run starts within this of being due). */
export const PRUNE_CHECK_INTERVAL_MS = 3_600_000;

/** Who started a prune run (`prune_runs.trigger`). */
export const PRUNE_TRIGGERS = ['daily', 'cli'] as const;
export type PruneTrigger = (typeof PRUNE_TRIGGERS)[number];

/** The tables prune frees room in, in the order it works on them (`prune_runs.freed` keys). */
export const PRUNED_TABLES = [
  'batch_items',
  'sync_runs',
  'credit_charges',
  'passage_removals',
  'credit_snapshots',
  'events',
] as const;

/** The pruned tables whose rows are deleted whole after HISTORY_RETENTION_DAYS. */
export const HISTORY_TABLES = [
  'sync_runs',
  'credit_charges',
  'passage_removals',
] as const satisfies readonly PrunedTable[];
export type PrunedTable = (typeof PRUNED_TABLES)[number];
