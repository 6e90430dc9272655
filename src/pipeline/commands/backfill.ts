/**
 * A backfill: sync some sources now, then wait until every item of their batches has landed (or
 * ended with a recorded errorCode), and say whether everything landed. The waiting reads
 * Postgres only; the caller runs poller and sink workers (in this process, or daemons elsewhere).
 */
import { ApiError } from '../../api/errors.ts';
import type { BatchProgress } from '../../db/batch-progress.ts';
import { inFlightJobIds } from '../../db/batches.ts';
import { databaseNow } from '../../db/connection.ts';
import { billedBetween } from '../../db/credit-charges.ts';
import type { Source } from '../../db/schema.ts';
import { getSource } from '../../db/sources.ts';
import { isTerminalStatus, type BatchKind } from '../../domain/batches.ts';
import { REFUSED_UPSTREAM_CODES } from '../../domain/refusals.ts';
import { generateCredits, PRICES, translationCredits } from '../../domain/prices.ts';
import { LISTING_PRICE } from '../../domain/sources.ts';
import { budgetsLeft, creditsLeft, takeCreditSnapshot } from '../ingest/credits.ts';
import type { PipelineDeps } from '../deps.ts';
import type { DocumentSync } from '../kinds/adapter.ts';
import { adapterFor } from '../kinds/index.ts';
import { planGenerations, submitGenerations } from '../ingest/generate.ts';
import { withBillingScope } from '../ingest/charges.ts';
import { planTranslations, submitTranslations } from '../ingest/translate.ts';
import {
  candidatesOf,
  listingEstimate,
  planBatches,
  refreshAfterOf,
  syncSource,
  wantedNow,
  type ListingEstimate,
  type PlanClaims,
  type SyncResult,
} from '../ingest/sync-source.ts';
import { recheckHolds } from '../services/upstream-holds.ts';
import { waitForBatches } from './wait-for-batches.ts';

/**
 * Sources a backfill syncs side by side. Each sync mostly waits on the API (listing, /me, the
 * POSTs) and may hold two pooled connections (src/domain/connections.ts), so a few at a time: one by one, a
 * backfill of 20 sources spent ~9 s submitting at 100 ms per request. Together they still keep
 * to the credits (their reservations are in Postgres, shared with every other process: see
 * src/pipeline/ingest/credits.ts), and the shared rate limiter still paces the requests.
 */
export const BACKFILL_SYNC_CONCURRENCY = 4;

/**
 * Syncs at once for a pool of `poolMax` connections: each sync may hold two (a transaction and
 * its lease's renewal beside it, src/domain/connections.ts), so at most half the pool.
 */
export function syncConcurrency(poolMax: number): number {
  return Math.max(1, Math.min(BACKFILL_SYNC_CONCURRENCY, Math.floor(poolMax / 2)));
}

/** `fn` over `items`, at most `limit` at once; results in the order of `items`. */
async function mapConcurrent<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return out;
}

export interface BackfillReport {
  syncs: SyncResult[];
  syncErrors: { sourceId: number; code: string; message: string }[];
  batches: BatchProgress[];
  timedOut: boolean;
  /** whether the run waited for its batches (false with --no-wait) */
  waited: boolean;
  /** 0 all landed; 1 something did not land; 3 upstream refused */
  exitCode: 0 | 1 | 3;
  /** one line per reason the exit code is not 0 */
  problems: string[];
  /**
   * what was spent while it ran, by every process on the account: `billed` is the sum of the
   * answers' `x-billable-requests` (the published price where one had none; null: no charge
   * recorder ran), `used` what `/me` says was used over the same span (null: unread)
   */
  credits?: { billed: number | null; used: number | null };
}

export interface BackfillOptions {
  sourceIds: number[];
  wait: boolean;
  /** give up waiting after this long; default: no limit */
  timeoutMs?: number | undefined;
  /** called whenever the progress changes while waiting */
  onProgress?: ((batches: BatchProgress[]) => void) | undefined;
  checkIntervalMs?: number;
  signal?: AbortSignal;
  /** `--refresh`: every stored or gone video of the sources is fetched again (src/domain/attempts.ts) */
  refresh?: boolean | undefined;
}

export async function runBackfill(deps: PipelineDeps, opts: BackfillOptions): Promise<BackfillReport> {
  const report: BackfillReport = {
    syncs: [],
    syncErrors: [],
    batches: [],
    timedOut: false,
    waited: opts.wait,
    exitCode: 0,
    problems: [],
  };
  // a person's run re-checks the account first (a free /me): a key fixed since, or credits back,
  // lift their holds, so batches in flight are polled again even when no source submits
  await recheckHolds(deps).catch((e: unknown) =>
    deps.log.warn({ event: 'hold.recheck_failed', err: e }, 'could not re-check upstream holds'),
  );
  // what the account had used before (free): set beside what the answers say was billed, at the end
  const since = await databaseNow(deps.sql);
  const usedBefore = await deps.api.me({ signal: opts.signal }).then(
    (me) => me.usedCredits,
    () => undefined,
  );
  // side by side (each sync is mostly waiting on the API); reported in the order given
  const outcomes = await mapConcurrent(opts.sourceIds, syncConcurrency(deps.sql.options.max), async (sourceId) => {
    try {
      return {
        sourceId,
        result: await syncSource(deps, sourceId, {
          trigger: 'backfill',
          refresh: opts.refresh === true,
          signal: opts.signal,
        }),
      };
    } catch (e: unknown) {
      return { sourceId, error: e };
    }
  });
  for (const o of outcomes) {
    if (o.result) {
      report.syncs.push(o.result);
      continue;
    }
    const e = o.error;
    const code = e instanceof ApiError ? e.code : 'error';
    report.syncErrors.push({ sourceId: o.sourceId, code, message: e instanceof Error ? e.message : String(e) });
  }

  // the batches to wait for: what this run submitted, and what was already in flight for its sources
  const submitted = report.syncs.flatMap((s) => s.jobIds);
  const jobIds = [...new Set([...submitted, ...(await inFlightJobIds(deps.sql, opts.sourceIds))])];

  const startedMs = Date.now();
  const waitFor = (ids: string[], timeoutMs: number | undefined) =>
    waitForBatches(deps.sql, ids, {
      // without --wait: one reading of what was submitted
      ...(opts.wait ? {} : { done: () => true }),
      timeoutMs,
      signal: opts.signal,
      onProgress: opts.onProgress,
      checkIntervalMs: opts.checkIntervalMs,
    });
  let waited = await waitFor(jobIds, opts.timeoutMs);
  // Captions a finished batch reported missing are generated now (sources with
  // --generate-missing), so one backfill ends with them stored rather than at the next sync.
  if (opts.wait && !waited.timedOut && !opts.signal?.aborted) {
    const generated = await generateMissing(deps, report, opts.signal);
    if (generated.length > 0) {
      const left = opts.timeoutMs === undefined ? undefined : Math.max(0, opts.timeoutMs - (Date.now() - startedMs));
      waited = await waitFor([...jobIds, ...generated], left);
    }
  }
  // Translations of the transcripts those batches stored (sources with --translate): synchronous
  // requests, so one backfill ends with them stored too.
  if (opts.wait && !waited.timedOut && !opts.signal?.aborted) {
    await translateStored(deps, report, opts.refresh === true, opts.signal);
  }
  report.batches = waited.batches;
  report.timedOut = waited.timedOut;
  // a fresh reading of what the account has spent, for status (reading /me is free)
  // (not when the run was given up: an upstream that hangs would hold it again)
  const reading = opts.signal?.aborted ? Promise.resolve(undefined) : takeCreditSnapshot(deps, null, 'after-backfill');
  const after = await reading.catch((err: unknown) => {
    deps.log.warn(
      { event: 'credits.read_failed', reason: err instanceof Error ? err.message : String(err) },
      'could not read /me after the backfill',
    );
    return undefined;
  });
  report.credits = await spentDuring(deps, since, usedBefore, after?.usedCredits);
  judge(report, opts.wait);
  return report;
}

/** Billed (the answers' headers) and used (`/me`) since `since`; a difference is logged. */
async function spentDuring(
  deps: PipelineDeps,
  since: Date,
  usedBefore: number | undefined,
  usedAfter: number | undefined,
): Promise<{ billed: number | null; used: number | null }> {
  const used =
    usedBefore !== undefined && usedAfter !== undefined && usedAfter >= usedBefore ? usedAfter - usedBefore : null;
  if (deps.charges === undefined) return { billed: null, used };
  await deps.charges.flush();
  const billed = await billedBetween(deps.sql, since);
  if (used !== null && used !== billed) {
    deps.log.warn(
      { event: 'charges.differ_from_me', billed, usedDelta: used, since: since.toISOString() },
      'credits billed (x-billable-requests) differ from what /me says was used meanwhile',
    );
  }
  return { billed, used };
}

function judge(report: BackfillReport, waited: boolean): void {
  const p = report.problems;
  let refused = false;
  for (const s of report.syncs) {
    if (s.outcome === 'refused-credits') {
      refused = true;
      p.push(`source ${s.sourceId}: ${s.detail ?? 'refused: not enough credits'}`);
    }
  }
  for (const e of report.syncErrors) {
    if ((REFUSED_UPSTREAM_CODES as readonly string[]).includes(e.code)) refused = true;
    p.push(`source ${e.sourceId}: ${e.message}`);
  }
  if (waited) {
    if (report.timedOut) p.push('timed out before every batch finished');
    for (const b of report.batches) {
      const what = `batch ${b.jobId} (${b.kind}${b.lang ? ` ${b.lang}` : ''}, source ${b.sourceId ?? '-'})`;
      if (isTerminalStatus(b.status) && b.status !== 'completed')
        p.push(`${what} ${b.status}${b.errorCode ? ` (${b.errorCode})` : ''}`);
      if (b.retryable > 0) p.push(`${what}: ${b.retryable} item(s) left retryable (re-submit: replay --failed)`);
      if (b.quarantined > 0) p.push(`${what}: ${b.quarantined} item(s) quarantined (kept raw with the reason)`);
      if (b.processing > 0 && !report.timedOut) p.push(`${what}: ${b.processing} item(s) never finished`);
    }
  }
  report.exitCode = refused ? 3 : p.length > 0 ? 1 : 0;
}

/**
 * Generated transcripts for the synced sources that want them, now that their batches ended;
 * each source's sync result counts them. Returns the transcript jobs' IDs.
 */
async function generateMissing(
  deps: PipelineDeps,
  report: BackfillReport,
  signal: AbortSignal | undefined,
): Promise<string[]> {
  const jobIds: string[] = [];
  for (const sync of report.syncs) {
    const source = await getSource(deps.sql, sync.sourceId).catch(() => null);
    if (!source?.generateMissing) continue;
    try {
      const g = await submitGenerations(deps, source, { platform: deps.api.platform, signal });
      // a loop, not push(...ids): one transcript job per video, and spreading a long list overflows the call stack
      for (const id of g.jobIds) {
        sync.jobIds.push(id);
        jobIds.push(id);
      }
      sync.submitted += g.videos;
      sync.creditsEstimated += g.credits;
      if (g.jobIds.length > 0 && sync.outcome === 'up-to-date') sync.outcome = 'submitted';
    } catch (e: unknown) {
      const code = e instanceof ApiError ? e.code : 'error';
      report.syncErrors.push({ sourceId: sync.sourceId, code, message: e instanceof Error ? e.message : String(e) });
    }
  }
  return jobIds;
}

/**
 * Translations for the synced sources that want them, now that their batches stored their
 * transcripts; billed to each source, and counted in its sync result. A refusal of the credit
 * guard is reported as the source's problem (exit 3), like a refused sync.
 */
async function translateStored(
  deps: PipelineDeps,
  report: BackfillReport,
  refresh: boolean,
  signal: AbortSignal | undefined,
): Promise<void> {
  for (const sync of report.syncs) {
    const source = await getSource(deps.sql, sync.sourceId).catch(() => null);
    if (!source || source.translateLangs.length === 0) continue;
    try {
      const t = await withBillingScope({ sourceId: source.id, syncRunId: null }, () =>
        submitTranslations(deps, source, { refresh: refresh || source.refreshAfterMs !== null, signal }),
      );
      if (t.refused) {
        // nothing was sent: the source's refusal, as for a sync the guard refuses (exit 3)
        sync.outcome = 'refused-credits';
        sync.detail = `translations: ${t.refused.message}`;
        continue;
      }
      sync.translated = (sync.translated ?? 0) + t.translated;
      sync.creditsEstimated += t.credits;
      if (t.translated > 0 && sync.outcome === 'up-to-date') sync.outcome = 'submitted';
    } catch (e: unknown) {
      const code = e instanceof ApiError ? e.code : 'error';
      report.syncErrors.push({ sourceId: sync.sourceId, code, message: e instanceof Error ? e.message : String(e) });
    }
  }
}

/** One batch (or set of generated transcripts, or of translations) a backfill would pay for. */
export interface PlannedPurchase {
  /**
   * `page`: a website's crawl, or a pages source's scrapes (`videos` then counts pages);
   * `media`: media items' metadata and transcripts;
   * `translate`: translations into `lang` of transcripts already stored, estimated from the videos' durations
   */
  kind: BatchKind | 'generate' | 'translate';
  lang: string | null;
  videos: number;
  credits: number;
}

/** What syncing one source now would pay for, as far as Postgres knows. */
export interface PlannedSourceSync {
  source: Pick<Source, 'id' | 'kind' | 'externalId' | 'title' | 'maxCreditsPerDay'>;
  /** the listing and its record's refresh; credits 0 when nothing is listed (a `videos` source, or everything in flight) */
  listing: ListingEstimate;
  /** videos Postgres knows the source lists (what the plan is made of) */
  known: number;
  /** in the order they would be sent */
  purchases: PlannedPurchase[];
  /** kinds and languages left out: a batch of theirs is still in flight */
  inFlight: { kind: BatchKind; lang: string | null }[];
  /** what the plan cannot know without a paid listing, or before the batches answer */
  unknowns: string[];
  /** the source's `--max-credits-per-day` and what it spent or reserved today */
  budget?: { budget: number; spent: number };
}

export interface BackfillPlan {
  sources: PlannedSourceSync[];
  /** listings, batches and generated transcripts, summed */
  credits: number;
  /** `/me` (free): left above the reserve and reserved by syncs in progress; or why it could not be read */
  account: { left: number; reserved: number } | { error: string };
  /** CREDIT_BUDGET_PER_DAY and what was spent or reserved today */
  budget?: { budget: number; spent: number };
}

/** Longest wait for the dry run's `/me` (its only API call): the plan is printed without it. */
export const DRY_RUN_ME_TIMEOUT_MS = 10_000;

/**
 * `backfill --dry-run`: what a backfill of `sourceIds` would submit now, planned from Postgres
 * alone (the videos each source listed before, `source_videos`; what is due, by
 * src/domain/attempts.ts over `video_sync`), without a paid call: the only request is `/me`,
 * which is free. Nothing is written. A video several sources list is planned once, for the first.
 */
export async function planBackfill(
  deps: Pick<PipelineDeps, 'sql' | 'api' | 'settings'>,
  sourceIds: number[],
  opts: { refresh?: boolean | undefined } = {},
): Promise<BackfillPlan> {
  const claims: PlanClaims = { videos: new Map(), shared: 0 };
  const plan: BackfillPlan = { sources: [], credits: 0, account: { error: 'not read' } };
  for (const id of sourceIds) {
    const p = await planSourceSync(deps, await getSource(deps.sql, id), claims, opts.refresh === true);
    plan.sources.push(p);
    plan.credits += p.listing.credits + p.purchases.reduce((n, b) => n + b.credits, 0);
  }
  const budgets = await budgetsLeft(deps, null, null);
  if (budgets.installation) plan.budget = budgets.installation;
  try {
    const c = await creditsLeft(deps, { signal: AbortSignal.timeout(DRY_RUN_ME_TIMEOUT_MS) });
    plan.account = { left: c.left, reserved: c.reserved };
  } catch (e: unknown) {
    plan.account = { error: e instanceof Error ? e.message : String(e) };
  }
  return plan;
}

/** A kind's own plan (web pages: a crawl at 1 + its limit, or the pages due for a scrape). */
async function planDocumentSync(
  deps: Pick<PipelineDeps, 'sql' | 'settings'>,
  source: Source,
  documents: DocumentSync,
  refresh: boolean,
): Promise<PlannedSourceSync> {
  const plan = await documents.plan(deps.sql, source, refresh, deps.settings.retryAttemptsMax);
  const out: PlannedSourceSync = {
    source,
    listing: { refresh: 0, listing: 0, credits: 0 },
    known: plan.known,
    purchases: plan.documents > 0 ? [{ kind: 'page', lang: null, videos: plan.documents, credits: plan.credits }] : [],
    inFlight: plan.inFlight ? [{ kind: 'page', lang: null }] : [],
    unknowns: plan.unknowns,
  };
  const budgets = await budgetsLeft(deps, source.id, source.maxCreditsPerDay);
  if (budgets.source) out.budget = budgets.source;
  return out;
}

/** The documents of a kind that lists videos too (media items), added to its plan. */
async function planDocumentsFirst(
  deps: Pick<PipelineDeps, 'sql' | 'settings'>,
  source: Source,
  documents: DocumentSync,
  refresh: boolean,
  out: PlannedSourceSync,
): Promise<void> {
  const plan = await documents.plan(deps.sql, source, refresh, deps.settings.retryAttemptsMax);
  if (plan.documents > 0)
    out.purchases.push({ kind: 'media', lang: null, videos: plan.documents, credits: plan.credits });
  if (plan.inFlight) out.inFlight.push({ kind: 'media', lang: null });
  out.known += plan.known;
  for (const u of plan.unknowns) out.unknowns.push(u);
}

async function planSourceSync(
  deps: Pick<PipelineDeps, 'sql' | 'settings'>,
  source: Source,
  claims: PlanClaims,
  refresh: boolean,
): Promise<PlannedSourceSync> {
  const documents = adapterFor(source.kind).documents;
  if (documents && !documents.withVideos) return planDocumentSync(deps, source, documents, refresh);
  const wanted = await wantedNow(deps, source);
  const langs: (string | null)[] = source.langs.length > 0 ? source.langs : [null];
  const all = [{ kind: 'video' as const, lang: null }, ...langs.map((lang) => ({ kind: 'transcript' as const, lang }))];
  const inFlight = all.filter((w) => !wanted.some((x) => x.kind === w.kind && x.lang === w.lang));
  const candidates = await candidatesOf(deps, source, []);
  const out: PlannedSourceSync = {
    source,
    // a sync with everything in flight stops before its listing
    listing: wanted.length === 0 ? { refresh: 0, listing: 0, credits: 0 } : await listingEstimate(deps.sql, source),
    known: candidates.length,
    purchases: [],
    inFlight,
    unknowns: [],
  };
  const budgets = await budgetsLeft(deps, source.id, source.maxCreditsPerDay);
  if (budgets.source) out.budget = budgets.source;
  // a kind with documents and videos (media): its documents first, as its sync buys them
  if (documents) await planDocumentsFirst(deps, source, documents, refresh, out);
  if (wanted.length === 0) return out;

  const sharedBefore = claims.shared;
  for (const b of await planBatches(deps, source, wanted, candidates, claims, refreshAfterOf(source, refresh))) {
    out.purchases.push({ kind: b.kind, lang: b.lang, videos: b.videos, credits: b.credits });
  }
  const gen = await planGenerations(deps, source);
  for (const lang of langs) {
    const of = gen.planned.filter((g) => g.lang === lang);
    if (of.length === 0) continue;
    const credits = of.reduce((n, g) => n + generateCredits(g.durationS), 0);
    out.purchases.push({ kind: 'generate', lang, videos: of.length, credits });
  }
  const tr = await planTranslations(deps, source, { refresh: refreshAfterOf(source, refresh) !== null });
  for (const lang of source.translateLangs) {
    const of = tr.planned.filter((t) => t.lang === lang);
    if (of.length === 0) continue;
    const credits = of.reduce((n, t) => n + translationCredits(t.durationS), 0);
    out.purchases.push({ kind: 'translate', lang, videos: of.length, credits });
  }
  if (tr.overBudget.length > 0) {
    out.unknowns.push(
      `${tr.overBudget.length} translation(s) left unbought: --max-translate-minutes ${source.maxTranslateMinutes ?? 'unset'} ` +
        `has no room for them (${tr.usedMinutes} min used or planned)`,
    );
  }

  const kinds = wanted
    .map((w) => (w.kind === 'video' ? 'metadata' : `transcript ${w.lang ?? '(default language)'}`))
    .join(', ');
  const price = LISTING_PRICE[source.kind];
  if (price.listing > 0) {
    out.unknowns.push(
      `videos the listing finds that Postgres has not seen: 1 credit each for ${kinds}, and 1 per batch more` +
        (price.perPage ? '' : ` (the listing returns at most ${source.maxVideos})`),
    );
  }
  if (price.perPage) {
    out.unknowns.push(
      `how many pages the search takes to find ${source.maxVideos} videos (1 credit a page): ` +
        `counted as ${out.listing.pages ?? 1}, as many as its last listing took (at least 1)`,
    );
  }
  const shared = claims.shared - sharedBefore;
  if (shared > 0) {
    out.unknowns.push(
      `${shared} of its due videos (per kind and language) are planned under an earlier source of this plan; ` +
        'syncs run side by side may buy some under this one instead: the same videos, but the batches, 1 credit each, may split otherwise',
    );
  }
  if (source.generateMissing) {
    out.unknowns.push(
      `videos of these batches that come back without captions: a generated transcript costs ${PRICES.generatedPerMinute} credits per started minute` +
        (source.maxGenerateMinutes !== null ? `, within --max-generate-minutes ${source.maxGenerateMinutes}` : ''),
    );
  }
  if (source.translateLangs.length > 0) {
    out.unknowns.push(
      `transcripts these batches store: each is translated into ${source.translateLangs.join(',')} at ${PRICES.translationPerMinute} credits ` +
        `per started minute of its video, within --max-translate-minutes ${source.maxTranslateMinutes ?? 'unset'}`,
    );
  }
  return out;
}
