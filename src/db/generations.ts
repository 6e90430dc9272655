/**
 * Generated transcripts (`--generate-missing`): which videos of a source may get one, how many
 * media minutes a source has had generated, and the `batches` rows of transcript jobs (mode
 * `generate`: one video each, its request naming the video and the duration it was priced by).
 *
 * A generation is attempted once per video and language, whatever the source: a batches row of
 * mode `generate` for it, or a request recorded in `batch_submissions` that may have reached the
 * upstream, counts. Only a request that created nothing (or that a person released) does not.
 */
import type { BatchKind } from '../domain/batches.ts';
import type { BatchMode } from '../domain/sources.ts';
import type { Queryable } from './connection.ts';
import { CLAIM_STANDING_SUBMISSIONS, SUBMISSION_NOTHING_CREATED_STATES } from '../domain/submissions.ts';

/** The kind and mode of a generate row (a transcript job holds transcripts only). */
const GENERATE_KIND: BatchKind = 'transcript';
const GENERATE_MODE: BatchMode = 'generate';

/**
 * A generation request in SUBMISSION_NOTHING_CREATED_STATES may be asked again (one refused for
 * its video, `failed`, counts as the attempt). One in CLAIM_STANDING_SUBMISSIONS may have a job
 * without a batches row (answer lost, or a process died mid-request): its minutes count against
 * the budget as if generated.
 */

/** What `batches.request` and `batch_submissions.request` hold for a generation. */
export interface GenerateRequest {
  /** the query sent to `GET /transcript` (never the key) */
  url: string;
  mode: 'generate';
  lang?: string;
  text?: boolean;
  /** ours: the video, and the duration (seconds) the request was priced by */
  videoId: string;
  durationS: number;
}

/**
 * True when a generation of this video (a value fragment) and language was attempted: the
 * condition for the statements below, written once.
 */
function attempted(q: Queryable, videoId: ReturnType<Queryable>, lang: string | null) {
  return q`(
    exists (
      select 1 from batches b
      where b.mode = ${GENERATE_MODE} and b.kind = ${GENERATE_KIND} and b.lang is not distinct from ${lang}::text
        and b.request->>'videoId' = ${videoId})
    or exists (
      select 1 from batch_submissions bs
      where bs.kind = ${GENERATE_KIND} and bs.request->>'mode' = ${GENERATE_MODE} and bs.lang is not distinct from ${lang}::text
        and bs.request->>'videoId' = ${videoId}
        and bs.state <> all(${[...SUBMISSION_NOTHING_CREATED_STATES]}::text[])))`;
}

export interface GenerationCandidate {
  videoId: string;
  durationS: number;
}

/**
 * Videos of the source that may get a generated transcript in `lang` (null: the API's default
 * language), newest upload first (then by ID, so the order is stable): their latest transcript
 * outcome for that language is `missingCode`, their duration is known, no transcript is stored
 * for that language (any language when none was asked for), and no generation was attempted.
 */
export async function generationCandidates(
  sql: Queryable,
  c: { sourceId: number; lang: string | null; missingCode: string },
): Promise<GenerationCandidate[]> {
  const syncLang = c.lang ?? '';
  const rows = await sql<{ video_id: string; duration_s: number }[]>`
    select sv.video_id, v.duration_s
    from source_videos sv
    join video_sync s on s.video_id = sv.video_id and s.kind = ${GENERATE_KIND} and s.lang = ${syncLang}
    join videos v on v.id = sv.video_id
    where sv.source_id = ${c.sourceId}
      and s.last_error_code = ${c.missingCode}
      and v.duration_s > 0
      and not exists (
        select 1 from transcripts t where t.video_id = sv.video_id and (${syncLang} = '' or t.lang = ${syncLang}))
      and not ${attempted(sql, sql`sv.video_id`, c.lang)}
    order by v.upload_date desc nulls last, sv.video_id`;
  return rows.map((r) => ({ videoId: r.video_id, durationS: r.duration_s }));
}

/** Whether a generation of this video and language was attempted (re-checked under the lock). */
export async function generationAttempted(sql: Queryable, videoId: string, lang: string | null): Promise<boolean> {
  const [row] = await sql<{ attempted: boolean }[]>`select ${attempted(sql, sql`${videoId}::text`, lang)} as attempted`;
  return row?.attempted ?? false;
}

/**
 * Durations (seconds) the source's generations were priced by, all time: every generate batch,
 * and every request whose outcome is unresolved (it may have created a job).
 */
export async function generatedDurations(sql: Queryable, sourceId: number): Promise<number[]> {
  const rows = await sql<{ duration_s: number }[]>`
    select (request->>'durationS')::float8 as duration_s from batches
    -- a media item's transcript job (kind media) is counted by src/db/media.ts
    where source_id = ${sourceId} and mode = ${GENERATE_MODE} and kind = ${GENERATE_KIND}
    union all
    select (request->>'durationS')::float8 from batch_submissions
    where source_id = ${sourceId} and kind = ${GENERATE_KIND} and request->>'mode' = ${GENERATE_MODE}
      and state = any(${[...CLAIM_STANDING_SUBMISSIONS]}::text[])`;
  return rows.map((r) => r.duration_s ?? 0);
}
