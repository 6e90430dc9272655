/**
 * Item counts read from the counters the triggers of migrations/0005 and 0006 keep (`item_counts`,
 * `batch_item_counts`), never by counting `batch_items`: at 3 M items the counts by state and by
 * error code took 0.5-1.1 s each and grew with history; these read a few hundred rows at most.
 */
import { ITEM_STATES, type ItemState } from '../domain/items.ts';
import type { Queryable } from './connection.ts';

export interface ItemStateCounts {
  /** every ITEM_STATES state, zeros included */
  byState: Record<ItemState, number>;
  /** retryable items that no batch has re-submitted yet */
  retryablePending: number;
}

/** Items of every batch per state, from the counters. */
export async function itemStateCounts(sql: Queryable): Promise<ItemStateCounts> {
  const rows = await sql<{ state: ItemState; n: number }[]>`
    select state, sum(n)::float8 as n from item_counts group by state`;
  const byState = Object.fromEntries(ITEM_STATES.map((s) => [s, 0])) as Record<ItemState, number>;
  for (const r of rows) byState[r.state] = r.n;
  return { byState, retryablePending: await retryablePending(sql) };
}

/**
 * Retryable items not yet re-submitted: the `pending` rows of the counters (migrations/0006).
 * Counting `batch_items_retryable_idx` instead grew with history, since items whose attempts are
 * used up stay in it for good: 3.0x the time at 10x history in bench:scale; 1.0 ms at 300 000
 * items and 22 ms at 3 M, against 0.2 ms at both for this sum.
 */
async function retryablePending(sql: Queryable): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select coalesce(sum(n), 0)::float8 as n from item_counts where pending`;
  return row?.n ?? 0;
}

export interface ItemErrorCount {
  errorCode: string;
  /** the state the code left its items in */
  state: ItemState;
  items: number;
}

/** Items that carry an errorCode, by code and state, the most frequent first. */
export function itemErrorCodeCounts(sql: Queryable): Promise<ItemErrorCount[]> {
  return sql<ItemErrorCount[]>`
    select error_code as "errorCode", state, sum(n)::float8 as items from item_counts
    where error_code <> '' group by error_code, state having sum(n) <> 0
    order by items desc, error_code, state`;
}
