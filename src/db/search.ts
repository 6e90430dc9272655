/**
 * Transcript search over passages (src/db/passages.ts: the indexer cuts them from
 * `search_index_queue`; each carries its language's text search configuration and tsvector,
 * migrations/0025), the one copy of a transcript's text that serves search and embeddings. One
 * statement: the query parsed in each text search configuration the passages can carry (or the
 * one of `--lang`), matched by each passage in its own configuration, ranked with ts_rank_cd;
 * then, for the best passages only, the moment (the first chunk of the passage that matches by
 * itself, else the first of two side by side that match together) and a ts_headline snippet.
 *
 * The GIN index is used through one tsquery, the `or` of the query in every configuration: a
 * passage matching its own configuration's query matches that one too, so it narrows the rows
 * to check without losing any (EXPLAIN: a Bitmap Index Scan on passages_transcript_tsv_idx). That
 * index holds the transcripts' passages alone (partial, migrations/0035), so the kind is written
 * as a literal: a generic plan can use it.
 */
import { BATCH_IN_FLIGHT_STATUSES } from '../domain/batches.ts';
import { prepareSearchQuery, SNIPPET_START, SNIPPET_STOP } from '../domain/search.ts';
import type { Queryable } from './connection.ts';

/**
 * Passages (and media segments) matching the query ranked at most, taken in index
 * order: a query that matches much of the corpus (a common word) answers in bounded time, its
 * hits the best of these rather than of all. Ranking every match made the answer grow with the
 * corpus: a phrase of the bench:scale corpus is in hundreds of indexed texts at 0.1x history,
 * thousands at 1x, tens of thousands at 10x.
 */
export const SEARCH_CANDIDATES_MAX = 1_000;

/** ts_headline's options: the marks (src/domain/search.ts) and a snippet of 20 to 40 words of the passage (a CJK character counts as a word). */
const HEADLINE_OPTIONS = `StartSel=${SNIPPET_START}, StopSel=${SNIPPET_STOP}, MaxWords=40, MinWords=20, ShortWord=2`;

export interface SearchFilter {
  /** the words, in web-search syntax (quoted phrases, `or`, `-word`) */
  query: string;
  /** only transcripts in this language (and its configuration only) */
  lang?: string | undefined;
  /** only videos this source listed (`source_videos`) */
  sourceId?: number | undefined;
  /** only videos of this channel */
  channelId?: string | undefined;
  limit: number;
}

export interface SearchHit {
  videoId: string;
  title: string | null;
  channelId: string | null;
  channelName: string | null;
  lang: string;
  /** where the transcript came from: captions, generated or translation */
  origin: string;
  /** a translation: the language of the transcript it was translated from; else null */
  translatedFrom: string | null;
  /**
   * seconds from the start of the video: the first chunk of the passage that holds a match by
   * itself, else the first of two side by side that hold it together (a phrase across two
   * chunks), else the passage's first chunk; null for a plain-text transcript (no timings)
   */
  seconds: number | null;
  /** the passage's position in the transcript (0-based, `passages.n`) */
  window: number;
  /** the words found between SNIPPET_START and SNIPPET_STOP */
  snippet: string;
  rank: number;
}

export async function searchTranscripts(sql: Queryable, f: SearchFilter): Promise<SearchHit[]> {
  const text = prepareSearchQuery(f.query);
  const configs =
    f.lang !== undefined
      ? sql`select search_config(${f.lang}::text)`
      : sql`select config from search_config_map() union select 'simple'::regconfig`;
  // each filter only when given (as src/db/events.ts: no `is null or` in a reused plan)
  const lang = f.lang !== undefined ? sql`and p.lang = ${f.lang}::text` : sql``;
  const source =
    f.sourceId !== undefined
      ? sql`and exists (select 1 from source_videos sv where sv.source_id = ${f.sourceId}::int and sv.video_id = p.doc)`
      : sql``;
  const channel =
    f.channelId !== undefined
      ? sql`and exists (select 1 from videos cv where cv.id = p.doc and cv.channel_id = ${f.channelId}::text)`
      : sql``;
  // passages overlap (the end of one starts the next): a match there is found twice, at the
  // same moment, and shown once; twice the limit is ranked so that still leaves `limit` hits
  const ranked = f.limit * 2;
  // a chunk's text as the index reads it, and its start in seconds (the API's offset is ms)
  const chunkDocument = (i: ReturnType<typeof sql>) => sql`search_document(t.chunks -> ${i} ->> 'text')`;
  return sql<SearchHit[]>`
    with q as materialized (
      select c.config, websearch_to_tsquery(c.config, ${text}::text) as query
      from (${configs}) as c(config)
    ),
    -- stop words only in a configuration: nothing to find in it
    usable as materialized (select config, query from q where numnode(query) > 0),
    -- each distinct query once: most configurations parse a query alike, and the index scan
    -- checks every passage holding a word against the whole 'or' (29 copies of a phrase: the
    -- scan took 10x longer than with the 3 distinct ones)
    any_config as materialized (select string_agg(distinct '(' || query::text || ')', ' | ')::tsquery as query from usable),
    -- one index scan for every configuration at once (joined first, the planner scanned the
    -- index once per configuration: 29 scans, ~30x slower)
    matched as materialized (
      select p.doc as video_id, p.lang, p.n, p.start_s, p.first_chunk, p.last_chunk, p.text, p.config, p.tsv
      from passages p
      where p.tsv @@ (select query from any_config) and p.kind = 'transcript' ${lang} ${source} ${channel}
      limit ${SEARCH_CANDIDATES_MAX}
    ),
    candidates as (
      select m.video_id, m.lang, m.n, m.start_s, m.first_chunk, m.last_chunk, m.text, m.config, u.query,
        ts_rank_cd(m.tsv, u.query) as rank
      from matched m join usable u on u.config = m.config
      where m.tsv @@ u.query
    ),
    best as (select * from candidates order by rank desc, video_id, lang, n limit ${ranked}),
    placed as (
      select b.*, coalesce(
        (select (t.chunks -> i ->> 'offset')::float8 / 1000
          from transcripts t cross join generate_series(b.first_chunk, b.last_chunk) as i
          where t.video_id = b.video_id and t.lang = b.lang
            and jsonb_typeof(t.chunks -> i -> 'offset') = 'number'
            and to_tsvector(b.config, ${chunkDocument(sql`i`)}) @@ b.query
          order by i limit 1),
        -- only when no chunk holds it alone: a phrase across two chunks starts in the first
        (select (t.chunks -> i ->> 'offset')::float8 / 1000
          from transcripts t cross join generate_series(b.first_chunk, b.last_chunk - 1) as i
          where t.video_id = b.video_id and t.lang = b.lang
            and jsonb_typeof(t.chunks -> i -> 'offset') = 'number'
            and to_tsvector(b.config, ${chunkDocument(sql`i`)} || ' ' || ${chunkDocument(sql`i + 1`)}) @@ b.query
          order by i limit 1),
        b.start_s) as seconds
      from best b
    ),
    distinct_moments as (
      select distinct on (video_id, lang, coalesce(seconds::text, 'passage ' || n)) *
      from placed
      order by video_id, lang, coalesce(seconds::text, 'passage ' || n), rank desc, n
    ),
    shown as (select * from distinct_moments order by rank desc, video_id, lang, n limit ${f.limit})
    select s.video_id as "videoId", v.title, v.channel_id as "channelId", v.channel_name as "channelName", s.lang,
      coalesce(tr.origin, 'captions') as origin, tr.translated_from as "translatedFrom", s.seconds, s.n as "window", s.rank::float8 as rank,
      -- the marks of adjacent words merged (each CJK character is a word of its own)
      replace(replace(ts_headline(s.config, search_document(s.text), s.query, ${HEADLINE_OPTIONS}::text), chr(8203), ''),
        ${SNIPPET_STOP + SNIPPET_START}::text, '') as snippet
    from shown s left join videos v on v.id = s.video_id
      left join transcripts tr on tr.video_id = s.video_id and tr.lang = s.lang
    order by s.rank desc, s.video_id, s.lang, s.n`;
}

/**
 * When the indexer should build next, ms from now: null when nothing is queued; 0 when keys wait
 * and no batch is in flight, or the oldest has waited `deferWhileLandingMs`; otherwise what is
 * left of that wait (items may be landing: their transactions get the CPU first).
 */
export async function searchIndexDueInMs(sql: Queryable, deferWhileLandingMs: number): Promise<number | null> {
  const [r] = await sql<{ due_ms: number | null }[]>`
    select case
        when min(q.queued_at) is null then null
        when not exists (select 1 from batches where status = any(${[...BATCH_IN_FLIGHT_STATUSES]}::text[])) then 0
        else greatest(0, ${deferWhileLandingMs}::float8 - extract(epoch from clock_timestamp() - min(q.queued_at)) * 1000)
      end as due_ms
    from search_index_queue q`;
  return r!.due_ms === null ? null : Math.ceil(r!.due_ms);
}

export interface SearchBacklog {
  /** documents (transcripts, media items, pages) waiting to be cut into passages */
  pending: number;
  /** of them, by kind (`transcript`, `media`, `page`); kinds with none are left out */
  pendingByKind: Record<string, number>;
  /** when the oldest of them was queued; null when none is */
  oldestQueuedAt: Date | null;
}

/**
 * What the search indexer has still to do; with `queuedBefore`, only keys queued before that
 * instant (what a drain started then owes), including keys an indexer is building right now.
 */
export async function searchBacklog(sql: Queryable, queuedBefore?: Date): Promise<SearchBacklog> {
  const rows = await sql<{ kind: string; pending: number; oldest: Date | null }[]>`
    select kind, count(*)::int as pending, min(queued_at) as oldest from search_index_queue
    where ${queuedBefore ?? null}::timestamptz is null or queued_at <= ${queuedBefore ?? null}::timestamptz
    group by kind order by kind`;
  const oldest = rows.reduce<Date | null>(
    (o, r) => (r.oldest !== null && (o === null || r.oldest < o) ? r.oldest : o),
    null,
  );
  return {
    pending: rows.reduce((n, r) => n + r.pending, 0),
    pendingByKind: Object.fromEntries(rows.map((r) => [r.kind, r.pending])),
    oldestQueuedAt: oldest,
  };
}

/** Only the pages `sourceId` found, when given. */
export interface PageSearchFilter {
  query: string;
  sourceId?: number | undefined;
  limit: number;
}

export interface PageSearchHit {
  url: string;
  name: string | null;
  /** the headings the section is under, outermost first */
  headings: string[];
  /** the section's fragment, null before the first heading */
  anchor: string | null;
  /** the passage's position in the page (0-based, `passages.n`), as a hit found by meaning */
  section: number;
  snippet: string;
  rank: number;
}

/**
 * Page search over the page's passages (issue #34: the one copy of a page's text that serves
 * search and embeddings; cut by the indexer after the page lands, src/db/passages.ts, each within
 * one heading section and keeping its headings and anchor): one scan of their own index
 * (`passages_page_tsv_idx`, partial, so the kind is written as a literal: a generic plan can use
 * it) with the query in the `simple` configuration a page's passages carry (a page has no
 * language: `search_config('')`), at most SEARCH_CANDIDATES_MAX of them, ranked with ts_rank_cd,
 * a snippet for the best ones. A hit is the place its link opens, the section: passages overlap,
 * and a long section is several, so only the best passage of each section is shown. A page no
 * source finds any more (gone) is not a hit (checked for the hits only, as before: checked for
 * every candidate it took a third of the statement's time at 10x*0.05).
 */
export async function searchPages(sql: Queryable, f: PageSearchFilter): Promise<PageSearchHit[]> {
  const text = prepareSearchQuery(f.query);
  const source =
    f.sourceId !== undefined
      ? sql`and exists (select 1 from source_pages sp where sp.source_id = ${f.sourceId}::int and sp.url = p.doc)`
      : sql``;
  return sql<PageSearchHit[]>`
    with q as materialized (select websearch_to_tsquery('simple', ${text}::text) as query),
    matched as materialized (
      select p.doc as url, p.n, p.headings, p.anchor, p.text, p.tsv from passages p
      where p.tsv @@ (select query from q) and p.kind = 'page' ${source}
      limit ${SEARCH_CANDIDATES_MAX}
    ),
    -- the best passage of each section (its link), then the best sections
    sections as (
      select distinct on (m.url, coalesce(m.anchor, ''), m.headings) m.*, ts_rank_cd(m.tsv, q.query) as rank, q.query
      from matched m cross join q
      order by m.url, coalesce(m.anchor, ''), m.headings, rank desc, m.n
    ),
    best as (select * from sections order by rank desc, url, n limit ${f.limit})
    select b.url, p.name, coalesce(b.headings, '{}') as headings, b.anchor, b.n as section, b.rank::float8 as rank,
      replace(replace(ts_headline('simple', search_document(b.text), b.query, ${HEADLINE_OPTIONS}::text), chr(8203), ''),
        ${SNIPPET_STOP + SNIPPET_START}::text, '') as snippet
    from best b join pages p on p.url = b.url
    where p.gone_at is null
    order by b.rank desc, b.url, b.n`;
}

export interface MediaSearchHit {
  url: string;
  platform: string;
  type: string;
  title: string | null;
  author: string | null;
  /** seconds into the media where the chunk holding the words starts; null: a hit in its title or description */
  seconds: number | null;
  snippet: string;
  rank: number;
}

/**
 * Media search over `media_segments` (built where a media item is stored, src/db/media.ts): one
 * index scan, ranked with ts_rank_cd; a hit names the platform and the moment.
 */
export async function searchMedia(sql: Queryable, f: PageSearchFilter): Promise<MediaSearchHit[]> {
  const text = prepareSearchQuery(f.query);
  const source =
    f.sourceId !== undefined
      ? sql`and exists (select 1 from source_media sm where sm.source_id = ${f.sourceId}::int and sm.url = s.url)`
      : sql``;
  return sql<MediaSearchHit[]>`
    with q as materialized (select websearch_to_tsquery('simple', ${text}::text) as query),
    matched as materialized (
      select s.url, s.n, s.offset_ms, s.text, s.tsv from media_segments s
      where s.tsv @@ (select query from q) ${source}
      limit ${SEARCH_CANDIDATES_MAX}
    ),
    best as (
      select m.*, ts_rank_cd(m.tsv, q.query) as rank, q.query from matched m cross join q
      order by rank desc, m.url, m.n limit ${f.limit}
    )
    select b.url, md.platform, md.type, md.title, coalesce(md.author_username, md.author_display_name) as author,
      (b.offset_ms / 1000.0)::float8 as seconds, b.rank::float8 as rank,
      replace(replace(ts_headline('simple', search_document(b.text), b.query, ${HEADLINE_OPTIONS}::text), chr(8203), ''),
        ${SNIPPET_STOP + SNIPPET_START}::text, '') as snippet
    from best b join media md on md.url = b.url
    order by b.rank desc, b.url, b.n`;
}
