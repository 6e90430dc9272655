/**
 * `export`'s statements: the records (one per transcript, with its video's contract
 * fields), which of them the events after a cursor touched, and `export_cursors`.
 *
 * A run reads everything in one REPEATABLE READ snapshot (`inExportSnapshot`): the highest event
 * id and the records it writes are of the same instant, so the next run, starting after that id,
 * neither misses a change nor writes one twice. Event ids become visible in increasing order
 * (migrations/0009: assigned under a lock held to commit), so no event below that id can commit
 * later.
 */
import type postgres from 'postgres';
import type { EventType } from '../domain/events.ts';
import type { Queryable, Sql } from './connection.ts';

/** Which records an event says changed: its transcript's (video, lang), every transcript of its video, or none. */
export type ExportScope = 'transcript' | 'video' | 'page' | 'media' | null;

/**
 * Per event type, the records an incremental export writes again. `video.gone` changes nothing
 * a record carries (`gone_at` is not exported); batch, sync and account events are not about a
 * record. A new event type fails to compile until it is placed here.
 */
export const EXPORT_EVENT_SCOPE: Readonly<Record<EventType, ExportScope>> = {
  'video.added': 'video',
  'video.changed': 'video',
  'video.returned': 'video',
  'video.gone': null,
  'transcript.added': 'transcript',
  'transcript.changed': 'transcript',
  'translation.refused': null,
  'page.added': 'page',
  'page.changed': 'page',
  'page.gone': 'page',
  'page.returned': 'page',
  'media.added': 'media',
  'media.changed': 'media',
  'batch.completed': null,
  'batch.expired': null,
  'source.synced': null,
  'source.failed': null,
  'account.hold': null,
  'account.hold_lifted': null,
};

const typesOf = (scope: Exclude<ExportScope, null>) =>
  (Object.keys(EXPORT_EVENT_SCOPE) as EventType[]).filter((t) => EXPORT_EVENT_SCOPE[t] === scope);

/** One record as read: timestamps as microseconds since the epoch (Postgres keeps microseconds; a Date would drop them). */
export interface ExportRow {
  video_id: string;
  title: string | null;
  description: string | null;
  duration_s: number | null;
  channel_id: string | null;
  channel_name: string | null;
  tags: string[] | null;
  thumbnail: string | null;
  upload_date_us: number | null;
  view_count: number | null;
  like_count: number | null;
  transcript_languages: string[] | null;
  lang: string;
  text: string;
  content_sha256: string;
  batch: string | null;
  delivered_at_us: number;
  /** captions, generated or translation (src/domain/sources.ts TRANSCRIPT_ORIGINS) */
  origin: string;
  /** a translation: the language of the transcript it was translated from; else null */
  translated_from: string | null;
  /** the stored jsonb as its text (only with `chunks`); null for a plain-text transcript */
  chunks?: string | null;
}

export interface ExportSelection {
  /** only videos this source listed (`source_videos`) */
  sourceId?: number | undefined;
  /** only transcripts in this language */
  lang?: string | undefined;
  /** only records whose transcript or video changed at or after this instant (ISO 8601 with a zone) */
  since?: string | undefined;
  /** only records that events with an id above this touched (EXPORT_EVENT_SCOPE) */
  afterEventId?: number | undefined;
  /** read `transcripts.chunks` too */
  chunks: boolean;
}

/** Runs `fn` in a read-only REPEATABLE READ transaction: every statement sees the same snapshot. */
export async function inExportSnapshot<T>(
  sql: Sql,
  fn: (tx: postgres.TransactionSql<{ int8: number }>) => Promise<T>,
): Promise<T> {
  return sql.begin('isolation level repeatable read read only', (tx) => fn(tx)) as Promise<T>;
}

/** The highest event id in the snapshot (0 before the first event). */
export async function snapshotLastEventId(tx: Queryable): Promise<number> {
  const [row] = await tx<{ id: number }[]>`select coalesce(max(id), 0)::float8 as id from events`;
  return row!.id;
}

/** Microseconds since the epoch of a timestamptz, exact (extract gives numeric since Postgres 14). */
const micros = (sql: Queryable, column: string) => sql.unsafe(`(extract(epoch from ${column}) * 1000000)::int8`);

/**
 * The records of `s`, in (video_id, lang) order, as a statement to read with `.cursor(n)`. A
 * transcript whose video row is missing (its metadata not delivered) is written with null video
 * fields: every transcript is a record.
 */
export function exportRecords(tx: Queryable, s: ExportSelection) {
  const source =
    s.sourceId !== undefined
      ? tx`and exists (select 1 from source_videos sv where sv.source_id = ${s.sourceId}::int and sv.video_id = t.video_id)`
      : tx``;
  const lang = s.lang !== undefined ? tx`and t.lang = ${s.lang}` : tx``;
  const since =
    s.since !== undefined
      ? // sent as text: a parameter Postgres types timestamptz goes through a JS Date in postgres.js, losing the microseconds
        tx`and (t.updated_at >= ${s.since}::text::timestamptz or v.updated_at >= ${s.since}::text::timestamptz)`
      : tx``;
  const touched =
    s.afterEventId !== undefined
      ? tx`and (t.video_id, t.lang) in (
          select e.video_id, e.data->>'lang' from events e
          where e.id > ${s.afterEventId} and e.type = any(${typesOf('transcript')}::text[])
          union
          select t2.video_id, t2.lang from events e join transcripts t2 on t2.video_id = e.video_id
          where e.id > ${s.afterEventId} and e.type = any(${typesOf('video')}::text[]))`
      : tx``;
  const chunks = s.chunks ? tx`, t.chunks::text as chunks` : tx``;
  return tx<ExportRow[]>`
    select t.video_id, v.title, v.description, v.duration_s, v.channel_id, v.channel_name, v.tags, v.thumbnail,
      ${micros(tx, 'v.upload_date')} as upload_date_us, v.view_count, v.like_count, v.transcript_languages,
      t.lang, t.text, t.content_sha256, t.last_job_id as batch, ${micros(tx, 't.updated_at')} as delivered_at_us,
      t.origin, t.translated_from
      ${chunks}
    from transcripts t left join videos v on v.id = t.video_id
    where true ${source} ${lang} ${since} ${touched}
    order by t.video_id, t.lang`;
}

/** The event id the cursor `name` covered, or undefined when it has not run yet. */
export async function readExportCursor(sql: Queryable, name: string): Promise<number | undefined> {
  const [row] = await sql<
    { id: number }[]
  >`select last_event_id::float8 as id from export_cursors where name = ${name}`;
  return row?.id;
}

/**
 * Moves the cursor `name` to `lastEventId` (never back: a slower concurrent run of the same name
 * that read an older snapshot does not undo a newer one), with the records that run wrote.
 */
export async function saveExportCursor(
  sql: Queryable,
  name: string,
  lastEventId: number,
  records: number,
): Promise<void> {
  await sql`
    insert into export_cursors (name, last_event_id, records) values (${name}, ${lastEventId}, ${records})
    on conflict (name) do update set last_event_id = greatest(export_cursors.last_event_id, excluded.last_event_id),
      records = excluded.records, updated_at = now()`;
}

export async function sourceExists(sql: Queryable, id: number): Promise<boolean> {
  const rows = await sql`select 1 from sources where id = ${id}`;
  return rows.length > 0;
}

/**
 * Stored videos an export leaves out because it writes one record per transcript: those without
 * a transcript (in `lang`, when one is asked for), of `sourceId`'s videos when one is given.
 */
export async function videosWithoutTranscript(
  sql: Queryable,
  o: { sourceId?: number | undefined; lang?: string | undefined },
): Promise<number> {
  const [r] = await sql<{ n: number }[]>`
    select count(*)::int as n from videos v
    where not exists (
        select 1 from transcripts t where t.video_id = v.id and (${o.lang ?? null}::text is null or t.lang = ${o.lang ?? null}::text))
      and (${o.sourceId ?? null}::int is null
        or exists (select 1 from source_videos sv where sv.video_id = v.id and sv.source_id = ${o.sourceId ?? null}::int))`;
  return r?.n ?? 0;
}

/** One page record as read (timestamps as microseconds since the epoch). */
export interface PageExportRow {
  url: string;
  name: string | null;
  description: string | null;
  og_url: string | null;
  content: string;
  count_characters: number | null;
  content_sha256: string;
  batch: string | null;
  first_seen_at_us: number;
  last_seen_at_us: number;
  updated_at_us: number;
  gone_at_us: number | null;
}

/**
 * The page records of `s` (its `lang` and `chunks` do not apply to pages), in URL order, as a
 * statement to read with `.cursor(n)`; gone pages included, with `gone_at`.
 */
export function exportPageRecords(tx: Queryable, s: Omit<ExportSelection, 'lang' | 'chunks'>) {
  const source =
    s.sourceId !== undefined
      ? tx`and exists (select 1 from source_pages sp where sp.source_id = ${s.sourceId}::int and sp.url = p.url)`
      : tx``;
  const since =
    s.since !== undefined
      ? tx`and (p.updated_at >= ${s.since}::text::timestamptz or p.gone_at >= ${s.since}::text::timestamptz)`
      : tx``;
  const touched =
    s.afterEventId !== undefined
      ? tx`and p.url in (select e.data->>'url' from events e
          where e.id > ${s.afterEventId} and e.type = any(${typesOf('page')}::text[]))`
      : tx``;
  return tx<PageExportRow[]>`
    select p.url, p.name, p.description, p.og_url, p.content, p.count_characters, p.content_sha256, p.job_id as batch,
      ${micros(tx, 'p.first_seen_at')} as first_seen_at_us, ${micros(tx, 'p.last_seen_at')} as last_seen_at_us,
      ${micros(tx, 'p.updated_at')} as updated_at_us, ${micros(tx, 'p.gone_at')} as gone_at_us
    from pages p
    where true ${source} ${since} ${touched}
    order by p.url`;
}

/** Stored pages (of `sourceId`'s, when given). */
export async function pageCount(sql: Queryable, o: { sourceId?: number | undefined }): Promise<number> {
  const [r] = await sql<{ n: number }[]>`
    select count(*)::int as n from pages p
    where ${o.sourceId ?? null}::int is null
      or exists (select 1 from source_pages sp where sp.source_id = ${o.sourceId ?? null}::int and sp.url = p.url)`;
  return r!.n;
}

/** One media record as read (timestamps as microseconds since the epoch). */
export interface MediaExportRow {
  url: string;
  platform: string;
  type: string;
  media_id: string | null;
  title: string | null;
  description: string | null;
  author_username: string | null;
  author_display_name: string | null;
  views: number | null;
  likes: number | null;
  comments: number | null;
  shares: number | null;
  duration_s: number | null;
  tags: string[];
  media: unknown;
  posted_at_us: number | null;
  transcript_state: string;
  transcript_mode: string | null;
  lang: string | null;
  text: string | null;
  content_sha256: string | null;
  batch: string | null;
  first_seen_at_us: number;
  updated_at_us: number;
}

/** The media records of `s`, in URL order, as a statement to read with `.cursor(n)`. */
export function exportMediaRecords(tx: Queryable, s: Omit<ExportSelection, 'lang' | 'chunks'>) {
  const source =
    s.sourceId !== undefined
      ? tx`and exists (select 1 from source_media sm where sm.source_id = ${s.sourceId}::int and sm.url = m.url)`
      : tx``;
  const since = s.since !== undefined ? tx`and m.updated_at >= ${s.since}::text::timestamptz` : tx``;
  const touched =
    s.afterEventId !== undefined
      ? tx`and m.url in (select e.data->>'url' from events e
          where e.id > ${s.afterEventId} and e.type = any(${typesOf('media')}::text[]))`
      : tx``;
  return tx<MediaExportRow[]>`
    select m.url, m.platform, m.type, m.media_id, m.title, m.description, m.author_username, m.author_display_name,
      m.views, m.likes, m.comments, m.shares, m.duration_s, m.tags, m.media_info as media,
      ${micros(tx, 'm.posted_at')} as posted_at_us, m.transcript_state, m.transcript_mode, m.transcript_lang as lang,
      m.transcript_text as text, m.transcript_sha256 as content_sha256, coalesce(m.transcript_job_id, m.job_id) as batch,
      ${micros(tx, 'm.first_seen_at')} as first_seen_at_us, ${micros(tx, 'm.updated_at')} as updated_at_us
    from media m
    where m.type <> 'unavailable' ${source} ${since} ${touched}
    order by m.url`;
}

/** Stored media items (of `sourceId`'s, when given). */
export async function mediaCount(sql: Queryable, o: { sourceId?: number | undefined }): Promise<number> {
  const [r] = await sql<{ n: number }[]>`
    select count(*)::int as n from media m
    where m.type <> 'unavailable' and (${o.sourceId ?? null}::int is null
      or exists (select 1 from source_media sm where sm.source_id = ${o.sourceId ?? null}::int and sm.url = m.url))`;
  return r!.n;
}
