/**
 * One stored document read whole, for a reader that asks for it by name (the MCP server's
 * `read_transcript`, `read_page`, `read_media`): a video's transcript in one language, a page's
 * Markdown, a media item's transcript. Cutting and bounding the answer is the caller's.
 */
import type { Queryable } from './connection.ts';

/** A timed piece of a transcript as delivered: ms from the start. */
export interface TimedChunk {
  text: string;
  offset: number;
  duration?: number | undefined;
}

export interface StoredTranscript {
  videoId: string;
  title: string | null;
  lang: string;
  origin: string;
  translatedFrom: string | null;
  /** null: delivered as plain text (no timings) */
  chunks: TimedChunk[] | null;
  text: string;
}

/**
 * The transcript of `videoId` in `lang`; without `lang`, the one not translated first (a
 * translation is read when asked for by its language), then by language.
 */
export async function readTranscript(
  sql: Queryable,
  videoId: string,
  lang: string | undefined,
): Promise<StoredTranscript | undefined> {
  const which = lang !== undefined ? sql`and t.lang = ${lang}::text` : sql``;
  const [row] = await sql<StoredTranscript[]>`
    select t.video_id as "videoId", v.title, t.lang, t.origin, t.translated_from as "translatedFrom",
      case when jsonb_typeof(t.chunks) = 'array' then t.chunks end as chunks, t.text
    from transcripts t left join videos v on v.id = t.video_id
    where t.video_id = ${videoId}::text ${which}
    order by (t.origin = 'translation'), t.lang
    limit 1`;
  return row;
}

/** The languages `videoId` has a transcript in (empty: none stored, or no such video). */
export async function transcriptLangs(sql: Queryable, videoId: string): Promise<string[]> {
  const rows = await sql<{ lang: string }[]>`
    select lang from transcripts where video_id = ${videoId}::text order by lang`;
  return rows.map((r) => r.lang);
}

export interface StoredPage {
  url: string;
  name: string | null;
  /** Markdown */
  content: string;
  updatedAt: Date;
  /** set while no source finds it any more */
  goneAt: Date | null;
}

export async function readPage(sql: Queryable, url: string): Promise<StoredPage | undefined> {
  const [row] = await sql<StoredPage[]>`
    select url, name, content, updated_at as "updatedAt", gone_at as "goneAt" from pages where url = ${url}::text`;
  return row;
}

export interface StoredMedia {
  url: string;
  platform: string;
  type: string;
  title: string | null;
  author: string | null;
  /** src/domain/media.ts MEDIA_TRANSCRIPT_STATES */
  transcriptState: string;
  transcriptLang: string | null;
  /** the chunks as delivered; null when none is stored */
  chunks: TimedChunk[] | null;
}

export async function readMedia(sql: Queryable, url: string): Promise<StoredMedia | undefined> {
  const [row] = await sql<StoredMedia[]>`
    select url, platform, type, title, coalesce(author_username, author_display_name) as author,
      transcript_state as "transcriptState", transcript_lang as "transcriptLang",
      case when jsonb_typeof(transcript_content) = 'array' then transcript_content end as chunks
    from media where url = ${url}::text`;
  return row;
}
