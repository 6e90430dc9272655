/**
 * Translated transcripts (`--translate xx[,yy]`, `--max-translate-minutes N`): each stored
 * transcript of a source's videos in another language gets one translation into each target
 * language, through `GET /{platform}/transcript/translate`, at the end of a sync (and of a
 * backfill, once its batches have stored their transcripts).
 *
 * The most expensive call the interface has (30 credits per minute of transcript), so:
 * - bought once per video, target language and content of the transcript it is translated from,
 *   whichever sources ask: a `translations` row claims it before the request is sent
 *   (src/db/translations.ts); bought again only when that transcript's content changed and the
 *   source asks for refresh (`--refresh`, `backfill --refresh`);
 * - never instead of a native transcript: not when one of the target language is stored or
 *   listed as available (`--lang` buys that at the native price), and a stored translation never
 *   replaces one (src/db/transcripts.ts); a native transcript arriving later replaces the
 *   translation;
 * - estimated before anything is sent from the video's duration (30 credits per started minute:
 *   a transcript runs at most as long as its video), within the source's minute budget (every
 *   translation it bought so far counts) and the credit guard, and billed exactly: each answer's
 *   `x-billable-requests` becomes a `credit_charges` row (src/pipeline/ingest/charges.ts);
 * - one the minute budget has no room for is recorded (`refused-budget`, a `translation.refused`
 *   event the first time), nothing sent;
 * - never repeated blindly: the client does not retry the request once it may have arrived, and an
 *   answer lost after that leaves the translation `unknown`, not asked again automatically.
 */
import {
  ApiError,
  ForbiddenError,
  InvalidRequestError,
  NotFoundError,
  TranscriptUnavailableError,
} from '../../api/errors.ts';
import { recordEvents } from '../../db/events.ts';
import type { Source } from '../../db/schema.ts';
import { transcriptRowFromApi, upsertTranscripts } from '../../db/transcripts.ts';
import {
  claimTranslation,
  clearBudgetRefusals,
  dropTranslationClaim,
  markTranslation,
  recordBudgetRefusals,
  translatedMinutes,
  translationCandidates,
  type TranslationCandidate,
} from '../../db/translations.ts';
import { startedMinutes, translationCredits } from '../../domain/prices.ts';
import type { PipelineDeps } from '../deps.ts';
import { reserveCredits, type CreditHold, type CreditsRefusedError } from './credits.ts';
import { answerMayBeLost } from './submit.ts';

/** Prefix of the `last_job_id` a translated transcript is stored with: `translation:<translations.id>`. */
export const TRANSLATION_JOB_ID_PREFIX = 'translation';

export interface PlannedTranslation extends TranslationCandidate {
  /** started minutes of the video's duration: what the budget counts */
  minutes: number;
  /** the published price of those minutes */
  credits: number;
}

export interface TranslationPlan {
  /** within the source's minute budget, per target language in the source's order, newest upload first */
  planned: PlannedTranslation[];
  /** due, but past `--max-translate-minutes` */
  overBudget: PlannedTranslation[];
  /** started minutes translated so far (every translation the source bought) and planned now */
  usedMinutes: number;
  /** the published price of `planned` */
  credits: number;
}

/**
 * The translations due for `source` now (none without `--translate`), from Postgres alone: what
 * the sync would buy, and what its budget leaves out. A candidate that would pass the budget is
 * left out, and later, shorter ones may still fit (as for generated transcripts).
 */
export async function planTranslations(
  deps: Pick<PipelineDeps, 'sql'>,
  source: Source,
  opts: { refresh: boolean },
): Promise<TranslationPlan> {
  const plan: TranslationPlan = { planned: [], overBudget: [], usedMinutes: 0, credits: 0 };
  if (source.translateLangs.length === 0) return plan;
  const cap = source.maxTranslateMinutes;
  plan.usedMinutes = await translatedMinutes(deps.sql, source.id);
  for (const lang of source.translateLangs) {
    for (const c of await translationCandidates(deps.sql, { sourceId: source.id, lang, refresh: opts.refresh })) {
      const p: PlannedTranslation = {
        ...c,
        minutes: startedMinutes(c.durationS),
        credits: translationCredits(c.durationS),
      };
      // the database refuses --translate without a budget; null here would be a row of another writer
      if (cap === null || plan.usedMinutes + p.minutes > cap) {
        plan.overBudget.push(p);
        continue;
      }
      plan.usedMinutes += p.minutes;
      plan.planned.push(p);
      plan.credits += p.credits;
    }
  }
  return plan;
}

export interface TranslateResult {
  /** translations stored */
  translated: number;
  /** started minutes of those (what the budget counted) */
  minutes: number;
  /** their published price, as estimated (the billed credits are in `credit_charges`) */
  credits: number;
  /** due translations the minute budget left unbought (recorded) */
  overBudget: number;
  /** set when the credit guard refused the set: nothing was sent */
  refused?: CreditsRefusedError;
  accountLeft?: number;
}

/**
 * Buy the due translations of `source` (planTranslations). Those over the minute budget are
 * recorded first; the rest is checked and reserved as a whole before anything is sent. An
 * answer of the account or the upstream (credits, key, 5xx) stops the run and is thrown; a refusal
 * of one video counts as its attempt and the run goes on.
 */
export async function submitTranslations(
  deps: PipelineDeps,
  source: Source,
  opts: { refresh: boolean; signal?: AbortSignal | undefined },
): Promise<TranslateResult> {
  const result: TranslateResult = { translated: 0, minutes: 0, credits: 0, overBudget: 0 };
  if (source.translateLangs.length === 0) return result;
  const plan = await planTranslations(deps, source, opts);
  await recordOverBudget(deps, source, plan);
  result.overBudget = plan.overBudget.length;
  if (plan.planned.length === 0) return result;

  const check = await reserveCredits(deps, {
    sourceId: source.id,
    estimate: plan.credits,
    sourceBudget: source.maxCreditsPerDay,
    what: 'these translations',
    reason: 'before-translate',
    signal: opts.signal,
  });
  if (check.refused) {
    deps.log.warn(
      {
        event: 'translate.refused_credits',
        sourceId: source.id,
        limit: check.refused.limit,
        needed: plan.credits,
        available: check.refused.available,
        translations: plan.planned.length,
      },
      'translations refused: not enough credits',
    );
    return {
      ...result,
      refused: check.refused,
      ...(check.accountLeft !== undefined ? { accountLeft: check.accountLeft } : {}),
    };
  }
  const { hold } = check;
  try {
    for (const p of plan.planned) {
      if (opts.signal?.aborted) break;
      if (!(await hold.renew())) {
        deps.log.warn(
          { event: 'credits.reservation_lapsed', sourceId: source.id, sent: result.translated },
          'credit reservation expired: requesting no more translations this sync',
        );
        break;
      }
      if (!(await translate(deps, source, p, hold, opts.signal))) continue;
      result.translated++;
      result.minutes += p.minutes;
      result.credits += p.credits;
    }
  } finally {
    await hold
      .release()
      .catch((err: unknown) =>
        deps.log.warn(
          { event: 'credits.release_failed', sourceId: source.id, err },
          'could not release a credit reservation; it counts until it expires',
        ),
      );
  }
  deps.log.info(
    {
      event: 'translate.done',
      sourceId: source.id,
      translated: result.translated,
      minutes: result.minutes,
      credits: result.credits,
    },
    'translations bought',
  );
  return result;
}

/**
 * The translations the budget leaves out, recorded with the reason (a `translation.refused` event
 * for each one the first time), and the refusals that no longer stand removed: what `status` shows.
 */
async function recordOverBudget(deps: PipelineDeps, source: Source, plan: TranslationPlan): Promise<void> {
  const cap = source.maxTranslateMinutes;
  const detail = (p: PlannedTranslation) =>
    `--max-translate-minutes ${cap ?? 'unset'}: ${plan.usedMinutes} min used or planned, this one needs ${p.minutes} more`;
  await deps.sql.begin(async (tx) => {
    await clearBudgetRefusals(tx, source.id, plan.overBudget);
    const fresh = await recordBudgetRefusals(
      tx,
      source.id,
      plan.overBudget.map((p) => ({ ...p, creditsEstimated: p.credits, detail: detail(p) })),
    );
    const byKey = new Map(plan.overBudget.map((p) => [`${p.videoId}\u0000${p.lang}`, p]));
    await recordEvents(
      tx,
      fresh.map((f) => {
        const p = byKey.get(`${f.videoId}\u0000${f.lang}`)!;
        return {
          type: 'translation.refused' as const,
          sourceId: source.id,
          videoId: p.videoId,
          data: {
            videoId: p.videoId,
            sourceId: source.id,
            lang: p.lang,
            fromLang: p.fromLang,
            minutes: p.minutes,
            usedMinutes: plan.usedMinutes,
            maxMinutes: cap,
          },
        };
      }),
    );
  });
  if (plan.overBudget.length > 0) {
    deps.log.info(
      {
        event: 'translate.over_budget',
        sourceId: source.id,
        skipped: plan.overBudget.length,
        usedMinutes: plan.usedMinutes,
        maxMinutes: cap,
      },
      "translations left unbought: the source's minute budget has no room for them",
    );
  }
}

/**
 * One translation: claimed (unless any process claimed it first: false), requested once, stored
 * as the video's transcript of the target language with its origin. True when stored.
 */
async function translate(
  deps: PipelineDeps,
  source: Source,
  p: PlannedTranslation,
  hold: CreditHold,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  const { sql, api, log } = deps;
  const id = await claimTranslation(sql, {
    ...p,
    sourceId: source.id,
    creditsEstimated: p.credits,
  });
  if (id === null) return false;
  const at = { sourceId: source.id, videoId: p.videoId, lang: p.lang, translation: id };
  let answer;
  try {
    answer = await api.translateTranscript(
      { videoId: p.videoId, lang: p.lang, ...(source.textOnly ? { text: true as const } : {}) },
      { expectedCredits: p.credits, signal },
    );
  } catch (e: unknown) {
    const detail = e instanceof Error ? e.message : String(e);
    if (answerMayBeLost(e)) {
      await markTranslation(sql, id, 'unknown', `answer lost: ${detail}`);
      log.error(
        { event: 'translate.answer_lost', ...at, err: e },
        'translation answer lost: it may have been billed; not asked again automatically',
      );
      throw e;
    }
    if (isRefusalOfTheVideo(e)) {
      await markTranslation(sql, id, 'failed', detail);
      log.warn(
        { event: 'translate.failed', ...at, code: e.code },
        'translation refused for this video: not asked again',
      );
      return false;
    }
    // the account or the upstream refused: nothing was bought, a later sync asks again
    await dropTranslationClaim(sql, id);
    throw e;
  }
  const jobId = `${TRANSLATION_JOB_ID_PREFIX}:${id}`;
  let row;
  try {
    row = transcriptRowFromApi(p.videoId, answer, jobId, 'translation', undefined, {
      lang: p.fromLang,
      sha256: p.fromSha256,
    });
  } catch (e: unknown) {
    // a value Postgres cannot hold (U+0000): bought, but not storable; not asked again
    await markTranslation(sql, id, 'failed', `not storable: ${e instanceof Error ? e.message : String(e)}`);
    log.warn({ event: 'translate.failed', ...at, code: 'unstorable' }, 'translation not storable: not asked again');
    return false;
  }
  await sql.begin(async (tx) => {
    // a native transcript stored meanwhile is kept (the upsert never lets a translation replace it)
    await upsertTranscripts(tx, [row]);
    await markTranslation(tx, id, 'stored');
    await hold.spend(tx, p.credits);
  });
  log.debug({ event: 'translate.stored', ...at, fromLang: p.fromLang, credits: p.credits }, 'translation stored');
  return true;
}

/** Answers about the video itself (gone, private, no transcript) or the request: final, nothing bought. */
function isRefusalOfTheVideo(e: unknown): e is ApiError {
  return (
    e instanceof NotFoundError ||
    e instanceof ForbiddenError ||
    e instanceof InvalidRequestError ||
    e instanceof TranscriptUnavailableError
  );
}
