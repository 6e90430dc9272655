/**
 * `batch_submissions`: every batch POST, recorded before it is sent, so a POST whose answer was
 * lost is never forgotten and never repeated blindly (see the table's comment in schema.ts).
 */
import type { Queryable } from './connection.ts';
import type { BatchKind, BatchSubmission, SubmissionState } from './schema.ts';

export interface NewSubmission {
  sourceId: number | null;
  kind: BatchKind;
  lang: string | null;
  request: unknown;
  credits: number;
  usedCreditsBefore: number | null;
}

export type SubmissionRow = Pick<
  BatchSubmission,
  'id' | 'sourceId' | 'kind' | 'lang' | 'state' | 'creditsEstimated' | 'usedCreditsBefore' | 'detail' | 'createdAt'
>;

/** Record a POST about to be sent (`sending`); returns its ID. */
export async function recordSending(sql: Queryable, s: NewSubmission): Promise<number> {
  const [row] = await sql<{ id: number }[]>`
    insert into batch_submissions (source_id, kind, lang, request, credits_estimated, used_credits_before, state)
    values (${s.sourceId}, ${s.kind}, ${s.lang}, ${sql.json(s.request as never)}, ${s.credits}, ${s.usedCreditsBefore}, 'sending')
    returning id`;
  return Number(row!.id);
}

export async function markSubmission(
  sql: Queryable,
  id: number,
  state: SubmissionState,
  fields: { jobId?: string; detail?: string } = {},
): Promise<void> {
  await sql`
    update batch_submissions set state = ${state}, job_id = coalesce(${fields.jobId ?? null}, job_id),
      detail = coalesce(${fields.detail ?? null}, detail), updated_at = now()
    where id = ${id}`;
}

const SUBMISSION_COLUMNS = (sql: Queryable) => sql`
  id, source_id as "sourceId", kind, lang, state, credits_estimated as "creditsEstimated",
  used_credits_before as "usedCreditsBefore", detail, created_at as "createdAt"`;

// bigint columns: a number whatever the client's int8 parser
const toRow = (r: SubmissionRow): SubmissionRow => ({
  ...r,
  id: Number(r.id),
  usedCreditsBefore: r.usedCreditsBefore === null ? null : Number(r.usedCreditsBefore),
});

/**
 * Submissions of a source whose outcome is unknown: answer lost (`unknown`), or `sending` left
 * behind by a process that died (older than `staleSendingMs`: a young one may be in flight in
 * another process that does not hold the source's lock, such as replay).
 */
export async function unresolvedSubmissions(
  sql: Queryable,
  sourceId: number,
  staleSendingMs: number,
): Promise<SubmissionRow[]> {
  const rows = await sql<SubmissionRow[]>`
    select ${SUBMISSION_COLUMNS(sql)}
    from batch_submissions
    where source_id = ${sourceId}
      and (state = 'unknown' or (state = 'sending' and updated_at < now() - make_interval(secs => ${staleSendingMs / 1000})))
    order by id`;
  return rows.map(toRow);
}

/** Submissions judged `lost` (probably created upstream, unreadable): of one source, or all. */
export async function lostSubmissions(sql: Queryable, sourceId?: number): Promise<SubmissionRow[]> {
  const rows = await sql<SubmissionRow[]>`
    select ${SUBMISSION_COLUMNS(sql)}
    from batch_submissions
    where state = 'lost' and (${sourceId ?? null}::int is null or source_id = ${sourceId ?? null}::int)
    order by id`;
  return rows.map(toRow);
}

/**
 * Lost batch POSTs of a source (not transcript-job requests, whose videos no batch claims): a
 * kind and language with one waits for a person before the source's batches resume.
 */
export async function lostBatchSubmissions(
  sql: Queryable,
  sourceId: number,
): Promise<Pick<SubmissionRow, 'kind' | 'lang'>[]> {
  return sql<Pick<SubmissionRow, 'kind' | 'lang'>[]>`
    select distinct kind, lang from batch_submissions
    where state = 'lost' and source_id = ${sourceId} and request->>'mode' is distinct from 'generate'`;
}
