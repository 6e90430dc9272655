/**
 * One poll of a transcript job (`--generate-missing`): `GET /transcript/{jobId}` (free), recorded
 * on the job's `batches` row (mode `generate`) the way a batch's poll is. The poller dispatches
 * here once it has checked holds and the job's age; the poll queue drives it like any batch.
 *
 * The job holds one video (named in its request). `queued`/`active` keep it in flight; `completed`
 * lands its one item with the JobResult as the payload and writes its transcript (origin
 * `generated`) in the same transaction; `failed` records the item's error code
 * with the policy of src/domain/items.ts; a status this interface version does not list keeps it
 * in flight. A JSON `not-found` expires it only when confirmed over BATCH_NOT_FOUND_CONFIRM_MS:
 * the API gave the job's ID, and answers 404 once the job's result has been kept its hour, so the
 * result expired unread (`result-expired`); the generation was paid and is not bought again by
 * any sync. Any other refused answer is polled again.
 */
import { z } from 'zod';
import { ApiError, LimitExceededError, NotFoundError, SchemaMismatchError } from '../../api/errors.ts';
import {
  endBatchLocally,
  recordNotFound,
  recordPollAnswer,
  recordRefusedPoll,
  scheduleNextPoll,
  type PolledBatch,
} from '../../db/batch-polls.ts';
import { landItems, markUnfinishedFailed, type LandItem } from '../../db/items.ts';
import { setMediaTranscriptState, storeMediaTranscript } from '../../db/media.ts';
import { DeliveredTranscriptSchema } from '../../db/transcripts.ts';
import { recordOutcomes } from '../../db/video-sync.ts';
import { LOCAL_BATCH_END_CODES, readHead, type BatchStatus, type HeadReading } from '../../domain/batches.ts';
import { classifyItem, EXPIRED_RESULT_OUTCOME, UNFINISHED_AT_END_CODE } from '../../domain/items.ts';
import { firstIssue } from '../../api/issues.ts';
import { takeCreditSnapshot } from './credits.ts';
import type { PipelineDeps } from '../deps.ts';
import { nextPollDelayMs, type PollResult } from './poll-batch.ts';
import { prepareItem, reportRows, storePrepared } from './store-items.ts';

/**
 * The answer read liberally: any status, any error code; other fields are kept. The client's
 * schema lists the statuses of this interface version; an answer with another one reaches us as
 * a SchemaMismatchError carrying the body, which is read again with this.
 */
const LiberalJobResultSchema = z
  .object({
    status: z.string(),
    error: z.object({ error: z.string() }).passthrough().nullable().optional(),
  })
  .passthrough();
type LiberalJobResult = z.infer<typeof LiberalJobResultSchema>;

export async function pollTranscriptJob(
  deps: PipelineDeps,
  batch: PolledBatch,
  opts: { previousDelayMs?: number; signal?: AbortSignal } = {},
): Promise<PollResult> {
  const previousDelayMs = opts.previousDelayMs ?? deps.settings.pollInitialDelayMs;
  const later: PollResult = {
    jobId: batch.jobId,
    status: batch.status,
    terminal: false,
    ...NOTHING_CHANGED,
    nextDelayMs: nextPollDelayMs(previousDelayMs, false, deps.settings),
  };
  const answer = await readJobAnswer(deps, batch, later, opts.signal);
  if ('polled' in answer) return answer.polled;
  const parsed = LiberalJobResultSchema.safeParse(answer.body);
  if (!parsed.success) return recordUnreadableAnswer(deps, batch, parsed.error, later);
  const result = parsed.data;
  const errorCode = result.error?.error ?? null;
  const reading = readHead({ status: result.status, errorCode });
  if (!reading.terminal) return recordJobInFlight(deps, batch, result, reading, previousDelayMs);
  return landJobResult(deps, batch, { result, answer: answer.body, status: reading.status!, errorCode });
}

const NOTHING_CHANGED = { landed: 0, sunk: 0, changed: 0, duplicates: 0, quarantined: 0 } as const;

/**
 * The job's answer as received (the client's schema would drop fields it does not name), or the
 * poll's result when there is no answer to read: a not-found (confirmed before expiring the job)
 * or another refusal (polled again).
 */
async function readJobAnswer(
  deps: PipelineDeps,
  batch: PolledBatch,
  later: PollResult,
  signal: AbortSignal | undefined,
): Promise<{ body: unknown } | { polled: PollResult }> {
  const { jobId } = batch;
  try {
    return { body: (await deps.api.readTranscriptJob(jobId, { signal })).raw };
  } catch (e: unknown) {
    if (signal?.aborted || e instanceof LimitExceededError || !(e instanceof ApiError)) throw e;
    const body = e instanceof SchemaMismatchError ? readBody(e.rawBody) : undefined;
    if (body !== undefined) return { body };
    if (e instanceof NotFoundError && e.rawBody === undefined) {
      return { polled: await notFound(deps, batch, e.message, later) };
    }
    await recordRefusedPoll(deps.sql, jobId, `poll answered ${e.code}: ${e.message}; polled again`);
    deps.log.warn(
      {
        event: 'poll.refused',
        mode: 'generate',
        jobId,
        code: e.code,
        status: e.status,
        nextDelayMs: later.nextDelayMs,
      },
      'transcript job poll refused: polled again later',
    );
    return { polled: later };
  }
}

/** An answer that is not a JobResult even read liberally: recorded, polled again. */
async function recordUnreadableAnswer(
  deps: PipelineDeps,
  batch: PolledBatch,
  error: z.ZodError,
  later: PollResult,
): Promise<PollResult> {
  const { jobId } = batch;
  const why = `the answer does not match the interface at ${firstIssue(error)}`;
  await recordRefusedPoll(deps.sql, jobId, `poll ${batch.polls + 1}: ${why}; polled again`);
  deps.log.warn(
    { event: 'poll.incomplete', mode: 'generate', jobId, landed: 0, changed: 0, polls: batch.polls + 1, reason: why },
    'transcript job answer unreadable: polled again',
  );
  return later;
}

/** `queued`, `active` or a status this version does not list: recorded, polled again. */
async function recordJobInFlight(
  deps: PipelineDeps,
  batch: PolledBatch,
  result: LiberalJobResult,
  reading: HeadReading,
  previousDelayMs: number,
): Promise<PollResult> {
  const { sql, log, settings } = deps;
  const { jobId } = batch;
  const polls = batch.polls + 1;
  const status: BatchStatus = reading.status ?? batch.status;
  const nextDelayMs = nextPollDelayMs(previousDelayMs, status !== batch.status, settings);
  await recordPollAnswer(sql, jobId, {
    status,
    upstreamStatus: result.status,
    errorCode: null,
    total: 1,
    succeeded: 0,
    failed: 0,
    creditsEstimated: null,
    polls,
    reason:
      reading.unknownStatus !== null
        ? `status ${JSON.stringify(reading.unknownStatus)} is not one this interface version lists: still polled`
        : null,
    completedAt: null,
    terminal: false,
  });
  await scheduleNextPoll(sql, jobId, nextDelayMs);
  if (reading.unknownStatus !== null) {
    log.warn(
      { event: 'poll.unknown_status', mode: 'generate', jobId, upstreamStatus: reading.unknownStatus, landed: 0 },
      'transcript job status unknown to this interface version: still polled',
    );
  }
  log.info(
    {
      event: 'poll.landed',
      mode: 'generate',
      jobId,
      status,
      landed: 0,
      changed: 0,
      polls,
      quarantined: 0,
      duplicates: 0,
      total: 1,
      finished: 0,
    },
    'transcript job polled',
  );
  return { jobId, status, terminal: false, ...NOTHING_CHANGED, nextDelayMs };
}

/**
 * `completed` or `failed`: the job's one item lands (its transcript written in the same
 * transaction, as a batch's items are: src/pipeline/ingest/store-items.ts) with the batch row's
 * end.
 */
async function landJobResult(
  deps: PipelineDeps,
  batch: PolledBatch,
  end: { result: LiberalJobResult; answer: unknown; status: BatchStatus; errorCode: string | null },
): Promise<PollResult> {
  const { sql, log, settings } = deps;
  const { jobId } = batch;
  const { result, answer, status, errorCode } = end;
  const polls = batch.polls + 1;
  if (batch.kind === 'media') return landMediaJobResult(deps, batch, end);
  const item = prepareItem(
    { jobId, kind: batch.kind, mode: batch.mode },
    jobItem(videoIdOf(batch), status, result, answer),
  );
  const stored = await sql.begin(async (tx) => {
    const s = await storePrepared(tx, batch, [item], settings);
    const landed = s.rows.some((r) => r.state === 'sunk');
    await recordPollAnswer(tx, jobId, {
      status,
      upstreamStatus: result.status,
      errorCode,
      total: 1,
      succeeded: landed ? 1 : 0,
      failed: landed ? 0 : 1,
      creditsEstimated: null,
      polls,
      reason: null,
      completedAt: null,
      terminal: true,
    });
    return s;
  });
  reportRows(deps, stored.counts);
  const changed = stored.rows;
  const landed = changed.filter((r) => r.state === 'sunk').length;
  const quarantined = changed.filter((r) => r.state === 'quarantined').length;
  // observed usage after the job (reading /me is free): what status reports as spent
  await takeCreditSnapshot(deps, batch.sourceId, 'after-batch').catch((err: unknown) =>
    log.warn({ event: 'credits.read_failed', jobId, err }, 'could not read /me after the transcript job'),
  );
  log.info(
    {
      event: 'poll.landed',
      mode: 'generate',
      jobId,
      status,
      landed,
      sunk: landed,
      changed: changed.length,
      polls,
      quarantined,
      duplicates: 0,
      total: 1,
      finished: 1,
      errorCode,
    },
    'transcript job polled',
  );
  return { jobId, status, terminal: true, landed, sunk: landed, changed: changed.length, duplicates: 0, quarantined };
}

/**
 * A media item's transcript job ended: its one item lands with the answer, and the media row
 * gets the transcript (`stored`, or `empty` without speech) or the reason it has none, in the
 * same transaction as the batch row's end.
 */
async function landMediaJobResult(
  deps: PipelineDeps,
  batch: PolledBatch,
  end: { result: LiberalJobResult; answer: unknown; status: BatchStatus; errorCode: string | null },
): Promise<PollResult> {
  const { jobId } = batch;
  const { result, answer, status, errorCode } = end;
  const request = (batch.request ?? {}) as { url?: unknown; mode?: unknown };
  const url = typeof request.url === 'string' ? request.url : '#0';
  const mode = typeof request.mode === 'string' ? request.mode : 'native';
  const item = jobItem(url, status, result, answer);
  const stored = item.state === 'landed';
  await deps.sql.begin(async (tx) => {
    // the batch row first, then its item: the order a sync records a new job in (the batch, then
    // its item), so that the two never wait on each other's counter rows (batch, then item counts)
    await recordPollAnswer(tx, jobId, {
      status,
      upstreamStatus: result.status,
      errorCode,
      total: 1,
      succeeded: stored ? 1 : 0,
      failed: stored ? 0 : 1,
      creditsEstimated: null,
      polls: batch.polls + 1,
      reason: null,
      completedAt: null,
      terminal: true,
    });
    await landItems(tx, jobId, [{ ...item, state: stored ? 'sunk' : item.state }]);
    const origin = { jobId, sourceId: batch.sourceId };
    if (stored) {
      const t = answer as { content?: unknown; lang?: unknown };
      await storeMediaTranscript(tx, origin, url, {
        content: t.content,
        lang: typeof t.lang === 'string' ? t.lang : null,
        mode,
      });
    } else {
      const why = item.reason ?? `job ${status}${item.errorCode ? ` (${item.errorCode})` : ''}`;
      await setMediaTranscriptState(tx, url, item.state === 'retryable' ? 'retry' : 'failed', { reason: why });
    }
  });
  deps.log.info(
    {
      event: 'poll.landed',
      mode: 'generate',
      kind: 'media',
      jobId,
      status,
      landed: stored ? 1 : 0,
      finished: 1,
      errorCode,
    },
    'media transcript job polled',
  );
  const n = stored ? 1 : 0;
  return { jobId, status, terminal: true, landed: n, sunk: n, changed: 1, duplicates: 0, quarantined: 0 };
}

/** The video a transcript job is for, as its request names it. */
function videoIdOf(batch: PolledBatch): string {
  const id = (batch.request as { videoId?: unknown } | null)?.videoId;
  // a row written by this version always names it; `#0` keeps a damaged one's item visible
  return typeof id === 'string' ? id : '#0';
}

/** The one item of a job that ended: the answer is its payload, whatever it says. */
function jobItem(videoId: string, status: BatchStatus, result: LiberalJobResult, answer: unknown): LandItem {
  const base = { videoId, payload: answer };
  if (status === 'completed') {
    const delivered = DeliveredTranscriptSchema.safeParse(answer);
    if (delivered.success) return { ...base, state: 'landed', errorCode: null };
    return result.content === undefined
      ? {
          ...base,
          state: 'quarantined',
          errorCode: null,
          reason: 'job completed without content',
          reasonCode: 'no-result',
        }
      : {
          ...base,
          state: 'quarantined',
          errorCode: null,
          reason: `job result does not match the interface at ${firstIssue(delivered.error)}`,
          reasonCode: 'schema',
        };
  }
  const code = result.error?.error ?? null;
  // failed (or expired) without a reason: unfinished, like an item left when its batch ends
  if (code === null || code === UNFINISHED_AT_END_CODE)
    return { ...base, state: 'retryable', errorCode: UNFINISHED_AT_END_CODE };
  const outcome = classifyItem({ videoId, errorCode: code }, 'transcript');
  return { ...base, state: outcome.state, errorCode: outcome.errorCode };
}

/** The body of an answer that failed the client's schema, when it is a JSON object with a status. */
function readBody(rawBody: string | undefined): unknown {
  if (rawBody === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(rawBody);
    return LiberalJobResultSchema.safeParse(value).success ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A JSON `not-found`: the job is expired only when such answers span BATCH_NOT_FOUND_CONFIRM_MS
 * (a moment's trouble upstream must not end it). Then its result is gone for good: the batch
 * ends `expired` with `result-expired`, its item `failed` (EXPIRED_RESULT_OUTCOME).
 */
async function notFound(
  deps: PipelineDeps,
  batch: PolledBatch,
  message: string,
  later: PollResult,
): Promise<PollResult> {
  const { sql, log, settings } = deps;
  const { jobId } = batch;
  const spanMs = await recordNotFound(sql, jobId, `the API answered not-found: ${message}`);
  if (spanMs < settings.batchNotFoundConfirmMs) {
    log.warn(
      {
        event: 'poll.not_found',
        mode: 'generate',
        jobId,
        notFoundForMs: Math.round(spanMs),
        confirmMs: settings.batchNotFoundConfirmMs,
      },
      'transcript job not found upstream: confirming before expiring it',
    );
    const untilConfirmedMs = Math.ceil(settings.batchNotFoundConfirmMs - spanMs);
    return {
      ...later,
      nextDelayMs: Math.min(
        later.nextDelayMs ?? settings.pollMaxDelayMs,
        Math.max(settings.pollMinDelayMs, untilConfirmedMs),
      ),
    };
  }
  const errorCode = LOCAL_BATCH_END_CODES.resultExpired;
  const reason =
    `the API answered not-found on every poll for ${Math.round(spanMs / 1000)} s (BATCH_NOT_FOUND_CONFIRM_MS ${settings.batchNotFoundConfirmMs} ms): ` +
    "a transcript job's result is kept 1 hour after the job ends, and this one's was not read in time; " +
    'the generation was paid and is not requested again automatically';
  const { state, errorCode: itemCode } = EXPIRED_RESULT_OUTCOME;
  const marked = await sql.begin(async (tx) => {
    if (batch.kind === 'media') {
      // the batch row before its item (as landMediaJobResult); a media transcript is bought again
      // by a later sync, within the retry cap (src/db/media.ts)
      await endBatchLocally(tx, jobId, { status: 'expired', errorCode, reason });
      const urls = await markUnfinishedFailed(tx, jobId, itemCode);
      for (const url of urls) await setMediaTranscriptState(tx, url, 'expired', { reason });
      return urls;
    }
    const ids = await markUnfinishedFailed(tx, jobId, itemCode);
    await recordOutcomes(
      tx,
      { jobId, kind: batch.kind, lang: batch.lang },
      ids.map((videoId) => ({ videoId, state, errorCode: itemCode })),
      settings.transcriptRecheckMs,
    );
    await endBatchLocally(tx, jobId, { status: 'expired', errorCode, reason });
    return ids;
  });
  log.warn(
    {
      event: 'batch.ended',
      mode: 'generate',
      jobId,
      status: 'expired',
      errorCode,
      retryable: 0,
      failed: marked.length,
      reason,
    },
    'transcript job ended locally',
  );
  return {
    jobId,
    status: 'expired',
    terminal: true,
    landed: 0,
    sunk: 0,
    changed: marked.length,
    duplicates: 0,
    quarantined: 0,
  };
}
