/**
 * `events`: change events (types and data: src/domain/events.ts). Producers call `recordEvent` or
 * `recordEvents` with the transaction that makes the change, so an event exists exactly when its
 * change committed; the table's trigger then notifies `videosite_ingest_events` (delivered at
 * commit). Readers page by id.
 */
import type { EventType } from '../domain/events.ts';
import type { Queryable } from './connection.ts';

export interface NewEvent {
  type: EventType;
  /** ids, source ids, changed fields: never a whole transcript */
  data: Record<string, unknown>;
  sourceId?: number | null | undefined;
  videoId?: string | null | undefined;
}

/** An event as readers and webhooks see it. */
export interface EventRow {
  id: number;
  type: EventType;
  occurredAt: Date;
  data: Record<string, unknown>;
  sourceId: number | null;
  videoId: string | null;
}

/** Write one event in `tx` (the caller's transaction); returns its id. */
export async function recordEvent(tx: Queryable, e: NewEvent): Promise<number> {
  const [id] = await recordEvents(tx, [e]);
  return id!;
}

/** Write many events in one statement, in order (their ids increase in the order given); returns the ids. */
export async function recordEvents(tx: Queryable, rows: readonly NewEvent[]): Promise<number[]> {
  if (rows.length === 0) return [];
  const inserted = await tx<{ id: number }[]>`
    insert into events (type, data, source_id, video_id)
    select e->>'type', e->'data', (e->>'sourceId')::int, e->>'videoId'
    from jsonb_array_elements(${JSON.stringify(rows.map((r) => ({ type: r.type, data: r.data, sourceId: r.sourceId ?? null, videoId: r.videoId ?? null })))}::text::jsonb)
      with ordinality as r(e, n)
    order by n
    returning id::float8 as id`;
  return inserted.map((r) => r.id);
}

export interface EventFilter {
  /** events with an id above this */
  afterId: number;
  /** only these types; undefined or empty: all */
  types?: readonly EventType[] | undefined;
  sourceId?: number | undefined;
  /** only events that occurred at or after this instant */
  since?: Date | undefined;
  limit: number;
}

/** Events after `afterId` matching the filter, in id order. */
export async function readEvents(sql: Queryable, f: EventFilter): Promise<EventRow[]> {
  // each filter is in the statement only when given: an `is null or` would keep a prepared
  // statement's generic plan off the (type, id) and (source_id, id) indexes
  const types = f.types && f.types.length > 0 ? sql`and type = any(${[...f.types]}::text[])` : sql``;
  const source = f.sourceId !== undefined ? sql`and source_id = ${f.sourceId}::int` : sql``;
  const since = f.since !== undefined ? sql`and occurred_at >= ${f.since}` : sql``;
  return sql<EventRow[]>`
    select id::float8 as id, type, occurred_at as "occurredAt", data, source_id as "sourceId", video_id as "videoId"
    from events
    where id > ${f.afterId} ${types} ${source} ${since}
    order by id
    limit ${f.limit}`;
}

/** The `limit` newest events, the newest first (the overview's recent changes). */
export async function latestEvents(sql: Queryable, limit: number): Promise<EventRow[]> {
  return sql<EventRow[]>`
    select id::float8 as id, type, occurred_at as "occurredAt", data, source_id as "sourceId", video_id as "videoId"
    from events order by id desc limit ${limit}`;
}

export interface LatestEventsFilter {
  /** only these types (not empty) */
  types: readonly EventType[];
  /** only events that occurred at or after this instant */
  since?: Date | undefined;
  sourceId?: number | undefined;
  limit: number;
}

/** The `limit` newest events of `types` (since `since`), the newest first, through the (type, id) index. */
export async function latestEventsOf(sql: Queryable, f: LatestEventsFilter): Promise<EventRow[]> {
  const since = f.since !== undefined ? sql`and occurred_at >= ${f.since}` : sql``;
  const source = f.sourceId !== undefined ? sql`and source_id = ${f.sourceId}::int` : sql``;
  return sql<EventRow[]>`
    select id::float8 as id, type, occurred_at as "occurredAt", data, source_id as "sourceId", video_id as "videoId"
    from events
    where type = any(${[...f.types]}::text[]) ${since} ${source}
    order by id desc
    limit ${f.limit}`;
}

/** The highest event id (0 before the first event). */
export async function lastEventId(sql: Queryable): Promise<number> {
  const [row] = await sql<{ id: number }[]>`select coalesce(max(id), 0)::float8 as id from events`;
  return row!.id;
}
