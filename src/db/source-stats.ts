/**
 * Sources with what is stored of them, read from `source_stats` (kept by the triggers of
 * migrations/0005 on `videos`, `transcripts` and `source_videos`) instead of counted per read:
 * at 2 000 sources the counts took 2.7 s, a probe into `videos` and `transcripts` per video of
 * every source; this is one row per source.
 */
import type { Queryable } from './connection.ts';
import type { Source } from './schema.ts';

export type SourceWithStats = Pick<
  Source,
  | 'id'
  | 'kind'
  | 'ref'
  | 'externalId'
  | 'title'
  | 'paused'
  | 'cron'
  | 'maxVideos'
  | 'langs'
  | 'lastSyncedAt'
  | 'lastError'
  | 'lastErrorCode'
  | 'lastErrorAt'
> & {
  /** videos of the source stored in `videos` */
  videos: number;
  /** transcripts (any language) of the source's videos */
  transcripts: number;
  /** web pages the source holds now (found by its latest crawl or scrape, not gone) */
  pages: number;
  /** media items of the source stored (a `media` source's; its video-platform URLs count as videos) */
  media: number;
};

/** A web source's pages stored and not gone there (0 for other kinds, at the cost of an index probe). */
const PAGES = (sql: Queryable) => sql`
  (select count(*)::int from source_pages sp
   where sp.source_id = s.id and sp.gone_at is null and sp.last_seen_at > '-infinity'::timestamptz) as pages,
  (select count(*)::int from source_media sm join media m on m.url = sm.url
   where sm.source_id = s.id and m.type <> 'unavailable') as media`;

const COLUMNS = (sql: Queryable) => sql`
  s.id, s.kind, s.ref, s.external_id as "externalId", s.title, s.paused, s.cron, s.max_videos as "maxVideos", s.langs,
  s.last_synced_at as "lastSyncedAt", s.last_error as "lastError", s.last_error_code as "lastErrorCode", s.last_error_at as "lastErrorAt",
  coalesce(st.videos, 0) as videos, coalesce(st.transcripts, 0) as transcripts, ${PAGES(sql)}`;

/** Every source with what is stored of it, by ID. */
export function sourcesWithStats(sql: Queryable): Promise<SourceWithStats[]> {
  return sql<SourceWithStats[]>`
    select ${COLUMNS(sql)} from sources s left join source_stats st on st.source_id = s.id order by s.id`;
}

/** These sources with what is stored of them, by ID (unknown IDs left out). */
export function sourcesWithStatsByIds(sql: Queryable, ids: readonly number[]): Promise<SourceWithStats[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return sql<SourceWithStats[]>`
    select ${PAGE_COLUMNS(sql)} from sources s where s.id = any(${[...ids]}::int[]) order by s.id`;
}

/**
 * Sources alike in schedule, pause and error, counted, with the range of their last successful
 * syncs: one pass over `sources` with a plain aggregate (no join, no per-row expression beyond
 * the key), whose few rows tell the caller every count it shows and which sources need
 * attention. Where a bucket's syncs lie on both sides of its schedule's due time,
 * `countSyncedBefore` splits it.
 */
export interface SourceBucket {
  cron: string | null;
  paused: boolean;
  hasError: boolean;
  sources: number;
  neverSynced: number;
  /** oldest and newest last successful sync of the bucket's sources; null when none synced */
  oldestSync: Date | null;
  newestSync: Date | null;
}

export function sourceBuckets(sql: Queryable): Promise<SourceBucket[]> {
  return sql<SourceBucket[]>`
    select cron, paused, last_error is not null as "hasError", count(*)::int as sources,
      count(*) filter (where last_synced_at is null)::int as "neverSynced",
      min(last_synced_at) as "oldestSync", max(last_synced_at) as "newestSync"
    from sources group by 1, 2, 3`;
}

/** Where a source's last successful sync lies: never, before `dueAt`, at or after it (or any time, without `dueAt`). */
export type SyncedSide = 'never' | 'before' | 'after';

/** Sources of one bucket on one side of a due time. */
export interface SourceGroupRef {
  cron: string | null;
  paused: boolean;
  hasError: boolean;
  side: SyncedSide;
  /** the due time `before` and `after` are judged against; null: `after` is every synced source */
  dueAt: Date | null;
}

const inGroup = (sql: Queryable, g: SourceGroupRef) => {
  const side =
    g.side === 'never'
      ? sql`s.last_synced_at is null`
      : g.side === 'before'
        ? sql`s.last_synced_at < ${g.dueAt}`
        : g.dueAt === null
          ? sql`s.last_synced_at is not null`
          : sql`s.last_synced_at >= ${g.dueAt}`;
  return sql`(s.cron is not distinct from ${g.cron}::text and s.paused = ${g.paused} and (s.last_error is not null) = ${g.hasError} and ${side})`;
};

/** How many of a bucket's sources last synced before `dueAt` (only asked of a bucket whose syncs straddle it). */
export async function countSyncedBefore(
  sql: Queryable,
  g: Omit<SourceGroupRef, 'side' | 'dueAt'>,
  dueAt: Date,
): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from sources s where ${inGroup(sql, { ...g, side: 'before', dueAt })}`;
  return row?.n ?? 0;
}

/**
 * The sources of any of `groups`, with what is stored of them, by ID, one page of them. Walking
 * the primary key and stopping at the page's end, a page of the usual case (most sources fine,
 * a few needing attention) reads about as many rows as it shows, whatever the number of sources.
 */
export function sourcesInGroups(
  sql: Queryable,
  groups: readonly SourceGroupRef[],
  page: { limit: number; offset: number },
): Promise<SourceWithStats[]> {
  if (groups.length === 0 || page.limit <= 0) return Promise.resolve([]);
  const where = groups.map((g) => inGroup(sql, g)).reduce((a, b) => sql`${a} or ${b}`);
  return sql<SourceWithStats[]>`
    select ${PAGE_COLUMNS(sql)} from sources s where ${where}
    order by s.id limit ${page.limit} offset ${page.offset}`;
}

/**
 * COLUMNS for a page of a few rows: each row's counts by a probe of `source_stats`. Joined as a
 * table, Postgres hashed all of `source_stats` (and, joining the page to `sources`, all of
 * `sources` too: the lateral `offset 0` keeps that a probe per row): 1.2 ms of a 5 ms read at
 * 2 000 sources, 10 times less at 200.
 */
const PAGE_COLUMNS = (sql: Queryable) => sql`
  s.id, s.kind, s.ref, s.external_id as "externalId", s.title, s.paused, s.cron, s.max_videos as "maxVideos", s.langs,
  s.last_synced_at as "lastSyncedAt", s.last_error as "lastError", s.last_error_code as "lastErrorCode", s.last_error_at as "lastErrorAt",
  coalesce((select st.videos from source_stats st where st.source_id = s.id), 0) as videos,
  coalesce((select st.transcripts from source_stats st where st.source_id = s.id), 0) as transcripts, ${PAGES(sql)}`;
