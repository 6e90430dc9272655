/**
 * The sync of a `media` source's media items (its video-platform URLs are a `videos` list,
 * bought by the scheduler's batches after this: src/pipeline/ingest/sync-source.ts), in two steps:
 *
 * 1. Metadata: each listed URL without a stored item gets `GET /metadata` (1 credit; a public
 *    media file URL gets none), estimated and reserved before the first, landed raw under the
 *    sync's own `batches` row (mode `media`, job `media:<sync run>`) and stored with its events
 *    in one transaction.
 * 2. Transcripts: each stored video whose transcript is due (never bought, or expired or failed
 *    retryably within RETRY_ATTEMPTS_MAX purchases) gets the universal `GET /transcript` with the
 *    source's mode; `auto` and `generate` count against the source's minutes budget
 *    (`--max-generate-minutes`, required for them) and are estimated at the generated price of
 *    the media's duration. Images, carousels and posts get none. A 200 answer is stored at once;
 *    a 202 job becomes a `batches` row (kind `media`, mode `generate`) polled like any transcript
 *    job (src/pipeline/ingest/transcript-job.ts). Each purchase counts as an attempt before it is
 *    sent; an answer lost after the request may have arrived is not bought again automatically.
 */
import {
  ApiError,
  ForbiddenError,
  InvalidRequestError,
  LimitExceededError,
  NotFoundError,
  TranscriptUnavailableError,
} from '../../api/errors.ts';
import { recordPollAnswer } from '../../db/batch-polls.ts';
import { insertSubmittedBatch } from '../../db/batch-records.ts';
import { landItems, landRecords, markQuarantined, markSunk, nextLandedChunk, toLandRecord } from '../../db/items.ts';
import type { QuarantineReason } from '../../domain/items.ts';
import {
  addBatchEstimate,
  mediaGeneratedMinutes,
  mediaTranscriptMode,
  returnMediaAttempt,
  setMediaTranscriptState,
  sourceMediaCount,
  sourceMediaFacts,
  storeMediaMetadata,
  storeMediaTranscript,
  storeUnavailableMedia,
  transcriptDue,
  type MediaFacts,
} from '../../db/media.ts';
import { mediaFileRow, mediaRowFromApi } from './media-rows.ts';
import { generatedDurations } from '../../db/generations.ts';
import type { Source } from '../../db/schema.ts';
import {
  MEDIA_METADATA_CREDITS,
  MEDIA_MODE_DEFAULT,
  mediaBudgetMinutes,
  mediaPlatformOf,
  mediaTranscriptCredits,
  type MediaMode,
} from '../../domain/media.ts';
import { PRICES, startedMinutes } from '../../domain/prices.ts';
import { REFUSED_UPSTREAM_CODES } from '../../domain/refusals.ts';
import { pollJobId } from '../../queues/names.ts';
import { traceField } from '../../tracing.ts';
import type { DocumentPlan, DocumentSync, DocumentSyncEnd, DocumentSyncRun } from '../kinds/adapter.ts';
import type { PipelineDeps } from '../deps.ts';
import { reserveCredits, type CreditHold } from './credits.ts';
import { answerMayBeLost } from './submit.ts';

/** The `media` source's own sync and dry-run plan (src/pipeline/kinds/media.ts registers it). */
export const MEDIA_DOCUMENTS: DocumentSync = {
  withVideos: true,
  sync: syncMedia,
  async plan(sql, source, forceRefresh, retryAttemptsMax): Promise<DocumentPlan> {
    const facts = await sourceMediaFacts(sql, source.id);
    // the transcripts the sync would buy: never bought, and bought again (a job's result gone
    // after its hour, a retryable failure) within the retry cap
    const plan = await planTranscripts(sql, source, facts, retryAttemptsMax);
    const metadata = metadataDue(facts, forceRefresh);
    const unknownVideos = metadata.filter((u) => !isFile(u)).length;
    const mode = modeOf(source);
    return {
      documents: metadata.length + plan.due.length,
      credits: metadataCredits(metadata) + plan.credits + (mode === 'native' ? unknownVideos : 0),
      inFlight: facts.some((f) => f.transcriptState === 'pending'),
      known: await sourceMediaCount(sql, source.id),
      unknowns:
        metadata.length > 0
          ? [
              mode === 'native'
                ? `which of ${metadata.length} new media are videos: each counted with its transcript (1 credit), images and carousels get none`
                : `the duration of ${metadata.length} new media: their generated transcripts (2 credits a started minute) are estimated after their metadata, within --max-generate-minutes`,
            ]
          : [],
    };
  },
};

export function modeOf(source: Pick<Source, 'mediaMode'>): MediaMode {
  return source.mediaMode ?? MEDIA_MODE_DEFAULT;
}

function isFile(url: string): boolean {
  try {
    return mediaPlatformOf(new URL(url)) === 'file';
  } catch {
    return false;
  }
}

/** Listed URLs whose metadata is to be read: never stored (or every one, for `backfill --refresh`). */
function metadataDue(facts: readonly MediaFacts[], forceRefresh: boolean): string[] {
  return facts.filter((f) => !f.known || (forceRefresh && f.transcriptState !== 'pending')).map((f) => f.url);
}

function metadataCredits(urls: readonly string[]): number {
  return urls.filter((u) => !isFile(u)).length * MEDIA_METADATA_CREDITS;
}

interface TranscriptPlan {
  due: MediaFacts[];
  overBudget: MediaFacts[];
  credits: number;
}

/** The transcripts due now, within the source's minutes budget (`auto`, `generate`). */
async function planTranscripts(
  sql: PipelineDeps['sql'],
  source: Source,
  facts: readonly MediaFacts[],
  retryAttemptsMax: number,
): Promise<TranscriptPlan> {
  const mode = modeOf(source);
  const cap = source.maxGenerateMinutes;
  // one budget for the source: its media items' generated transcripts and its videos' (`--generate-missing`)
  let used =
    mode === 'native'
      ? 0
      : (await mediaGeneratedMinutes(sql, source.id)) +
        (await generatedDurations(sql, source.id)).reduce((n, d) => n + startedMinutes(d), 0);
  const plan: TranscriptPlan = { due: [], overBudget: [], credits: 0 };
  for (const f of facts) {
    if (!transcriptDue(f, retryAttemptsMax)) continue;
    const minutes = mediaBudgetMinutes(mode, f.durationS);
    if (cap !== null && minutes > 0 && used + minutes > cap) {
      plan.overBudget.push(f);
      continue;
    }
    used += minutes;
    plan.due.push(f);
    plan.credits += mediaTranscriptCredits(mode, f.durationS);
  }
  return plan;
}

/** The sync's own `batches` row, inserted once with its first estimate; later estimates are added to it. */
class SyncBatch {
  readonly jobId: string;
  private inserted = false;
  counts = { stored: 0, failed: 0 };

  constructor(
    private readonly run: DocumentSyncRun,
    private readonly total: { n: number },
  ) {
    this.jobId = `media:${run.runId}`;
  }

  /** Recorded as spent on `hold` in the same transaction. */
  async open(estimate: number, hold: CreditHold): Promise<void> {
    const { deps, source, result } = this.run;
    await deps.sql.begin(async (tx) => {
      if (!this.inserted) {
        await insertSubmittedBatch(tx, {
          jobId: this.jobId,
          sourceId: source.id,
          kind: 'media',
          lang: null,
          mode: 'media',
          creditsEstimated: estimate,
          request: { urls: this.total.n },
          textOnly: false,
          replayOf: null,
          // no poll: the sync reads its media itself
          firstPollDelayMs: 0,
        });
      } else await addBatchEstimate(tx, this.jobId, estimate);
      await hold.spend(tx, estimate);
    });
    if (!this.inserted) result.jobIds.push(this.jobId);
    this.inserted = true;
  }

  async close(): Promise<void> {
    if (!this.inserted) return;
    const { failed, stored } = this.counts;
    await recordPollAnswer(this.run.deps.sql, this.jobId, {
      status: 'completed',
      upstreamStatus: 'completed',
      errorCode: null,
      total: stored + failed,
      succeeded: stored,
      failed,
      creditsEstimated: null,
      polls: 0,
      reason: failed > 0 ? `${failed} media item(s) or transcript(s) could not be read` : null,
      completedAt: null,
      terminal: true,
    });
  }
}

async function syncMedia(run: DocumentSyncRun): Promise<DocumentSyncEnd> {
  const { deps, source, result } = run;
  const facts = await sourceMediaFacts(deps.sql, source.id);
  result.listed = facts.length;
  const toRead = metadataDue(facts, run.forceRefresh);
  const batch = new SyncBatch(run, { n: facts.length });
  try {
    if (toRead.length > 0) {
      const read = await readMetadata(run, batch, toRead);
      if (read !== undefined) return read;
    }
    if (run.signal?.aborted) return { end: 'submitted' };
    const bought = await buyTranscripts(run, batch);
    if (bought !== undefined && result.jobIds.length === 0) return bought;
  } finally {
    await batch.close();
  }
  if (result.jobIds.length > 0) return { end: 'submitted' };
  if (facts.some((f) => f.transcriptState === 'pending'))
    return { end: 'in-flight', detail: 'a transcript job of this source is still in flight' };
  return { end: 'up-to-date', detail: 'every media item is stored' };
}

/** Step 1: the metadata of `urls`, estimated and reserved as a whole. Returns an end only when refused. */
async function readMetadata(
  run: DocumentSyncRun,
  batch: SyncBatch,
  urls: readonly string[],
): Promise<DocumentSyncEnd | undefined> {
  const { deps, source, result } = run;
  const estimate = metadataCredits(urls);
  result.creditsEstimated += estimate;
  const check = await reserveCredits(deps, {
    sourceId: source.id,
    estimate,
    sourceBudget: source.maxCreditsPerDay,
    what: `the metadata of ${urls.length} media item${urls.length === 1 ? '' : 's'}`,
    signal: run.signal,
  });
  if (check.refused) return { end: 'refused', refusal: check.refused, accountLeft: check.accountLeft };
  try {
    await batch.open(estimate, check.hold);
    for (const url of urls) {
      if (run.signal?.aborted) break;
      batch.counts[await readOne(deps, source, batch.jobId, url, run.signal)]++;
      result.submitted++;
    }
  } finally {
    await check.hold.release();
  }
  return undefined;
}

/** One media item's metadata read and stored (or recorded unavailable) in one transaction. */
async function readOne(
  deps: PipelineDeps,
  source: Source,
  jobId: string,
  url: string,
  signal: AbortSignal | undefined,
): Promise<'stored' | 'failed'> {
  const origin = { jobId, sourceId: source.id };
  if (isFile(url)) {
    await deps.sql.begin(async (tx) => {
      await landItems(tx, jobId, [
        { videoId: url, state: 'sunk', errorCode: null, payload: { url, platform: 'file' } },
      ]);
      await storeMediaMetadata(tx, origin, mediaFileRow(url));
    });
    return 'stored';
  }
  try {
    const raw = await deps.api.getMetadata({ url }, { signal, expectedCredits: MEDIA_METADATA_CREDITS });
    const built = mediaRowFromApi(url, raw);
    const record = toLandRecord({ videoId: url, state: 'landed', errorCode: null, payload: raw });
    await deps.sql.begin(async (tx) => {
      if ('row' in built && record.state === 'landed') {
        await landRecords(tx, jobId, [{ ...record, state: 'sunk' }]);
        await storeMediaMetadata(tx, origin, built.row);
      } else {
        const reason = 'reason' in built ? built.reason : (record.reason ?? 'metadata could not be stored');
        const reasonCode = 'reasonCode' in built ? built.reasonCode : (record.reasonCode ?? 'unstorable');
        await landRecords(tx, jobId, [{ ...record, state: 'quarantined', reason, reasonCode }]);
      }
    });
    return 'row' in built ? 'stored' : 'failed';
  } catch (e: unknown) {
    if (signal?.aborted || e instanceof LimitExceededError || !(e instanceof ApiError)) throw e;
    if (REFUSED_UPSTREAM_CODES.includes(e.code)) throw e;
    const final = isRefusalOfTheMedia(e);
    await deps.sql.begin(async (tx) => {
      await landRecords(tx, jobId, [
        toLandRecord({ videoId: url, state: 'failed', errorCode: e.code, payload: null, reason: e.message }),
      ]);
      // a refusal of the item itself is kept, so that it is not bought again; anything else is read again next sync
      if (final) await storeUnavailableMedia(tx, origin, url, `${e.code}: ${e.message}`);
    });
    deps.log.warn(
      { event: 'media.metadata_failed', sourceId: source.id, url, code: e.code },
      'media metadata could not be read',
    );
    return 'failed';
  }
}

/** Step 2: the due transcripts, estimated and reserved as a whole. Returns an end only when refused. */
async function buyTranscripts(run: DocumentSyncRun, batch: SyncBatch): Promise<DocumentSyncEnd | undefined> {
  const { deps, source, result } = run;
  const facts = await sourceMediaFacts(deps.sql, source.id);
  const plan = await planTranscripts(deps.sql, source, facts, deps.settings.retryAttemptsMax);
  for (const f of plan.overBudget) {
    await setMediaTranscriptState(deps.sql, f.url, 'over-budget', {
      reason: `the source's minutes budget (--max-generate-minutes ${source.maxGenerateMinutes}) is spent`,
    });
  }
  if (plan.due.length === 0) return undefined;
  result.creditsEstimated += plan.credits;
  const check = await reserveCredits(deps, {
    sourceId: source.id,
    estimate: plan.credits,
    sourceBudget: source.maxCreditsPerDay,
    what: `${plan.due.length} media transcript${plan.due.length === 1 ? '' : 's'}`,
    reason: 'before-generate',
    signal: run.signal,
  });
  if (check.refused) return { end: 'refused', refusal: check.refused, accountLeft: check.accountLeft };
  try {
    await batch.open(0, check.hold);
    for (const f of plan.due) {
      if (run.signal?.aborted) break;
      if (!(await check.hold.renew())) break;
      const got = await buyTranscript(deps, source, batch, f, check.hold, run.signal);
      if (typeof got === 'object') {
        // backfill waits for the job as for a batch
        result.jobIds.push(got.jobId);
        result.submitted++;
      }
    }
  } finally {
    await check.hold.release();
  }
  return undefined;
}

/** One transcript bought: stored at once, its job recorded and polled, or its refusal recorded. */
async function buyTranscript(
  deps: PipelineDeps,
  source: Source,
  batch: SyncBatch,
  f: MediaFacts,
  hold: CreditHold,
  signal: AbortSignal | undefined,
): Promise<'stored' | { jobId: string } | 'failed'> {
  const { sql, api, settings, queues, log } = deps;
  const mode = modeOf(source);
  const credits = mediaTranscriptCredits(mode, f.durationS);
  const origin = { jobId: batch.jobId, sourceId: source.id };
  // counted before it is sent: a purchase is never repeated blindly
  await setMediaTranscriptState(sql, f.url, 'pending', { attempt: true, reason: null });
  let answer;
  try {
    answer = await api.readMediaTranscript(
      { url: f.url, mode, ...(source.langs[0] !== undefined ? { lang: source.langs[0] } : {}) },
      { expectedCredits: credits, signal },
    );
  } catch (e: unknown) {
    const detail = e instanceof Error ? e.message : String(e);
    if (answerMayBeLost(e)) {
      await setMediaTranscriptState(sql, f.url, 'failed', {
        reason: `the answer was lost after the request may have arrived (${detail}); not bought again automatically`,
      });
      throw e;
    }
    if (!(e instanceof ApiError) || e instanceof LimitExceededError || REFUSED_UPSTREAM_CODES.includes(e.code)) {
      // the account refused: nothing was bought, a later sync asks again
      await setMediaTranscriptState(sql, f.url, 'retry', { reason: `refused: ${detail}`, attempt: false });
      await returnMediaAttempt(sql, f.url);
      throw e;
    }
    const final = isRefusalOfTheMedia(e) || e instanceof TranscriptUnavailableError;
    await sql.begin(async (tx) => {
      await setMediaTranscriptState(tx, f.url, final ? 'failed' : 'retry', { reason: `${e.code}: ${detail}` });
      // a 206 `transcript-unavailable` is charged: the sync's batch counts it for the budgets
      if (e instanceof TranscriptUnavailableError) {
        await addBatchEstimate(tx, batch.jobId, PRICES.nativeTranscript);
        await hold.spend(tx, PRICES.nativeTranscript);
      }
    });
    batch.counts.failed++;
    log.warn(
      { event: 'media.transcript_failed', sourceId: source.id, url: f.url, code: e.code },
      'media transcript refused',
    );
    return 'failed';
  }
  if (answer.result.kind === 'job') {
    const { jobId } = answer.result;
    await sql.begin(async (tx) => {
      await insertSubmittedBatch(tx, {
        jobId,
        sourceId: source.id,
        kind: 'media',
        lang: null,
        mode: 'generate',
        creditsEstimated: credits,
        request: { url: f.url, mode, durationS: f.durationS },
        textOnly: false,
        replayOf: null,
        firstPollDelayMs: settings.pollInitialDelayMs,
      });
      await landItems(tx, jobId, [{ videoId: f.url, state: 'processing', errorCode: null, payload: undefined }]);
      await setMediaTranscriptState(tx, f.url, 'pending', { jobId });
      await hold.spend(tx, credits);
    });
    await queues.poll.add(
      'poll',
      { jobId, delayMs: settings.pollInitialDelayMs, ...traceField() },
      { jobId: pollJobId(jobId), delay: settings.pollInitialDelayMs },
    );
    return { jobId };
  }
  const t = answer.result.transcript;
  await sql.begin(async (tx) => {
    await landRecords(tx, batch.jobId, [
      {
        ...toLandRecord({
          videoId: `${f.url}${TRANSCRIPT_ITEM_SUFFIX}`,
          state: 'landed',
          errorCode: null,
          payload: answer.raw,
        }),
        state: 'sunk',
      },
    ]);
    await storeMediaTranscript(tx, origin, f.url, { content: t.content, lang: t.lang ?? null, mode });
    // no job of its own: the sync's batch counts it for the budgets
    await addBatchEstimate(tx, batch.jobId, credits);
    await hold.spend(tx, credits);
  });
  batch.counts.stored++;
  return 'stored';
}

/** Answers about the media itself (gone, private, not a media URL we may read): final. */
function isRefusalOfTheMedia(e: ApiError): boolean {
  return e instanceof NotFoundError || e instanceof ForbiddenError || e instanceof InvalidRequestError;
}

/** Suffix of the item key of a transcript answered at once (the item of its metadata is the URL itself). */
const TRANSCRIPT_ITEM_SUFFIX = '#transcript';

/** Whether a media batch item's key is a transcript's answered at once (else the URL of a metadata read). */
export function isMediaTranscriptItem(key: string): boolean {
  return key.endsWith(TRANSCRIPT_ITEM_SUFFIX);
}

/**
 * The landed items of a media batch stored from their raw copies (after `replay --batch`): a
 * metadata read's item as the media row, a transcript's (a job's, or one answered at once) as its
 * transcript. Events only for what changed, as at the first store.
 */
export async function sinkMedia(
  deps: Pick<PipelineDeps, 'sql' | 'settings'>,
  batch: { jobId: string; sourceId: number | null; mode: string },
): Promise<{ sunk: number; quarantined: number; unchanged: number; updated: number }> {
  const counts = { sunk: 0, quarantined: 0, unchanged: 0, updated: 0 };
  for (;;) {
    const n = await deps.sql.begin(async (tx) => {
      const items = await nextLandedChunk(tx, batch.jobId, deps.settings.sinkChunkSize, { lock: true });
      const origin = { jobId: batch.jobId, sourceId: batch.sourceId };
      const bad: { videoId: string; reason: string; reasonCode: QuarantineReason }[] = [];
      const good: string[] = [];
      for (const it of items) {
        const transcriptOf =
          batch.mode === 'generate'
            ? it.videoId
            : it.videoId.endsWith(TRANSCRIPT_ITEM_SUFFIX)
              ? it.videoId.slice(0, -TRANSCRIPT_ITEM_SUFFIX.length)
              : undefined;
        if (transcriptOf !== undefined) {
          const t = (it.payload ?? {}) as { content?: unknown; lang?: unknown };
          const mode = await mediaTranscriptMode(tx, transcriptOf);
          await storeMediaTranscript(tx, origin, transcriptOf, {
            content: t.content,
            lang: typeof t.lang === 'string' ? t.lang : null,
            mode: mode ?? MEDIA_MODE_DEFAULT,
          });
          good.push(it.videoId);
          continue;
        }
        const built = isFile(it.videoId) ? { row: mediaFileRow(it.videoId) } : mediaRowFromApi(it.videoId, it.payload);
        if ('row' in built) {
          const w = await storeMediaMetadata(tx, origin, built.row);
          if (w === 'unchanged') counts.unchanged++;
          else counts.updated++;
          good.push(it.videoId);
        } else bad.push({ videoId: it.videoId, reason: built.reason, reasonCode: built.reasonCode });
      }
      counts.sunk += await markSunk(tx, batch.jobId, good);
      counts.quarantined += await markQuarantined(tx, batch.jobId, bad);
      return items.length;
    });
    if (n === 0) return counts;
  }
}
