/**
 * A website's crawls as `batches` rows (mode `crawl`): the one in flight, the latest completed,
 * the row lock a crawl's end is recorded under, and the sync run its page charges are added to.
 */
import type { Queryable } from './connection.ts';

/** The source's crawl still in flight, if any. */
export async function crawlInFlight(sql: Queryable, sourceId: number): Promise<string | undefined> {
  const [row] = await sql<{ jobId: string }[]>`
    select job_id as "jobId" from batches where source_id = ${sourceId} and mode = 'crawl' and terminal_at is null limit 1`;
  return row?.jobId;
}

/** The source's latest crawl completed within `withinMs`, if any. */
export async function crawlCompletedWithin(
  sql: Queryable,
  sourceId: number,
  withinMs: number,
): Promise<string | undefined> {
  const [row] = await sql<{ jobId: string }[]>`
    select job_id as "jobId" from batches
    where source_id = ${sourceId} and mode = 'crawl' and status = 'completed'
      and terminal_at > now() - make_interval(secs => ${withinMs / 1000})
    order by terminal_at desc limit 1`;
  return row?.jobId;
}

/** Locks the batch row; true while it is not terminal (only then is its end recorded). */
export async function lockBatchInFlight(tx: Queryable, jobId: string): Promise<boolean> {
  const [row] = await tx<{ terminal: boolean }[]>`
    select terminal_at is not null as terminal from batches where job_id = ${jobId} for update`;
  return row !== undefined && !row.terminal;
}

/** The sync run that submitted `jobId`, if any. */
export async function syncRunOfJob(tx: Queryable, jobId: string): Promise<number | undefined> {
  const [run] = await tx<{ id: number }[]>`
    select id from sync_runs where ${jobId}::text = any(job_ids) order by id desc limit 1`;
  return run?.id;
}

/** Credits billed after the run ended (a crawl's pages) added to its total. */
export async function addRunCreditsBilled(tx: Queryable, runId: number, credits: number): Promise<void> {
  await tx`update sync_runs set credits_billed = coalesce(credits_billed, 0) + ${credits} where id = ${runId}`;
}
