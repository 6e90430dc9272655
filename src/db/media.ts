/**
 * Media items of `media` sources: their rows (built from delivered metadata by
 * src/pipeline/ingest/media-rows.ts), their transcripts (or why there is none), their search
 * segments, which source lists which URL, and their events, written in the caller's transaction
 * (the one that lands their raw copy). A metadata read whose content did not change gets only its
 * last-seen time; a change makes `media.changed`.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import {
  hasTranscript,
  MEDIA_TRANSCRIPT_RETRY_STATES,
  MEDIA_TRANSCRIPT_UNSTORED_STATES,
  mediaPlatformOf,
  type MediaPlatform,
  type MediaTranscriptState,
} from '../domain/media.ts';
import type { Queryable } from './connection.ts';
import { recordEvents } from './events.ts';
import { queuePassages } from './passages.ts';

/** The metadata columns of one `media` row. */
export interface MediaRow {
  url: string;
  platform: MediaPlatform;
  type: string;
  mediaId: string | null;
  title: string | null;
  description: string | null;
  authorUsername: string | null;
  authorDisplayName: string | null;
  author: unknown;
  views: number | null;
  likes: number | null;
  comments: number | null;
  shares: number | null;
  mediaInfo: unknown;
  durationS: number | null;
  tags: string[];
  postedAt: Date | null;
  additionalData: unknown;
  metadataSha256: string;
}

/** Where media came from: their job and source. */
export interface MediaOrigin {
  jobId: string;
  sourceId: number | null;
}

/**
 * Store one media item's metadata. A new item starts with transcript state `none` (not a video)
 * or `retry` (a video whose transcript is still to buy); a known one keeps its transcript.
 * Returns whether it was added, changed or unchanged.
 */
export async function storeMediaMetadata(
  tx: Queryable,
  origin: MediaOrigin,
  r: MediaRow,
): Promise<'added' | 'changed' | 'unchanged'> {
  const [old] = await tx<{ sha: string }[]>`
    select metadata_sha256 as sha from media where url = ${r.url} for update`;
  const initialState: MediaTranscriptState = hasTranscript(r.type) ? 'retry' : 'none';
  await tx`
    insert into media as m (url, platform, type, media_id, title, description, author_username, author_display_name,
      author, views, likes, comments, shares, media_info, duration_s, tags, posted_at, additional_data,
      metadata_sha256, transcript_state, job_id, source_id)
    values (${r.url}, ${r.platform}, ${r.type}, ${r.mediaId}, ${r.title}, ${r.description}, ${r.authorUsername},
      ${r.authorDisplayName}, ${json(r.author)}::text::jsonb, ${r.views}::bigint, ${r.likes}::bigint,
      ${r.comments}::bigint, ${r.shares}::bigint, ${json(r.mediaInfo)}::text::jsonb, ${r.durationS}::float8,
      ${r.tags}::text[], ${r.postedAt}::timestamptz, ${json(r.additionalData)}::text::jsonb, ${r.metadataSha256},
      ${initialState}, ${origin.jobId}, ${origin.sourceId}::int)
    on conflict (url) do update set
      platform = excluded.platform, type = excluded.type, media_id = excluded.media_id, title = excluded.title,
      description = excluded.description, author_username = excluded.author_username,
      author_display_name = excluded.author_display_name, author = excluded.author, views = excluded.views,
      likes = excluded.likes, comments = excluded.comments, shares = excluded.shares,
      media_info = excluded.media_info, duration_s = excluded.duration_s, tags = excluded.tags,
      posted_at = excluded.posted_at, additional_data = excluded.additional_data,
      metadata_sha256 = excluded.metadata_sha256, job_id = excluded.job_id,
      source_id = coalesce(excluded.source_id, m.source_id), last_seen_at = now(),
      updated_at = case when m.metadata_sha256 is distinct from excluded.metadata_sha256 then now() else m.updated_at end`;
  if (old === undefined) {
    await writeSegments(tx, r.url);
    await event(tx, origin, 'media.added', { url: r.url, platform: r.platform, type: r.type });
    return 'added';
  }
  if (old.sha === r.metadataSha256) return 'unchanged';
  await writeSegments(tx, r.url);
  await event(tx, origin, 'media.changed', { url: r.url, changed: ['metadata'] });
  return 'changed';
}

/** A chunk of a delivered transcript, as stored. */
const ChunkSchema = z.looseObject({ text: z.string(), offset: z.number().optional(), lang: z.string().optional() });

/**
 * Store a media item's delivered transcript (a job's result or a 200 answer): `stored`, or
 * `empty` when it holds no speech (`content: []`, charged, not bought again). The content is
 * read as chunks, or as one plain text.
 */
export async function storeMediaTranscript(
  tx: Queryable,
  origin: MediaOrigin,
  url: string,
  t: { content: unknown; lang: string | null; mode: string },
): Promise<'stored' | 'empty'> {
  const chunks = Array.isArray(t.content)
    ? t.content.map((c) => ChunkSchema.safeParse(c)).flatMap((p) => (p.success ? [p.data] : []))
    : [];
  const text = typeof t.content === 'string' ? t.content : chunks.map((c) => c.text).join(' ');
  const empty = text.trim() === '';
  const state: MediaTranscriptState = empty ? 'empty' : 'stored';
  const sha = createHash('sha256')
    .update(JSON.stringify(t.content ?? null))
    .digest('hex');
  const [old] = await tx<{ sha: string | null }[]>`
    select transcript_sha256 as sha from media where url = ${url} for update`;
  if (old === undefined) return state;
  await tx`
    update media set transcript_state = ${state}, transcript_mode = ${t.mode}, transcript_lang = ${t.lang},
      transcript_content = ${JSON.stringify(t.content ?? null)}::text::jsonb, transcript_text = ${text},
      transcript_sha256 = ${sha}, transcript_reason = null, transcript_at = now(),
      updated_at = case when transcript_sha256 is distinct from ${sha} then now() else updated_at end
    where url = ${url}`;
  if (old.sha !== sha) {
    await writeSegments(tx, url);
    await queuePassages(tx, 'media', [url]);
    await event(tx, origin, 'media.changed', { url, changed: ['transcript'], transcript: state });
  }
  return state;
}

/** The transcript's state set without content (pending, failed, expired, over budget), with its reason. */
export async function setMediaTranscriptState(
  tx: Queryable,
  url: string,
  state: MediaTranscriptState,
  o: { reason?: string | null; jobId?: string; attempt?: boolean } = {},
): Promise<void> {
  await tx`
    update media set transcript_state = ${state}, transcript_reason = ${o.reason ?? null},
      -- a new purchase forgets the previous job (until its own is recorded)
      transcript_job_id = case when ${o.attempt === true}::boolean then null
        else coalesce(${o.jobId ?? null}::text, transcript_job_id) end,
      transcript_attempts = transcript_attempts + ${o.attempt ? 1 : 0}::int
    where url = ${url}`;
}

/** The search segments of one item: its title and description, and each transcript chunk at its offset. */
async function writeSegments(tx: Queryable, url: string): Promise<void> {
  await tx`delete from media_segments where url = ${url}`;
  await tx`
    insert into media_segments (url, n, offset_ms, text, tsv)
    select url, 0, null, t, to_tsvector('simple', search_document(t))
    from (select url, concat_ws(' ', title, description, array_to_string(tags, ' ')) as t from media where url = ${url}) x
    where t <> ''`;
  await tx`
    insert into media_segments (url, n, offset_ms, text, tsv)
    select m.url, c.n::int, round((c.chunk->>'offset')::numeric)::bigint, c.chunk->>'text',
      to_tsvector('simple', search_document(c.chunk->>'text'))
    from media m, jsonb_array_elements(case when jsonb_typeof(m.transcript_content) = 'array'
      then m.transcript_content else '[]'::jsonb end) with ordinality as c(chunk, n)
    where m.url = ${url} and coalesce(c.chunk->>'text', '') <> ''`;
}

const json = (v: unknown): string | null => (v === null || v === undefined ? null : JSON.stringify(v));

async function event(tx: Queryable, origin: MediaOrigin, type: 'media.added' | 'media.changed', data: object) {
  await recordEvents(tx, [
    {
      type,
      data: { ...data, sourceId: origin.sourceId, jobId: origin.jobId },
      sourceId: origin.sourceId,
      videoId: null,
    },
  ]);
}

/** Give back the attempt a refused transcript request counted (nothing was bought; a later sync asks again). */
export async function returnMediaAttempt(sql: Queryable, url: string): Promise<void> {
  await sql`update media set transcript_attempts = greatest(transcript_attempts - 1, 0) where url = ${url}`;
}

/** The transcript mode a media item was bought with, null when none is recorded. */
export async function mediaTranscriptMode(sql: Queryable, url: string): Promise<string | null> {
  const [row] = await sql<{ mode: string | null }[]>`select transcript_mode as mode from media where url = ${url}`;
  return row?.mode ?? null;
}

/** Remember the media URLs a `media` source lists (at registration). */
export async function rememberMedia(sql: Queryable, sourceId: number, urls: readonly string[]): Promise<void> {
  await sql`
    insert into source_media (source_id, url)
    select ${sourceId}::int, u from unnest(${urls}::text[]) as u
    on conflict do nothing`;
}

/** What a sync knows of one listed media URL. */
export interface MediaFacts {
  url: string;
  /** metadata stored */
  known: boolean;
  type: string | null;
  durationS: number | null;
  transcriptState: MediaTranscriptState | null;
  transcriptAttempts: number;
}

/** The media URLs a source lists, with what is stored of each (URL order). */
export async function sourceMediaFacts(sql: Queryable, sourceId: number): Promise<MediaFacts[]> {
  return sql<MediaFacts[]>`
    select sm.url, m.url is not null as known, m.type, m.duration_s as "durationS",
      -- a job that ended without landing (held too long, failed locally) leaves its item to buy again
      case when m.transcript_state = 'pending' and exists (
          select 1 from batches b where b.job_id = m.transcript_job_id and b.terminal_at is not null)
        then 'expired' else m.transcript_state end as "transcriptState",
      coalesce(m.transcript_attempts, 0)::int as "transcriptAttempts"
    from source_media sm left join media m on m.url = sm.url
    where sm.source_id = ${sourceId} order by sm.url`;
}

/** Whether a media item's transcript is to be bought (again) now, within `retryAttemptsMax` purchases. */
export function transcriptDue(f: MediaFacts, retryAttemptsMax: number): boolean {
  if (!f.known || f.type === null || !hasTranscript(f.type) || f.transcriptState === null) return false;
  return MEDIA_TRANSCRIPT_RETRY_STATES.includes(f.transcriptState) && f.transcriptAttempts < retryAttemptsMax;
}

/** Media a source lists and holds (metadata stored). */
export async function sourceMediaCount(sql: Queryable, sourceId: number): Promise<number> {
  const [r] = await sql<{ n: number }[]>`
    select count(*)::int as n from source_media sm join media m on m.url = sm.url where sm.source_id = ${sourceId}`;
  return r!.n;
}

/**
 * Started minutes of media transcripts bought for a source's media in `auto` or `generate` (its
 * minutes budget counts every purchase, an expired one bought again included).
 */
export async function mediaGeneratedMinutes(sql: Queryable, sourceId: number): Promise<number> {
  const [r] = await sql<{ n: number }[]>`
    select coalesce(sum(greatest(1, ceil(coalesce(b.request->>'durationS', '0')::float8 / 60))), 0)::int as n
    from batches b
    where b.source_id = ${sourceId} and b.kind = 'media' and b.mode = 'generate'
      and b.request->>'mode' in ('auto', 'generate')`;
  return r!.n;
}

/** A sync's later estimate (its transcripts) added to its `batches` row. */
export async function addBatchEstimate(tx: Queryable, jobId: string, credits: number): Promise<void> {
  if (credits === 0) return;
  await tx`update batches set credits_estimated = credits_estimated + ${credits} where job_id = ${jobId}`;
}

/**
 * A media URL the interface refused for itself (not found, private, not a media URL): kept as
 * `unavailable` with the reason, so that it is not bought again automatically.
 */
export async function storeUnavailableMedia(
  tx: Queryable,
  origin: MediaOrigin,
  url: string,
  reason: string,
): Promise<void> {
  let platform: string = 'file';
  try {
    platform = mediaPlatformOf(new URL(url)) ?? 'file';
  } catch {
    // kept as a file URL
  }
  await tx`
    insert into media (url, platform, type, metadata_sha256, transcript_state, transcript_reason, job_id, source_id)
    values (${url}, ${platform}, 'unavailable', '', 'none', ${reason}, ${origin.jobId}, ${origin.sourceId}::int)
    on conflict (url) do update set transcript_reason = excluded.transcript_reason, last_seen_at = now()`;
}

export interface MediaTotals {
  stored: number;
  transcripts: number;
  empty: number;
  pending: number;
  failed: number;
}

/** Shards of `media_counts` (migrations/0022 takes `pg_backend_pid() % 16`). */
export const MEDIA_COUNT_SHARDS = 16;

/** Media items stored by platform and transcript state (every pair with one, from `media_counts`). */
export interface MediaCount {
  platform: string;
  transcriptState: MediaTranscriptState;
  n: number;
}

/** The counters of `media_counts`, summed over shards: MEDIA_COUNT_SHARDS rows per pair, not the media. */
export async function mediaCounts(sql: Queryable): Promise<MediaCount[]> {
  return sql<MediaCount[]>`
    select platform, transcript_state as "transcriptState", sum(n)::float8 as n from media_counts
    group by platform, transcript_state having sum(n) <> 0 order by platform, transcript_state`;
}

/** Media stored and their transcripts by state (for `status`), from the counters. */
export async function mediaTotals(sql: Queryable): Promise<MediaTotals> {
  const t: MediaTotals = { stored: 0, transcripts: 0, empty: 0, pending: 0, failed: 0 };
  for (const c of await mediaCounts(sql)) {
    t.stored += c.n;
    if (c.transcriptState === 'stored') t.transcripts += c.n;
    else if (c.transcriptState === 'empty') t.empty += c.n;
    else if (c.transcriptState === 'pending') t.pending += c.n;
    else if (MEDIA_TRANSCRIPT_UNSTORED_STATES.includes(c.transcriptState)) t.failed += c.n;
  }
  return t;
}

/** A media item's transcript the sync no longer buys: it failed to land as often as RETRY_ATTEMPTS_MAX allows. */
export interface MediaPastCap {
  url: string;
  platform: string;
  state: MediaTranscriptState;
  attempts: number;
  durationS: number | null;
  /** the sources that list it (the lowest first) */
  sourceIds: number[];
  /** the `--mode` of its first source (what its next purchase costs) */
  mode: string | null;
  reason: string | null;
}

/**
 * Media transcripts to buy again (`MEDIA_TRANSCRIPT_RETRY_STATES`, or only `expired`) whose
 * purchases reached `retryAttemptsMax`: only a person buys them again (`replay --failed`).
 */
export async function mediaPastRetryCap(
  sql: Queryable,
  o: { retryAttemptsMax: number; expiredOnly: boolean },
): Promise<MediaPastCap[]> {
  const states: MediaTranscriptState[] = o.expiredOnly ? ['expired'] : [...MEDIA_TRANSCRIPT_RETRY_STATES];
  return sql<MediaPastCap[]>`
    select m.url, m.platform, m.transcript_state as state, m.transcript_attempts as attempts,
      m.duration_s as "durationS", m.transcript_reason as reason,
      array_agg(sm.source_id order by sm.source_id) as "sourceIds",
      (array_agg(s.media_mode order by sm.source_id))[1] as mode
    from media m join source_media sm on sm.url = m.url join sources s on s.id = sm.source_id
    where m.transcript_state = any(${states}::text[]) and m.transcript_attempts >= ${o.retryAttemptsMax}
    group by m.url order by m.url`;
}

/**
 * A person agreed to buy these transcripts once more: each is left one purchase under the cap, so
 * the next sync of its source buys it once (and, should it fail again, not after). Only an item
 * still past the cap changes. Returns how many did.
 */
export async function releaseMediaForRetry(
  sql: Queryable,
  urls: readonly string[],
  retryAttemptsMax: number,
): Promise<number> {
  const rows = await sql`
    update media set transcript_attempts = ${retryAttemptsMax - 1}::int
    where url = any(${urls as string[]}::text[]) and transcript_state = any(${[...MEDIA_TRANSCRIPT_RETRY_STATES]}::text[])
      and transcript_attempts >= ${retryAttemptsMax}
    returning url`;
  return rows.length;
}
