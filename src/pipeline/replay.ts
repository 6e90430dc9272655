/**
 * Replay, the admin's repair tool.
 *
 * - `resinkBatch`: re-run the database writes of one batch from its landed raw items. No API
 *   call, no credit: the raw copy in `batch_items` is the source of truth.
 * - `planResubmission` / `resubmit`: re-submit retryable items (failed with a retryable code,
 *   unfinished at expiry, results gone) as new batches, each item once. This costs credits, so the
 *   plan is shown first and the caller asks for consent.
 */
import type { BatchKind } from '../db/schema.ts';
import { lostSubmissions, markSubmission, type SubmissionRow } from '../db/submissions.ts';
import type { PipelineDeps } from './deps.ts';
import { takeCreditSnapshot, submitBatch, CreditsRefusedError, syncSource, type SyncResult } from './scheduler.ts';
import { sinkBatch, type SinkResult } from './sink.ts';

export async function resinkBatch(
  deps: Pick<PipelineDeps, 'sql' | 'log' | 'settings'>,
  jobId: string,
): Promise<SinkResult & { found: boolean; items: number }> {
  const [batch] = await deps.sql<{ job_id: string }[]>`select job_id from batches where job_id = ${jobId}`;
  if (!batch) return { jobId, found: false, items: 0, sunk: 0, quarantined: 0, inserted: 0, updated: 0, unchanged: 0 };
  const reopened = await deps.sql`
    update batch_items set state = 'landed', updated_at = now()
    where job_id = ${jobId} and state = 'sunk'
    returning 1`;
  const r = await sinkBatch(deps, jobId);
  return { ...r, found: true, items: reopened.length };
}

export interface ResubmitGroup {
  sourceId: number | null;
  kind: BatchKind;
  lang: string | null;
  textOnly: boolean;
  videoIds: string[];
  /** the batches the items come from */
  fromJobIds: string[];
  /** 1 + videos per batch of at most batchSize */
  credits: number;
  /** a batch of the same source, kind and language is still in flight: wait for it */
  blockedBy: string | null;
}

export interface PlanOptions {
  /** only items of expired batches */
  expiredOnly: boolean;
  /** only batches submitted at or after */
  since?: Date | undefined;
}

export async function planResubmission(deps: Pick<PipelineDeps, 'sql' | 'settings'>, o: PlanOptions): Promise<ResubmitGroup[]> {
  const { sql, settings } = deps;
  const rows = await sql<
    { source_id: number | null; kind: BatchKind; lang: string | null; text_only: boolean | null; video_ids: string[]; job_ids: string[] }[]
  >`
    select b.source_id, b.kind, b.lang, b.text_only,
      array_agg(distinct i.video_id order by i.video_id) as video_ids,
      array_agg(distinct b.job_id order by b.job_id) as job_ids
    from batch_items i join batches b on b.job_id = i.job_id
    where i.state = 'retryable' and i.resubmitted_in is null
      and (${!o.expiredOnly} or b.status = 'expired')
      and (${o.since ?? null}::timestamptz is null or b.submitted_at >= ${o.since ?? null}::timestamptz)
      and not exists (
        -- a later batch (a sync, an earlier replay) already took this video up
        select 1 from video_sync s
        where s.video_id = i.video_id and s.kind = b.kind and s.lang = coalesce(b.lang, '')
          and s.last_job_id is distinct from i.job_id )
    group by b.source_id, b.kind, b.lang, b.text_only
    order by b.source_id nulls last, b.kind, b.lang nulls first`;
  const groups: ResubmitGroup[] = [];
  for (const r of rows) {
    const [blocking] = await sql<{ job_id: string }[]>`
      select job_id from batches
      where source_id is not distinct from ${r.source_id} and kind = ${r.kind} and lang is not distinct from ${r.lang}
        and status in ('submitted', 'queued', 'active')
      limit 1`;
    const chunks = Math.ceil(r.video_ids.length / settings.batchSize);
    groups.push({
      sourceId: r.source_id,
      kind: r.kind,
      lang: r.lang,
      textOnly: r.text_only ?? false,
      videoIds: r.video_ids,
      fromJobIds: r.job_ids,
      credits: chunks + r.video_ids.length,
      blockedBy: blocking?.job_id ?? null,
    });
  }
  return groups;
}

/**
 * Submit the groups not blocked by an in-flight batch, after a credit check. `submitBatch` marks
 * each item with the batch that re-submits it, so it is never re-submitted twice. Only the first chunk of a
 * group goes now when the group exceeds one batch (one in-flight batch per source, kind, lang).
 */
export async function resubmit(deps: PipelineDeps, groups: ResubmitGroup[]): Promise<{ jobIds: string[]; videos: number }> {
  const ready = groups.filter((g) => g.blockedBy === null);
  const chunks = ready.map((g) => ({ ...g, videoIds: g.videoIds.slice(0, deps.settings.batchSize) }));
  const needed = chunks.reduce((n, g) => n + 1 + g.videoIds.length, 0);
  const me = await takeCreditSnapshot(deps, null, 'before-replay');
  const available = me.maxCredits - me.usedCredits - deps.settings.creditReserve;
  if (needed > available) throw new CreditsRefusedError(needed, Math.max(0, available), deps.settings.creditReserve);

  const jobIds: string[] = [];
  let videos = 0;
  for (const g of chunks) {
    const request =
      g.kind === 'video'
        ? { videoIds: g.videoIds }
        : { videoIds: g.videoIds, ...(g.lang !== null ? { lang: g.lang } : {}), ...(g.textOnly ? { text: true } : {}) };
    const jobId = await submitBatch(deps, {
      sourceId: g.sourceId,
      kind: g.kind,
      lang: g.lang,
      request,
      credits: 1 + g.videoIds.length,
      textOnly: g.textOnly,
      replayOf: g.fromJobIds[0] ?? null,
    });
    jobIds.push(jobId);
    videos += g.videoIds.length;
  }
  return { jobIds, videos };
}

/** Batch POSTs whose answer was lost after the account was charged (see batch_submissions). */
export function planLostResubmission(deps: Pick<PipelineDeps, 'sql'>): Promise<SubmissionRow[]> {
  return lostSubmissions(deps.sql);
}

/**
 * A person agreed to pay again for batches whose answer was lost: release them (their sources'
 * kinds and languages may be submitted again) and sync those sources now. Returns the syncs.
 */
export async function releaseLost(deps: PipelineDeps, lost: SubmissionRow[]): Promise<SyncResult[]> {
  for (const l of lost) {
    await markSubmission(deps.sql, l.id, 'released', { detail: `${l.detail ?? ''} | released by replay --lost at ${new Date().toISOString()}` });
  }
  const sources = [...new Set(lost.map((l) => l.sourceId).filter((id): id is number => id !== null))];
  const syncs: SyncResult[] = [];
  for (const id of sources) syncs.push(await syncSource(deps, id, { trigger: 'manual' }));
  return syncs;
}
