/**
 * How long sources have gone without a successful sync, for /metrics, read bounded whatever the
 * number of sources: the N stalest (an index scan of `sources_last_synced_idx`, a limit) and one
 * aggregate per kind and state. One series per source was 2.41x the scrape time at 10x the sources
 * (bench:scale, 200 to 2 000) and grows a monitoring system's series with every source added.
 */
import type { Queryable } from './connection.ts';
import type { Source } from './schema.ts';

export type SourceAge = Pick<Source, 'id' | 'kind' | 'cron'> & {
  /** since the last successful sync */
  seconds: number;
};

/**
 * The `limit` unpaused sources longest without a successful sync, the stalest first (sources
 * never synced have no age and are left out). A paused source is not synced on purpose: it is
 * left out so that paused sources cannot fill the list ahead of one that should be syncing.
 */
export function stalestSources(sql: Queryable, limit: number): Promise<SourceAge[]> {
  return sql<SourceAge[]>`
    select id, kind, cron, extract(epoch from now() - last_synced_at)::float8 as seconds
    from sources where last_synced_at is not null and not paused
    order by last_synced_at, id limit ${limit}`;
}

export interface SourceSyncCount extends Pick<Source, 'kind' | 'paused'> {
  neverSynced: boolean;
  sources: number;
  /** since the least recent successful sync of the group; null for a group never synced */
  maxSeconds: number | null;
}

/** Sources by kind, paused or not, and synced or never: one aggregate over `sources`. */
export function sourceSyncCounts(sql: Queryable): Promise<SourceSyncCount[]> {
  return sql<SourceSyncCount[]>`
    select kind, paused, last_synced_at is null as "neverSynced", count(*)::int as sources,
      extract(epoch from now() - min(last_synced_at))::float8 as "maxSeconds"
    from sources group by kind, paused, last_synced_at is null`;
}
