/** `sync_runs`: one row per sync of a source that got past its lock, with what it did. */
import type { Queryable } from './connection.ts';
import type { SyncRun } from './schema.ts';

/** A sync starts; returns the run's ID. */
export async function startSyncRun(sql: Queryable, sourceId: number): Promise<number> {
  const [row] = await sql<Pick<SyncRun, 'id'>[]>`insert into sync_runs (source_id) values (${sourceId}) returning id`;
  return Number(row!.id);
}

/** What a finished run did. */
export type SyncRunFigures = Pick<SyncRun, 'videosListed' | 'videosSubmitted' | 'creditsEstimated' | 'listingCredits' | 'detail'> & {
  jobIds: string[];
};

export async function finishSyncRun(sql: Queryable, runId: number, outcome: NonNullable<SyncRun['outcome']>, r: SyncRunFigures): Promise<void> {
  await sql`
    update sync_runs set finished_at = now(), outcome = ${outcome}, detail = ${r.detail},
      videos_listed = ${r.videosListed}, videos_submitted = ${r.videosSubmitted},
      credits_estimated = ${r.creditsEstimated}, listing_credits = ${r.listingCredits}, job_ids = ${r.jobIds}
    where id = ${runId}`;
}

/**
 * What the run's listing cost, recorded as soon as it is spent (not only when the run ends): the
 * daily budgets count it, and so do checks of other syncs running meanwhile.
 */
export async function recordListingCredits(sql: Queryable, runId: number, credits: number): Promise<void> {
  await sql`update sync_runs set listing_credits = ${credits} where id = ${runId}`;
}

/** What the source's latest paid listing cost (a search: its pages), or undefined before its first. */
export async function lastListingCredits(sql: Queryable, sourceId: number): Promise<number | undefined> {
  const [row] = await sql<{ credits: number }[]>`
    select listing_credits as credits from sync_runs
    where source_id = ${sourceId} and listing_credits > 0
    order by started_at desc limit 1`;
  return row?.credits;
}
