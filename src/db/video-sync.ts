/**
 * `video_sync`: per video, kind and language (lang '' for metadata), the claim of its latest
 * submission and the outcome of its latest item. The scheduler decides what is due from these
 * facts (src/domain/attempts.ts); this file only reads and writes them.
 */
import { recheckAt, type VideoSyncFacts } from '../domain/attempts.ts';
import { BATCH_IN_FLIGHT_STATUSES, BATCH_TERMINAL_STATUSES, type BatchKind } from '../domain/batches.ts';
import { GONE_ITEM_CODES, type ItemState } from '../domain/items.ts';
import type { Queryable } from './connection.ts';
import { DELIVERED_ITEM_STATES } from './items.ts';
import { CLAIM_STANDING_SUBMISSIONS, CLAIM_VOID_SUBMISSIONS } from '../domain/submissions.ts';

export interface SyncFactsRow {
  videoId: string;
  /** undefined: never submitted for this kind and language */
  facts: VideoSyncFacts | undefined;
  /** metadata stored before claims were recorded (no `video_sync` row, a `videos` row) */
  storedBeforeClaims: boolean;
}

/**
 * The facts of `ids` (in their order), with the database's clock.
 *
 * Each ID looks up its own `video_sync` row (a LATERAL subquery that OFFSET 0 keeps from being
 * flattened into a join): claims grow `video_sync` by thousands of rows within seconds, before its
 * statistics do, and with the stale estimate the planner joined every row of the kind against
 * every ID. Measured on the benchmark's cold W1 (20 sources of 250 videos, 10 000 claims): 100-380
 * ms per call late in the run, on the path of every sync; 4 ms this way, with the same rows.
 */
export async function readSyncFacts(
  sql: Queryable,
  kind: BatchKind,
  lang: string | null,
  ids: readonly string[],
): Promise<{ now: Date; rows: SyncFactsRow[] }> {
  if (ids.length === 0) return { now: new Date(), rows: [] };
  const syncLang = lang ?? '';
  const rows = await sql<
    {
      id: string;
      known: boolean;
      last_state: ItemState | null;
      last_error_code: string | null;
      attempts: number;
      next_check_at: Date | null;
      updated_at: Date | null;
      claim_pending: boolean;
      claim_ended: boolean;
      text_only: boolean;
      has_chunks: boolean;
      has_video: boolean;
      lang_appeared: boolean;
      now: Date;
    }[]
  >`
    select l.id, s.video_id is not null as known, s.last_state, s.last_error_code, coalesce(s.attempts, 0)::int as attempts,
      s.next_check_at, s.updated_at, coalesce(s.text_only, false) as text_only, now() as now,
      coalesce(s.batch_status = any(${[...BATCH_IN_FLIGHT_STATUSES]}::text[])
        or (s.batch_job_id is null and s.submission_state = any(${[...CLAIM_STANDING_SUBMISSIONS]}::text[])), false) as claim_pending,
      coalesce(s.batch_status = any(${[...BATCH_TERMINAL_STATUSES]}::text[])
        or (s.batch_job_id is null and s.submission_state = any(${[...CLAIM_VOID_SUBMISSIONS]}::text[])), false) as claim_ended,
      ${kind === 'transcript'}::boolean and exists (
        select 1 from transcripts t
        where t.video_id = l.id and t.chunks is not null and (${syncLang} = '' or t.lang = ${syncLang})) as has_chunks,
      ${kind === 'video'}::boolean and s.video_id is null and exists (select 1 from videos v where v.id = l.id) as has_video,
      ${kind === 'transcript' && syncLang !== ''}::boolean and s.last_state = any(${[...DELIVERED_ITEM_STATES]}::text[])
        and s.delivered_lang <> ${syncLang} and (
          exists (select 1 from videos v
            where v.id = l.id and ${syncLang} = any(v.transcript_languages) and v.updated_at > s.updated_at)
          or exists (select 1 from transcripts t
            where t.video_id = l.id and ${syncLang} = any(t.available_langs) and t.updated_at > s.updated_at)) as lang_appeared
    from unnest(${ids as string[]}::text[]) with ordinality as l(id, n)
    left join lateral (
      select s.video_id, s.last_state, s.last_error_code, s.attempts, s.next_check_at, s.updated_at, s.text_only, s.delivered_lang,
        b.job_id as batch_job_id, b.status as batch_status, bs.state as submission_state
      from video_sync s
      left join batches b on b.job_id = s.last_job_id
      left join batch_submissions bs on bs.id = s.submission_id
      where s.video_id = l.id and s.kind = ${kind} and s.lang = ${syncLang}
      offset 0) s on true
    order by l.n`;
  const now = rows[0]?.now ?? new Date();
  return {
    now,
    rows: rows.map((r) => ({
      videoId: r.id,
      storedBeforeClaims: r.has_video,
      facts: r.known
        ? {
            lastState: r.last_state,
            lastErrorCode: r.last_error_code,
            attempts: r.attempts,
            nextCheckAt: r.next_check_at,
            updatedAt: r.updated_at ?? now,
            claimPending: r.claim_pending,
            claimEnded: r.claim_ended,
            lastTextOnly: r.text_only,
            hasChunks: r.has_chunks,
            askedLangAppeared: r.lang_appeared === true,
          }
        : undefined,
    })),
  };
}

/**
 * The videos of a submission are claimed: one more attempt each (the first of a new count after
 * a delivery or a gone video), their outcome pending.
 */
export async function claimVideos(
  tx: Queryable,
  c: { kind: BatchKind; lang: string | null; textOnly: boolean; submission: number },
  videoIds: readonly string[],
): Promise<void> {
  if (videoIds.length === 0) return;
  await tx`
    insert into video_sync (video_id, kind, lang, last_job_id, last_state, last_error_code, attempts, next_check_at,
      submission_id, text_only, updated_at)
    select v, ${c.kind}, ${c.lang ?? ''}, null, 'processing', null, 1, null, ${c.submission},
      ${c.kind === 'transcript' && c.textOnly}, now()
    from unnest(${videoIds as string[]}::text[]) as v
    on conflict (video_id, kind, lang) do update set
      -- a video delivered before (a refresh, a re-bought language) or gone starts a new count:
      -- the retry cap is about failures since its latest outcome, not about every refresh ever
      attempts = case when video_sync.last_state = any(${[...DELIVERED_ITEM_STATES]}::text[])
        or video_sync.last_error_code = any(${[...GONE_ITEM_CODES]}::text[]) then 1 else video_sync.attempts + 1 end,
      last_job_id = excluded.last_job_id, last_state = 'processing',
      last_error_code = null, next_check_at = null, submission_id = excluded.submission_id,
      text_only = excluded.text_only, updated_at = now()`;
}

/** The submission's batch exists: its claims point at it (unless a delivery from elsewhere came first). */
export async function pointClaimsAt(tx: Queryable, submission: number, jobId: string): Promise<void> {
  await tx`
    update video_sync set last_job_id = ${jobId}, updated_at = now()
    where submission_id = ${submission} and last_job_id is null`;
}

/** A refused or not-created POST charged nothing: its claims no longer count as an attempt. */
export async function releaseClaims(tx: Queryable, submission: number): Promise<void> {
  await tx`
    update video_sync set attempts = greatest(attempts - 1, 0), updated_at = now()
    where submission_id = ${submission} and last_job_id is null`;
}

/** One item's outcome for `recordOutcomes`. */
export interface OutcomeRow {
  videoId: string;
  state: ItemState;
  errorCode: string | null;
  /** a transcript stored now: the language it came in (kept when absent) */
  deliveredLang?: string | null | undefined;
}

/**
 * Item outcomes of a batch. An outcome is recorded for the batch that claimed the video; from
 * any other batch only a delivery (landed, or sunk) is, which is always news.
 */
export async function recordOutcomes(
  tx: Queryable,
  batch: { jobId: string; kind: BatchKind; lang: string | null },
  rows: readonly OutcomeRow[],
  transcriptRecheckMs: number,
): Promise<void> {
  if (rows.length === 0) return;
  const now = new Date();
  const records = rows.map((r) => ({
    video_id: r.videoId,
    state: r.state,
    error_code: r.errorCode,
    next_check_at: recheckAt(r.errorCode, now, transcriptRecheckMs)?.toISOString() ?? null,
    delivered_lang: r.deliveredLang ?? null,
  }));
  await tx`
    insert into video_sync (video_id, kind, lang, last_job_id, last_state, last_error_code, attempts, next_check_at, delivered_lang, updated_at)
    select r.video_id, ${batch.kind}, ${batch.lang ?? ''}, ${batch.jobId}, r.state, r.error_code, 1, r.next_check_at, r.delivered_lang, now()
    from jsonb_to_recordset(${tx.json(records as never)}) as r(video_id text, state text, error_code text, next_check_at timestamptz, delivered_lang text)
    on conflict (video_id, kind, lang) do update set
      last_job_id = excluded.last_job_id, last_state = excluded.last_state,
      last_error_code = excluded.last_error_code, next_check_at = excluded.next_check_at,
      delivered_lang = coalesce(excluded.delivered_lang, video_sync.delivered_lang), updated_at = now()
    where video_sync.last_job_id is not distinct from excluded.last_job_id or excluded.last_state = any(${[...DELIVERED_ITEM_STATES]}::text[])`;
}

/**
 * The sink stored (`sunk`) or set aside (`quarantined`) landed items of `jobId`.
 *
 * @param deliveredLangs for stored transcripts, the language each came in (same order as `videoIds`)
 */
export async function markSinkOutcome(
  tx: Queryable,
  jobId: string,
  videoIds: readonly string[],
  state: 'sunk' | 'quarantined',
  deliveredLangs?: readonly (string | null)[],
): Promise<void> {
  if (videoIds.length === 0) return;
  const langs = deliveredLangs ?? videoIds.map(() => null);
  await tx`
    update video_sync s set last_state = ${state}, delivered_lang = coalesce(r.lang, s.delivered_lang), updated_at = now()
    from unnest(${videoIds as string[]}::text[], ${langs as string[]}::text[]) as r(video_id, lang)
    where s.last_job_id = ${jobId} and s.video_id = r.video_id and s.last_state = 'landed'`;
}

/** Claims in one go from which `video_sync`'s planner statistics are refreshed (see below). */
export const CLAIMS_STATS_REFRESH_MIN = 1000;

/**
 * Refresh the planner's statistics of `video_sync` (about 10 ms). Claims can grow it by thousands
 * of rows in seconds, before autovacuum looks: with the stale estimate the planner joins a long
 * due list against it row by row, measured at 11.4 s for 12 000 IDs against 5000 fresh claims,
 * 0.2 s after this.
 */
export async function refreshVideoSyncStats(sql: Queryable): Promise<void> {
  await sql`analyze video_sync`;
}
