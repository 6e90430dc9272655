/**
 * A batch's progress, the read model that `status`, the admin overview, `backfill` and `replay`
 * show and wait on: the batch row as the last poll left it, and its items counted per state.
 */
import { isTerminalStatus } from '../domain/batches.ts';
import { ITEM_ERROR_STATES, ITEM_STATES, type ItemState } from '../domain/items.ts';
import type { Queryable } from './connection.ts';
import type { Batch } from './schema.ts';

/**
 * The batch as the last poll left it (`upstreamStatus`: the status it last answered, which may
 * be one this interface version does not list; `reason`: why it ended without the upstream
 * saying so, or what the last poll ran into), and its items recorded in `batch_items` per state.
 */
export type BatchProgress = Pick<
  Batch,
  'jobId' | 'sourceId' | 'kind' | 'lang' | 'status' | 'errorCode' | 'upstreamStatus' | 'reason' | 'total' | 'polls' | 'creditsEstimated'
> &
  Record<ItemState, number> & {
    /** items finished upstream (succeeded + failed) as of the last poll */
    finished: number;
    /** ISO 8601 */
    submittedAt: string;
    /** ISO 8601 */
    completedAt: string | null;
    /** failed items by errorCode */
    errors: Record<string, number>;
  };

/** The progress of these batches, in the order they were submitted. */
export async function batchProgress(sql: Queryable, jobIds: readonly string[]): Promise<BatchProgress[]> {
  if (jobIds.length === 0) return [];
  const rows = await sql<
    (Omit<BatchProgress, ItemState | 'submittedAt' | 'completedAt' | 'errors'> & {
      submittedAt: Date;
      completedAt: Date | null;
      states: Partial<Record<ItemState, number>> | null;
      errors: Record<string, number> | null;
    })[]
  >`
    select b.job_id as "jobId", b.source_id as "sourceId", b.kind, b.lang, b.status, b.error_code as "errorCode",
      b.upstream_status as "upstreamStatus", b.reason, b.total,
      coalesce(b.succeeded, 0) + coalesce(b.failed, 0) as finished, b.polls, b.credits_estimated as "creditsEstimated",
      b.submitted_at as "submittedAt", b.completed_at as "completedAt",
      (select jsonb_object_agg(s.state, s.n) from (
        select state, count(*)::int as n from batch_items where job_id = b.job_id group by state) s) as states,
      (select jsonb_object_agg(e.error_code, e.n) from (
        select error_code, count(*)::int as n from batch_items
        where job_id = b.job_id and state = 'failed' and error_code is not null group by error_code) e) as errors
    from batches b
    where b.job_id = any(${[...jobIds]}::text[])
    order by b.submitted_at, b.job_id`;
  return rows.map(({ states, submittedAt, completedAt, errors, ...batch }) => ({
    ...batch,
    submittedAt: submittedAt.toISOString(),
    completedAt: completedAt ? completedAt.toISOString() : null,
    ...(Object.fromEntries(ITEM_STATES.map((s) => [s, states?.[s] ?? 0])) as Record<ItemState, number>),
    errors: errors ?? {},
  }));
}

/** Terminal upstream, and nothing left landed-but-not-sunk. */
export function isSettled(b: BatchProgress): boolean {
  return isTerminalStatus(b.status) && b.landed === 0;
}


/** Items of the batch in one of ITEM_ERROR_STATES. */
export function erroredItems(b: BatchProgress): number {
  return ITEM_ERROR_STATES.reduce((n, s) => n + b[s], 0);
}
