/**
 * `batches`: which batches exist, which are in flight, and how many per status. What a poll
 * records on a batch row is in batch-polls.ts; a batch's progress (with its items) in
 * batch-progress.ts.
 */
import { BATCH_IN_FLIGHT_STATUSES, BATCH_TERMINAL_STATUSES, type BatchKind } from '../domain/batches.ts';
import type { BatchMode } from '../domain/sources.ts';
import type { Queryable } from './connection.ts';
import type { Batch } from './schema.ts';

export async function batchExists(sql: Queryable, jobId: string): Promise<boolean> {
  const rows = await sql`select 1 from batches where job_id = ${jobId}`;
  return rows.length > 0;
}

/** Job IDs of the batches in flight (of `sourceIds`, when given), oldest submission first. */
export async function inFlightJobIds(sql: Queryable, sourceIds?: readonly number[]): Promise<string[]> {
  const only = sourceIds === undefined ? null : [...sourceIds];
  const rows = await sql<Pick<Batch, 'jobId'>[]>`
    select job_id as "jobId" from batches
    where status = any(${[...BATCH_IN_FLIGHT_STATUSES]}::text[])
      and (${only}::int[] is null or source_id = any(${only}::int[]))
    order by submitted_at`;
  return rows.map((r) => r.jobId);
}

/** Job IDs of the batches that ended within `withinMs`, the latest end first, at most `limit`. */
export async function recentlyEndedJobIds(sql: Queryable, withinMs: number, limit: number): Promise<string[]> {
  const rows = await sql<Pick<Batch, 'jobId'>[]>`
    select job_id as "jobId" from batches
    where status = any(${[...BATCH_TERMINAL_STATUSES]}::text[]) and terminal_at > now() - make_interval(secs => ${withinMs / 1000})
    order by terminal_at desc limit ${limit}`;
  return rows.map((r) => r.jobId);
}

/** How many batches reached a terminal status within the last `withinMs`. */
export async function recentlyEndedCount(sql: Queryable, withinMs: number): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from batches
    where status = any(${[...BATCH_TERMINAL_STATUSES]}::text[]) and terminal_at > now() - make_interval(secs => ${withinMs / 1000})`;
  return row?.n ?? 0;
}

/**
 * A batch of this source, kind and language still in flight (the first found), or null. A
 * source of null matches batches without one (a replay's).
 */
export async function inFlightBatchOf(
  sql: Queryable,
  of: { sourceId: number | null; kind: BatchKind; lang: string | null },
): Promise<string | null> {
  const [row] = await sql<Pick<Batch, 'jobId'>[]>`
    select job_id as "jobId" from batches
    where source_id is not distinct from ${of.sourceId} and kind = ${of.kind} and lang is not distinct from ${of.lang}
      and mode = 'batch' and status = any(${[...BATCH_IN_FLIGHT_STATUSES]}::text[])
    limit 1`;
  return row?.jobId ?? null;
}

/** Batches per status (only the statuses that have any). */
export async function batchCountsByStatus(sql: Queryable): Promise<Record<string, number>> {
  // batch_counts: kept by triggers on batches (migration 0005), 16 rows per status
  const rows = await sql<{ status: string; n: number }[]>`
    select status, sum(batches)::int as n from batch_counts group by status having sum(batches) > 0`;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** Per kind with batches in flight: how many, and seconds since the oldest of them was submitted (the in-flight index). */
export async function inFlightAgeByKind(
  sql: Queryable,
): Promise<{ kind: BatchKind; batches: number; oldestSeconds: number }[]> {
  return sql<{ kind: BatchKind; batches: number; oldestSeconds: number }[]>`
    select kind, count(*)::int as batches, extract(epoch from now() - min(submitted_at))::float8 as "oldestSeconds"
    from batches where status = any(${[...BATCH_IN_FLIGHT_STATUSES]}::text[])
    group by kind`;
}

/** The estimated cost of every batch recorded. */
export async function creditsEstimatedTotal(sql: Queryable): Promise<number> {
  const [row] = await sql<{ total: number }[]>`
    select coalesce(sum(credits_estimated), 0)::float8 as total from batch_counts`;
  return row?.total ?? 0;
}

/** `batches.kind` and `mode` of a job ID; undefined when the batch is not recorded. */
export async function batchModeOf(
  sql: Queryable,
  jobId: string,
): Promise<{ kind: BatchKind; mode: BatchMode; sourceId: number | null } | undefined> {
  const [row] = await sql<
    { kind: BatchKind; mode: BatchMode; sourceId: number | null }[]
  >`select kind, mode, source_id as "sourceId" from batches where job_id = ${jobId}`;
  return row;
}
