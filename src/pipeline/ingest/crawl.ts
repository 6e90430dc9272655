/**
 * A website's crawl: `POST /web/crawl` once (recorded like a batch POST, so a lost answer is never
 * bought again), then polled through the poll queue as a `batches` row of mode `crawl` (never two
 * at once for one source). `scraping` keeps it in flight; `completed` pages through the results
 * (`next` in any shape, always asked on our own path), each answer's pages landed raw in
 * `batch_items` (keyed by URL) and stored as `pages` in one transaction, so a poll that breaks off
 * resumes without storing a page twice and a re-read is free. Once every page is read, the
 * source's pages the crawl did not find are marked gone, the pages are recorded as billed (1 each:
 * no answer's header carries them) and the estimate corrected to 1 + pages. `failed` and
 * `cancelled` keep what was delivered and say why; results that are gone (not-found, confirmed)
 * end it `expired` with what landed kept.
 */
import { ApiError, LimitExceededError, NotFoundError } from '../../api/errors.ts';
import type { LiberalCrawlAnswer } from '../../api/client.ts';
import {
  endBatchLocally,
  recordNotFound,
  recordPollAnswer,
  recordRefusedPoll,
  scheduleNextPoll,
  type PolledBatch,
} from '../../db/batch-polls.ts';
import { insertSubmittedBatch } from '../../db/batch-records.ts';
import type { Queryable } from '../../db/connection.ts';
import { addRunCreditsBilled, lockBatchInFlight, syncRunOfJob } from '../../db/crawls.ts';
import { insertCharges } from '../../db/credit-charges.ts';
import {
  landRecords,
  markQuarantined,
  markSunk,
  nextLandedChunk,
  toLandRecord,
  type LandRecord,
} from '../../db/items.ts';
import { markPagesGone, pageRowFromApi, storePages, type PageRow, type PageWriteCounts } from '../../db/pages.ts';
import { markSubmission, recordSending } from '../../db/submissions.ts';
import { LOCAL_BATCH_END_CODES, type BatchStatus } from '../../domain/batches.ts';
import type { QuarantineReason } from '../../domain/items.ts';
import { crawlCredits, PRICES } from '../../domain/prices.ts';
import { readCrawlStatus } from '../../domain/pages.ts';
import { pollJobId } from '../../queues/names.ts';
import { traceField } from '../../tracing.ts';
import type { PipelineDeps } from '../deps.ts';
import type { CreditHold } from './credits.ts';
import { nextPollDelayMs, type PollResult } from './poll-batch.ts';
import { answerMayBeLost } from './submit.ts';

export interface CrawlRequestInput {
  sourceId: number;
  url: string;
  limit: number;
  hold: CreditHold;
  signal?: AbortSignal | undefined;
}

/** POST the crawl once, record it as a batch (mode `crawl`) with its estimate, queue its poll. */
export async function submitCrawl(
  deps: PipelineDeps,
  input: CrawlRequestInput,
): Promise<{ jobId: string; credits: number }> {
  const { sql, api, queues, settings } = deps;
  const request = { url: input.url, limit: input.limit };
  const credits = crawlCredits(input.limit);
  const before = await api.me({ signal: input.signal });
  const submission = await recordSending(sql, {
    sourceId: input.sourceId,
    kind: 'page',
    lang: null,
    request,
    credits,
    usedCreditsBefore: before.usedCredits,
  });
  let jobId: string;
  try {
    ({ jobId } = await api.startCrawl(request, { expectedCredits: PRICES.crawlRequest, signal: input.signal }));
  } catch (e: unknown) {
    const detail = e instanceof Error ? e.message : String(e);
    await markSubmission(sql, submission, answerMayBeLost(e) ? 'unknown' : 'failed', { detail });
    throw e;
  }
  await sql.begin(async (tx) => {
    await insertSubmittedBatch(tx, {
      jobId,
      sourceId: input.sourceId,
      kind: 'page',
      lang: null,
      mode: 'crawl',
      creditsEstimated: credits,
      request,
      textOnly: false,
      replayOf: null,
      firstPollDelayMs: settings.pollInitialDelayMs,
    });
    await markSubmission(tx, submission, 'submitted', { jobId });
    await input.hold.spend(tx, credits);
  });
  await queues.poll.add(
    'poll',
    { jobId, delayMs: settings.pollInitialDelayMs, ...traceField() },
    { jobId: pollJobId(jobId), delay: settings.pollInitialDelayMs },
  );
  deps.log.info({ event: 'crawl.submitted', sourceId: input.sourceId, jobId, credits }, 'crawl submitted');
  return { jobId, credits };
}

const NOTHING = { landed: 0, sunk: 0, changed: 0, duplicates: 0, quarantined: 0 } as const;

export async function pollCrawl(
  deps: PipelineDeps,
  batch: PolledBatch,
  opts: { previousDelayMs?: number; signal?: AbortSignal } = {},
): Promise<PollResult> {
  const previousDelayMs = opts.previousDelayMs ?? deps.settings.pollInitialDelayMs;
  const later: PollResult = {
    jobId: batch.jobId,
    status: batch.status,
    terminal: false,
    ...NOTHING,
    nextDelayMs: nextPollDelayMs(previousDelayMs, false, deps.settings),
  };
  const first = await readAnswer(deps, batch, 0, later, opts.signal);
  if ('polled' in first) return first.polled;
  if ('gone' in first) return resultsGone(deps, batch, 0, 0);
  const reading = readCrawlStatus(first.answer.status);
  if (!reading.terminal) {
    await recordPollAnswer(deps.sql, batch.jobId, {
      status: reading.status,
      upstreamStatus: first.answer.status,
      errorCode: null,
      total: null,
      succeeded: null,
      failed: null,
      creditsEstimated: null,
      polls: batch.polls + 1,
      reason:
        reading.unknownStatus !== null
          ? `status ${JSON.stringify(reading.unknownStatus)} is not one this interface version lists: still polled`
          : null,
      completedAt: null,
      terminal: false,
    });
    const nextDelayMs = nextPollDelayMs(previousDelayMs, reading.status !== batch.status, deps.settings);
    await scheduleNextPoll(deps.sql, batch.jobId, nextDelayMs);
    return { ...later, status: reading.status, nextDelayMs };
  }
  return readAllPages(deps, batch, first, reading, opts.signal);
}

/** Every answer of a crawl that ended, landed one at a time; then its end recorded. */
async function readAllPages(
  deps: PipelineDeps,
  batch: PolledBatch,
  first: { answer: LiberalCrawlAnswer; nextSkip: number | undefined },
  reading: ReturnType<typeof readCrawlStatus>,
  signal: AbortSignal | undefined,
): Promise<PollResult> {
  const found: string[] = [];
  const totals = { landed: 0, quarantined: 0, delivered: 0 };
  let answer: { answer: LiberalCrawlAnswer; nextSkip: number | undefined } | undefined = first;
  while (answer !== undefined) {
    // the next answer is asked for while this one's pages are stored: the round trip and the
    // transaction overlap (one answer ahead at most, so memory holds two answers)
    const skip: number | undefined = answer.nextSkip;
    const ahead: Promise<Settled<ReadAnswer>> | undefined =
      skip === undefined ? undefined : settle(readAnswer(deps, batch, skip, undefined, signal));
    const stored = await landAnswer(deps, batch, answer.answer.pages ?? []);
    found.push(...stored.urls);
    totals.landed += stored.landed;
    totals.quarantined += stored.quarantined;
    totals.delivered += (answer.answer.pages ?? []).length;
    if (ahead === undefined || skip === undefined) break;
    const next: ReadAnswer = unsettle(await ahead);
    if ('polled' in next) return next.polled;
    if ('gone' in next) return resultsGone(deps, batch, totals.delivered, skip);
    answer = next;
  }
  return endCrawl(deps, batch, {
    status: reading.status,
    errorCode: reading.errorCode,
    upstreamStatus: first.answer.status,
    found,
    ...totals,
  });
}

type Settled<T> = { ok: T } | { err: unknown };
type ReadAnswer = Awaited<ReturnType<typeof readAnswer>>;

/** A promise that never rejects (an answer read ahead whose reader may not wait for it), and back. */
function settle<T>(p: Promise<T>): Promise<Settled<T>> {
  return p.then(
    (ok) => ({ ok }),
    (err: unknown) => ({ err }),
  );
}
function unsettle<T>(s: Settled<T>): T {
  if ('err' in s) throw s.err;
  return s.ok;
}

/**
 * One answer from `skip`. The first (skip 0) is judged like a batch's head: a JSON not-found is
 * confirmed over BATCH_NOT_FOUND_CONFIRM_MS before the crawl is given up, another refusal is
 * polled again. A later one that is not found means the results went away while being read.
 */
async function readAnswer(
  deps: PipelineDeps,
  batch: PolledBatch,
  skip: number,
  later: PollResult | undefined,
  signal: AbortSignal | undefined,
): Promise<{ answer: LiberalCrawlAnswer; nextSkip: number | undefined } | { polled: PollResult } | { gone: true }> {
  try {
    return await deps.api.readCrawl(batch.jobId, { skip: skip === 0 ? undefined : skip, signal });
  } catch (e: unknown) {
    if (signal?.aborted || e instanceof LimitExceededError || !(e instanceof ApiError)) throw e;
    if (later === undefined) {
      if (e instanceof NotFoundError) return { gone: true };
      throw e;
    }
    if (e instanceof NotFoundError && e.rawBody === undefined)
      return { polled: await notFound(deps, batch, e.message, later) };
    await recordRefusedPoll(deps.sql, batch.jobId, `poll answered ${e.code}: ${e.message}; polled again`);
    return { polled: later };
  }
}

/** The pages of one answer: landed raw and stored in one transaction; the URLs it delivered. */
async function landAnswer(
  deps: PipelineDeps,
  batch: PolledBatch,
  pages: readonly unknown[],
): Promise<{ urls: string[]; landed: number; quarantined: number }> {
  const records: LandRecord[] = [];
  const rows = new Map<string, PageRow>();
  pages.forEach((raw, i) => {
    const built = pageRowFromApi(raw);
    const url = 'row' in built ? built.row.url : urlOf(raw, batch.jobId, i);
    const record = toLandRecord({ videoId: url, state: 'landed', errorCode: null, payload: raw });
    if ('row' in built && record.state === 'landed') {
      records.push({ ...record, state: 'sunk' });
      rows.set(record.videoId, built.row);
    } else {
      const reason = 'reason' in built ? built.reason : (record.reason ?? 'page could not be stored');
      const reasonCode = 'reasonCode' in built ? built.reasonCode : (record.reasonCode ?? 'unstorable');
      records.push({ ...record, state: 'quarantined', reason, reasonCode });
    }
  });
  if (records.length === 0) return { urls: [], landed: 0, quarantined: 0 };
  const result = await deps.sql.begin(async (tx) => {
    const { rows: changed } = await landRecords(tx, batch.jobId, records, deps.settings.landChunkSize);
    const sunk = changed.filter((r) => r.state === 'sunk').map((r) => rows.get(r.videoId)!);
    const counts = await storePages(tx, { jobId: batch.jobId, sourceId: batch.sourceId }, sunk);
    return { changed, counts };
  });
  reportPages(deps, result.counts);
  return {
    urls: [...rows.keys()],
    landed: result.changed.filter((r) => r.state === 'sunk').length,
    quarantined: result.changed.filter((r) => r.state === 'quarantined').length,
  };
}

/** A page without a usable URL is kept under its position in the crawl. */
function urlOf(raw: unknown, jobId: string, i: number): string {
  const url = (raw as { url?: unknown } | null)?.url;
  return typeof url === 'string' && url !== '' ? url : `${jobId}#${i}`;
}

function reportPages(deps: Pick<PipelineDeps, 'log'>, c: PageWriteCounts): void {
  if (c.added + c.changed + c.returned === 0) return;
  deps.log.debug({ event: 'pages.stored', ...c }, 'pages stored');
}

/**
 * The crawl's end, in one transaction: its row terminal with the pages it delivered, the estimate
 * corrected to 1 + pages, the pages' credits recorded as billed, and (completed) the source's
 * pages it did not find marked gone. Only the poll that ends it does this (the row is locked and
 * read first), so a repeated poll records nothing twice.
 */
async function endCrawl(
  deps: PipelineDeps,
  batch: PolledBatch,
  end: {
    status: BatchStatus;
    errorCode: string | null;
    upstreamStatus: string;
    found: string[];
    landed: number;
    quarantined: number;
    delivered: number;
  },
): Promise<PollResult> {
  const { sql, log } = deps;
  const { jobId } = batch;
  const pages = end.delivered;
  const completed = end.status === 'completed';
  const gone = await sql.begin(async (tx) => {
    if (!(await lockBatchInFlight(tx, jobId))) return [];
    await recordPollAnswer(tx, jobId, {
      status: end.status,
      upstreamStatus: end.upstreamStatus,
      errorCode: end.errorCode,
      total: pages,
      succeeded: pages - end.quarantined,
      failed: end.quarantined,
      creditsEstimated: completed ? crawlCredits(pages) : null,
      polls: batch.polls + 1,
      reason: completed
        ? null
        : `the crawl ended ${end.upstreamStatus} upstream; the ${pages} page${pages === 1 ? '' : 's'} it delivered ${pages === 1 ? 'is' : 'are'} kept`,
      completedAt: null,
      terminal: true,
    });
    if (completed && pages > 0) await recordPageCharges(tx, deps, batch, pages);
    return completed && batch.sourceId !== null
      ? markPagesGone(tx, { jobId, sourceId: batch.sourceId }, end.found)
      : [];
  });
  log.info(
    {
      event: 'crawl.ended',
      jobId,
      sourceId: batch.sourceId,
      status: end.status,
      errorCode: end.errorCode,
      pages,
      landed: end.landed,
      quarantined: end.quarantined,
      gone: gone.length,
    },
    'crawl ended',
  );
  return {
    jobId,
    status: end.status,
    terminal: true,
    landed: end.landed,
    sunk: end.landed,
    changed: end.landed + end.quarantined,
    duplicates: 0,
    quarantined: end.quarantined,
  };
}

/**
 * The crawled pages' credits (1 each, UPSTREAM.md): charged after the POST, and no answer's
 * `x-billable-requests` carries them, so they are recorded at the published price, to the source
 * and to the sync run that submitted the crawl.
 */
async function recordPageCharges(tx: Queryable, deps: PipelineDeps, batch: PolledBatch, pages: number): Promise<void> {
  const runId = await syncRunOfJob(tx, batch.jobId);
  const credits = pages * PRICES.crawlPage;
  await insertCharges(tx, [
    {
      sourceId: batch.sourceId,
      syncRunId: runId ?? null,
      endpoint: 'GET /web/crawl/{jobId}',
      status: 200,
      credits,
      estimated: credits,
      basis: 'price',
      budgetDelta: 0,
      keyFingerprint: deps.api.keyFingerprint,
    },
  ]);
  if (runId !== undefined) await addRunCreditsBilled(tx, runId, credits);
}

/** The results went away while they were read (not-found after the first answer): what landed is kept. */
async function resultsGone(
  deps: PipelineDeps,
  batch: PolledBatch,
  delivered: number,
  skip: number,
): Promise<PollResult> {
  const reason =
    `the crawl's results were gone (not-found) when read from skip=${skip}; ` +
    `the ${delivered} page${delivered === 1 ? '' : 's'} read before are kept; the next sync crawls again`;
  await deps.sql.begin(async (tx) => {
    if (!(await lockBatchInFlight(tx, batch.jobId))) return;
    await endBatchLocally(tx, batch.jobId, { status: 'expired', errorCode: LOCAL_BATCH_END_CODES.notFound, reason });
    // the pages read were crawled, so charged (how many more were, only /me can tell)
    if (delivered > 0) await recordPageCharges(tx, deps, batch, delivered);
  });
  deps.log.warn(
    { event: 'batch.ended', mode: 'crawl', jobId: batch.jobId, status: 'expired', reason },
    'crawl results gone',
  );
  return { jobId: batch.jobId, status: 'expired', terminal: true, ...NOTHING };
}

/** A JSON not-found on the first answer: confirmed over BATCH_NOT_FOUND_CONFIRM_MS, then the crawl is expired. */
async function notFound(
  deps: PipelineDeps,
  batch: PolledBatch,
  message: string,
  later: PollResult,
): Promise<PollResult> {
  const { sql, settings } = deps;
  const spanMs = await recordNotFound(sql, batch.jobId, `the API answered not-found: ${message}`);
  if (spanMs < settings.batchNotFoundConfirmMs) {
    const untilConfirmedMs = Math.ceil(settings.batchNotFoundConfirmMs - spanMs);
    return {
      ...later,
      nextDelayMs: Math.min(
        later.nextDelayMs ?? settings.pollMaxDelayMs,
        Math.max(settings.pollMinDelayMs, untilConfirmedMs),
      ),
    };
  }
  return resultsGone(deps, batch, 0, 0);
}

/**
 * Pages of a crawl or scrape left `landed` (replay `--batch`, a crash between landing and storing)
 * stored from their raw copy, a chunk per transaction; what the raw copy cannot make is
 * quarantined with the reason. Returns pages stored and quarantined.
 */
export async function sinkPages(
  deps: Pick<PipelineDeps, 'sql' | 'settings'>,
  batch: { jobId: string; sourceId: number | null },
  signal?: AbortSignal,
): Promise<{
  sunk: number;
  quarantined: number;
  interrupted: boolean;
  inserted: number;
  updated: number;
  unchanged: number;
}> {
  const out = { sunk: 0, quarantined: 0, interrupted: false, inserted: 0, updated: 0, unchanged: 0 };
  for (;;) {
    if (signal?.aborted) return { ...out, interrupted: true };
    const n = await deps.sql.begin(async (tx) => {
      const items = await nextLandedChunk(tx, batch.jobId, deps.settings.sinkChunkSize, { lock: true });
      if (items.length === 0) return 0;
      const rows: PageRow[] = [];
      const bad: { videoId: string; reason: string; reasonCode: QuarantineReason }[] = [];
      for (const it of items) {
        const built = pageRowFromApi(it.payload);
        if ('row' in built) rows.push(built.row);
        else bad.push({ videoId: it.videoId, reason: built.reason, reasonCode: built.reasonCode });
      }
      const c = await storePages(tx, batch, rows);
      out.inserted += c.added;
      out.updated += c.changed + c.returned;
      out.unchanged += c.unchanged;
      out.sunk += await markSunk(
        tx,
        batch.jobId,
        items.filter((it) => !bad.some((b) => b.videoId === it.videoId)).map((it) => it.videoId),
      );
      out.quarantined += await markQuarantined(tx, batch.jobId, bad);
      return items.length;
    });
    if (n === 0) return out;
  }
}
