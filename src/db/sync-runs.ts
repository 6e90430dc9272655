/** `sync_runs`: one row per sync of a source that got past its lock, with what it did. */
import type { Queryable } from './connection.ts';
import { SYNC_RUN_EVENT } from '../domain/events.ts';
import type { SyncRunOutcome } from '../domain/syncs.ts';
import type { SyncRun } from './schema.ts';

/** A sync starts; returns the run's ID. */
export async function startSyncRun(sql: Queryable, sourceId: number): Promise<number> {
  const [row] = await sql<Pick<SyncRun, 'id'>[]>`insert into sync_runs (source_id) values (${sourceId}) returning id`;
  return Number(row!.id);
}

/** What a finished run did. */
export type SyncRunFigures = Pick<
  SyncRun,
  'videosListed' | 'videosSubmitted' | 'creditsEstimated' | 'listingCredits' | 'detail'
> & {
  jobIds: string[];
  /** the run's charges are recorded in `credit_charges` (a charge recorder ran): its billed total is their sum; else null */
  chargesRecorded?: boolean | undefined;
};

/**
 * Records how the run ended, with its `source.synced` / `source.failed` event in the same
 * statement; returns what the run was billed (null when no charges were recorded).
 */
export async function finishSyncRun(
  sql: Queryable,
  runId: number,
  outcome: NonNullable<SyncRun['outcome']>,
  r: SyncRunFigures,
): Promise<number | null> {
  const [row] = await sql<{ creditsBilled: number | null }[]>`
    with run as (
      update sync_runs set finished_at = now(), outcome = ${outcome}, detail = ${r.detail},
        videos_listed = ${r.videosListed}, videos_submitted = ${r.videosSubmitted},
        credits_estimated = ${r.creditsEstimated}, listing_credits = ${r.listingCredits}, job_ids = ${r.jobIds},
        credits_billed = case when ${r.chargesRecorded ?? false}::boolean
          then (select coalesce(sum(credits), 0) from credit_charges where sync_run_id = ${runId}) end
      where id = ${runId}
      returning ${SYNC_RUN_EVENT_COLUMNS(sql)}
    ), event as (
      ${insertSyncRunEvent(sql, outcome)}
    )
    select credits_billed as "creditsBilled" from run`;
  return row?.creditsBilled ?? null;
}

const SYNC_RUN_EVENT_COLUMNS = (sql: Queryable) =>
  sql`id, source_id, outcome, detail, videos_listed, videos_submitted, credits_estimated, listing_credits, credits_billed, job_ids`;

/** The event of a finished run (src/domain/events.ts SYNC_RUN_EVENT), from the CTE `run`. */
const insertSyncRunEvent = (sql: Queryable, outcome: SyncRunOutcome) => sql`
    insert into events (type, source_id, data)
    select ${SYNC_RUN_EVENT[outcome]}::text, run.source_id, jsonb_build_object(
        'sourceId', run.source_id, 'runId', run.id, 'outcome', run.outcome, 'detail', run.detail,
        'videosListed', run.videos_listed, 'videosSubmitted', run.videos_submitted,
        'creditsEstimated', run.credits_estimated, 'listingCredits', run.listing_credits, 'creditsBilled', run.credits_billed,
        'jobIds', to_jsonb(run.job_ids))
    from run`;

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

const HELD: SyncRunOutcome = 'held';

/**
 * A scheduled sync skipped by an upstream hold: a finished `held` run. `firstOfHold` is false
 * when the source's previous run was already held and started after `holdsSince` (the newest
 * applying hold began): that hold was already reported for this source. Call under the
 * source's sync lock, so that runs of one source are recorded one at a time.
 */
export async function recordHeldRun(
  sql: Queryable,
  sourceId: number,
  detail: string,
  holdsSince: Date,
): Promise<{ firstOfHold: boolean }> {
  const [row] = await sql<{ reported: boolean }[]>`
    with previous as (
      select outcome, started_at from sync_runs where source_id = ${sourceId} order by started_at desc, id desc limit 1
    ), run as (
      insert into sync_runs (source_id, finished_at, outcome, detail) values (${sourceId}, now(), ${HELD}, ${detail})
      returning ${SYNC_RUN_EVENT_COLUMNS(sql)}
    ), event as (
      ${insertSyncRunEvent(sql, HELD)}
    )
    select exists (select 1 from previous where outcome = ${HELD} and started_at >= ${holdsSince}) as reported`;
  return { firstOfHold: !row!.reported };
}
