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
import { LISTING_PRICE, SOURCE_METADATA_REFRESH_MS } from '../../domain/sources.ts';
import type { SyncOutcome, SyncRunOutcome } from '../../domain/syncs.ts';
import { withBillingScope, type BillingScope } from './charges.ts';
import { BudgetRefusedError, reserveCredits, type CreditHold, type CreditsRefusedError } from './credits.ts';
import type { PipelineDeps } from '../deps.ts';
import type { Listing, PlannedBatch } from '../kinds/adapter.ts';
import { adapterFor } from '../kinds/index.ts';
import { submitGenerations } from './generate.ts';
import { submitBatch } from './submit.ts';
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

export async function syncSource(deps: PipelineDeps, sourceId: number, opts: SyncOptions = {}): Promise<SyncResult> {
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

async function syncUnderLease(
  deps: PipelineDeps,
  sourceId: number,
  opts: SyncOptions,
  billing: BillingScope,
): Promise<SyncResult> {
  const { sql, log, settings } = deps;
  const source = await getSource(deps.sql, sourceId);
  const result = emptyResult(sourceId);
  const trigger = opts.trigger ?? 'cron';
  if (source.paused && trigger === 'cron') {
    return { ...result, outcome: 'paused' };
  }
  // the upstream refused this process's key (key, plan, credits): scheduled syncs make no API
  // call until it is cleared; a sync a person started (backfill, replay) tries, and clears it
  const upstreamHolds: UpstreamHoldRow[] = await holdsApplying(deps);
  if (upstreamHolds.length > 0 && trigger === 'cron') return skipHeld(deps, sourceId, upstreamHolds);

  const refreshAfter = refreshAfterOf(source, opts.refresh);
  const runId = await startSyncRun(sql, sourceId);
  billing.syncRunId = runId;
  const finish = async (outcome: SyncRunOutcome) => {
    // the run's billed total is the sum of its charges: every one recorded so far is written first
    await deps.charges?.flush();
    const billed = await finishSyncRun(sql, runId, outcome, {
      detail: result.detail ?? null,
      videosListed: result.listed,
      videosSubmitted: result.submitted,
      creditsEstimated: result.creditsEstimated,
      listingCredits: result.listingCredits,
      jobIds: result.jobIds,
      chargesRecorded: deps.charges !== undefined,
    });
    if (billed !== null) result.creditsBilled = billed;
  };
  const refusedCredits = async (refusal: CreditsRefusedError, accountLeft: number | undefined): Promise<SyncResult> => {
    result.outcome = 'refused-credits';
    result.detail = refusal.message;
    // an account with nothing left would refuse every sync: hold them until credits return;
    // a spent daily budget refuses this sync only (src/domain/refusals.ts)
    const hold = CREDIT_LIMIT_HOLD[refusal.limit];
    if (hold !== null && accountLeft !== undefined && accountLeft <= 0) await recordHold(deps, hold, refusal.message);
    await markSourceError(sql, sourceId, CREDIT_LIMIT_ERROR_CODE[refusal.limit], refusal.message);
    await finish('refused-credits');
    if (refusal instanceof BudgetRefusedError) {
      log.warn(
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
      log.warn(
        { event: 'sync.refused_credits', sourceId, needed: refusal.needed, available: refusal.available },
        'sync refused: not enough credits',
      );
    }
    return result;
  };
  const upToDate = async (detail?: string): Promise<SyncResult> => {
    await markSourceSynced(sql, sourceId);
    await keepLostVisible(deps, sourceId);
    result.creditsEstimated = 0;
    if (detail !== undefined) result.detail = detail;
    await finish('up-to-date');
    log.info(
      { event: 'sync.up_to_date', sourceId, listed: result.listed, listingCredits: result.listingCredits },
      'source up to date',
    );
    if (upstreamHolds.length > 0) await liftHolds(deps);
    return result;
  };

  try {
    const signal = opts.signal;
    const stopIfAborted = () => {
      if (signal?.aborted)
        throw new AbortedError({ message: `sync of source ${sourceId}: aborted`, cause: signal.reason });
    };
    await resolveSubmissions(deps, sourceId, signal);
    stopIfAborted();
    const wanted = await wantedNow(deps, source);
    if (wanted.length === 0) {
      result.outcome = 'in-flight';
      result.detail = 'every batch of this source is still in flight';
      await finish('up-to-date');
      return result;
    }

    // the listing is paid too: checked and reserved like a batch, so that syncs running side
    // by side (in any process) count it, and a spent budget is not spent further on listings.
    // The check asks for the most this sync's batches can cost on top (granted when credits are
    // plentiful), so that usually the batches need no check of their own (HEADROOM_FACTOR).
    const adapter = adapterFor(source.kind);
    const cost = await listingEstimate(sql, source);
    let listing: Listing;
    const listingCheck =
      cost.credits > 0
        ? await reserveCredits(deps, {
            sourceId,
            estimate: cost.credits,
            sourceBudget: source.maxCreditsPerDay,
            what: 'listing this source',
            reason: 'before-listing',
            headroom: batchesCostBound(source, wanted, settings.batchSize),
            signal,
          })
        : undefined;
    if (listingCheck?.refused) return await refusedCredits(listingCheck.refused, listingCheck.accountLeft);
    // the hold the batches are sent on: the listing's while it has room for them
    let hold: CreditHold | undefined = listingCheck?.hold;
    let planned: PlannedBatch[];
    let estimate: number;
    try {
      try {
        await adapter.refresh(deps, source, { signal });
        result.listingCredits = cost.refresh;
        listing = await adapter.list(deps, source, { signal });
        result.listingCredits += listing.credits;
        // spent: recorded on the run now (the budgets count it) and no longer reserved
        await sql.begin(async (tx) => {
          await recordListingCredits(tx, runId, result.listingCredits);
          await listingCheck?.hold.spend(tx, result.listingCredits);
        });
      } catch (e: unknown) {
        await releaseHold(deps, hold, sourceId);
        throw e;
      }
      result.listed = listing.videoIds.length;
      const candidates = await candidatesOf(deps, source, listing.videoIds);

      planned = await planBatches(deps, source, wanted, candidates, undefined, refreshAfter);
      estimate = planned.reduce((n, b) => n + b.credits, 0);
      if (planned.length > 0) {
        result.creditsEstimated = estimate;
        if (hold === undefined || hold.left() < estimate) {
          await releaseHold(deps, hold, sourceId);
          hold = undefined;
          const check = await reserveCredits(deps, {
            sourceId,
            estimate,
            sourceBudget: source.maxCreditsPerDay,
            signal,
          });
          if (check.refused) return await refusedCredits(check.refused, check.accountLeft);
          hold = check.hold;
        }
        for (const batch of planned) {
          stopIfAborted();
          if (!(await hold.renew())) {
            // stalled past CREDIT_RESERVATION_TTL_MS: others no longer count these credits
            result.detail =
              'the credit reservation expired before every batch was sent; the rest is due at the next sync';
            log.warn(
              { event: 'credits.reservation_lapsed', sourceId, sent: result.jobIds.length, planned: planned.length },
              'credit reservation expired: submitting no more batches this sync',
            );
            break;
          }
          // the due list again, under the claim lock: another source's sync may have claimed some
          const submitted = await submitBatch(deps, {
            sourceId,
            kind: batch.kind,
            lang: batch.lang,
            request: batch.request,
            credits: batch.credits,
            textOnly: source.textOnly,
            claimDue: (tx, ids) =>
              dueVideoIds(tx, settings, batch.kind, batch.lang, ids, !source.textOnly, refreshAfter),
            hold,
            signal,
          });
          if (submitted === null) continue;
          result.jobIds.push(submitted.jobId);
          result.submitted += submitted.videos;
        }
      }
    } finally {
      await releaseHold(deps, hold, sourceId);
    }
    // transcripts generated for videos whose captions a finished batch reported missing
    stopIfAborted();
    const generated = await submitGenerations(deps, source, { platform: deps.api.platform, signal });
    // a loop, not push(...ids): one transcript job per video, and spreading a long list overflows the call stack
    for (const id of generated.jobIds) result.jobIds.push(id);
    result.submitted += generated.videos;
    if (generated.refused && result.jobIds.length === 0) {
      result.creditsEstimated = generated.refused.needed;
      return await refusedCredits(generated.refused, generated.accountLeft);
    }
    if (result.jobIds.length === 0) {
      return await upToDate(planned.length > 0 ? 'every due video was claimed by another source meanwhile' : undefined);
    }
    result.creditsEstimated = estimate + generated.credits;
    await markSourceSynced(sql, sourceId);
    await keepLostVisible(deps, sourceId);
    result.outcome = 'submitted';
    await finish('submitted');
    log.info(
      {
        event: 'sync.submitted',
        sourceId,
        jobIds: result.jobIds,
        videos: result.submitted,
        credits: result.creditsEstimated,
        listingCredits: result.listingCredits,
      },
      'batches submitted',
    );
    if (upstreamHolds.length > 0) await liftHolds(deps);
    return result;
  } catch (caught: unknown) {
    // a gateway's 403 is a bad key only when /me says so too; else a passing fault
    const e = await judgeGatewayForbidden(deps, caught);
    const err = e instanceof ApiError ? e : e instanceof Error ? e : toApiError(e);
    const code = err instanceof ApiError ? err.code : 'error';
    await holdOnRefusal(deps, err).catch((holdErr: unknown) =>
      log.warn({ event: 'hold.record_failed', err: holdErr }, 'could not record the upstream refusal'),
    );
    result.detail = err.message;
    await markSourceError(sql, sourceId, code, err.message);
    const refused = err instanceof ApiError && REFUSED_UPSTREAM_CODES.includes(err.code);
    await finish(refused ? 'refused-upstream' : 'error');
    // submitted batches stay recorded; what was not submitted is due again at the next sync
    throw err;
  }
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
