/**
 * Every batch (`/batches`), the latest submission first, BATCHES_PER_PAGE a page (`?page=N`),
 * optionally of one status (`?status=failed`): where the overview's "finished in the last 24 h"
 * list continues.
 */
import { batchJobIds } from '../db/admin-pages.ts';
import { batchProgress, type BatchProgress } from '../db/batch-progress.ts';
import { batchCountsByStatus } from '../db/batches.ts';
import { databaseNow } from '../db/connection.ts';
import { sourcesWithStatsByIds } from '../db/source-stats.ts';
import type { Pool } from '../db/statement-timeout.ts';
import { BATCH_STATUSES, type BatchStatus } from '../domain/batches.ts';
import { readHolds, type HoldsStatus } from '../pipeline/read/status.ts';
import { html, type SafeHtml } from './html.ts';
import { ago, batchName, jobLink, pageLinks, renderPage, sourceLink, statusPill, unavailable } from './layout.ts';
import { readPageSections, type PageReadOptions } from './page-sections.ts';
import { inOrderOf, placePage, type PagePlace } from './paging.ts';

/** Batches per page. */
export const BATCHES_PER_PAGE = 50;

/** `?status=` as given (absent: every status), or the message of a 400 answer. */
export function readStatusParam(value: string | undefined): BatchStatus | null | { error: string } {
  if (value === undefined || value === '') return null;
  if ((BATCH_STATUSES as readonly string[]).includes(value)) return value as BatchStatus;
  return { error: `status: invalid value ${JSON.stringify(value)}: expected one of ${BATCH_STATUSES.join(', ')}\n` };
}

export interface BatchesPageData {
  now: Date;
  /** the status asked for (null: every status) */
  status: BatchStatus | null;
  holds?: HoldsStatus;
  /** batches per status (those with none left out), from the counters */
  byStatus?: Record<string, number>;
  list?: PagePlace & { total: number; rows: BatchProgress[] };
  /** the title (or external ID) of each source the listed batches belong to */
  sourceNames?: Record<number, string>;
  unavailable: string[];
}

export interface LoadBatchesPageOptions extends PageReadOptions {
  page: number;
  status: BatchStatus | null;
}

export async function loadBatchesPage(pool: Pool, opts: LoadBatchesPageOptions): Promise<BatchesPageData> {
  let now = new Date();
  let byStatus: Record<string, number> | undefined;
  let listed: BatchProgress[] = [];
  const { values, unavailable } = await readPageSections<Omit<BatchesPageData, 'unavailable' | 'status'>>(
    pool,
    'batches',
    opts,
    {
      now: async (q) => (now = await databaseNow(q)),
      holds: (q) => readHolds(q, opts.keyFingerprint),
      byStatus: async (q) => (byStatus = await batchCountsByStatus(q)),
      list: async (q) => {
        // the counters give the total; without them (section left out) the page still lists, unclamped
        const total =
          byStatus === undefined
            ? undefined
            : opts.status === null
              ? Object.values(byStatus).reduce((a, b) => a + b, 0)
              : (byStatus[opts.status] ?? 0);
        const place = placePage(total ?? opts.page * BATCHES_PER_PAGE, BATCHES_PER_PAGE, opts.page);
        // a status no batch has would scan every batch for none (78 ms at 100 000 batches): the counters say so first
        const ids = total === 0 ? [] : await batchJobIds(q, { ...place, status: opts.status });
        listed = inOrderOf(ids, await batchProgress(q, ids), (b) => b.jobId);
        return { ...place, total: total ?? listed.length, rows: listed };
      },
      sourceNames: async (q) => {
        const ids = [...new Set(listed.map((b) => b.sourceId).filter((id): id is number => id !== null))];
        const rows = await sourcesWithStatsByIds(q, ids);
        return Object.fromEntries(rows.map((s) => [s.id, s.title ?? s.externalId]));
      },
    },
  );
  return { ...values, now, status: opts.status, unavailable };
}

const listHref = (status: BatchStatus | null, page = 1) => {
  const q = [status === null ? '' : `status=${status}`, page > 1 ? `page=${page}` : ''].filter(Boolean).join('&');
  return `/batches${q ? `?${q}` : ''}`;
};

function filters(byStatus: Record<string, number> | undefined, current: BatchStatus | null): SafeHtml {
  const all = byStatus === undefined ? undefined : Object.values(byStatus).reduce((a, b) => a + b, 0);
  const link = (status: BatchStatus | null, label: string, n: number | undefined) =>
    status === current
      ? html`<span class="current" aria-current="page">${label}${n === undefined ? '' : ` (${n})`}</span>`
      : html`<a href="${listHref(status)}">${label}${n === undefined ? '' : ` (${n})`}</a>`;
  return html`<nav class="filters" aria-label="batches by status">${link(null, 'all', all)}${BATCH_STATUSES.map((s) => link(s, s, byStatus === undefined ? undefined : (byStatus[s] ?? 0)))}</nav>`;
}

export function renderBatchesPage(d: BatchesPageData, opts: { queuesPath?: string } = {}): string {
  const { now } = d;
  const names = new Map(Object.entries(d.sourceNames ?? {}).map(([id, name]): [number, string] => [Number(id), name]));
  const l = d.list;
  const { status } = d;
  let list: SafeHtml;
  if (l === undefined) list = unavailable('Batches');
  else if (l.rows.length === 0) list = html`<p class="muted">No batches${status === null ? '' : ` ${status}`}.</p>`;
  else {
    const first = l.offset + 1;
    list = html`<p class="small muted">${l.total} batches${status === null ? '' : ` ${status}`}, the latest submitted first${
      l.pages > 1 ? ` · page ${l.page} of ${l.pages} (${first}–${first + l.rows.length - 1})` : ''
    }</p>
    <table>
      <thead><tr><th>job</th><th>source</th><th>kind</th><th>status</th><th class="num">total</th><th class="num">stored</th><th class="num">failed</th><th class="num">retryable</th><th class="num">credits est.</th><th>submitted</th><th>finished</th></tr></thead>
      <tbody>${l.rows.map(
        (b) => html`<tr data-job-id="${b.jobId}">
          <td>${jobLink(b.jobId)}</td><td>${sourceLink(b.sourceId, names)}</td><td>${batchName(b)}</td><td>${statusPill(b)}</td>
          <td class="num">${b.total ?? '-'}</td><td class="num">${b.sunk}</td><td class="num">${b.failed}</td><td class="num">${b.retryable}</td>
          <td class="num">${b.creditsEstimated}</td>
          <td class="small nowrap">${ago(b.submittedAt, now)}</td><td class="small nowrap">${b.completedAt === null ? '–' : ago(b.completedAt, now)}</td>
        </tr>`,
      )}</tbody>
    </table>
    ${pageLinks(l.page, l.pages, (n) => listHref(status, n), 'pages of batches')}`;
  }
  const body = html`<h2 class="page">Batches</h2>
  <section id="batches">${filters(d.byStatus, status)}${list}</section>`;
  return renderPage({
    now,
    holds: d.holds,
    unavailable: d.unavailable,
    queuesPath: opts.queuesPath,
    title: status === null ? 'batches' : `batches ${status}`,
    crumbs: [{ label: 'Overview', href: '/' }, { label: 'Batches' }],
    body,
  });
}
