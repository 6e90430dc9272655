/**
 * Re-submitting retryable items by hand (`replay --failed`): which items wait for it, grouped
 * the way they are submitted (batch-records.ts marks them taken up once a batch re-submits them).
 */
import type { Queryable } from './connection.ts';
import type { Batch } from './schema.ts';

/** Retryable items of one source, kind, language and `--text` choice. */
export type RetryableGroup = Pick<Batch, 'sourceId' | 'kind' | 'lang' | 'textOnly'> & {
  videoIds: string[];
  /** the batches the items come from */
  jobIds: string[];
};

/**
 * Retryable items no batch has re-submitted yet (of expired batches only, of batches submitted
 * since `since`), leaving out videos a later batch already took up.
 */
export function retryableGroups(
  sql: Queryable,
  o: { expiredOnly: boolean; since?: Date | undefined },
): Promise<RetryableGroup[]> {
  const since = o.since ?? null;
  return sql<RetryableGroup[]>`
    select b.source_id as "sourceId", b.kind, b.lang, b.text_only as "textOnly",
      array_agg(distinct i.video_id order by i.video_id) as "videoIds",
      array_agg(distinct b.job_id order by b.job_id) as "jobIds"
    from batch_items i join batches b on b.job_id = i.job_id
    where i.state = 'retryable' and i.resubmitted_in is null and b.mode = 'batch'
      and (${!o.expiredOnly} or b.status = 'expired')
      and (${since}::timestamptz is null or b.submitted_at >= ${since}::timestamptz)
      and not exists (
        -- a later batch (a sync, an earlier replay) already took this video up
        select 1 from video_sync s
        where s.video_id = i.video_id and s.kind = b.kind and s.lang = coalesce(b.lang, '')
          and s.last_job_id is distinct from i.job_id )
    group by b.source_id, b.kind, b.lang, b.text_only
    order by b.source_id nulls last, b.kind, b.lang nulls first`;
}
