/**
 * What the admin server's drill-down pages read (src/admin/source-page.ts, batch-page.ts,
 * item-page.ts, batches-page.ts, web-page.ts): one source with its settings, one batch, one item
 * with its raw payload, one web page with its sources, versions, sections and events, and pages
 * of a source's batches, sync runs and web pages, of a batch's items and of every batch.
 *
 * Every statement is bounded by the page it serves, not by the history kept: lists walk an index
 * in their order and stop at the page (`batches_source_id_idx`, `sync_runs_source_started_idx`,
 * `batch_items` primary key, `batches_submitted_at_idx`); counts come from the counters the
 * triggers of migrations/0005 keep (`batch_item_counts` here; `batch_counts` through
 * src/db/batches.ts) or from an index-only count of one source's rows; the latest error codes of
 * a source read only its own videos.
 */
import type { BatchKind, BatchStatus } from '../domain/batches.ts';
import type { ItemState, QuarantineReason } from '../domain/items.ts';
import type { SyncRunOutcome } from '../domain/syncs.ts';
import { pageSections } from '../domain/pages.ts';
import type { Queryable } from './connection.ts';
import { pageTotals } from './pages.ts';
import type { Batch, Source } from './schema.ts';

/** `limit` rows from `offset`: one page of a list. */
export interface PageWindow {
  limit: number;
  offset: number;
}

/** A source with every setting a person may want to check, and what is stored of it. */
export type SourceDetail = Pick<
  Source,
  | 'id'
  | 'kind'
  | 'ref'
  | 'externalId'
  | 'title'
  | 'cron'
  | 'langs'
  | 'maxVideos'
  | 'textOnly'
  | 'include'
  | 'paused'
  | 'maxCreditsPerDay'
  | 'generateMissing'
  | 'maxGenerateMinutes'
  | 'translateLangs'
  | 'maxTranslateMinutes'
  | 'lastSyncedAt'
  | 'lastError'
  | 'lastErrorCode'
  | 'lastErrorAt'
  | 'createdAt'
  | 'updatedAt'
> & {
  /** videos of the source stored in `videos` (`source_stats`) */
  videos: number;
  /** transcripts (any language) of the source's videos (`source_stats`) */
  transcripts: number;
  /** web pages the source holds now (not gone there) */
  pages: number;
};

/** One source by ID, or undefined. */
export async function sourceDetail(sql: Queryable, id: number): Promise<SourceDetail | undefined> {
  const [row] = await sql<SourceDetail[]>`
    select s.id, s.kind, s.ref, s.external_id as "externalId", s.title, s.cron, s.langs, s.max_videos as "maxVideos",
      s.text_only as "textOnly", s.include, s.paused, s.max_credits_per_day as "maxCreditsPerDay",
      s.generate_missing as "generateMissing", s.max_generate_minutes as "maxGenerateMinutes",
      s.translate_langs as "translateLangs", s.max_translate_minutes as "maxTranslateMinutes",
      s.last_synced_at as "lastSyncedAt", s.last_error as "lastError", s.last_error_code as "lastErrorCode",
      s.last_error_at as "lastErrorAt", s.created_at as "createdAt", s.updated_at as "updatedAt",
      coalesce(st.videos, 0) as videos, coalesce(st.transcripts, 0) as transcripts,
      (select count(*)::int from source_pages sp
       where sp.source_id = s.id and sp.gone_at is null and sp.last_seen_at > '-infinity'::timestamptz) as pages
    from sources s left join source_stats st on st.source_id = s.id
    where s.id = ${id}`;
  return row;
}

/** How many batches the source has: an index-only count of `batches_source_id_idx`. */
export async function countSourceBatches(sql: Queryable, sourceId: number): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from batches where source_id = ${sourceId}`;
  return row?.n ?? 0;
}

/**
 * The source's batches, newest submission first: `batches_source_id_idx` (source_id, submitted_at)
 * walked backwards to the page (0.7 ms; the 8th page of 402 batches 12.7 ms, among 100 000).
 */
export async function sourceBatchJobIds(sql: Queryable, sourceId: number, w: PageWindow): Promise<string[]> {
  const rows = await sql<Pick<Batch, 'jobId'>[]>`
    select job_id as "jobId" from batches where source_id = ${sourceId}
    order by submitted_at desc, job_id desc limit ${w.limit} offset ${w.offset}`;
  return rows.map((r) => r.jobId);
}

/**
 * Every batch (or those of one status), newest submission first: `batches_submitted_at_idx`
 * walked backwards to the page, filtered by status when asked (0.05 ms for a page of 100 000
 * batches; 0.8 ms for `failed`, 1 batch in 97). No index leads with a terminal status, so a rare
 * one walks far (none of 100 000: a scan, 78 ms); callers skip the read when the counters say
 * there is none.
 */
export async function batchJobIds(sql: Queryable, o: PageWindow & { status: BatchStatus | null }): Promise<string[]> {
  const rows = await sql<Pick<Batch, 'jobId'>[]>`
    select job_id as "jobId" from batches where ${o.status}::text is null or status = ${o.status}
    order by submitted_at desc, job_id desc limit ${o.limit} offset ${o.offset}`;
  return rows.map((r) => r.jobId);
}

/** A latest error code of a source's videos: how many carry it now, and some of them. */
export interface SourceLatestErrorCode {
  kind: BatchKind;
  /** '' for metadata and the default transcript language */
  lang: string;
  errorCode: string;
  /** the state the code left the videos in */
  state: ItemState;
  /** videos whose latest outcome of this kind and language carries the code */
  videos: number;
  /** at most the `videosPerCode` asked for, the latest outcome first: each video and the batch of that outcome */
  shown: { videoId: string; jobId: string | null }[];
}

/**
 * The error codes the source's videos carry as their latest outcome (metadata, or a transcript in
 * a language the source asks for; another source's language is not its error), by kind, language,
 * code and state, the most first, each with up to `videosPerCode` videos. What holds now: a video
 * re-submitted and stored since is not counted (every item ever received stays counted in
 * `item_counts`: history). The source's `source_videos` rows and a primary-key probe into
 * `video_sync` each, as `sourceOutcomes` (src/db/video-outcomes.ts): the cost follows the
 * source's size, not the history.
 */
export async function sourceLatestErrorCodes(
  sql: Queryable,
  o: { sourceId: number; videosPerCode: number },
): Promise<SourceLatestErrorCode[]> {
  const rows = await sql<(Omit<SourceLatestErrorCode, 'shown'> & { videoIds: string[]; jobIds: (string | null)[] })[]>`
    select s.kind, s.lang, s.last_error_code as "errorCode", s.last_state as state, count(*)::float8 as videos,
      (array_agg(s.video_id order by s.updated_at desc, s.video_id))[1:${o.videosPerCode}::int] as "videoIds",
      (array_agg(s.last_job_id order by s.updated_at desc, s.video_id))[1:${o.videosPerCode}::int] as "jobIds"
    from source_videos sv join video_sync s on s.video_id = sv.video_id
    join sources src on src.id = sv.source_id
    where sv.source_id = ${o.sourceId} and s.last_error_code is not null and s.last_state <> 'processing'
      and (s.kind = 'video' or s.lang = any(case when cardinality(src.langs) = 0 then array['']::text[] else src.langs end))
    group by 1, 2, 3, 4
    order by videos desc, 3, 1 desc, 2, 4`;
  return rows.map(({ videoIds, jobIds, ...r }) => ({
    ...r,
    shown: videoIds.map((videoId, i) => ({ videoId, jobId: jobIds[i] ?? null })),
  }));
}

/** A sync run as the source page lists it. */
export interface SyncRunRow {
  id: number;
  startedAt: Date;
  finishedAt: Date | null;
  outcome: SyncRunOutcome | null;
  detail: string | null;
  videosListed: number | null;
  videosSubmitted: number | null;
  creditsEstimated: number | null;
  listingCredits: number | null;
  jobIds: string[] | null;
}

/** How many sync runs the source has (an index-only count of `sync_runs_source_started_idx`; retention prunes old runs). */
export async function countSourceSyncRuns(sql: Queryable, sourceId: number): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from sync_runs where source_id = ${sourceId}`;
  return row?.n ?? 0;
}

/** The source's sync runs, the latest first (`sync_runs_source_started_idx` walked backwards to the page). */
export async function sourceSyncRuns(sql: Queryable, sourceId: number, w: PageWindow): Promise<SyncRunRow[]> {
  return sql<SyncRunRow[]>`
    select id::float8 as id, started_at as "startedAt", finished_at as "finishedAt", outcome, detail,
      videos_listed as "videosListed", videos_submitted as "videosSubmitted", credits_estimated as "creditsEstimated",
      listing_credits as "listingCredits", job_ids as "jobIds"
    from sync_runs where source_id = ${sourceId}
    order by started_at desc, id desc limit ${w.limit} offset ${w.offset}`;
}

/**
 * What the batch page shows beyond a batch's progress (src/db/batch-progress.ts, which has the
 * rest of the row: its `failed` is the count of failed items, not the upstream's `failed`).
 */
export type BatchDetail = Pick<
  Batch,
  | 'jobId'
  | 'sourceId'
  | 'mode'
  | 'textOnly'
  | 'replayOf'
  | 'lastPolledAt'
  | 'nextPollAt'
  | 'terminalAt'
  | 'pollFailures'
  | 'updatedAt'
>;

export async function batchDetail(sql: Queryable, jobId: string): Promise<BatchDetail | undefined> {
  const [row] = await sql<BatchDetail[]>`
    select job_id as "jobId", source_id as "sourceId", mode, text_only as "textOnly", replay_of as "replayOf",
      last_polled_at as "lastPolledAt", next_poll_at as "nextPollAt", terminal_at as "terminalAt",
      poll_failures as "pollFailures", updated_at as "updatedAt"
    from batches where job_id = ${jobId}`;
  return row;
}

/** An item as the batch page lists it. */
export interface BatchItemRow {
  videoId: string;
  state: ItemState;
  errorCode: string | null;
  reason: string | null;
  reasonCode: QuarantineReason | null;
  landedAt: Date | null;
  sunkAt: Date | null;
  /** the batch that re-submitted this retryable item */
  resubmittedIn: string | null;
  payloadPrunedAt: Date | null;
}

/** A page of the batch's items by video ID (the primary key's order: an index range scan to the page). */
export async function batchItemsPage(sql: Queryable, jobId: string, w: PageWindow): Promise<BatchItemRow[]> {
  return sql<BatchItemRow[]>`
    select video_id as "videoId", state, error_code as "errorCode", reason, reason_code as "reasonCode",
      landed_at as "landedAt", sunk_at as "sunkAt", resubmitted_in as "resubmittedIn", payload_pruned_at as "payloadPrunedAt"
    from batch_items where job_id = ${jobId}
    order by video_id limit ${w.limit} offset ${w.offset}`;
}

/** One item with (the start of) its raw copy. */
export interface BatchItemView extends BatchItemRow {
  jobId: string;
  updatedAt: Date;
  /**
   * how the raw copy is kept: `json` (`payload`, shown pretty-printed by Postgres, numbers and
   * strings exactly as stored), `text` (`payload_raw`: what jsonb cannot hold, or an oversized
   * item's first bytes), or null (none: pruned, or never kept)
   */
  form: 'json' | 'text' | null;
  /** the first `maxChars` characters of the raw copy (pretty-printed when `json`) */
  text: string | null;
  /** the whole raw copy's size in bytes, as `text` is built */
  textBytes: number | null;
  /** kept when retention dropped the payload: sha256 (hex) and size of the raw item's text */
  payloadSha256: string | null;
  payloadBytes: number | null;
}

/**
 * One item, with at most `maxChars` characters of its raw copy: Postgres pretty-prints and cuts
 * it, so a payload of megabytes does not cross the wire whole (ITEM_MAX_BYTES is 8 MiB).
 */
export async function batchItemView(
  sql: Queryable,
  jobId: string,
  videoId: string,
  maxChars: number,
): Promise<BatchItemView | undefined> {
  const [row] = await sql<BatchItemView[]>`
    select i.job_id as "jobId", i.video_id as "videoId", i.state, i.error_code as "errorCode", i.reason,
      i.reason_code as "reasonCode", i.landed_at as "landedAt", i.sunk_at as "sunkAt", i.updated_at as "updatedAt",
      i.resubmitted_in as "resubmittedIn", i.payload_pruned_at as "payloadPrunedAt",
      i.payload_sha256 as "payloadSha256", i.payload_bytes as "payloadBytes",
      case when i.payload is not null then 'json' when i.payload_raw is not null then 'text' end as form,
      left(t.text, ${maxChars}) as text, octet_length(t.text) as "textBytes"
    from batch_items i
    -- offset 0: built once, not once per use
    cross join lateral (select coalesce(jsonb_pretty(i.payload), i.payload_raw) as text offset 0) t
    where i.job_id = ${jobId} and i.video_id = ${videoId}`;
  return row;
}

/** A page as a web source's page lists it. */
export interface SourcePageRow {
  url: string;
  /** the page's name (its title), null when the page is not stored yet (a `pages` source's registered URL) */
  name: string | null;
  /** when this source last found it; null: never (registered, not scraped yet) */
  lastSeenAt: Date | null;
  /** when this source stopped finding it; null: it holds it now */
  goneAt: Date | null;
}

/** How many pages the source has ever held, gone ones included: an index-only count of `source_pages`' primary key. */
export async function countSourcePageRows(sql: Queryable, sourceId: number): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from source_pages where source_id = ${sourceId}`;
  return row?.n ?? 0;
}

/** A page of the source's pages by URL (`source_pages` primary key (source_id, url) to the page, a `pages` probe each). */
export async function sourcePagesPage(sql: Queryable, sourceId: number, w: PageWindow): Promise<SourcePageRow[]> {
  return sql<SourcePageRow[]>`
    select sp.url, p.name,
      case when sp.last_seen_at = '-infinity'::timestamptz then null else sp.last_seen_at end as "lastSeenAt",
      sp.gone_at as "goneAt"
    from source_pages sp left join pages p on p.url = sp.url
    where sp.source_id = ${sourceId}
    order by sp.url limit ${w.limit} offset ${w.offset}`;
}

/** A stored web page, without its content (its sections show it). */
export interface PageDetail {
  url: string;
  name: string | null;
  description: string | null;
  ogUrl: string | null;
  countCharacters: number | null;
  contentSha256: string;
  /** the content's length in characters */
  contentChars: number;
  firstSeenAt: Date;
  lastSeenAt: Date;
  updatedAt: Date;
  goneAt: Date | null;
  /** the batch (crawl or scrape) that stored the current version */
  jobId: string | null;
  sourceId: number | null;
}

/** One page by URL (its primary key), or undefined. */
export async function pageDetail(sql: Queryable, url: string): Promise<PageDetail | undefined> {
  const [row] = await sql<PageDetail[]>`
    select url, name, description, og_url as "ogUrl", count_characters::float8 as "countCharacters",
      content_sha256 as "contentSha256", char_length(content) as "contentChars",
      first_seen_at as "firstSeenAt", last_seen_at as "lastSeenAt", updated_at as "updatedAt",
      gone_at as "goneAt", job_id as "jobId", source_id as "sourceId"
    from pages where url = ${url}`;
  return row;
}

/** A source that holds (or held) a page. */
export interface PageSourceRow {
  sourceId: number;
  kind: string;
  title: string | null;
  externalId: string;
  firstSeenAt: Date;
  lastSeenAt: Date | null;
  goneAt: Date | null;
}

/** The sources that found a page (`source_pages_url_idx`), by source ID. */
export async function pageSources(sql: Queryable, url: string): Promise<PageSourceRow[]> {
  return sql<PageSourceRow[]>`
    select sp.source_id as "sourceId", s.kind, s.title, s.external_id as "externalId",
      sp.first_seen_at as "firstSeenAt",
      case when sp.last_seen_at = '-infinity'::timestamptz then null else sp.last_seen_at end as "lastSeenAt",
      sp.gone_at as "goneAt"
    from source_pages sp join sources s on s.id = sp.source_id
    where sp.url = ${url}
    order by sp.source_id`;
}

/** A stored version of a page. */
export interface PageVersionRow {
  contentSha256: string;
  name: string | null;
  countCharacters: number | null;
  storedAt: Date;
  jobId: string | null;
}

/** How many versions a page has (the primary key's range of the URL). */
export async function countPageVersions(sql: Queryable, url: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from page_versions where url = ${url}`;
  return row?.n ?? 0;
}

/** A page's versions, the newest first (the primary key's range of the URL, sorted: a page has few). */
export async function pageVersionsPage(sql: Queryable, url: string, w: PageWindow): Promise<PageVersionRow[]> {
  return sql<PageVersionRow[]>`
    select content_sha256 as "contentSha256", name, count_characters::float8 as "countCharacters",
      stored_at as "storedAt", job_id as "jobId"
    from page_versions where url = ${url}
    order by stored_at desc, content_sha256 limit ${w.limit} offset ${w.offset}`;
}

/** A section of a page (src/domain/pages.ts `pageSections`), its text cut to its start. */
export interface PageSectionRow {
  n: number;
  headings: string[];
  anchor: string | null;
  /** the first `chars` characters of its text */
  text: string;
  /** the whole text's length in characters */
  chars: number;
}

/**
 * A page of a page's sections in their order, each text cut to `chars`, and how many it has: cut
 * from its stored content as the search indexer cuts it (its passages hold the text again, in
 * parts; the sections are no longer stored apart). One read of the page's content.
 */
export async function pageSectionsPage(
  sql: Queryable,
  url: string,
  o: PageWindow & { chars: number },
): Promise<{ total: number; rows: PageSectionRow[] }> {
  const [page] = await sql<{ content: string }[]>`select content from pages where url = ${url}`;
  const sections = page === undefined ? [] : pageSections(page.content);
  return {
    total: sections.length,
    rows: sections.slice(o.offset, o.offset + o.limit).map((s) => ({
      n: s.n,
      headings: s.headings,
      anchor: s.anchor,
      text: [...s.text].slice(0, o.chars).join(''),
      chars: [...s.text].length,
    })),
  };
}

/** An event about a page. */
export interface PageEventRow {
  id: number;
  type: string;
  occurredAt: Date;
  sourceId: number | null;
  jobId: string | null;
  sha256: string | null;
  previousSha256: string | null;
}

/**
 * The latest `limit` `page.*` events of a URL. No index holds an event's URL (`data->>'url'`):
 * `events_type_id_idx` is walked backwards for the four page types and filtered, so the cost
 * follows the page events kept (retention prunes them), bounded by the page's statement timeout.
 */
export async function pageEvents(sql: Queryable, url: string, limit: number): Promise<PageEventRow[]> {
  return sql<PageEventRow[]>`
    select id::float8 as id, type, occurred_at as "occurredAt", source_id as "sourceId",
      data->>'jobId' as "jobId", data->>'sha256' as sha256, data->>'previousSha256' as "previousSha256"
    from events
    where type in ('page.added', 'page.changed', 'page.gone', 'page.returned') and data->>'url' = ${url}
    order by id desc limit ${limit}`;
}

/** Pages stored, and of them those gone (no source finds them any more). */
export interface PageCounts {
  stored: number;
  gone: number;
}

/** The overview's page counts: the counters of `page_counts` (src/db/pages.ts pageTotals). */
export async function pageCounts(sql: Queryable): Promise<PageCounts> {
  const { stored, gone } = await pageTotals(sql);
  return { stored, gone };
}
