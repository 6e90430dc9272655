/**
 * Recording a submitted batch: its `batches` row (with the estimate the credit guard checked) and,
 * for the retryable items it takes up, a pointer to it so that nothing re-submits them again.
 */
import type { BatchKind } from '../domain/batches.ts';
import type { Queryable } from './connection.ts';
import type { NewBatch } from './schema.ts';

/** The batch as submitted: its columns (drizzle's insert type) and when to poll it first. */
export type SubmittedBatchRow = Pick<NewBatch, 'jobId' | 'sourceId' | 'kind' | 'lang' | 'mode' | 'creditsEstimated'> & {
  /** the request as sent (never holds a secret) */
  request: unknown;
  textOnly: boolean;
  replayOf: string | null;
  firstPollDelayMs: number;
};

export async function insertSubmittedBatch(sql: Queryable, b: SubmittedBatchRow): Promise<void> {
  await sql`
    insert into batches (job_id, source_id, kind, lang, mode, status, credits_estimated, request, text_only, replay_of, next_poll_at)
    values (${b.jobId}, ${b.sourceId ?? null}, ${b.kind}, ${b.lang ?? null}, ${b.mode ?? 'batch'}, 'submitted', ${b.creditsEstimated},
      ${sql.json(b.request as never)}, ${b.textOnly}, ${b.replayOf},
      now() + make_interval(secs => ${b.firstPollDelayMs / 1000}))`;
}

/** These videos' retryable items (of `kind`/`lang`) are taken up by batch `jobId`. */
export async function markRetryableTakenUp(
  sql: Queryable,
  kind: BatchKind,
  lang: string | null,
  jobId: string,
  videoIds: readonly string[],
): Promise<void> {
  if (videoIds.length === 0) return;
  await sql`
    update batch_items i set resubmitted_in = ${jobId}, updated_at = now()
    from batches b
    where b.job_id = i.job_id and b.kind = ${kind} and b.lang is not distinct from ${lang}
      and i.state = 'retryable' and i.resubmitted_in is null and i.job_id <> ${jobId}
      and i.video_id = any(${videoIds as string[]}::text[])`;
}
