/**
 * The `videos` table: rows from delivered Video metadata, upserted a chunk per statement.
 *
 * A chunk travels as one JSON parameter unpacked by `jsonb_to_recordset`, so Postgres itself
 * parses every value with the column's type: text stays byte-exact, an ISO date keeps its
 * microseconds (a JS Date would cut them), and the statement has one parameter whatever the
 * chunk size. (Measured on 500-row chunks of ~45 KB transcripts: jsonb_to_recordset ~25% faster
 * than json_to_recordset and on par with a multi-row VALUES list, which would round dates
 * through JS Date and needs 4000 parameters.) `updated_at` moves only when a delivered value changed, so a re-run of the same
 * results (replay, a redelivered sink job) writes nothing.
 */
import type { Video } from '../api/schemas.ts';
import type { Queryable } from './connection.ts';
import { UnstorableValueError, assertStorable, toBigintColumn, toTimestamptzColumn } from './storable.ts';

/** One `videos` row as the sink writes it; every field present, null when not delivered. */
export interface VideoRow {
  id: string;
  title: string | null;
  description: string | null;
  /** seconds */
  durationS: number | null;
  channelId: string | null;
  channelName: string | null;
  tags: string[] | null;
  thumbnail: string | null;
  /** ISO 8601 as delivered (Postgres parses it; no JS Date rounding); null when null or absent */
  uploadDate: string | null;
  viewCount: number | null;
  likeCount: number | null;
  transcriptLanguages: string[] | null;
  /** the batch that delivered this version */
  lastJobId: string | null;
}

export interface UpsertCounts {
  inserted: number;
  /** existing rows whose delivered values changed */
  updated: number;
  /** existing rows left untouched (same values) */
  unchanged: number;
}

/**
 * Maps a delivered Video to its row, field by field: an absent optional field and a null both
 * become NULL, nothing becomes 0 or ''. Throws UnstorableValueError (with the field's path) for
 * a value Postgres cannot hold as delivered: text with U+0000 or a lone surrogate, a count that
 * is not a safe whole number. The caller quarantines that item.
 */
export function videoRowFromApi(video: Video, jobId: string): VideoRow {
  const row: VideoRow = {
    id: video.id,
    title: video.title ?? null,
    description: video.description ?? null,
    durationS: video.duration ?? null,
    channelId: video.channel?.id ?? null,
    channelName: video.channel?.name ?? null,
    tags: video.tags ?? null,
    thumbnail: video.thumbnail ?? null,
    uploadDate: toTimestamptzColumn(video.uploadDate, 'video.uploadDate'),
    viewCount: toBigintColumn(video.viewCount, 'video.viewCount'),
    likeCount: toBigintColumn(video.likeCount, 'video.likeCount'),
    transcriptLanguages: video.transcriptLanguages ?? null,
    lastJobId: jobId,
  };
  assertStorable(
    {
      id: row.id,
      title: row.title,
      description: row.description,
      channel: video.channel,
      tags: row.tags,
      thumbnail: row.thumbnail,
      transcriptLanguages: row.transcriptLanguages,
    },
    'video',
  );
  if (row.durationS !== null && !Number.isFinite(row.durationS)) {
    throw new UnstorableValueError('video.duration', `${row.durationS} is not a finite number`);
  }
  return row;
}

/**
 * Inserts or updates `rows` in one statement. Rows with the same id: the last one wins. An
 * existing row is rewritten (and its `updated_at` set) only when a delivered value differs;
 * `first_seen_at` never changes.
 */
export async function upsertVideos(sql: Queryable, rows: readonly VideoRow[]): Promise<UpsertCounts> {
  const unique = lastById(rows, (r) => r.id);
  if (unique.length === 0) return { inserted: 0, updated: 0, unchanged: 0 };
  const json = JSON.stringify(
    unique.map((r) => ({
      id: r.id,
      title: r.title,
      description: r.description,
      duration_s: r.durationS,
      channel_id: r.channelId,
      channel_name: r.channelName,
      tags: r.tags,
      thumbnail: r.thumbnail,
      upload_date: r.uploadDate,
      view_count: r.viewCount,
      like_count: r.likeCount,
      transcript_languages: r.transcriptLanguages,
      last_job_id: r.lastJobId,
    })),
  );
  const result = await sql<{ inserted: boolean }[]>`
    insert into videos as v (
      id, title, description, duration_s, channel_id, channel_name, tags, thumbnail,
      upload_date, view_count, like_count, transcript_languages, last_job_id)
    select id, title, description, duration_s, channel_id, channel_name, tags, thumbnail,
      upload_date, view_count, like_count, transcript_languages, last_job_id
    from jsonb_to_recordset(${json}::text::jsonb) as r(
      id text, title text, description text, duration_s double precision, channel_id text,
      channel_name text, tags text[], thumbnail text, upload_date timestamptz, view_count bigint,
      like_count bigint, transcript_languages text[], last_job_id text)
    on conflict (id) do update set
      title = excluded.title,
      description = excluded.description,
      duration_s = excluded.duration_s,
      channel_id = excluded.channel_id,
      channel_name = excluded.channel_name,
      tags = excluded.tags,
      thumbnail = excluded.thumbnail,
      upload_date = excluded.upload_date,
      view_count = excluded.view_count,
      like_count = excluded.like_count,
      transcript_languages = excluded.transcript_languages,
      last_job_id = excluded.last_job_id,
      gone_at = null,
      gone_reason = null,
      updated_at = now()
    where ((v.title, v.description, v.duration_s, v.channel_id, v.channel_name, v.tags,
           v.thumbnail, v.upload_date, v.view_count, v.like_count, v.transcript_languages)
      is distinct from
          (excluded.title, excluded.description, excluded.duration_s, excluded.channel_id,
           excluded.channel_name, excluded.tags, excluded.thumbnail, excluded.upload_date,
           excluded.view_count, excluded.like_count, excluded.transcript_languages)
        -- a gone video delivered again has returned, whatever its values
        or v.gone_at is not null)
      -- an older delivery (a replay of an old batch, a slow poll) never overwrites a newer one,
      -- nor makes a change event back to the old values
      and not exists (
        select 1 from batches stored_by join batches delivering on delivering.job_id = excluded.last_job_id
        where stored_by.job_id = v.last_job_id and delivering.submitted_at < stored_by.submitted_at)
    returning (xmax = 0) as inserted`;
  // xmax = 0 only on a freshly inserted tuple; an updated one carries the updating transaction.
  const inserted = result.filter((r) => r.inserted).length;
  const updated = result.length - inserted;
  return { inserted, updated, unchanged: unique.length - result.length };
}

/**
 * Marks stored videos gone: a batch (`jobId`) reported them `not-found` or `forbidden`. Their rows
 * stay; `gone_at` and `gone_reason` are set once (an already gone video is left as it is), and the
 * row's trigger records the change and its `video.gone` event (migrations/0010). A video that was
 * never delivered has no row and nothing to mark. Returns how many were marked.
 */
export async function markGone(
  sql: Queryable,
  jobId: string,
  gone: readonly { videoId: string; reason: string }[],
): Promise<number> {
  if (gone.length === 0) return 0;
  // Mostly these videos were never stored (private or removed before the first sync): skip the
  // UPDATE then, whose statement-level triggers (history, source stats) run even for no row,
  // ~4 ms a landing chunk (bench W2).
  const stored =
    await sql`select 1 from videos where id = any(${gone.map((g) => g.videoId)}::text[]) and gone_at is null limit 1`;
  if (stored.length === 0) return 0;
  const marked = await sql`
    update videos v set gone_at = now(), gone_reason = g.reason, last_job_id = ${jobId}
    from unnest(${gone.map((g) => g.videoId)}::text[], ${gone.map((g) => g.reason)}::text[]) as g(video_id, reason)
    where v.id = g.video_id and v.gone_at is null
      and not exists (
        select 1 from batches stored_by join batches reporting on reporting.job_id = ${jobId}
        where stored_by.job_id = v.last_job_id and reporting.submitted_at < stored_by.submitted_at)`;
  return marked.count;
}

/** Stored videos marked gone, per reason (`not-found`, `forbidden`). */
export async function goneCounts(sql: Queryable): Promise<Record<string, number>> {
  const rows = await sql<{ reason: string; n: number }[]>`
    select gone_reason as reason, count(*)::int as n from videos where gone_at is not null group by 1 order by 1`;
  return Object.fromEntries(rows.map((r) => [r.reason, r.n]));
}

/** Keeps the last row of each key, in first-seen order (ON CONFLICT cannot touch a row twice). */
export function lastById<T>(rows: readonly T[], key: (row: T) => string): T[] {
  const byKey = new Map<string, T>();
  for (const r of rows) byKey.set(key(r), r);
  return [...byKey.values()];
}
