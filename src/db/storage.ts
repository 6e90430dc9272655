/**
 * How much room each of our tables takes (heap, TOAST and indexes), read from the catalog: cheap
 * at any size, so `status`, the overview and `prune` can show it on every call.
 */
import type { Queryable } from './connection.ts';

export interface TableStorage {
  table: string;
  /** the planner's row estimate (`reltuples`, kept by autovacuum/ANALYZE); null before the first */
  rowsEstimate: number | null;
  /** heap + TOAST + indexes, bytes */
  totalBytes: number;
  /** TOAST alone (where large payloads and transcripts live), bytes */
  toastBytes: number;
  /** indexes alone, bytes */
  indexBytes: number;
}

/** Every ordinary table of the current schema, largest first (drizzle's bookkeeping excluded). */
export function tableStorage(sql: Queryable): Promise<TableStorage[]> {
  return sql<TableStorage[]>`
    select c.relname as "table",
      case when c.reltuples < 0 then null else c.reltuples::float8 end as "rowsEstimate",
      pg_total_relation_size(c.oid)::float8 as "totalBytes",
      coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0)::float8 as "toastBytes",
      pg_indexes_size(c.oid)::float8 as "indexBytes"
    from pg_class c
    where c.relkind in ('r', 'p') and c.relnamespace = current_schema()::regnamespace
    order by pg_total_relation_size(c.oid) desc, c.relname`;
}
