/**
 * Quarantined `batch_items`: counted by reason (status, /metrics) and re-read for
 * `replay --quarantined`, which gives each one the outcome today's code sees in its raw copy.
 */
import { recheckAt } from '../domain/attempts.ts';
import { QUARANTINE_REASONS, type ItemState } from '../domain/items.ts';
import type { Queryable } from './connection.ts';
import type { Batch, BatchItemRecord } from './schema.ts';
import { storableText } from './storable.ts';

/** The count label of a quarantined row whose `reason_code` is null (quarantined before codes existed). */
export const UNKNOWN_QUARANTINE_REASON = 'unknown';

/** The labels quarantined items are counted under: every QUARANTINE_REASONS code, then 'unknown'. */
export const QUARANTINE_COUNT_LABELS: readonly string[] = [...QUARANTINE_REASONS, UNKNOWN_QUARANTINE_REASON];

/**
 * Quarantined items per reason_code (none counted as 'unknown'); every label present, zeros
 * included. Read from the counters the triggers of migrations/0005 keep (`item_counts`), not by
 * counting `batch_items`.
 */
export async function quarantineCounts(sql: Queryable): Promise<Record<string, number>> {
  const rows = await sql<{ reason: string; n: number }[]>`
    select reason_code as reason, sum(n)::float8 as n from item_counts
    where state = 'quarantined' group by reason_code`;
  const counts: Record<string, number> = Object.fromEntries(QUARANTINE_COUNT_LABELS.map((l) => [l, 0]));
  // a code a newer version wrote is counted under its own name, not dropped
  for (const r of rows) {
    const label = r.reason === '' ? UNKNOWN_QUARANTINE_REASON : r.reason;
    counts[label] = (counts[label] ?? 0) + r.n;
  }
  return counts;
}

export interface QuarantineFilter {
  /** only items of batches submitted at or after */
  since?: Date | undefined;
  /** only items of this batch */
  jobId?: string | undefined;
}

export type QuarantinedBatch = Pick<Batch, 'jobId' | 'kind' | 'lang'> & Partial<Pick<Batch, 'mode'>>;

/** Batches holding quarantined items (matching `filter`), oldest first. */
export function batchesWithQuarantined(sql: Queryable, filter: QuarantineFilter): Promise<QuarantinedBatch[]> {
  const since = filter.since ?? null;
  const jobId = filter.jobId ?? null;
  return sql<QuarantinedBatch[]>`
    select b.job_id as "jobId", b.kind, b.lang, b.mode
    from batches b
    where (${jobId}::text is null or b.job_id = ${jobId}::text)
      and (${since}::timestamptz is null or b.submitted_at >= ${since}::timestamptz)
      and exists (select 1 from batch_items i where i.job_id = b.job_id and i.state = 'quarantined')
    order by b.submitted_at, b.job_id`;
}

/**
 * `payloadRaw`: the received text when jsonb could not hold it (or the first bytes of a too-large
 * item); `reasonCode`: as stored (a code a newer version wrote included), null for rows
 * quarantined before reason codes existed.
 */
export type QuarantinedItem = Pick<BatchItemRecord, 'videoId' | 'errorCode' | 'payload' | 'payloadRaw' | 'reason'> & {
  reasonCode: string | null;
};

/**
 * Up to `limit` quarantined items of a batch after `afterVideoId`, by videoId. With `lock` (in a
 * transaction) the rows are locked and rows another process holds are skipped.
 */
export async function quarantinedItems(
  sql: Queryable,
  jobId: string,
  limit: number,
  opts: { afterVideoId?: string | undefined; lock?: boolean } = {},
): Promise<QuarantinedItem[]> {
  const after = opts.afterVideoId ?? null;
  return sql<QuarantinedItem[]>`
    select video_id as "videoId", error_code as "errorCode", payload, payload_raw as "payloadRaw",
      reason, reason_code as "reasonCode"
    from batch_items
    where job_id = ${jobId} and state = 'quarantined' and (${after}::text is null or video_id > ${after}::text)
    order by video_id
    limit ${limit}
    ${opts.lock ? sql`for update skip locked` : sql``}`;
}

/** The new outcome of a quarantined item, read again from its raw copy. */
export interface Requalified {
  videoId: string;
  state: ItemState;
  errorCode: string | null;
  /** null unless still quarantined */
  reason: string | null;
  reasonCode: string | null;
}

/**
 * Quarantined items take their new outcome: `landed` (ready for the sink) or `failed` /
 * `retryable` with reason and reason_code cleared, or still `quarantined` with the new reason.
 * Only rows still quarantined change. The video's `video_sync` row follows when this batch is
 * still its latest word on the video. Returns the videoIds changed.
 */
export async function requalifyQuarantined(
  sql: Queryable,
  batch: QuarantinedBatch,
  items: readonly Requalified[],
  /** when a `transcript-unavailable` video is re-checked, in ms from now */
  recheckMs: number,
): Promise<string[]> {
  if (items.length === 0) return [];
  const json = JSON.stringify(
    items.map((i) => ({
      video_id: i.videoId,
      state: i.state,
      error_code: i.errorCode,
      reason: i.reason === null ? null : storableText(i.reason),
      reason_code: i.reasonCode,
    })),
  );
  const rows = await sql<{ video_id: string; state: ItemState; error_code: string | null }[]>`
    update batch_items as b set
      state = r.state, error_code = r.error_code, reason = r.reason, reason_code = r.reason_code,
      landed_at = case when r.state = 'landed' then coalesce(b.landed_at, now()) else b.landed_at end,
      updated_at = now()
    from jsonb_to_recordset(${json}::text::jsonb) as r(video_id text, state text, error_code text, reason text, reason_code text)
    where b.job_id = ${batch.jobId} and b.video_id = r.video_id and b.state = 'quarantined'
      and (b.state, b.error_code, b.reason, b.reason_code) is distinct from (r.state, r.error_code, r.reason, r.reason_code)
    returning b.video_id, b.state, b.error_code`;
  const now = new Date();
  const moved = rows
    .filter((r) => r.state !== 'quarantined')
    .map((r) => ({ ...r, next_check_at: recheckAt(r.error_code, now, recheckMs)?.toISOString() ?? null }));
  if (moved.length > 0) {
    await sql`
      update video_sync s set last_state = r.state, last_error_code = r.error_code, next_check_at = r.next_check_at, updated_at = now()
      from jsonb_to_recordset(${JSON.stringify(moved)}::text::jsonb) as r(video_id text, state text, error_code text, next_check_at timestamptz)
      where s.video_id = r.video_id and s.kind = ${batch.kind} and s.lang = ${batch.lang ?? ''}
        and s.last_job_id = ${batch.jobId} and s.last_state = 'quarantined'`;
  }
  return rows.map((r) => r.video_id);
}

/**
 * After the sink ran over re-landed items, the state of each (the sink itself sets aside, with
 * reason code and `video_sync`, what Postgres still cannot store).
 */
export async function settleRequalified(
  sql: Queryable,
  batch: QuarantinedBatch,
  videoIds: readonly string[],
): Promise<{ videoId: string; state: ItemState; reasonCode: string | null }[]> {
  if (videoIds.length === 0) return [];
  const ids = videoIds as string[];
  return sql<{ videoId: string; state: ItemState; reasonCode: string | null }[]>`
    select video_id as "videoId", state, reason_code as "reasonCode"
    from batch_items where job_id = ${batch.jobId} and video_id = any(${ids}::text[])`;
}
