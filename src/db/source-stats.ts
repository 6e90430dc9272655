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

/** What tells whether a source needs a person's attention, for every source (a few bytes each). */
export type SourceTriage = Pick<Source, 'id' | 'paused' | 'cron' | 'lastSyncedAt'> & { hasError: boolean };

export function sourceTriage(sql: Queryable): Promise<SourceTriage[]> {
  return sql<SourceTriage[]>`
    select id, paused, cron, last_synced_at as "lastSyncedAt", last_error is not null as "hasError"
    from sources order by id`;
}
