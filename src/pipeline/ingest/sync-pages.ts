/**
 * The sync of a web source, in place of a video source's listing and batches
 * (src/pipeline/ingest/sync-source.ts calls it under the source's lease and sync run):
 *
 * - `website`: one crawl (`POST /web/crawl`, src/pipeline/ingest/crawl.ts), estimated at 1 + the
 *   source's limit before anything is spent, never two at once for one source, and not again
 *   within the source's `--refresh` of its last completed crawl.
 * - `pages`: each page due (never stored, or older than `--refresh`; every page when the source
 *   has none) scraped (1 credit each), estimated before the first; each page landed raw under
 *   the sync's own `batches` row (mode `scrape`, job `scrape:<sync run>`) and stored with its
 *   events in one transaction; a page the scrape answers not-found is marked gone.
 */
import { ApiError, LimitExceededError, NotFoundError } from '../../api/errors.ts';
import { recordPollAnswer } from '../../db/batch-polls.ts';
import { crawlCompletedWithin, crawlInFlight } from '../../db/crawls.ts';
import { insertSubmittedBatch } from '../../db/batch-records.ts';
import { landRecords, toLandRecord } from '../../db/items.ts';
import {
  markPagesGoneFor,
  pageRowFromApi,
  pagesLastSeen,
  registeredPageUrls,
  sourcePageCount,
  storePages,
} from '../../db/pages.ts';
import type { Source } from '../../db/schema.ts';
import { REFUSED_UPSTREAM_CODES } from '../../domain/refusals.ts';
import { crawlEstimate, scrapeEstimate } from '../../domain/pages.ts';
import { PRICES } from '../../domain/prices.ts';
import type { PipelineDeps } from '../deps.ts';
import { submitCrawl } from './crawl.ts';
import { reserveCredits } from './credits.ts';
import type { DocumentSync, DocumentSyncEnd, DocumentSyncRun } from '../kinds/adapter.ts';

type PageSyncRun = DocumentSyncRun;
type PageSyncEnd = DocumentSyncEnd;

/** The web sources' own sync and dry-run plan (src/pipeline/kinds/web.ts registers it). */
export const WEB_DOCUMENTS: DocumentSync = {
  sync: (run) => (run.source.kind === 'website' ? syncWebsite(run) : scrapeDuePages(run)),
  async plan(sql, source, forceRefresh) {
    const plan = await planWebPurchase(sql, source, forceRefresh);
    return {
      documents: plan.kind === 'none' ? 0 : plan.pages,
      credits: plan.kind === 'none' ? 0 : plan.credits,
      inFlight: plan.kind === 'none' && plan.why === 'in-flight',
      known: await sourcePageCount(sql, source.id),
      unknowns:
        plan.kind === 'crawl'
          ? [
              `how many pages the crawl finds: counted as its --limit (${plan.pages}); it is billed 1 + the pages it finds`,
            ]
          : [],
    };
  },
};

/** What a sync of a web source would buy now, from Postgres alone (no API call): the sync's and the dry run's plan. */
export type WebPurchase =
  | { kind: 'crawl'; pages: number; credits: number }
  | { kind: 'scrape'; urls: string[]; pages: number; credits: number }
  | { kind: 'none'; why: 'in-flight' | 'up-to-date'; detail: string };

export async function planWebPurchase(
  sql: PipelineDeps['sql'],
  source: Source,
  forceRefresh: boolean,
): Promise<WebPurchase> {
  if (source.kind === 'website') {
    const open = await crawlInFlight(sql, source.id);
    if (open) return { kind: 'none', why: 'in-flight', detail: `crawl ${open} of this site is still in flight` };
    if (!forceRefresh && source.refreshAfterMs !== null) {
      const recent = await crawlCompletedWithin(sql, source.id, source.refreshAfterMs);
      if (recent) return { kind: 'none', why: 'up-to-date', detail: `crawled within --refresh (crawl ${recent})` };
    }
    return { kind: 'crawl', pages: source.maxVideos, credits: crawlEstimate(source.maxVideos) };
  }
  const urls = await registeredPageUrls(sql, source.id);
  const seen = await pagesLastSeen(sql, urls);
  const refreshMs = forceRefresh ? 0 : source.refreshAfterMs;
  const now = Date.now();
  const due = urls.filter((u) => {
    const at = seen.get(u);
    return at === undefined || refreshMs === null || now - at.getTime() >= refreshMs;
  });
  if (due.length === 0) return { kind: 'none', why: 'up-to-date', detail: 'every page was read within --refresh' };
  return { kind: 'scrape', urls: due, pages: due.length, credits: scrapeEstimate(due.length) };
}

async function syncWebsite(run: PageSyncRun): Promise<PageSyncEnd> {
  const { deps, source, result } = run;
  const plan = await planWebPurchase(deps.sql, source, run.forceRefresh);
  if (plan.kind === 'none') return { end: plan.why, detail: plan.detail };
  const estimate = plan.credits;
  result.creditsEstimated = estimate;
  const check = await reserveCredits(deps, {
    sourceId: source.id,
    estimate,
    sourceBudget: source.maxCreditsPerDay,
    what: `crawling this site (at most ${source.maxVideos} pages)`,
    signal: run.signal,
  });
  if (check.refused) return { end: 'refused', refusal: check.refused, accountLeft: check.accountLeft };
  try {
    const { jobId } = await submitCrawl(deps, {
      sourceId: source.id,
      url: source.externalId,
      limit: source.maxVideos,
      hold: check.hold,
      signal: run.signal,
    });
    result.jobIds.push(jobId);
    return { end: 'submitted' };
  } finally {
    await check.hold.release();
  }
}

async function scrapeDuePages(run: PageSyncRun): Promise<PageSyncEnd> {
  const { deps, source, result } = run;
  const plan = await planWebPurchase(deps.sql, source, run.forceRefresh);
  if (plan.kind === 'none') return { end: plan.why, detail: plan.detail };
  if (plan.kind !== 'scrape') throw new Error(`source ${source.id}: a pages source planned a ${plan.kind}`);
  const due = plan.urls;
  const estimate = scrapeEstimate(due.length);
  result.creditsEstimated = estimate;
  const check = await reserveCredits(deps, {
    sourceId: source.id,
    estimate,
    sourceBudget: source.maxCreditsPerDay,
    what: `scraping ${due.length} page${due.length === 1 ? '' : 's'}`,
    signal: run.signal,
  });
  if (check.refused) return { end: 'refused', refusal: check.refused, accountLeft: check.accountLeft };
  const jobId = `scrape:${run.runId}`;
  try {
    await deps.sql.begin(async (tx) => {
      await insertSubmittedBatch(tx, {
        jobId,
        sourceId: source.id,
        kind: 'page',
        lang: null,
        mode: 'scrape',
        creditsEstimated: estimate,
        request: { urls: due.length },
        textOnly: false,
        replayOf: null,
        // no poll: the sync reads its pages itself; reconcile finds it ended
        firstPollDelayMs: 0,
      });
      await check.hold.spend(tx, estimate);
    });
    result.jobIds.push(jobId);
    const counts = { stored: 0, failed: 0, gone: 0 };
    for (const url of due) {
      if (run.signal?.aborted) break;
      counts[await scrapeOne(deps, source, jobId, url, run.signal)]++;
    }
    result.submitted = due.length;
    await recordPollAnswer(deps.sql, jobId, {
      status: 'completed',
      upstreamStatus: 'completed',
      errorCode: null,
      total: due.length,
      succeeded: counts.stored,
      failed: counts.failed + counts.gone,
      creditsEstimated: null,
      polls: 0,
      reason:
        counts.failed > 0 ? `${counts.failed} page(s) could not be read; they are read again at the next sync` : null,
      completedAt: null,
      terminal: true,
    });
    return { end: 'submitted' };
  } finally {
    await check.hold.release();
  }
}

/** One page read and stored (or recorded failed, or gone) in one transaction. */
async function scrapeOne(
  deps: PipelineDeps,
  source: Source,
  jobId: string,
  url: string,
  signal: AbortSignal | undefined,
): Promise<'stored' | 'failed' | 'gone'> {
  const origin = { jobId, sourceId: source.id };
  try {
    const { raw } = await deps.api.scrapePage({ url }, { signal, expectedCredits: PRICES.scrape });
    const built = pageRowFromApi(raw);
    const record = toLandRecord({ videoId: url, state: 'landed', errorCode: null, payload: raw });
    await deps.sql.begin(async (tx) => {
      if ('row' in built && record.state === 'landed') {
        await landRecords(tx, jobId, [{ ...record, state: 'sunk' }]);
        // the page is stored under the URL asked for: a redirect's URL stays in the raw copy
        await storePages(tx, origin, [{ ...built.row, url }]);
      } else {
        const reason = 'reason' in built ? built.reason : (record.reason ?? 'page could not be stored');
        const reasonCode = 'reasonCode' in built ? built.reasonCode : (record.reasonCode ?? 'unstorable');
        await landRecords(tx, jobId, [{ ...record, state: 'quarantined', reason, reasonCode }]);
      }
    });
    return 'row' in built ? 'stored' : 'failed';
  } catch (e: unknown) {
    if (signal?.aborted || e instanceof LimitExceededError || !(e instanceof ApiError)) throw e;
    // the account refused (key, plan, credits): the sync fails and holds, as any sync's request would
    if (REFUSED_UPSTREAM_CODES.includes(e.code)) throw e;
    const gone = e instanceof NotFoundError;
    await deps.sql.begin(async (tx) => {
      await landRecords(tx, jobId, [
        toLandRecord({ videoId: url, state: 'failed', errorCode: e.code, payload: null, reason: e.message }),
      ]);
      if (gone) await markPagesGoneFor(tx, origin, [url]);
    });
    deps.log.warn({ event: 'page.scrape_failed', sourceId: source.id, url, code: e.code }, 'page could not be read');
    return gone ? 'gone' : 'failed';
  }
}
