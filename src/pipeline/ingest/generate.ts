/**
 * Generated transcripts for a source's videos without captions (`--generate-missing`): at the end
 * of a sync, each video whose transcript came back `transcript-unavailable` gets one
 * `GET /transcript?mode=generate` job, within the source's minute budget and the credit guard.
 *
 * Money is at stake, so:
 * - one automatic attempt per video and language, whatever the source (src/db/generations.ts);
 * - the estimate is the documented price, 2 credits per started minute of the video's duration
 *   (src/domain/sources.ts), checked for the whole set before anything is sent;
 * - every request is recorded (`batch_submissions`, `sending`) before it is sent and never
 *   repeated blindly: an answer lost after the request may have arrived is left `unknown`, and
 *   the source's next sync judges it from the account's credits, as for a lost batch POST.
 *
 * A job answer (202) becomes a `batches` row of mode `generate`, polled by the poll queue like a
 * batch (src/pipeline/ingest/transcript-job.ts); a transcript answered at once (200) is landed at once
 * under a job ID of our own.
 */
import { randomUUID } from 'node:crypto';
import {
  ApiError,
  ForbiddenError,
  InvalidRequestError,
  NotFoundError,
  TranscriptUnavailableError,
} from '../../api/errors.ts';
import type { MediaTranscriptQuery } from '../../api/schemas.ts';
import { DEFAULT_PLATFORM } from '../../config.ts';
import { insertSubmittedBatch } from '../../db/batch-records.ts';
import { recordPollAnswer } from '../../db/batch-polls.ts';
import {
  generatedDurations,
  generationAttempted,
  generationCandidates,
  type GenerateRequest,
} from '../../db/generations.ts';
import { landItems } from '../../db/items.ts';
import { mediaGeneratedMinutes } from '../../db/media.ts';
import { lockClaims } from '../../db/leases.ts';
import type { Source } from '../../db/schema.ts';
import { markSubmission, recordSending } from '../../db/submissions.ts';
import { recordOutcomes } from '../../db/video-sync.ts';
import { NO_CAPTIONS_CODE } from '../../domain/items.ts';
import { generateCredits, startedMinutes } from '../../domain/prices.ts';
import { pollJobId, sinkJobId } from '../../queues/names.ts';
import { reserveCredits, type CreditHold, type CreditsRefusedError } from './credits.ts';
import type { PipelineDeps } from '../deps.ts';
import { answerMayBeLost } from './submit.ts';
import { traceField } from '../../tracing.ts';

/** Prefix of the job ID we give a transcript answered at once (the upstream gave none). */
export const SYNC_JOB_ID_PREFIX = 'gen-sync';

export interface GenerateOptions {
  /** the platform path segment, for the video's URL; default DEFAULT_PLATFORM */
  platform?: string;
  /** the caller gives up: no more requests are sent, the one under way ends (a lost answer) */
  signal?: AbortSignal | undefined;
}

export interface GenerateResult {
  /** job IDs recorded (upstream ones, and ours for a transcript answered at once) */
  jobIds: string[];
  /** videos (per language) sent for generation */
  videos: number;
  /** started media minutes of those videos (what the budget counts) */
  minutes: number;
  /** the credits estimated for them */
  credits: number;
  /** set when the credit guard refused the set: nothing was sent */
  refused?: CreditsRefusedError;
  /** with `refused`: what `/me` showed left above the reserve, when it was read */
  accountLeft?: number;
}

export interface PlannedGeneration {
  videoId: string;
  durationS: number;
  lang: string | null;
}

export interface GenerationPlan {
  /** newest upload first, within the source's minute budget */
  planned: PlannedGeneration[];
  /** candidates left out: they would pass `maxGenerateMinutes` */
  overBudget: number;
  /** started minutes generated so far and planned now */
  usedMinutes: number;
  /** the documented price of `planned` (2 credits per started minute) */
  credits: number;
}

/**
 * The generations due for `source` now (none unless `generateMissing`), from Postgres alone.
 * Candidates are taken newest upload first; one that would pass `maxGenerateMinutes` (counting
 * every generation of the source so far) is skipped, and later, shorter ones may still fit.
 */
export async function planGenerations(deps: Pick<PipelineDeps, 'sql'>, source: Source): Promise<GenerationPlan> {
  const plan: GenerationPlan = { planned: [], overBudget: 0, usedMinutes: 0, credits: 0 };
  if (!source.generateMissing) return plan;
  const cap = source.maxGenerateMinutes;
  plan.usedMinutes = (await generatedDurations(deps.sql, source.id)).reduce((n, d) => n + startedMinutes(d), 0);
  // a media source's budget counts its media items' generated transcripts too (src/pipeline/ingest/sync-media.ts)
  if (source.kind === 'media') plan.usedMinutes += await mediaGeneratedMinutes(deps.sql, source.id);
  const langs: (string | null)[] = source.langs.length > 0 ? source.langs : [null];
  for (const lang of langs) {
    for (const c of await generationCandidates(deps.sql, {
      sourceId: source.id,
      lang,
      missingCode: NO_CAPTIONS_CODE,
    })) {
      const minutes = startedMinutes(c.durationS);
      if (cap !== null && plan.usedMinutes + minutes > cap) {
        plan.overBudget++;
        continue;
      }
      plan.usedMinutes += minutes;
      plan.planned.push({ ...c, lang });
      plan.credits += generateCredits(c.durationS);
    }
  }
  return plan;
}

/**
 * Send the due generations of `source` (planGenerations). The set is checked and reserved as a
 * whole before anything is sent. An API refusal of the account (or the upstream failing) stops
 * the run and is thrown, like a refused batch POST; a refusal of one video counts as its attempt
 * and the run goes on.
 */
export async function submitGenerations(
  deps: PipelineDeps,
  source: Source,
  opts: GenerateOptions = {},
): Promise<GenerateResult> {
  const { log } = deps;
  const result: GenerateResult = { jobIds: [], videos: 0, minutes: 0, credits: 0 };
  if (!source.generateMissing) return result;

  const { planned, overBudget, usedMinutes, credits: estimate } = await planGenerations(deps, source);
  if (overBudget > 0) {
    log.info(
      {
        event: 'generate.over_budget',
        sourceId: source.id,
        skipped: overBudget,
        usedMinutes,
        maxMinutes: source.maxGenerateMinutes,
      },
      "videos left without a generated transcript: the source's minute budget is spent",
    );
  }
  if (planned.length === 0) return result;

  const check = await reserveCredits(deps, {
    sourceId: source.id,
    estimate,
    sourceBudget: source.maxCreditsPerDay,
    what: 'these generated transcripts',
    reason: 'before-generate',
    signal: opts.signal,
  });
  if (check.refused) {
    const refused = check.refused;
    log.warn(
      {
        event: 'generate.refused_credits',
        sourceId: source.id,
        limit: refused.limit,
        needed: estimate,
        available: refused.available,
        videos: planned.length,
      },
      'generated transcripts refused: not enough credits',
    );
    return { ...result, refused, ...(check.accountLeft !== undefined ? { accountLeft: check.accountLeft } : {}) };
  }
  const { hold } = check;
  try {
    for (const p of planned) {
      if (opts.signal?.aborted) break;
      if (!(await hold.renew())) {
        log.warn(
          { event: 'credits.reservation_lapsed', sourceId: source.id, sent: result.videos, planned: planned.length },
          'credit reservation expired: requesting no more generated transcripts this sync',
        );
        break;
      }
      const sent = await generate(deps, source, p, opts.platform ?? DEFAULT_PLATFORM, hold, opts.signal);
      if (sent === null) continue;
      result.jobIds.push(sent.jobId);
      result.videos++;
      result.minutes += startedMinutes(p.durationS);
      result.credits += sent.credits;
    }
  } finally {
    await hold
      .release()
      .catch((err: unknown) =>
        log.warn(
          { event: 'credits.release_failed', sourceId: source.id, err },
          'could not release a credit reservation; it counts until it expires',
        ),
      );
  }
  log.info(
    {
      event: 'generate.submitted',
      sourceId: source.id,
      jobIds: result.jobIds,
      videos: result.videos,
      minutes: result.minutes,
      credits: result.credits,
    },
    'generated transcripts requested',
  );
  return result;
}

/**
 * One generation: recorded as `sending` under the claim lock of its language (after checking
 * again that no process attempted it meanwhile), sent once, then recorded with its answer.
 * Returns null when it was attempted meanwhile.
 */
async function generate(
  deps: PipelineDeps,
  source: Source,
  p: PlannedGeneration,
  platform: string,
  hold: CreditHold,
  signal: AbortSignal | undefined,
): Promise<{ jobId: string; credits: number } | null> {
  const { sql, api, log, settings, queues } = deps;
  const credits = generateCredits(p.durationS);
  const query: MediaTranscriptQuery & { mode: 'generate' } = {
    url: `https://www.${platform}.com/watch?v=${p.videoId}`,
    mode: 'generate',
    ...(p.lang !== null ? { lang: p.lang } : {}),
    ...(source.textOnly ? { text: true as const } : {}),
  };
  const request: GenerateRequest = { ...query, videoId: p.videoId, durationS: p.durationS };
  // the account's usage just before the request (/me is free): how a lost answer is judged later
  const before = await api.me({ signal });
  const submission = await sql.begin(async (tx) => {
    await lockClaims(tx, 'transcript', p.lang);
    if (await generationAttempted(tx, p.videoId, p.lang)) return null;
    return recordSending(tx, {
      sourceId: source.id,
      kind: 'transcript',
      lang: p.lang,
      request,
      credits,
      usedCreditsBefore: before.usedCredits,
    });
  });
  if (submission === null) return null;

  let answer;
  try {
    answer = await api.readMediaTranscript(query, { expectedCredits: credits, signal });
  } catch (e: unknown) {
    const detail = e instanceof Error ? e.message : String(e);
    const at = { sourceId: source.id, videoId: p.videoId, lang: p.lang, submission };
    if (answerMayBeLost(e)) {
      await markSubmission(sql, submission, 'unknown', { detail });
      log.error(
        { event: 'generate.answer_lost', ...at, err: e },
        'generation request answer lost: the job may exist upstream; not retried (the next sync checks the credits first)',
      );
      throw e;
    }
    if (isRefusalOfTheVideo(e)) {
      // retrying cannot change this answer: it counts as the video's one attempt
      await markSubmission(sql, submission, 'failed', { detail });
      log.warn(
        { event: 'generate.refused', ...at, code: (e as ApiError).code },
        'generation refused for this video: not asked again',
      );
      return null;
    }
    // the account or the upstream refused: nothing was created, a later sync asks again
    await markSubmission(sql, submission, 'not-created', { detail: `refused: ${detail}` });
    throw e;
  }

  if (answer.result.kind === 'job') {
    const { jobId } = answer.result;
    await sql.begin(async (tx) => {
      await insertSubmittedBatch(tx, {
        jobId,
        sourceId: source.id,
        kind: 'transcript',
        lang: p.lang,
        mode: 'generate',
        creditsEstimated: credits,
        request,
        textOnly: source.textOnly,
        replayOf: null,
        firstPollDelayMs: settings.pollInitialDelayMs,
      });
      // its one item, unfinished until the job ends (so an end without an answer leaves it retryable)
      await landItems(tx, jobId, [{ videoId: p.videoId, state: 'processing', errorCode: null, payload: undefined }]);
      await markSubmission(tx, submission, 'submitted', { jobId });
      await hold.spend(tx, credits);
    });
    await queues.poll.add(
      'poll',
      { jobId, delayMs: settings.pollInitialDelayMs, ...traceField() },
      { jobId: pollJobId(jobId), delay: settings.pollInitialDelayMs },
    );
    log.debug(
      { event: 'batch.submitted', mode: 'generate', jobId, kind: 'transcript', lang: p.lang, credits },
      'generation job submitted',
    );
    return { jobId, credits };
  }

  const jobId = `${SYNC_JOB_ID_PREFIX}:${p.videoId}:${p.lang ?? ''}:${randomUUID()}`;
  await landAtOnce(deps, { jobId, source, p, request, credits, submission, raw: answer.raw, hold });
  await queues.sink.add('sink', { jobId, ...traceField() }, { jobId: sinkJobId(jobId, 0) });
  return { jobId, credits };
}

/** A transcript answered at once: its batch, completed, and its item, landed. */
async function landAtOnce(
  deps: PipelineDeps,
  a: {
    jobId: string;
    source: Source;
    p: PlannedGeneration;
    request: GenerateRequest;
    credits: number;
    submission: number;
    raw: unknown;
    hold: CreditHold;
  },
): Promise<void> {
  const { jobId, source, p } = a;
  await deps.sql.begin(async (tx) => {
    await insertSubmittedBatch(tx, {
      jobId,
      sourceId: source.id,
      kind: 'transcript',
      lang: p.lang,
      mode: 'generate',
      creditsEstimated: a.credits,
      request: a.request,
      textOnly: source.textOnly,
      replayOf: null,
      firstPollDelayMs: 0,
    });
    const { rows } = await landItems(tx, jobId, [
      { videoId: p.videoId, state: 'landed', errorCode: null, payload: a.raw },
    ]);
    await recordOutcomes(tx, { jobId, kind: 'transcript', lang: p.lang }, rows, deps.settings.transcriptRecheckMs);
    await recordPollAnswer(tx, jobId, {
      status: 'completed',
      upstreamStatus: 'completed',
      errorCode: null,
      total: 1,
      succeeded: 1,
      failed: 0,
      creditsEstimated: null,
      polls: 0,
      reason: null,
      completedAt: null,
      terminal: true,
    });
    await markSubmission(tx, a.submission, 'submitted', { jobId });
    await a.hold.spend(tx, a.credits);
  });
}

/** Answers about the video itself (gone, private, not transcribable) or the request: final. */
function isRefusalOfTheVideo(e: unknown): e is ApiError {
  return (
    e instanceof NotFoundError ||
    e instanceof ForbiddenError ||
    e instanceof InvalidRequestError ||
    e instanceof TranscriptUnavailableError
  );
}
