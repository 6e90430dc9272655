/**
 * What a poll reads and records on its `batches` row: the row with the database's clock, the
 * answer's head, an answer cut short, a refused poll, a failed attempt, the next poll's time and
 * an end the upstream did not report. The poller decides what to record; this file only writes.
 * Every function runs one statement: pass a transaction to make it part of a larger change.
 */
import { BATCH_IN_FLIGHT_STATUSES, type BatchStatus } from '../domain/batches.ts';
import { BATCH_TERMINAL_EVENT, type EventType } from '../domain/events.ts';
import type { Queryable } from './connection.ts';
import type { Batch } from './schema.ts';

/** A batch as a poll starts it, with times measured on the database's clock. */
export type PolledBatch = Pick<
  Batch,
  'jobId' | 'sourceId' | 'kind' | 'lang' | 'mode' | 'status' | 'polls' | 'request' | 'textOnly'
> & {
  /** items finished per the previous answer (0 before the first) */
  finishedBefore: number;
  /** ms from the previous answer (or the submission) to the start of this poll */
  sincePreviousMs: number;
  /** ms since the submission */
  ageMs: number;
};

export async function batchForPoll(sql: Queryable, jobId: string): Promise<PolledBatch | undefined> {
  const [row] = await sql<PolledBatch[]>`
    select job_id as "jobId", source_id as "sourceId", kind, lang, mode, status, polls, request, text_only as "textOnly",
      coalesce(succeeded, 0) + coalesce(failed, 0) as "finishedBefore",
      (extract(epoch from clock_timestamp() - coalesce(last_polled_at, submitted_at)) * 1000)::float8 as "sincePreviousMs",
      (extract(epoch from clock_timestamp() - submitted_at) * 1000)::float8 as "ageMs"
    from batches where job_id = ${jobId}`;
  return row;
}

/** What an answer whose head was read says about the batch. */
export interface PollAnswer {
  /** the batch's status from now on */
  status: BatchStatus;
  /** the head's status as received */
  upstreamStatus: string;
  errorCode: string | null;
  total: number | null;
  succeeded: number | null;
  failed: number | null;
  /** the corrected estimate, when the answer tells it; null: unchanged */
  creditsEstimated: number | null;
  /** polls so far, this one included */
  polls: number;
  /** null clears the reason a previous poll left */
  reason: string | null;
  /** the head's completedAt, when it is a date Postgres can store */
  completedAt: Date | null;
  terminal: boolean;
}

/**
 * The answer was read: its head is recorded, the not-found and failure counts are reset; a
 * terminal batch gets its end time (and a completion time, when the head has none).
 */
export async function recordPollAnswer(sql: Queryable, jobId: string, a: PollAnswer): Promise<void> {
  const eventType = a.terminal ? terminalEvent(a.status) : null;
  await sql`
    with updated as (
    update batches b set
      status = ${a.status},
      upstream_status = ${a.upstreamStatus},
      error_code = ${a.errorCode},
      total = ${a.total}, succeeded = ${a.succeeded}, failed = ${a.failed},
      credits_estimated = coalesce(${a.creditsEstimated}::int, credits_estimated),
      polls = ${a.polls}, last_polled_at = now(), not_found_since = null, poll_failures = 0,
      reason = ${a.reason},
      completed_at = coalesce(${a.completedAt}::timestamptz, case when ${a.terminal} then now() end, completed_at),
      terminal_at = case when ${a.terminal} then now() else terminal_at end,
      updated_at = now()
    ${fromPrevious(sql, jobId)}
    returning ${BATCH_EVENT_COLUMNS(sql)}
    ), ${sourceErrorOfFailedBatch(sql)}
    ${insertBatchEvent(sql, eventType)}`;
}

/** Only part of the answer was read (it broke off, ran out of time, or its head is unreadable). */
export async function recordIncompletePoll(
  sql: Queryable,
  jobId: string,
  polls: number,
  reason: string,
): Promise<void> {
  await sql`
    update batches set polls = ${polls}, last_polled_at = now(), reason = ${reason}, updated_at = now()
    where job_id = ${jobId}`;
}

/** When the batch is polled next (for people and `status`; the poll job holds its own delay). */
export async function scheduleNextPoll(sql: Queryable, jobId: string, delayMs: number): Promise<void> {
  await sql`update batches set next_poll_at = now() + make_interval(secs => ${delayMs / 1000}) where job_id = ${jobId}`;
}

/**
 * The poll was answered with a JSON `not-found`: counted as a poll, the first such answer's time
 * kept. Returns how long, in ms, the answers have said not-found.
 */
export async function recordNotFound(sql: Queryable, jobId: string, reason: string): Promise<number> {
  const [row] = await sql<{ spanMs: number }[]>`
    update batches set not_found_since = coalesce(not_found_since, now()), polls = polls + 1, last_polled_at = now(),
      reason = ${reason}, updated_at = now()
    where job_id = ${jobId}
    returning (extract(epoch from now() - not_found_since) * 1000)::float8 as "spanMs"`;
  return row?.spanMs ?? 0;
}

/** The poll was answered with an error it will retry: counted as a poll, the reason kept. */
export async function recordRefusedPoll(sql: Queryable, jobId: string, reason: string): Promise<void> {
  await sql`
    update batches set polls = polls + 1, last_polled_at = now(), reason = ${reason}, updated_at = now()
    where job_id = ${jobId}`;
}

/** Why the batch is not polled for now (a hold stands); not counted as a poll. */
export async function recordPollHeld(sql: Queryable, jobId: string, reason: string): Promise<void> {
  await sql`update batches set reason = ${reason}, updated_at = now() where job_id = ${jobId}`;
}

/**
 * A poll attempt threw: one more failure in a row for a batch in flight. Returns the failures in
 * a row, or undefined when the batch is not in flight (or not recorded).
 */
export async function countPollFailure(sql: Queryable, jobId: string, reason: string): Promise<number | undefined> {
  const [row] = await sql<{ failures: number }[]>`
    update batches set poll_failures = poll_failures + 1, reason = ${reason}, updated_at = now()
    where job_id = ${jobId} and status = any(${[...BATCH_IN_FLIGHT_STATUSES]}::text[])
    returning poll_failures as failures`;
  return row?.failures;
}

/** The batch ends without the upstream saying so (confirmed not-found, too old, polling failed for good). */
export async function endBatchLocally(
  sql: Queryable,
  jobId: string,
  end: { status: 'expired' | 'failed'; errorCode: string; reason: string },
): Promise<void> {
  await sql`
    with updated as (
    update batches b set status = ${end.status}, error_code = ${end.errorCode}, reason = ${end.reason}, last_polled_at = now(),
      terminal_at = now(), updated_at = now()
    ${fromPrevious(sql, jobId)}
    returning ${BATCH_EVENT_COLUMNS(sql)}
    ), ${sourceErrorOfFailedBatch(sql)}
    ${insertBatchEvent(sql, terminalEvent(end.status))}`;
}

/**
 * A batch's `batch.completed` / `batch.expired` event (src/domain/events.ts), written by the
 * statement that makes it terminal and only when it was in flight before: the batch row is locked
 * first, so of two polls that see the end at once the second finds it terminal already, and a
 * repeated poll of a terminal batch makes no event.
 */
function terminalEvent(status: BatchStatus): EventType | null {
  return status === 'completed' || status === 'failed' || status === 'expired' ? BATCH_TERMINAL_EVENT[status] : null;
}

/**
 * The row's status before the update, read under the row lock: a concurrent update that ended the
 * batch first is waited for and its status seen (a plain self-join would see the snapshot's).
 */
const fromPrevious = (sql: Queryable, jobId: string) =>
  sql`from (select job_id, status as previous_status from batches where job_id = ${jobId} for update) p where b.job_id = p.job_id`;

const BATCH_EVENT_COLUMNS = (sql: Queryable) =>
  sql`b.job_id, b.source_id, b.kind, b.lang, b.status, b.error_code, b.reason, b.total, b.succeeded, b.failed, p.previous_status`;

/**
 * A batch that fails is its source's latest error (code, message with the job, time), as a failed
 * sync's is: `status` and the pages then stop calling the source fresh. Written by the statement
 * that ends the batch, once (only when it was in flight); the source's next good sync clears it.
 */
const sourceErrorOfFailedBatch = (sql: Queryable) => sql`
    source_error as (
      update sources s set last_error = 'batch ' || u.job_id || ' failed' || coalesce(': ' || u.reason, ''),
        last_error_code = coalesce(u.error_code, ${'failed' satisfies BatchStatus}), last_error_at = now()
      from updated u
      where s.id = u.source_id and u.status = ${'failed' satisfies BatchStatus}
        and u.previous_status = any(${[...BATCH_IN_FLIGHT_STATUSES]}::text[])
    )`;

const insertBatchEvent = (sql: Queryable, eventType: EventType | null) => sql`
    insert into events (type, source_id, data)
    select ${eventType}::text, u.source_id, jsonb_build_object(
        'jobId', u.job_id, 'sourceId', u.source_id, 'kind', u.kind, 'lang', u.lang, 'status', u.status,
        'errorCode', u.error_code, 'reason', u.reason, 'total', u.total, 'succeeded', u.succeeded, 'failed', u.failed)
    from updated u
    where ${eventType}::text is not null and u.previous_status = any(${[...BATCH_IN_FLIGHT_STATUSES]}::text[])`;
