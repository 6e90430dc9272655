/**
 * A batch's page (`/batches/:jobId`): what it is (kind, language, source, mode), how it went
 * (status as we read it and as the upstream last said it, submitted and completed, polls,
 * estimated credits, progress from its counters) and its items, BATCH_ITEMS_PER_PAGE a page
 * (`?page=N`) by video ID, each with its state, error code and reason and a link to the raw item.
 */
import { batchDetail, batchItemsPage, type BatchDetail, type BatchItemRow } from '../db/admin-pages.ts';
import { batchProgress, type BatchProgress } from '../db/batch-progress.ts';
import { databaseNow } from '../db/connection.ts';
import { sourcesWithStatsByIds } from '../db/source-stats.ts';
import type { Pool } from '../db/statement-timeout.ts';
import { isTerminalStatus } from '../domain/batches.ts';
import { ITEM_STATES, type ItemState } from '../domain/items.ts';
import { readHolds, type Freshness, type HoldsStatus } from '../pipeline/read/status.ts';
import { html, type SafeHtml } from './html.ts';
import {
  batchHref,
  batchName,
  itemHref,
  jobLink,
  notFoundBody,
  pageLinks,
  pill,
  progressBar,
  renderPage,
  sourceLink,
  statusPill,
  unavailable,
  when,
} from './layout.ts';
import { readPageSections, type PageReadOptions } from './page-sections.ts';
import { placePage, type PagePlace } from './paging.ts';

/** Items per page of a batch. */
export const BATCH_ITEMS_PER_PAGE = 50;

export type BatchView = BatchProgress & BatchDetail;

export interface BatchPageData {
  now: Date;
  holds?: HoldsStatus;
  /** null: no such batch; undefined: not readable */
  batch?: BatchView | null;
  /** the batch's source title (or external ID); null when the batch has none or it was removed */
  sourceName?: string | null;
  items?: PagePlace & { total: number; rows: BatchItemRow[] };
  unavailable: string[];
}

export interface LoadBatchPageOptions extends PageReadOptions {
  /** page of the items, 1-based; past the last: the last */
  page: number;
}

/** Items of the batch recorded in `batch_items`, from its counters. */
function itemsRecorded(b: BatchProgress): number {
  return ITEM_STATES.reduce((n, s) => n + b[s], 0);
}

export async function loadBatchPage(pool: Pool, jobId: string, opts: LoadBatchPageOptions): Promise<BatchPageData> {
  let now = new Date();
  let batch: BatchView | null = null;
  const { values, unavailable } = await readPageSections<Omit<BatchPageData, 'unavailable'>>(pool, 'batch', opts, {
    now: async (q) => (now = await databaseNow(q)),
    holds: (q) => readHolds(q, opts.keyFingerprint),
    batch: async (q) => {
      // (a NUL cannot be in a text column: no such batch, and no query that would fail on it)
      if (jobId.includes('\u0000')) return null;
      const [progress] = await batchProgress(q, [jobId]);
      const detail = progress && (await batchDetail(q, jobId));
      batch = progress && detail ? { ...progress, ...detail } : null;
      return batch;
    },
    sourceName: async (q) => {
      const id = batch?.sourceId ?? null;
      if (id === null) return null;
      const [s] = await sourcesWithStatsByIds(q, [id]);
      return s ? (s.title ?? s.externalId) : null;
    },
    items: async (q) => {
      if (batch === null) return undefined;
      const total = itemsRecorded(batch);
      const place = placePage(total, BATCH_ITEMS_PER_PAGE, opts.page);
      return { ...place, total, rows: await batchItemsPage(q, jobId, place) };
    },
  });
  return { ...values, now, unavailable };
}

const STATE_TONE: Readonly<Record<ItemState, Freshness['tone']>> = {
  processing: 'muted',
  landed: 'warn',
  sunk: 'ok',
  failed: 'bad',
  retryable: 'warn',
  quarantined: 'bad',
};

export function itemStatePill(state: ItemState): SafeHtml {
  return pill(state, STATE_TONE[state]);
}

/**
 * What to do about a batch that ended without all its items: its stored raw items re-sunk (free),
 * its retryable items re-submitted (`replay --failed`, from the batch's submission on; the dry run
 * first, since it costs credits). Commands as docs/operating.md gives them.
 */
function nextStep(b: BatchView): SafeHtml {
  if (b.status === 'completed' && b.retryable === 0 && b.landed === 0) return html``;
  const steps: SafeHtml[] = [];
  if (b.landed > 0)
    steps.push(
      html`<div class="small">store its ${b.landed} landed item(s) (free): <code>videosite-ingest replay --batch ${b.jobId}</code></div>`,
    );
  if (b.status !== 'completed' || b.retryable > 0)
    steps.push(
      html`<div class="small">re-submit what can be retried (costs credits; see the estimate first): <code>videosite-ingest replay --failed --since ${b.submittedAt} --dry-run</code>, then the same with <code>--yes</code>${
        b.sourceId !== null ? html`; the source's next sync also re-submits its videos still due` : ''
      }</div>`,
    );
  return html`<dt>next step</dt><dd data-next-step>${steps}</dd>`;
}

function summary(b: BatchView, sourceName: string | null | undefined, now: Date): SafeHtml {
  const names = new Map<number, string>(b.sourceId !== null && sourceName ? [[b.sourceId, sourceName]] : []);
  const inFlight = !isTerminalStatus(b.status);
  return html`<dl class="facts">
    <dt>status</dt><dd>${statusPill(b)}${
      b.upstreamStatus !== null && b.upstreamStatus !== b.status
        ? html` <span class="small muted">the upstream last said <code>${b.upstreamStatus}</code></span>`
        : ''
    }${b.reason !== null ? html`<div class="small error">${b.reason}</div>` : ''}</dd>
    <dt>kind</dt><dd>${b.kind}${b.mode === 'generate' ? ' (a generated transcript job)' : ''}</dd>
    <dt>language</dt><dd>${b.lang ?? html`<span class="muted">${b.kind === 'video' ? 'not applicable (metadata)' : "the API's default"}</span>`}</dd>
    <dt>source</dt><dd>${sourceLink(b.sourceId, names)}</dd>
    <dt>submitted</dt><dd>${when(b.submittedAt, now)}</dd>
    <dt>completed</dt><dd>${when(b.completedAt, now, inFlight ? 'not yet' : 'not reported by the upstream')}${
      b.terminalAt !== null && b.completedAt === null
        ? html` <span class="small muted">(ended here ${when(b.terminalAt, now)})</span>`
        : ''
    }</dd>
    <dt>polls</dt><dd>${b.polls}${b.lastPolledAt ? html` <span class="small muted">· last ${when(b.lastPolledAt, now)}</span>` : ''}${
      inFlight && b.nextPollAt ? html` <span class="small muted">· next ${when(b.nextPollAt, now)}</span>` : ''
    }${b.pollFailures > 0 ? html` <span class="small bad-text">· ${b.pollFailures} failed in a row</span>` : ''}</dd>
    <dt>credits estimated</dt><dd>${b.creditsEstimated}</dd>
    ${b.textOnly !== null && b.kind === 'transcript' ? html`<dt>transcripts</dt><dd>${b.textOnly ? 'plain text' : 'chunks with timings'}</dd>` : ''}
    ${b.replayOf !== null ? html`<dt>re-submits items of</dt><dd>${jobLink(b.replayOf)}</dd>` : ''}
    ${b.errorCode !== null || b.reason !== null ? html`<dt>why it ended so</dt><dd data-batch-error><code>${b.errorCode ?? 'no code'}</code> ${b.reason ?? html`<span class="muted">no reason recorded</span>`}</dd>` : ''}
    ${isTerminalStatus(b.status) ? nextStep(b) : ''}
  </dl>`;
}

function progress(b: BatchView): SafeHtml {
  const codes = Object.entries(b.errors).sort((x, y) => y[1] - x[1]);
  return html`${progressBar(b)}
    <table class="small" style="margin-top:10px">
      <thead><tr>${ITEM_STATES.map((s) => html`<th class="num">${s}</th>`)}</tr></thead>
      <tbody><tr>${ITEM_STATES.map((s) => html`<td class="num" data-state="${s}">${b[s]}</td>`)}</tr></tbody>
    </table>
    ${codes.length > 0 ? html`<p class="small">failed by error code: ${codes.map(([code, n], i) => html`${i > 0 ? ' · ' : ''}<code>${code}</code> ${n}`)}</p>` : ''}`;
}

function itemsTable(b: BatchView, d: NonNullable<BatchPageData['items']>, now: Date): SafeHtml {
  if (d.total === 0)
    return html`<p class="muted">No items recorded yet${isTerminalStatus(b.status) ? '' : ' (they are recorded as they finish)'}.</p>`;
  const first = d.offset + 1;
  return html`<p class="small muted">${d.total} items recorded, by video ID${d.pages > 1 ? ` · page ${d.page} of ${d.pages} (${first}–${first + d.rows.length - 1})` : ''}</p>
    <table>
      <thead><tr><th>video</th><th>state</th><th>error code</th><th>reason</th><th>landed</th><th>stored</th></tr></thead>
      <tbody>${d.rows.map(
        (i) => html`<tr data-video-id="${i.videoId}">
          <td><a href="${itemHref(b.jobId, i.videoId)}"><code>${i.videoId}</code></a></td>
          <td>${itemStatePill(i.state)}${i.resubmittedIn !== null ? html`<div class="small">re-submitted in ${jobLink(i.resubmittedIn)}</div>` : ''}</td>
          <td>${i.errorCode === null ? html`<span class="muted">–</span>` : html`<code>${i.errorCode}</code>`}</td>
          <td class="small error">${i.reasonCode !== null ? html`<code>${i.reasonCode}</code> ` : ''}${i.reason ?? ''}</td>
          <td class="small nowrap">${i.landedAt === null ? '–' : when(i.landedAt, now)}</td>
          <td class="small nowrap">${i.sunkAt === null ? '–' : when(i.sunkAt, now)}</td>
        </tr>`,
      )}</tbody>
    </table>
    ${pageLinks(d.page, d.pages, (n) => `${batchHref(b.jobId)}?page=${n}#items`, 'pages of items')}`;
}

export function renderBatchPage(
  d: BatchPageData,
  opts: { queuesPath?: string; jobId: string },
): { status: 200 | 404 | 503; html: string } {
  const { now } = d;
  const frame = { now, holds: d.holds, unavailable: d.unavailable, queuesPath: opts.queuesPath };
  const b = d.batch;
  if (b === null) {
    const body = notFoundBody(
      `Batch ${JSON.stringify(opts.jobId)}`,
      html`Every batch recorded is listed on <a href="/batches">Batches</a>.`,
    );
    return { status: 404, html: renderPage({ ...frame, title: 'batch not found', body }) };
  }
  if (b === undefined)
    return {
      status: 503,
      html: renderPage({ ...frame, title: `batch ${opts.jobId}`, body: unavailable(`Batch ${opts.jobId}`) }),
    };
  const body = html`<h2 class="page">Batch <code>${b.jobId}</code> <span class="muted small">${batchName(b)}</span></h2>
  <section id="summary"><h2>Summary</h2>${summary(b, d.sourceName, now)}</section>
  <section id="progress"><h2>Progress</h2>${progress(b)}</section>
  <section id="items"><h2>Items</h2>${d.items ? itemsTable(b, d.items, now) : unavailable('Items')}</section>`;
  return {
    status: 200,
    html: renderPage({
      ...frame,
      title: `batch ${b.jobId}`,
      crumbs: [{ label: 'Overview', href: '/' }, { label: 'Batches', href: '/batches' }, { label: b.jobId }],
      body,
    }),
  };
}
