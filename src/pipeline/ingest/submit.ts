/**
 * Submitting one batch: claim its videos, POST it once, record it, enqueue its poll. Used by the
 * scheduler (a sync's batches) and by replay (a person's re-submission).
 */
import {
  AbortedError,
  ApiError,
  InternalError,
  NetworkError,
  SchemaMismatchError,
  TimeoutError,
} from '../../api/errors.ts';
import type { TranscriptBatchRequest, VideoBatchRequest } from '../../api/schemas.ts';
import { insertSubmittedBatch, markRetryableTakenUp } from '../../db/batch-records.ts';
import type { Queryable } from '../../db/connection.ts';
import { lockClaims } from '../../db/leases.ts';
import { markSubmission, recordSending } from '../../db/submissions.ts';
import {
  CLAIMS_STATS_REFRESH_MIN,
  claimVideos,
  pointClaimsAt,
  refreshVideoSyncStats,
  releaseClaims,
} from '../../db/video-sync.ts';
import type { BatchKind } from '../../domain/batches.ts';
import { pollJobId } from '../../queues/names.ts';
import type { CreditHold } from './credits.ts';
import type { PipelineDeps } from '../deps.ts';
import { traceField } from '../../tracing.ts';

export interface SubmitBatchInput {
  sourceId: number | null;
  kind: BatchKind;
  lang: string | null;
  request: VideoBatchRequest | TranscriptBatchRequest;
  credits: number;
  textOnly?: boolean;
  /** job_id whose retryable items this batch re-submits */
  replayOf?: string | null;
  /**
   * Under the claim lock, which of the request's videoIds are still due (a sync's automatic
   * submission); the request shrinks to those, and nothing is sent when none is. Omitted: a
   * person's re-submission, sent as planned.
   */
  claimDue?: ((tx: Queryable, videoIds: string[]) => Promise<string[]>) | undefined;
  /**
   * The credits reserved for this batch (src/pipeline/ingest/credits.ts): spent in the transaction that
   * records the batch, so the daily budgets count it once. Omitted: nothing reserved (replay).
   */
  hold?: CreditHold | undefined;
  /** ends the request when the caller gives up (an answer cut off this way is a lost answer) */
  signal?: AbortSignal | undefined;
}

export interface SubmittedBatch {
  jobId: string;
  videos: number;
  credits: number;
}

/** Whether a failed POST may have created the batch anyway (its answer was lost, not refused). */
export function answerMayBeLost(e: unknown): boolean {
  if (e instanceof NetworkError) return !e.notSent;
  if (e instanceof TimeoutError) return (e.cause as { code?: unknown } | undefined)?.code !== 'UND_ERR_CONNECT_TIMEOUT';
  if (e instanceof AbortedError || e instanceof SchemaMismatchError) return true;
  // a gateway's non-JSON 5xx: the request may have reached the API behind it
  if (e instanceof InternalError) return e.rawBody !== undefined;
  // any other answer with a status refused the request; a local invalid-request sent nothing
  if (e instanceof ApiError) return false;
  return true;
}

/**
 * POST the batch once (the client never retries a create after it may have arrived), having
 * claimed its videos first, then record it with its estimate and enqueue its poll job.
 *
 * Claim first: under an advisory lock per kind and language that every process takes, the due
 * list is read again, the POST is recorded (`batch_submissions`, `sending`) and its videos are
 * claimed in `video_sync`, all in one short transaction. Two processes syncing sources that share
 * videos take turns there, and the second sees the first's claims. The claims stand while the
 * POST's outcome is unknown (an answer lost, a crash mid-POST: resolveSubmissions decides later
 * from the credits); a refused POST releases them. No connection is held across the POST, so a
 * sync needs at most two at once (its session lock and one more).
 * Returns null when nothing was left to submit.
 */
export async function submitBatch(deps: PipelineDeps, input: SubmitBatchInput): Promise<SubmittedBatch | null> {
  const { sql, api, queues, settings } = deps;
  // the account's usage just before the POST (/me is free): how a lost answer is judged later
  const before = await api.me({ signal: input.signal });
  const claim = await sql.begin(async (tx) => {
    await lockClaims(tx, input.kind, input.lang);
    let request = input.request;
    let credits = input.credits;
    const planned = (request as { videoIds?: string[] }).videoIds;
    if (input.claimDue && planned !== undefined) {
      const due = await input.claimDue(tx, planned);
      if (due.length === 0) return null;
      if (due.length < planned.length) {
        request = { ...request, videoIds: due } as typeof request;
        credits = 1 + due.length;
      }
    }
    const videoIds = (request as { videoIds?: string[] }).videoIds ?? [];
    const submission = await recordSending(tx, {
      sourceId: input.sourceId,
      kind: input.kind,
      lang: input.lang,
      request,
      credits,
      usedCreditsBefore: before.usedCredits,
    });
    await claimVideos(
      tx,
      { kind: input.kind, lang: input.lang, textOnly: input.textOnly ?? false, submission },
      videoIds,
    );
    return { request, credits, videoIds, submission };
  });
  if (claim === null) return null;
  const { request, credits, videoIds, submission } = claim;
  if (videoIds.length >= CLAIMS_STATS_REFRESH_MIN) await refreshVideoSyncStats(sql);

  let jobId: string;
  try {
    ({ jobId } =
      input.kind === 'video'
        ? await api.createVideoBatch(request as VideoBatchRequest, { expectedCredits: credits, signal: input.signal })
        : await api.createTranscriptBatch(request as TranscriptBatchRequest, {
            expectedCredits: credits,
            signal: input.signal,
          }));
  } catch (e: unknown) {
    const lost = answerMayBeLost(e);
    const detail = e instanceof Error ? e.message : String(e);
    if (lost) {
      // the claims stand until the next sync of the source decides from the credits
      await markSubmission(sql, submission, 'unknown', { detail });
      deps.log.error(
        {
          event: 'batch.answer_lost',
          sourceId: input.sourceId,
          kind: input.kind,
          lang: input.lang,
          submission,
          err: e,
        },
        'batch POST answer lost: it may have been created upstream; not retried (the next sync checks the credits first)',
      );
    } else {
      await sql.begin(async (tx) => {
        await markSubmission(tx, submission, 'failed', { detail });
        await releaseClaims(tx, submission);
      });
    }
    throw e;
  }
  await sql.begin(async (tx) => {
    await insertSubmittedBatch(tx, {
      jobId,
      sourceId: input.sourceId,
      kind: input.kind,
      lang: input.lang,
      creditsEstimated: credits,
      request,
      textOnly: input.textOnly ?? false,
      replayOf: input.replayOf ?? null,
      firstPollDelayMs: settings.pollInitialDelayMs,
    });
    await markSubmission(tx, submission, 'submitted', { jobId });
    await pointClaimsAt(tx, submission, jobId);
    // these videos' retryable items are taken up by this batch: never re-submit them again
    await markRetryableTakenUp(tx, input.kind, input.lang, jobId, videoIds);
    await input.hold?.spend(tx, credits);
  });
  await queues.poll.add(
    'poll',
    // the sync's trace goes with the job: its polls, in whichever process, join it
    { jobId, delayMs: settings.pollInitialDelayMs, ...traceField() },
    { jobId: pollJobId(jobId), delay: settings.pollInitialDelayMs },
  );
  deps.log.debug({ event: 'batch.submitted', jobId, kind: input.kind, lang: input.lang, credits }, 'batch submitted');
  return { jobId, videos: videoIds.length, credits };
}
