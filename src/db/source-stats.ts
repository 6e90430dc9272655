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
  'id' | 'kind' | 'ref' | 'externalId' | 'title' | 'paused' | 'cron' | 'maxVideos' | 'langs' | 'lastSyncedAt' | 'lastError' | 'lastErrorCode' | 'lastErrorAt'
> & {
  /** videos of the source stored in `videos` */
  videos: number;
  /** transcripts (any language) of the source's videos */
  transcripts: number;
};

const COLUMNS = (sql: Queryable) => sql`
  s.id, s.kind, s.ref, s.external_id as "externalId", s.title, s.paused, s.cron, s.max_videos as "maxVideos", s.langs,
  s.last_synced_at as "lastSyncedAt", s.last_error as "lastError", s.last_error_code as "lastErrorCode", s.last_error_at as "lastErrorAt",
  coalesce(st.videos, 0) as videos, coalesce(st.transcripts, 0) as transcripts`;

/** Every source with what is stored of it, by ID. */
export function sourcesWithStats(sql: Queryable): Promise<SourceWithStats[]> {
  return sql<SourceWithStats[]>`
    select ${COLUMNS(sql)} from sources s left join source_stats st on st.source_id = s.id order by s.id`;
}

/** These sources with what is stored of them, by ID (unknown IDs left out). */
export function sourcesWithStatsByIds(sql: Queryable, ids: readonly number[]): Promise<SourceWithStats[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return sql<SourceWithStats[]>`
    select ${COLUMNS(sql)} from sources s left join source_stats st on st.source_id = s.id
    where s.id = any(${[...ids]}::int[]) order by s.id`;
}

/** A schedule and the latest time it fired (null when the expression cannot be read). */
export interface CronDue {
  cron: string;
  dueAt: Date | null;
}

/**
 * Where a source's last successful sync lies against its schedule's latest due time: never
 * synced (0), before it (1), since it or with no due time (2). Sources alike in this, their
 * schedule, pause and error are judged alike by any rule that reads only those: they share a
 * group, numbered by GROUP_KEY (one integer, so that Postgres matches a source to its group by a
 * hash, not by comparing four columns with a row each group could be).
 */
const SYNCED_SIDE = (sql: Queryable) => sql`
  case when s.last_synced_at is null then 0 when s.last_synced_at < d.due_at then 1 else 2 end`;

/**
 * The schedule's place in `dues` (0 for none), then pause, error and side: distinct for distinct
 * groups. Null for a schedule set since `dues` was read: such a source is counted, not listed.
 */
const GROUP_KEY = (sql: Queryable) => sql`
  (coalesce(d.n, case when s.cron is null then 0 end) * 12 + s.paused::int * 6 + (s.last_error is not null)::int * 3 + ${SYNCED_SIDE(sql)})::int`;

const DUE = (sql: Queryable, dues: readonly CronDue[]) => sql`
  select * from unnest(${dues.map((d) => d.cron)}::text[], ${dues.map((d) => d.dueAt?.toISOString() ?? null)}::timestamptz[])
    with ordinality as d(cron, due_at, n)`;

/** The distinct schedules of the sources (a few, whatever the number of sources). */
export async function sourceCrons(sql: Queryable): Promise<string[]> {
  const rows = await sql<{ cron: string }[]>`select distinct cron from sources where cron is not null`;
  return rows.map((r) => r.cron);
}

/** Sources that every attention rule judges alike (see SYNCED_SIDE), counted. */
export interface SourceGroup {
  key: number | null;
  cron: string | null;
  paused: boolean;
  hasError: boolean;
  sources: number;
  /** the last successful sync of one of them: on the same side of the due time as every other's */
  lastSyncedAt: Date | null;
}

/**
 * Every source, grouped: one aggregate in Postgres, so what crosses the wire is a row per group,
 * not per source. Reading the triage of every source (a few bytes each) instead took 4-6 ms at
 * 2 000 sources against 0.7 at 200, most of a status read.
 */
export function sourceGroups(sql: Queryable, dues: readonly CronDue[]): Promise<SourceGroup[]> {
  return sql<SourceGroup[]>`
    with d as (${DUE(sql, dues)})
    select ${GROUP_KEY(sql)} as key, s.cron, s.paused, s.last_error is not null as "hasError",
      count(*)::int as sources, min(s.last_synced_at) as "lastSyncedAt"
    from sources s left join d on d.cron = s.cron
    group by 1, 2, 3, 4`;
}

/**
 * One page of the sources with what is stored of them, ordered by the rank given to their group
 * (`ranks`: group key to rank), then by ID. A source whose group has no rank (it changed since
 * the groups were read) is left out.
 */
export function sourcesWithStatsRanked(
  sql: Queryable,
  dues: readonly CronDue[],
  ranks: ReadonlyMap<number, number>,
  page: { limit: number; offset: number },
): Promise<(SourceWithStats & { key: number })[]> {
  return sql<(SourceWithStats & { key: number })[]>`
    with d as (${DUE(sql, dues)}),
    g as (select * from unnest(${[...ranks.keys()]}::int[], ${[...ranks.values()]}::int[]) as g(key, rank)),
    -- ranked on narrow rows; only the page's are widened and joined to their counts
    page as (
      select k.id, k.key, g.rank
      from (select s.id, ${GROUP_KEY(sql)} as key from sources s left join d on d.cron = s.cron) k
      join g on g.key = k.key
      order by g.rank, k.id
      limit ${page.limit} offset ${page.offset}
    )
    select ${COLUMNS(sql)}, page.key
    from page join sources s on s.id = page.id left join source_stats st on st.source_id = s.id
    order by page.rank, page.id`;
}
