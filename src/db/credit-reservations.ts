/**
 * `credit_reservations`: credits that passed the credit guard (src/pipeline/ingest/credits.ts) and may
 * not show in `/me` yet, shared by every process on the account; and what was spent today, for
 * the daily budgets. Every check runs under one transaction-scoped advisory lock, so checks of
 * all processes take turns; a reservation is written before that lock is let go.
 */
import { CLAIM_STANDING_SUBMISSIONS } from '../domain/submissions.ts';
import type { Queryable } from './connection.ts';

/** Credit checks ('CR'); one lock for the whole account (second key 0). */
const CREDIT_LOCK_NAMESPACE = 0x4352;

/**
 * Released reservations deleted per check, at most. A sync writes about five rows (its listing's
 * and its batches' reservations, and one row per paid request it spends), and each sync makes
 * one or two checks: a hundred a check keeps the table at the rows of the syncs in progress.
 */
export const CREDIT_RESERVATIONS_PRUNE_MAX = 100;

/** Until the transaction ends: credit checks are decided one at a time, across processes. */
export async function lockCredits(tx: Queryable): Promise<void> {
  await tx`select pg_advisory_xact_lock(${CREDIT_LOCK_NAMESPACE}, 0)`;
}

/**
 * An instant on the database's clock, as the database wrote it: microseconds, where a JS Date
 * would cut it to milliseconds (a release in the same millisecond as a read would then fall on
 * the wrong side of it). Passed back as `::text::timestamptz`: with a bare `::timestamptz` the
 * parameter is typed timestamptz and postgres.js serializes it through a JS Date, cutting the
 * microseconds all the same (a released reservation was counted 144 times in 1000 reads begun
 * in its millisecond).
 */
export type DbInstant = string & { readonly __dbInstant: true };

/** The database's clock now (`clock_timestamp()`, not the transaction's start): every mark is on it. */
export async function databaseClock(tx: Queryable): Promise<DbInstant> {
  const [row] = await tx<{ at: DbInstant }[]>`select clock_timestamp()::text as at`;
  return row!.at;
}

/**
 * Credits that a `/me` read begun at `readFrom` may not show: reservations still open (and not
 * expired at `readFrom`), and those released at or after `readFrom` (their charge may have
 * landed after the read was answered). One released before is in that read.
 */
export async function heldCredits(tx: Queryable, readFrom: DbInstant): Promise<number> {
  const [row] = await tx<{ n: number }[]>`
    select coalesce(sum(credits), 0)::float8 as n from credit_reservations
    where (released_at is null and expires_at > ${readFrom}::text::timestamptz) or released_at >= ${readFrom}::text::timestamptz`;
  return row!.n;
}

export interface NewReservation {
  sourceId: number | null;
  credits: number;
  /** host and pid of the process */
  holder: string;
  ttlMs: number;
}

/** Reserve `credits` until released, or until `ttlMs` from now if nobody renews it. */
export async function insertReservation(tx: Queryable, r: NewReservation): Promise<number> {
  const [row] = await tx<{ id: number }[]>`
    insert into credit_reservations (source_id, credits, holder, created_at, expires_at)
    values (${r.sourceId}, ${r.credits}, ${r.holder}, clock_timestamp(), clock_timestamp() + make_interval(secs => ${r.ttlMs / 1000}))
    returning id::float8 as id`;
  return row!.id;
}

/** Keep an open reservation counted for `ttlMs` more; false when it had expired (or is gone). */
export async function renewReservation(sql: Queryable, id: number, ttlMs: number): Promise<boolean> {
  const rows = await sql`
    update credit_reservations set expires_at = clock_timestamp() + make_interval(secs => ${ttlMs / 1000})
    where id = ${id} and released_at is null and expires_at > clock_timestamp()
    returning id`;
  return rows.length > 0;
}

/**
 * `credits` of an open reservation were spent, and the row that records the spending (a batch,
 * a sync's listing) is written in this transaction: the open reservation shrinks by that much,
 * and a released row of that much, stamped now, stays for the `/me` reads already under way. So
 * the daily budgets, which count both the spending rows and the open reservations, count it once.
 */
export async function spendReservation(tx: Queryable, id: number, credits: number): Promise<void> {
  if (credits <= 0) return;
  const [open] = await tx<{ sourceId: number | null; holder: string }[]>`
    update credit_reservations set credits = greatest(credits - ${credits}, 0)
    where id = ${id} and released_at is null
    returning source_id as "sourceId", holder`;
  if (!open) return;
  await tx`
    insert into credit_reservations (source_id, credits, holder, created_at, released_at, expires_at)
    values (${open.sourceId}, ${credits}, ${open.holder}, clock_timestamp(), clock_timestamp(), clock_timestamp())`;
}

/** The reservation's charges, if any, are all sent: stamped released now (on the database's clock). */
export async function releaseReservation(sql: Queryable, id: number): Promise<void> {
  await sql`update credit_reservations set released_at = clock_timestamp() where id = ${id} and released_at is null`;
}

/**
 * Delete (at most `limit`) rows no check will count again: released before `before`, or expired
 * before it unreleased (their process died). Call under the lock, with `before` the start of
 * the caller's `/me` read: every read after it begins later still.
 */
export async function pruneReservations(
  tx: Queryable,
  before: DbInstant,
  limit = CREDIT_RESERVATIONS_PRUNE_MAX,
): Promise<number> {
  const rows = await tx`
    delete from credit_reservations where id in (
      select id from credit_reservations where released_at < ${before}::text::timestamptz
      union all
      select id from credit_reservations where released_at is null and expires_at < ${before}::text::timestamptz
      limit ${limit})
    returning id`;
  return rows.length;
}

/** Start of the UTC day `at` falls in. */
export async function utcDayStart(tx: Queryable, at: DbInstant): Promise<Date> {
  const [row] = await tx<{ start: Date }[]>`
    select date_trunc('day', ${at}::text::timestamptz at time zone 'UTC') at time zone 'UTC' as start`;
  return row!.start;
}

/** What a day's budget counts, in credits. */
export interface SpentToday {
  /** batches submitted since the day began (`credits_estimated`: 1 + videos, or a generation's price) */
  batches: number;
  /** syncs' listings since the day began (`sync_runs.listing_credits`) */
  listings: number;
  /** POSTs whose answer was lost (or not back yet): no batch row, maybe charged */
  pending: number;
  /** reservations still open: passed the guard, not spent yet */
  reserved: number;
  /**
   * what was billed beyond those estimates (`credit_charges.budget_delta`): billed - estimated of
   * each answered paid request, and charges nobody estimated; negative when billed less
   */
  billedOver: number;
}

/**
 * Credits spent since `dayStart` (all sources, or one), counting every paid request that may
 * have been charged, and what is reserved for requests about to be sent. A batch submitted
 * while its reservation is still open is counted once (spendReservation). Batches and listings
 * count at their estimate, corrected by what their answers say they were billed (`billedOver`).
 */
export async function spentSince(
  tx: Queryable,
  dayStart: Date,
  now: DbInstant,
  sourceId: number | null,
): Promise<SpentToday> {
  // two statements' worth of text rather than `($1 is null or source_id = $1)`, so that a
  // source's sums use its (source_id, time) indexes and the installation's the time indexes
  const ofSource = sourceId === null ? tx`` : tx`and source_id = ${sourceId}`;
  // the states as literals, so that the partial index of pending submissions matches
  const pendingStates = tx.unsafe(CLAIM_STANDING_SUBMISSIONS.map((st) => `'${st}'`).join(', '));
  const [row] = await tx<SpentToday[]>`
    select
      (select coalesce(sum(credits_estimated), 0)::float8 from batches
        where submitted_at >= ${dayStart} ${ofSource}) as batches,
      (select coalesce(sum(listing_credits), 0)::float8 from sync_runs
        where started_at >= ${dayStart} ${ofSource}) as listings,
      (select coalesce(sum(credits_estimated), 0)::float8 from batch_submissions
        where state in (${pendingStates}) and job_id is null
          and created_at >= ${dayStart} ${ofSource}) as pending,
      (select coalesce(sum(credits), 0)::float8 from credit_reservations
        where released_at is null and expires_at > ${now}::text::timestamptz ${ofSource}) as reserved,
      (select coalesce(sum(budget_delta), 0)::float8 from credit_charges
        where charged_at >= ${dayStart} ${ofSource}) as "billedOver"`;
  return row!;
}
