/**
 * The scheduler: one sync run of one source. It decides what to submit, checks that the account
 * (and the daily budgets) can pay for it, submits each batch exactly once, and records every
 * batch in Postgres before its poll job is enqueued. The credit guard (src/pipeline/ingest/credits.ts)
 * is asked twice, each time reserving what it grants in Postgres for every process to count:
 * before the listing (its price is known: LISTING_PRICE) and before the batches.
 *
 * Every sync, the first too, asks the source's adapter (src/pipeline/kinds/) for its video IDs
 * (a channel or playlist listing costs 1 credit, a search 1 a page, a list of IDs nothing) and
 * submits only the videos that are due (src/domain/attempts.ts) as `videoIds`: never bought for
 * this kind and language by any source, retryable within the attempt cap, or a transcript due for
 * its re-check. That makes the credit estimate exact before anything is spent, and a video listed
 * by several sources is bought once: each batch's videos are claimed in `video_sync` in the same
 * transaction that records the POST, under an advisory lock per kind and language that every
 * process takes (src/pipeline/ingest/submit.ts). A source whose videos are all present spends only its
 * listing. What the adapter listed and every video it listed before (`source_videos`) are the
 * candidates, so a video that fell out of a 5000-video listing is still retried when due.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { AbortedError, ApiError, LimitExceededError, toApiError } from '../../api/errors.ts';
import { isRecordFresh } from '../../db/channels.ts';
import type { Queryable } from '../../db/connection.ts';
import {
  acquireSyncLease,
  releaseSyncLease,
  renewSyncLease,
  SYNC_LEASE_RENEW_MS,
  SYNC_LEASE_TTL_MS,
} from '../../db/leases.ts';
import { inFlightBatchKeys, markSourceError, markSourceSynced } from '../../db/source-sync.ts';
import { rememberedVideos } from '../../db/source-videos.ts';
import { getSource } from '../../db/sources.ts';
import type { Source } from '../../db/schema.ts';
import { lostBatchSubmissions, lostSubmissions, markSubmission, unresolvedSubmissions } from '../../db/submissions.ts';
import {
  finishSyncRun,
  lastListingCredits,
  recordHeldRun,
  recordListingCredits,
  startSyncRun,
} from '../../db/sync-runs.ts';
import { describeHold, describeHoldKey, type UpstreamHoldRow } from '../../db/upstream-holds.ts';
import { readSyncFacts, releaseClaims } from '../../db/video-sync.ts';
import { dueReason } from '../../domain/attempts.ts';
import type { BatchKind } from '../../domain/batches.ts';
import { CREDIT_LIMIT_ERROR_CODE, CREDIT_LIMIT_HOLD, REFUSED_UPSTREAM_CODES } from '../../domain/refusals.ts';
import { LISTING_PRICE, SOURCE_METADATA_REFRESH_MS, type SourceKind } from '../../domain/sources.ts';
import type { SyncOutcome, SyncRunOutcome } from '../../domain/syncs.ts';
import { withBillingScope, type BillingScope } from './charges.ts';
import { BudgetRefusedError, reserveCredits, type CreditHold, type CreditsRefusedError } from './credits.ts';
import type { PipelineDeps } from '../deps.ts';
import type { DocumentSync, Listing, PlannedBatch } from '../kinds/adapter.ts';
import { adapterFor } from '../kinds/index.ts';
import { submitGenerations } from './generate.ts';
import { submitTranslations } from './translate.ts';
import { submitBatch } from './submit.ts';
import { setSpanAttributes, withSpan } from '../../tracing.ts';
import { holdsApplying, judgeGatewayForbidden, liftHolds, recordHold } from '../services/upstream-holds.ts';

/** A submission still `sending` after this long was left by a process that died. */
export const SUBMISSION_STALE_SENDING_MS = 10 * 60_000;

export interface SyncResult {
  sourceId: number;
  outcome: SyncOutcome;
  /** upstream job IDs submitted by this run */
  jobIds: string[];
  /** video IDs listed */
  listed: number;
  /** videos submitted, summed over batches */
  submitted: number;
  /** what this run's batches were estimated to cost: what the credit guard checked */
  creditsEstimated: number;
  /** what listing the source cost (spent before the guard, which then reads /me after it) */
  listingCredits: number;
  /** what the run's requests were billed (`x-billable-requests`), when a charge recorder ran; else undefined */
  creditsBilled?: number;
  /** translations bought and stored by this run (`--translate`); undefined when none was due */
  translated?: number;
  /** the source's kind, for a web source (its `submitted` counts pages read, its job a crawl or its scrapes) */
  kind?: SourceKind;
  detail?: string;
}

export interface SyncOptions {
  trigger?: 'cron' | 'backfill' | 'manual';
  /** `backfill --refresh`: every stored or gone video of the source is fetched again now */
  refresh?: boolean;
  /**
   * the caller gives up (a deadline, Ctrl-C): the request under way ends, nothing more is sent,
   * and the sync ends `error` (aborted) with its lease released; what was submitted stays recorded
   */
  signal?: AbortSignal | undefined;
}

/** After how long a stored video is fetched again in this sync (src/domain/attempts.ts); null: never. */
export function refreshAfterOf(
  source: Pick<Source, 'refreshAfterMs'>,
  forceRefresh: boolean | undefined,
): number | null {
  return forceRefresh ? 0 : source.refreshAfterMs;
}

/**
 * Who holds this process's sync leases: one name per process, so that a lease this process failed
 * to release (Postgres unreachable at the end of a sync) is taken back by its own next sync of the
 * source at once, instead of after SYNC_LEASE_TTL_MS. Two syncs of one source inside the process
 * are kept apart by `syncingHere`.
 */
const SYNC_LEASE_HOLDER = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
const syncingHere = new Set<number>();

/** One sync, the root span of its own trace (src/tracing.ts). */
export function syncSource(deps: PipelineDeps, sourceId: number, opts: SyncOptions = {}): Promise<SyncResult> {
  const attributes = { 'videosite.source.id': sourceId, 'videosite.sync.trigger': opts.trigger ?? 'cron' };
  return withSpan(
    'sync',
    attributes,
    async (span) => {
      const r = await syncSourceOnce(deps, sourceId, opts);
      span.setAttributes({ 'videosite.sync.outcome': r.outcome, 'videosite.batches': r.jobIds.length });
      return r;
    },
    { root: true },
  );
}

async function syncSourceOnce(deps: PipelineDeps, sourceId: number, opts: SyncOptions): Promise<SyncResult> {
  const busy = (): SyncResult => ({
    ...emptyResult(sourceId),
    outcome: 'in-flight',
    detail: 'another process is syncing this source',
  });
  if (syncingHere.has(sourceId)) return busy();
  syncingHere.add(sourceId);
  try {
    // a lease in a row, not a session lock: it holds behind a transaction-pooling PgBouncer and
    // keeps no connection reserved for the sync's length (src/db/leases.ts)
    if (!(await acquireSyncLease(deps.sql, sourceId, SYNC_LEASE_HOLDER, SYNC_LEASE_TTL_MS))) return busy();
    const lease = keepLease(deps, sourceId);
    try {
      // every request of the sync is billed to the source, and to its run once it has one
      const scope: BillingScope = { sourceId, syncRunId: null };
      return await withBillingScope(scope, () => syncUnderLease(deps, sourceId, opts, scope));
    } finally {
      await lease.stop();
      await releaseSyncLease(deps.sql, sourceId, SYNC_LEASE_HOLDER).catch((err: unknown) => {
        // the sync's own outcome (or error) matters more; the lease lapses by itself, and this
        // process's next sync of the source takes it back at once
        deps.log.warn(
          { event: 'sync.lease_failed', sourceId, step: 'release', err },
          'could not release the sync lease; it expires by itself',
        );
      });
    }
  } finally {
    syncingHere.delete(sourceId);
  }
}

/** Renews the source's lease every SYNC_LEASE_RENEW_MS until stopped; one renewal at a time. */
function keepLease(deps: PipelineDeps, sourceId: number): { stop(): Promise<void> } {
  let renewing: Promise<void> = Promise.resolve();
  const renew = async () => {
    try {
      if (!(await renewSyncLease(deps.sql, sourceId, SYNC_LEASE_HOLDER, SYNC_LEASE_TTL_MS))) {
        deps.log.warn(
          { event: 'sync.lease_failed', sourceId, step: 'renew', lost: true },
          'the sync lease expired and was taken by another process',
        );
      }
    } catch (err: unknown) {
      deps.log.warn(
        { event: 'sync.lease_failed', sourceId, step: 'renew', lost: false, err },
        'could not renew the sync lease; trying again',
      );
    }
  };
  const timer = setInterval(() => {
    renewing = renewing.then(renew);
  }, SYNC_LEASE_RENEW_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await renewing;
    },
  };
}

function emptyResult(sourceId: number): SyncResult {
  return {
    sourceId,
    outcome: 'up-to-date',
    jobIds: [],
    listed: 0,
    submitted: 0,
    creditsEstimated: 0,
    listingCredits: 0,
  };
}

/** One sync as it runs: what every stage reads, and the result they fill in. */
interface SyncRun {
  deps: PipelineDeps;
  source: Source;
  runId: number;
  result: SyncResult;
  /** the holds that applied when the sync started: lifted when it gets through */
  upstreamHolds: UpstreamHoldRow[];
  refreshAfter: number | null;
  signal: AbortSignal | undefined;
}

async function syncUnderLease(
  deps: PipelineDeps,
  sourceId: number,
  opts: SyncOptions,
  billing: BillingScope,
): Promise<SyncResult> {
  const source = await getSource(deps.sql, sourceId);
  setSpanAttributes({ 'videosite.source.kind': source.kind });
  const trigger = opts.trigger ?? 'cron';
  if (source.paused && trigger === 'cron') return { ...emptyResult(sourceId), outcome: 'paused' };
  // the upstream refused this process's key (key, plan, credits): scheduled syncs make no API
  // call until it is cleared; a sync a person started (backfill, replay) tries, and clears it
  const upstreamHolds: UpstreamHoldRow[] = await holdsApplying(deps);
  if (upstreamHolds.length > 0 && trigger === 'cron') return skipHeld(deps, sourceId, upstreamHolds);

  const refreshAfter = refreshAfterOf(source, opts.refresh);
  const runId = await startSyncRun(deps.sql, sourceId);
  billing.syncRunId = runId;
  const run: SyncRun = {
    deps,
    source,
    runId,
    result: emptyResult(sourceId),
    upstreamHolds,
    refreshAfter,
    signal: opts.signal,
  };
  try {
    return await syncStages(run);
  } catch (caught: unknown) {
    throw await failRun(run, caught);
  }
}

/** Resolve what earlier syncs left unresolved, list, submit the due batches and the generations. */
async function syncStages(run: SyncRun): Promise<SyncResult> {
  const { deps, source, result } = run;
  await resolveSubmissions(deps, source.id, run.signal);
  stopIfAborted(run);
  const documents = adapterFor(source.kind).documents;
  if (documents && !documents.withVideos) return syncDocumentsStage(run, documents);
  // a kind with documents and videos (media): its documents first, then its videos as any source's
  const docEnd = documents ? await syncDocumentsFirst(run, documents) : undefined;
  if (docEnd !== undefined && 'refused' in docEnd) return docEnd.refused;
  const docEstimate = result.creditsEstimated;
  const wanted = await wantedNow(deps, source);
  if (wanted.length === 0 && result.jobIds.length > 0) return endSubmitted(run);
  if (wanted.length === 0) {
    result.outcome = 'in-flight';
    result.detail = 'every batch of this source is still in flight';
    await finishRun(run, 'up-to-date');
    return result;
  }
  const listed = await listSource(run, wanted);
  if ('refused' in listed) return listed.refused;
  const sent = await submitPlanned(run, wanted, listed.videoIds, listed.hold);
  if ('refused' in sent) return sent.refused;

  // transcripts generated for videos whose captions a finished batch reported missing
  stopIfAborted(run);
  const generated = await submitGenerations(deps, source, { platform: deps.api.platform, signal: run.signal });
  // a loop, not push(...ids): one transcript job per video, and spreading a long list overflows the call stack
  for (const id of generated.jobIds) result.jobIds.push(id);
  result.submitted += generated.videos;
  if (generated.refused && result.jobIds.length === 0) {
    result.creditsEstimated = generated.refused.needed;
    return refuseForCredits(run, generated.refused, generated.accountLeft);
  }
  // translations of the transcripts stored so far (those of this sync's batches: at the next one)
  stopIfAborted(run);
  const translated = await submitTranslations(deps, source, { refresh: run.refreshAfter !== null, signal: run.signal });
  if (translated.translated > 0) result.translated = translated.translated;
  if (translated.refused && result.jobIds.length === 0) {
    result.creditsEstimated = translated.refused.needed;
    return refuseForCredits(run, translated.refused, translated.accountLeft);
  }
  if (result.jobIds.length === 0 && translated.translated === 0) {
    return endUpToDate(
      run,
      sent.planned > 0
        ? 'every due video was claimed by another source meanwhile'
        : docEnd !== undefined && 'detail' in docEnd
          ? docEnd.detail
          : undefined,
    );
  }
  result.creditsEstimated = docEstimate + sent.estimate + generated.credits + translated.credits;
  return endSubmitted(run);
}

/**
 * The documents of a kind that has videos too, before them: a refusal ends the run; otherwise
 * what they bought stays on the run's result and the videos' stages follow.
 */
async function syncDocumentsFirst(
  run: SyncRun,
  documents: DocumentSync,
): Promise<{ refused: SyncResult } | { detail?: string | undefined }> {
  const ended = await documents.sync({
    deps: run.deps,
    source: run.source,
    runId: run.runId,
    result: run.result,
    forceRefresh: run.refreshAfter === 0,
    signal: run.signal,
  });
  if (ended.end === 'refused') return { refused: await refuseForCredits(run, ended.refusal, ended.accountLeft) };
  return ended.end === 'submitted' ? {} : { detail: ended.detail };
}

/** A kind's own sync (web pages: src/pipeline/ingest/sync-pages.ts), ended as a video source's would be. */
async function syncDocumentsStage(run: SyncRun, documents: DocumentSync): Promise<SyncResult> {
  const { result } = run;
  result.kind = run.source.kind;
  const ended = await documents.sync({
    deps: run.deps,
    source: run.source,
    runId: run.runId,
    result,
    forceRefresh: run.refreshAfter === 0,
    signal: run.signal,
  });
  switch (ended.end) {
    case 'submitted':
      return endSubmitted(run);
    case 'up-to-date':
      return endUpToDate(run, ended.detail);
    case 'in-flight':
      result.outcome = 'in-flight';
      result.detail = ended.detail;
      await finishRun(run, 'up-to-date');
      return result;
    case 'refused':
      return refuseForCredits(run, ended.refusal, ended.accountLeft);
  }
}

function stopIfAborted(run: SyncRun): void {
  if (run.signal?.aborted) {
    throw new AbortedError({ message: `sync of source ${run.source.id}: aborted`, cause: run.signal.reason });
  }
}

/**
 * The listing is paid too: checked and reserved like a batch, so that syncs running side by side
 * (in any process) count it, and a spent budget is not spent further on listings. The check asks
 * for the most this sync's batches can cost on top (granted when credits are plentiful), so that
 * usually the batches need no check of their own (HEADROOM_FACTOR). Returns the listed IDs and the
 * hold the batches may be sent on, or the refused result.
 */
async function listSource(
  run: SyncRun,
  wanted: Awaited<ReturnType<typeof wantedNow>>,
): Promise<{ videoIds: string[]; hold: CreditHold | undefined } | { refused: SyncResult }> {
  const { deps, source, result } = run;
  const adapter = adapterFor(source.kind);
  const cost = await listingEstimate(deps.sql, source);
  const listingCheck =
    cost.credits > 0
      ? await withSpan('credit_check', { 'videosite.credits.estimate': cost.credits }, () =>
          reserveCredits(deps, {
            sourceId: source.id,
            estimate: cost.credits,
            sourceBudget: source.maxCreditsPerDay,
            what: 'listing this source',
            reason: 'before-listing',
            headroom: batchesCostBound(source, wanted, deps.settings.batchSize),
            signal: run.signal,
          }),
        )
      : undefined;
  if (listingCheck?.refused) {
    return { refused: await refuseForCredits(run, listingCheck.refused, listingCheck.accountLeft) };
  }
  try {
    const listing: Listing = await withSpan('listing', { 'videosite.source.kind': source.kind }, async (span) => {
      await adapter.refresh(deps, source, { signal: run.signal });
      result.listingCredits = cost.refresh;
      const l = await adapter.list(deps, source, { signal: run.signal });
      span.setAttribute('videosite.videos', l.videoIds.length);
      return l;
    });
    result.listingCredits += listing.credits;
    // spent: recorded on the run now (the budgets count it) and no longer reserved
    await deps.sql.begin(async (tx) => {
      await recordListingCredits(tx, run.runId, result.listingCredits);
      await listingCheck?.hold.spend(tx, result.listingCredits);
    });
    result.listed += listing.videoIds.length;
    return { videoIds: listing.videoIds, hold: listingCheck?.hold };
  } catch (e: unknown) {
    await releaseHold(deps, listingCheck?.hold, source.id);
    throw e;
  }
}

/**
 * Plan the due batches of the listed videos, make sure credits hold them (the listing's hold when
 * it has room, else a check of their own), and submit each once. Releases the hold in the end.
 */
async function submitPlanned(
  run: SyncRun,
  wanted: Awaited<ReturnType<typeof wantedNow>>,
  videoIds: string[],
  listingHold: CreditHold | undefined,
): Promise<{ planned: number; estimate: number } | { refused: SyncResult }> {
  const { deps, source, result } = run;
  let hold = listingHold;
  try {
    const candidates = await candidatesOf(deps, source, videoIds);
    const planned = await planBatches(deps, source, wanted, candidates, undefined, run.refreshAfter);
    const estimate = planned.reduce((n, b) => n + b.credits, 0);
    if (planned.length === 0) return { planned: 0, estimate };
    result.creditsEstimated = estimate;
    if (hold === undefined || hold.left() < estimate) {
      await releaseHold(deps, hold, source.id);
      hold = undefined;
      const check = await withSpan('credit_check', { 'videosite.credits.estimate': estimate }, () =>
        reserveCredits(deps, {
          sourceId: source.id,
          estimate,
          sourceBudget: source.maxCreditsPerDay,
          signal: run.signal,
        }),
      );
      if (check.refused) return { refused: await refuseForCredits(run, check.refused, check.accountLeft) };
      hold = check.hold;
    }
    await submitEach(run, planned, hold);
    return { planned: planned.length, estimate };
  } finally {
    await releaseHold(deps, hold, source.id);
  }
}

async function submitEach(run: SyncRun, planned: PlannedBatch[], hold: CreditHold): Promise<void> {
  const { deps, source, result } = run;
  for (const batch of planned) {
    stopIfAborted(run);
    if (!(await hold.renew())) {
      // stalled past CREDIT_RESERVATION_TTL_MS: others no longer count these credits
      result.detail = 'the credit reservation expired before every batch was sent; the rest is due at the next sync';
      deps.log.warn(
        {
          event: 'credits.reservation_lapsed',
          sourceId: source.id,
          sent: result.jobIds.length,
          planned: planned.length,
        },
        'credit reservation expired: submitting no more batches this sync',
      );
      return;
    }
    // the due list again, under the claim lock: another source's sync may have claimed some
    const attributes = { 'videosite.batch.kind': batch.kind, 'videosite.batch.lang': batch.lang ?? '' };
    const submitted = await withSpan('submit', attributes, async (span) => {
      const s = await submitBatch(deps, {
        sourceId: source.id,
        kind: batch.kind,
        lang: batch.lang,
        request: batch.request,
        credits: batch.credits,
        textOnly: source.textOnly,
        claimDue: (tx, ids) =>
          dueVideoIds(tx, deps.settings, batch.kind, batch.lang, ids, !source.textOnly, run.refreshAfter),
        hold,
        signal: run.signal,
      });
      if (s !== null) span.setAttributes({ 'videosite.job_id': s.jobId, 'videosite.videos': s.videos });
      return s;
    });
    if (submitted === null) continue;
    result.jobIds.push(submitted.jobId);
    result.submitted += submitted.videos;
  }
}

/** Record the run's end; its billed total is the sum of its charges, every one recorded so far written first. */
async function finishRun(run: SyncRun, outcome: SyncRunOutcome): Promise<void> {
  const { deps, result } = run;
  await deps.charges?.flush();
  const billed = await finishSyncRun(deps.sql, run.runId, outcome, {
    detail: result.detail ?? null,
    videosListed: result.listed,
    videosSubmitted: result.submitted,
    creditsEstimated: result.creditsEstimated,
    listingCredits: result.listingCredits,
    jobIds: result.jobIds,
    chargesRecorded: deps.charges !== undefined,
  });
  if (billed !== null) result.creditsBilled = billed;
}

async function refuseForCredits(
  run: SyncRun,
  refusal: CreditsRefusedError,
  accountLeft: number | undefined,
): Promise<SyncResult> {
  const { deps, result } = run;
  const sourceId = run.source.id;
  result.outcome = 'refused-credits';
  result.detail = refusal.message;
  // an account with nothing left would refuse every sync: hold them until credits return;
  // a spent daily budget refuses this sync only (src/domain/refusals.ts)
  const hold = CREDIT_LIMIT_HOLD[refusal.limit];
  if (hold !== null && accountLeft !== undefined && accountLeft <= 0) await recordHold(deps, hold, refusal.message);
  await markSourceError(deps.sql, sourceId, CREDIT_LIMIT_ERROR_CODE[refusal.limit], refusal.message);
  await finishRun(run, 'refused-credits');
  if (refusal instanceof BudgetRefusedError) {
    deps.log.warn(
      {
        event: 'sync.refused_budget',
        sourceId,
        limit: refusal.limit,
        needed: refusal.needed,
        available: refusal.available,
        budget: refusal.budget,
        spent: refusal.spent,
      },
      'sync refused: the daily credit budget is spent',
    );
  } else {
    deps.log.warn(
      { event: 'sync.refused_credits', sourceId, needed: refusal.needed, available: refusal.available },
      'sync refused: not enough credits',
    );
  }
  return result;
}

async function endUpToDate(run: SyncRun, detail?: string): Promise<SyncResult> {
  const { deps, result } = run;
  await markSourceSynced(deps.sql, run.source.id);
  await keepLostVisible(deps, run.source.id);
  result.creditsEstimated = 0;
  if (detail !== undefined) result.detail = detail;
  await finishRun(run, 'up-to-date');
  deps.log.info(
    { event: 'sync.up_to_date', sourceId: run.source.id, listed: result.listed, listingCredits: result.listingCredits },
    'source up to date',
  );
  if (run.upstreamHolds.length > 0) await liftHolds(deps);
  return result;
}

async function endSubmitted(run: SyncRun): Promise<SyncResult> {
  const { deps, result } = run;
  await markSourceSynced(deps.sql, run.source.id);
  await keepLostVisible(deps, run.source.id);
  result.outcome = 'submitted';
  await finishRun(run, 'submitted');
  deps.log.info(
    {
      event: 'sync.submitted',
      sourceId: run.source.id,
      jobIds: result.jobIds,
      videos: result.submitted,
      credits: result.creditsEstimated,
      listingCredits: result.listingCredits,
    },
    'batches submitted',
  );
  if (run.upstreamHolds.length > 0) await liftHolds(deps);
  return result;
}

/** A sync that failed: its refusal held, the source's error and the run's end recorded; the error to rethrow. */
async function failRun(run: SyncRun, caught: unknown): Promise<Error> {
  const { deps, result } = run;
  // a gateway's 403 is a bad key only when /me says so too; else a passing fault
  const e = await judgeGatewayForbidden(deps, caught);
  const err = e instanceof ApiError ? e : e instanceof Error ? e : toApiError(e);
  const code = err instanceof ApiError ? err.code : 'error';
  await holdOnRefusal(deps, err).catch((holdErr: unknown) =>
    deps.log.warn({ event: 'hold.record_failed', err: holdErr }, 'could not record the upstream refusal'),
  );
  result.detail = err.message;
  await markSourceError(deps.sql, run.source.id, code, err.message);
  const refused = err instanceof ApiError && REFUSED_UPSTREAM_CODES.includes(err.code);
  await finishRun(run, refused ? 'refused-upstream' : 'error');
  // submitted batches stay recorded; what was not submitted is due again at the next sync
  return err;
}

/**
 * The most one sync's batches of `source` can cost: every video it may list, due in every kind
 * and language wanted, at 1 + 1 per video per batch. 0 (ask for nothing more) when the source has
 * no limit to bound it.
 */
export function batchesCostBound(
  source: Pick<Source, 'maxVideos'>,
  wanted: readonly unknown[],
  batchSize: number,
): number {
  if (source.maxVideos === null) return 0;
  return wanted.length * (Math.ceil(source.maxVideos / Math.max(1, batchSize)) + source.maxVideos);
}

/**
 * Let a hold's unspent credits go. A failure only leaves them counted until the reservation
 * expires (erring on refusing), so it is logged, never thrown over the sync's own outcome.
 */
async function releaseHold(
  deps: Pick<PipelineDeps, 'log'>,
  hold: CreditHold | undefined,
  sourceId: number,
): Promise<void> {
  await hold
    ?.release()
    .catch((err: unknown) =>
      deps.log.warn(
        { event: 'credits.release_failed', sourceId, err },
        'could not release a credit reservation; it counts until it expires',
      ),
    );
}

/** What a sync of `source` pays before any batch: its listing, and its record when stale. */
export interface ListingEstimate {
  /** the record re-read (1 credit) when older than SOURCE_METADATA_REFRESH_MS, else 0 */
  refresh: number;
  /** the listing: exact, or for a search 1 a page for as many pages as its last listing took */
  listing: number;
  credits: number;
  /** pages of a search's last listing (a search pages until it has `--limit` results); undefined for other kinds */
  pages?: number;
}

export async function listingEstimate(sql: Queryable, source: Source): Promise<ListingEstimate> {
  const price = LISTING_PRICE[source.kind];
  const refresh =
    price.record !== null && !(await isRecordFresh(sql, price.record, source.externalId, SOURCE_METADATA_REFRESH_MS))
      ? 1
      : 0;
  if (!price.perPage) return { refresh, listing: price.listing, credits: refresh + price.listing };
  const pages = Math.max(1, (await lastListingCredits(sql, source.id)) ?? 1);
  return { refresh, listing: price.listing * pages, credits: refresh + price.listing * pages, pages };
}

/**
 * In a plan over several sources (`backfill --dry-run`): per kind and language, the videos that
 * earlier sources of the plan buy, and how many later sources left out for that.
 */
export interface PlanClaims {
  videos: Map<string, Set<string>>;
  shared: number;
}

/**
 * The batches that buy what is due of `candidates`, for each kind and language in `wanted`.
 * With `claims`, videos an earlier source of the plan buys are left out, as the claim lock
 * leaves them out of a real sync (a video is bought once whichever sources list it), and this
 * source's are added.
 */
export async function planBatches(
  deps: Pick<PipelineDeps, 'sql' | 'settings'>,
  source: Source,
  wanted: readonly { kind: BatchKind; lang: string | null }[],
  candidates: string[],
  claims?: PlanClaims,
  refreshAfterMs: number | null = source.refreshAfterMs,
): Promise<PlannedBatch[]> {
  const adapter = adapterFor(source.kind);
  const planned: PlannedBatch[] = [];
  for (const w of wanted) {
    let due = await dueVideoIds(deps.sql, deps.settings, w.kind, w.lang, candidates, !source.textOnly, refreshAfterMs);
    if (claims) {
      const key = `${w.kind}/${w.lang ?? ''}`;
      const taken = claims.videos.get(key) ?? new Set<string>();
      const mine = due.filter((id) => !taken.has(id));
      claims.shared += due.length - mine.length;
      for (const id of mine) taken.add(id);
      claims.videos.set(key, taken);
      due = mine;
    }
    for (const b of adapter.buildBatches(source, w.kind, w.lang, due, deps.settings.batchSize)) planned.push(b);
  }
  return planned;
}

/**
 * Kinds and languages to submit now: metadata and each wanted language, less those with a batch
 * in flight or a POST whose answer was lost after the account was charged (submitting again
 * could pay twice; a person decides: replay --lost).
 */
export async function wantedNow(
  deps: Pick<PipelineDeps, 'sql'>,
  source: Source,
): Promise<{ kind: BatchKind; lang: string | null }[]> {
  const key = (kind: BatchKind, lang: string | null) => `${kind}/${lang ?? ''}`;
  const busy = new Set((await inFlightBatchKeys(deps.sql, source.id)).map((b) => key(b.kind, b.lang)));
  for (const l of await lostBatchSubmissions(deps.sql, source.id)) busy.add(key(l.kind, l.lang));
  const langs: (string | null)[] = source.langs.length > 0 ? source.langs : [null];
  return [
    { kind: 'video' as const, lang: null },
    ...langs.map((lang) => ({ kind: 'transcript' as const, lang })),
  ].filter((w) => !busy.has(key(w.kind, w.lang)));
}

/** This listing in its order, then every video the source listed before and no longer lists. */
export async function candidatesOf(
  deps: Pick<PipelineDeps, 'sql'>,
  source: Source,
  listed: readonly string[],
): Promise<string[]> {
  const seen = new Set(listed);
  const earlier = (await rememberedVideos(deps.sql, source.id)).filter((id) => !seen.has(id));
  return [...listed, ...earlier];
}

/**
 * Of `ids`, those due for `kind`/`lang` now (in the given order), by the policy of
 * src/domain/attempts.ts over what `video_sync` and the claiming batch or POST say.
 */
export async function dueVideoIds(
  sql: PipelineDeps['sql'] | Parameters<typeof readSyncFacts>[0],
  settings: Pick<PipelineDeps['settings'], 'retryAttemptsMax' | 'retryBackoffBaseMs'>,
  kind: BatchKind,
  lang: string | null,
  ids: string[],
  wantsChunks: boolean,
  refreshAfterMs: number | null = null,
): Promise<string[]> {
  const { now, rows } = await readSyncFacts(sql, kind, lang, ids);
  const policy = {
    now,
    retryAttemptsMax: settings.retryAttemptsMax,
    retryBackoffBaseMs: settings.retryBackoffBaseMs,
    // only a transcript comes as chunks or as plain text
    wantsChunks: kind === 'transcript' && wantsChunks,
    refreshAfterMs,
  };
  // metadata stored before claims were recorded counts as delivered (when it was fetched is not
  // known: a refresh takes it)
  return rows
    .filter((r) => (r.storedBeforeClaims ? refreshAfterMs !== null : dueReason(r.facts, policy) !== null))
    .map((r) => r.videoId);
}

/**
 * Decide what became of this source's POSTs whose answer was lost, before this sync spends
 * anything: if the account's credits have not moved since the reading taken just before the
 * POST, nothing was created (this sync submits again); if they moved, it probably was created
 * and cannot be read without its job ID: `lost`, not re-submitted automatically.
 */
async function resolveSubmissions(
  deps: PipelineDeps,
  sourceId: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  const { sql, api, log } = deps;
  const pending = await unresolvedSubmissions(sql, sourceId, SUBMISSION_STALE_SENDING_MS);
  if (pending.length === 0) return;
  const me = await api.me({ signal });
  for (const p of pending) {
    const when = p.createdAt.toISOString();
    if (p.usedCreditsBefore !== null && me.usedCredits === p.usedCreditsBefore) {
      await sql.begin(async (tx) => {
        await markSubmission(tx, p.id, 'not-created', {
          detail: `answer lost at ${when}; the account was not charged since (used ${me.usedCredits}): not created, submitted again`,
        });
        await releaseClaims(tx, p.id);
      });
      log.warn(
        { event: 'submission.not_created', sourceId, submission: p.id, kind: p.kind, lang: p.lang },
        'lost batch POST was not created upstream: submitting again',
      );
      continue;
    }
    const detail =
      `the answer to a batch POST (${p.kind}${p.lang ? ` ${p.lang}` : ''}) was lost at ${when} and the account was charged since ` +
      `(used ${p.usedCreditsBefore ?? 'unknown'} -> ${me.usedCredits}): the batch was probably created upstream but cannot be read; ` +
      'not re-submitted automatically (that could pay twice); to re-submit: videosite-ingest replay --lost --yes';
    await markSubmission(sql, p.id, 'lost', { detail });
    await markSourceError(sql, sourceId, 'answer-lost', detail);
    log.error(
      {
        event: 'submission.lost',
        sourceId,
        submission: p.id,
        kind: p.kind,
        lang: p.lang,
        creditsEstimated: p.creditsEstimated,
      },
      'lost batch POST was probably created upstream: not re-submitted',
    );
  }
}

/** A sync that went well otherwise still shows, as the source's error, a lost POST left undecided. */
async function keepLostVisible(deps: Pick<PipelineDeps, 'sql'>, sourceId: number): Promise<void> {
  const [lost] = await lostSubmissions(deps.sql, sourceId);
  if (!lost) return;
  await markSourceError(deps.sql, sourceId, 'answer-lost', lost.detail, lost.createdAt);
}

/**
 * A scheduled sync an upstream hold stops: no API call, but a `held` run, so that a skipped tick
 * shows beside the others, and one warning per source and hold, not one per tick: only when
 * the source's previous run was not already held under these holds (read from `sync_runs`, so
 * it holds across daemons and restarts; the source's lock orders its runs).
 */
async function skipHeld(deps: PipelineDeps, sourceId: number, holds: readonly UpstreamHoldRow[]): Promise<SyncResult> {
  const codes = [...new Set(holds.map((h) => h.code))];
  const newest = holds.reduce((d, h) => (h.since > d ? h.since : d), holds[0]!.since);
  // short: a run is written at every tick of a hold (the whole story is in the log and `status`)
  const detail = `upstream hold (${codes.join(', ')}) since ${newest.toISOString()} on ${describeHoldKey(deps.api.keyFingerprint)}: no API call`;
  const { firstOfHold } = await recordHeldRun(deps.sql, sourceId, detail, newest);
  if (firstOfHold) {
    deps.log.warn(
      {
        event: 'sync.held',
        sourceId,
        holds: codes,
        keyFingerprint: deps.api.keyFingerprint,
        since: newest.toISOString(),
      },
      `scheduled sync skipped, and every tick after it while the hold stands (sync_runs outcome held; logged once per source and hold): ${describeHold(holds[0]!)}`,
    );
  }
  return { ...emptyResult(sourceId), outcome: 'held', detail };
}

/** Holds for the refusals retrying cannot fix: a bad key, a plan without batches, no credits left. */
async function holdOnRefusal(deps: PipelineDeps, err: Error): Promise<void> {
  if (!(err instanceof ApiError)) return;
  if (err.code === 'unauthorized' || err.code === 'upgrade-required') {
    await recordHold(deps, err.code, err.message);
    return;
  }
  if (err instanceof LimitExceededError && err.retryAfterMs === undefined) {
    // a 429 is a rate limit or an exhausted quota; /me (free) tells which
    const me = await deps.api.me();
    if (me.usedCredits >= me.maxCredits - deps.settings.creditReserve) {
      await recordHold(deps, 'credits', `${err.message} (used ${me.usedCredits} of ${me.maxCredits} credits)`);
    }
  }
}
