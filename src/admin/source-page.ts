/**
 * A source's page (`/sources/:id`): its settings (the schedule with its next fires), freshness
 * and last error, what is stored of it, what its videos got per language asked (language
 * coverage), the error codes its videos carry as their latest outcome with the videos, its
 * batches (`?page=N`) and its sync runs (`?runs=N`), the latest first. A web source (website,
 * pages) shows its page count and its pages by URL (`?pages=N`: name, last seen, gone, each linked
 * to its page, web-page.ts) in place of the language coverage and the error codes of videos.
 * Every list is one page, read by index (src/db/admin-pages.ts).
 */
import {
  countSourceBatches,
  countSourcePageRows,
  sourcePagesPage,
  type SourcePageRow,
  countSourceSyncRuns,
  sourceBatchJobIds,
  sourceDetail,
  sourceLatestErrorCodes,
  sourceSyncRuns,
  type SourceDetail,
  type SourceLatestErrorCode,
  type SyncRunRow,
} from '../db/admin-pages.ts';
import { batchProgress, type BatchProgress } from '../db/batch-progress.ts';
import { databaseNow } from '../db/connection.ts';
import type { Pool } from '../db/statement-timeout.ts';
import { sourceLanguageCoverage } from '../db/video-outcomes.ts';
import type { LanguageCoverage } from '../domain/coverage.ts';
import { planCron } from '../domain/cron.ts';
import { isPageSourceKind } from '../domain/pages.ts';
import type { SyncRunOutcome } from '../domain/syncs.ts';
import { freshnessOf, readHolds, type Freshness, type HoldsStatus } from '../pipeline/read/status.ts';
import { html, type SafeHtml } from './html.ts';
import {
  ago,
  batchName,
  itemHref,
  jobLink,
  notFoundBody,
  pageLinks,
  pill,
  progressBar,
  renderPage,
  sourceHref,
  statusPill,
  unavailable,
  when,
} from './layout.ts';
import type { PageReadOptions } from './page-sections.ts';
import { readPageSections } from './page-sections.ts';
import { inOrderOf, placePage, type PagePlace } from './paging.ts';
import { externalLink, webPageHref } from './web-page.ts';

/** Batches per page of a source. */
export const SOURCE_BATCHES_PER_PAGE = 50;
/** Sync runs per page of a source. */
export const SOURCE_RUNS_PER_PAGE = 20;
/** Videos listed per latest error code at most (the count says how many carry it). */
export const SOURCE_ERROR_VIDEOS_SHOWN = 20;
/** Web pages per page of a web source (website, pages). */
export const SOURCE_PAGES_PER_PAGE = 50;
/** Fires of the schedule shown ahead. */
const NEXT_FIRES_SHOWN = 3;

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

export interface SourcePageData {
  now: Date;
  holds?: HoldsStatus;
  /** null: no such source; undefined: not readable */
  source?: SourceDetail | null;
  batches?: PagePlace & { total: number; rows: BatchProgress[] };
  /** the error codes its videos carry as their latest outcome */
  errors?: SourceLatestErrorCode[];
  /** per language the source asks for (none: the default language), what its videos got */
  coverage?: LanguageCoverage[];
  runs?: PagePlace & { total: number; rows: SyncRunRow[] };
  /** a web source's pages by URL, gone ones included (a video source: none read) */
  pages?: PagePlace & { total: number; rows: SourcePageRow[] };
  /** sections left out (their statement was cancelled or failed) */
  unavailable: string[];
}

export interface LoadSourcePageOptions extends PageReadOptions {
  /** page of the batches, 1-based; past the last: the last */
  page: number;
  /** page of the sync runs, 1-based; past the last: the last */
  runsPage: number;
  /** page of a web source's pages, 1-based; past the last: the last (default 1) */
  pagesPage?: number;
}

/** Everything the page shows; `id` null (not a source ID at all) reads only the frame. */
export async function loadSourcePage(
  pool: Pool,
  id: number | null,
  opts: LoadSourcePageOptions,
): Promise<SourcePageData> {
  let now = new Date();
  let found = false;
  let web = false;
  const { values, unavailable } = await readPageSections<Omit<SourcePageData, 'unavailable'>>(pool, 'source', opts, {
    now: async (q) => (now = await databaseNow(q)),
    holds: (q) => readHolds(q, opts.keyFingerprint),
    source: async (q) => {
      const s = id === null ? null : ((await sourceDetail(q, id)) ?? null);
      found = s !== null;
      web = s !== null && isPageSourceKind(s.kind);
      return s;
    },
    batches: async (q) => {
      if (!found) return undefined;
      const total = await countSourceBatches(q, id!);
      const place = placePage(total, SOURCE_BATCHES_PER_PAGE, opts.page);
      const ids = await sourceBatchJobIds(q, id!, place);
      return { ...place, total, rows: inOrderOf(ids, await batchProgress(q, ids), (b) => b.jobId) };
    },
    // the video sections do not apply to a web source: its pages instead
    errors: async (q) =>
      found && !web
        ? sourceLatestErrorCodes(q, { sourceId: id!, videosPerCode: SOURCE_ERROR_VIDEOS_SHOWN })
        : undefined,
    coverage: async (q) =>
      found && !web ? (await sourceLanguageCoverage(q, [id!])).map(({ sourceId: _, ...c }) => c) : undefined,
    pages: async (q) => {
      if (!found || !web) return undefined;
      const total = await countSourcePageRows(q, id!);
      const place = placePage(total, SOURCE_PAGES_PER_PAGE, opts.pagesPage ?? 1);
      return { ...place, total, rows: await sourcePagesPage(q, id!, place) };
    },
    runs: async (q) => {
      if (!found) return undefined;
      const total = await countSourceSyncRuns(q, id!);
      const place = placePage(total, SOURCE_RUNS_PER_PAGE, opts.runsPage);
      return { ...place, total, rows: await sourceSyncRuns(q, id!, place) };
    },
  });
  return { ...values, now, unavailable };
}

/** The schedule, when it fires next, and what pausing does to it. */
function schedule(s: SourceDetail, now: Date): SafeHtml {
  if (s.cron === null) return html`<span class="muted">none: synced only by <code>backfill</code></span>`;
  let next: SafeHtml;
  try {
    const fires = planCron(s.cron, now, NEXT_FIRES_SHOWN).next;
    next =
      fires.length === 0
        ? html`<span class="muted">never fires again</span>`
        : html`<ol class="small" id="next-fires">${fires.map((t) => html`<li>${when(t, now)}</li>`)}</ol>`;
  } catch (e: unknown) {
    next = html`<span class="bad-text">cannot be read: ${e instanceof Error ? e.message : String(e)}</span>`;
  }
  return html`<code>${s.cron}</code> (UTC)${s.paused ? html` <span class="muted">· paused: no scheduled sync until resumed</span>` : ''}
    <div class="small muted">next fires${s.paused ? ' (once resumed)' : ''}:</div>${next}`;
}

/** A web source's settings: the video ones (languages, transcripts, include, generate) do not apply. */
function webSettings(s: SourceDetail, now: Date): SafeHtml {
  return html`<dl class="facts">
    <dt>kind</dt><dd>${s.kind}</dd>
    <dt>ref</dt><dd><code>${s.ref}</code></dd>
    <dt>external id</dt><dd><code>${s.externalId}</code></dd>
    <dt>schedule</dt><dd>${schedule(s, now)}</dd>
    ${s.kind === 'website' ? html`<dt>limit</dt><dd id="crawl-limit">at most ${s.maxVideos} pages per crawl</dd>` : ''}
    <dt>paused</dt><dd>${s.paused ? pill('paused', 'muted') : 'no'}</dd>
    <dt>budget</dt><dd>${
      s.maxCreditsPerDay === null
        ? html`<span class="muted">no cap of its own (CREDIT_BUDGET_PER_DAY still applies)</span>`
        : `at most ${s.maxCreditsPerDay} credits per UTC day`
    }</dd>
    <dt>registered</dt><dd>${when(s.createdAt, now)}</dd>
    <dt>changed</dt><dd>${when(s.updatedAt, now)}</dd>
  </dl>`;
}

function settings(s: SourceDetail, now: Date): SafeHtml {
  if (isPageSourceKind(s.kind)) return webSettings(s, now);
  return html`<dl class="facts">
    <dt>kind</dt><dd>${s.kind}</dd>
    <dt>ref</dt><dd><code>${s.ref}</code></dd>
    <dt>external id</dt><dd><code>${s.externalId}</code></dd>
    <dt>schedule</dt><dd>${schedule(s, now)}</dd>
    <dt>languages</dt><dd>${s.langs.length > 0 ? s.langs.join(', ') : html`<span class="muted">the API's default language</span>`}</dd>
    <dt>limit</dt><dd>at most ${s.maxVideos} videos per sync</dd>
    <dt>transcripts</dt><dd>${s.textOnly ? 'plain text (--text)' : 'chunks with timings'}</dd>
    <dt>include</dt><dd>${s.include.length > 0 ? s.include.join(', ') : html`<span class="muted">regular videos only</span>`}</dd>
    <dt>paused</dt><dd>${s.paused ? pill('paused', 'muted') : 'no'}</dd>
    <dt>budget</dt><dd>${
      s.maxCreditsPerDay === null
        ? html`<span class="muted">no cap of its own (CREDIT_BUDGET_PER_DAY still applies)</span>`
        : `at most ${s.maxCreditsPerDay} credits per UTC day`
    }</dd>
    <dt>generate missing</dt><dd>${
      s.generateMissing
        ? `yes${s.maxGenerateMinutes === null ? ', no cap' : `, at most ${s.maxGenerateMinutes} media minutes in all`}`
        : 'no'
    }</dd>
    <dt>translate</dt><dd>${
      s.translateLangs.length > 0
        ? `into ${s.translateLangs.join(', ')}, at most ${s.maxTranslateMinutes ?? '-'} transcript minutes in all`
        : 'no'
    }</dd>
    <dt>registered</dt><dd>${when(s.createdAt, now)}</dd>
    <dt>changed</dt><dd>${when(s.updatedAt, now)}</dd>
  </dl>`;
}

function state(s: SourceDetail, freshness: Freshness, now: Date): SafeHtml {
  return html`<dl class="facts">
    <dt>freshness</dt><dd>${pill(freshness.label, freshness.tone)}</dd>
    <dt>last synced</dt><dd>${when(s.lastSyncedAt, now)}</dd>
    <dt>last error</dt><dd>${
      s.lastError === null
        ? html`<span class="muted">none</span>`
        : html`<div class="error"><code>${s.lastErrorCode ?? 'error'}</code> ${s.lastError}</div><div class="small">${when(s.lastErrorAt, now, 'time unknown')}</div>`
    }</dd>
  </dl>`;
}

function errorCodes(errors: SourceLatestErrorCode[]): SafeHtml {
  if (errors.length === 0)
    return html`<p class="muted">No video of this source has an error as its latest outcome.</p>`;
  return html`<p class="small muted">Videos whose latest outcome (metadata, or a transcript in a language the source asks for) carries the code; a video re-submitted and stored since is not counted.</p>
  <table>
    <thead><tr><th>kind</th><th>lang</th><th>error code</th><th>state</th><th class="num">videos</th><th>videos (the latest first; each links to its latest item)</th></tr></thead>
    <tbody>${errors.map(
      (e) => html`<tr data-error-code="${e.errorCode}" data-kind="${e.kind}" data-lang="${e.lang}">
        <td>${e.kind}</td><td>${e.lang || html`<span class="muted">default</span>`}</td>
        <td><code>${e.errorCode}</code></td><td>${e.state}</td><td class="num">${e.videos}</td>
        <td><div class="ids">${e.shown.map((v) =>
          v.jobId === null
            ? html`<code>${v.videoId}</code>`
            : html`<a href="${itemHref(v.jobId, v.videoId)}"><code>${v.videoId}</code></a>`,
        )}</div>${e.videos > e.shown.length ? html`<div class="small muted">${e.shown.length} shown of ${e.videos} videos</div>` : ''}</td>
      </tr>`,
    )}</tbody>
  </table>`;
}

/** Per language asked, what the videos got: in it, in another (which), none, not yet. */
function coverageTable(coverage: LanguageCoverage[], langs: string[]): SafeHtml {
  if (langs.length === 0)
    return html`<p class="muted">The source asks for the API's default language: nothing can fall back.</p>`;
  if (coverage.length === 0) return html`<p class="muted">No videos listed yet.</p>`;
  return html`<p class="small muted">The interface answers a transcript asked in a language the video has none in with its first available language, charged the same.</p>
  <table>
    <thead><tr><th>lang</th><th class="num">in lang</th><th>fell back (which)</th><th class="num">none</th><th class="num">pending</th></tr></thead>
    <tbody>${coverage.map((c) => {
      const fell = Object.entries(c.fellBack).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
      const total = fell.reduce((n, [, k]) => n + k, 0);
      return html`<tr data-coverage-lang="${c.lang}">
        <td><code>${c.lang}</code></td><td class="num">${c.asked}</td>
        <td>${total === 0 ? html`<span class="muted">0</span>` : html`${total} (${fell.map(([l, n], i) => html`${i > 0 ? ', ' : ''}<code>${l}</code> ${n}`)})`}</td>
        <td class="num">${c.none}</td><td class="num">${c.pending}</td>
      </tr>`;
    })}</tbody>
  </table>`;
}

/** The address of this page with one list on another page (the other list stays where it is). */
function selfHref(id: number, batchesPage: number, runsPage: number, anchor: string, pagesPage = 1): string {
  const q = [
    batchesPage > 1 ? `page=${batchesPage}` : '',
    runsPage > 1 ? `runs=${runsPage}` : '',
    pagesPage > 1 ? `pages=${pagesPage}` : '',
  ]
    .filter(Boolean)
    .join('&');
  return `${sourceHref(id)}${q ? `?${q}` : ''}#${anchor}`;
}

function batchesTable(
  d: NonNullable<SourcePageData['batches']>,
  id: number,
  runsPage: number,
  now: Date,
  pagesPage = 1,
): SafeHtml {
  if (d.total === 0) return html`<p class="muted">No batches yet.</p>`;
  const first = d.offset + 1;
  return html`<p class="small muted">${plural(d.total, 'batch', 'batches')}, the latest first${d.pages > 1 ? ` · page ${d.page} of ${d.pages} (${first}–${first + d.rows.length - 1})` : ''}</p>
    <table>
      <thead><tr><th>job</th><th>kind</th><th>status</th><th>progress</th><th class="num">credits est.</th><th class="num">polls</th><th>submitted</th><th>completed</th></tr></thead>
      <tbody>${d.rows.map(
        (b) => html`<tr data-job-id="${b.jobId}">
          <td>${jobLink(b.jobId)}</td><td>${batchName(b)}</td><td>${statusPill(b)}</td>
          <td style="width:28%">${progressBar(b)}</td>
          <td class="num">${b.creditsEstimated}</td><td class="num">${b.polls}</td>
          <td class="small nowrap">${ago(b.submittedAt, now)}</td><td class="small nowrap">${b.completedAt === null ? '–' : ago(b.completedAt, now)}</td>
        </tr>`,
      )}</tbody>
    </table>
    ${pageLinks(d.page, d.pages, (n) => selfHref(id, n, runsPage, 'batches', pagesPage), 'pages of batches')}`;
}

function pagesTable(
  d: NonNullable<SourcePageData['pages']>,
  id: number,
  at: { batchesPage: number; runsPage: number },
  now: Date,
): SafeHtml {
  if (d.total === 0) return html`<p class="muted">No pages yet.</p>`;
  const first = d.offset + 1;
  return html`<p class="small muted">${plural(d.total, 'page', 'pages')} found by this source (gone ones included), by URL${d.pages > 1 ? ` · page ${d.page} of ${d.pages} (${first}–${first + d.rows.length - 1})` : ''}</p>
    <table>
      <thead><tr><th>URL</th><th>name</th><th>last seen</th><th>gone</th></tr></thead>
      <tbody>${d.rows.map(
        (p) => html`<tr data-page-url="${p.url}">
          <td>${p.name === null ? html`<code>${p.url}</code> <span class="muted small">not stored yet</span>` : html`<a href="${webPageHref(p.url)}"><code>${p.url}</code></a>`} <span class="small">${externalLink(p.url, '↗')}</span></td>
          <td>${p.name ?? html`<span class="muted">–</span>`}</td>
          <td class="small nowrap">${when(p.lastSeenAt, now)}</td>
          <td>${p.goneAt === null ? 'no' : html`${pill('gone', 'muted')} <span class="small">${when(p.goneAt, now)}</span>`}</td>
        </tr>`,
      )}</tbody>
    </table>
    ${pageLinks(d.page, d.pages, (n) => selfHref(id, at.batchesPage, at.runsPage, 'pages', n), 'pages of web pages')}`;
}

const OUTCOME_TONE: Readonly<Record<SyncRunOutcome, Freshness['tone']>> = {
  submitted: 'ok',
  'up-to-date': 'ok',
  'refused-credits': 'warn',
  'refused-upstream': 'bad',
  held: 'warn',
  error: 'bad',
};

function runsTable(
  d: NonNullable<SourcePageData['runs']>,
  id: number,
  batchesPage: number,
  now: Date,
  pagesPage = 1,
): SafeHtml {
  if (d.total === 0) return html`<p class="muted">No sync runs yet.</p>`;
  const num = (n: number | null) => (n === null ? html`<span class="muted">–</span>` : n);
  return html`<p class="small muted">${plural(d.total, 'run', 'runs')} kept, the latest first${d.pages > 1 ? ` · page ${d.page} of ${d.pages}` : ''}</p>
    <table>
      <thead><tr><th>started</th><th>took</th><th>outcome</th><th class="num">listed</th><th class="num">submitted</th><th class="num">credits est.</th><th class="num">listing credits</th><th>batches</th><th>detail</th></tr></thead>
      <tbody>${d.rows.map(
        (r) => html`<tr data-run-id="${r.id}">
          <td class="small nowrap">${when(r.startedAt, now)}</td>
          <td class="small nowrap">${r.finishedAt === null ? '–' : `${((r.finishedAt.getTime() - r.startedAt.getTime()) / 1000).toFixed(1)} s`}</td>
          <td>${r.outcome === null ? pill(r.finishedAt === null ? 'running (or its process died)' : 'unknown', 'muted') : pill(r.outcome, OUTCOME_TONE[r.outcome])}</td>
          <td class="num">${num(r.videosListed)}</td><td class="num">${num(r.videosSubmitted)}</td>
          <td class="num">${num(r.creditsEstimated)}</td><td class="num">${num(r.listingCredits)}</td>
          <td><div class="ids">${(r.jobIds ?? []).map((j) => jobLink(j))}</div></td>
          <td class="small error">${r.detail ?? ''}</td>
        </tr>`,
      )}</tbody>
    </table>
    ${pageLinks(d.page, d.pages, (n) => selfHref(id, batchesPage, n, 'runs', pagesPage), 'pages of sync runs')}`;
}

export interface RenderSourcePageOptions {
  queuesPath?: string;
  /** the `id` as asked for (shown when there is no such source) */
  asked: string;
}

/** The page, and the HTTP status it is answered with (404: no such source; 503: the source could not be read). */
export function renderSourcePage(
  d: SourcePageData,
  opts: RenderSourcePageOptions,
): { status: 200 | 404 | 503; html: string } {
  const { now } = d;
  const frame = { now, holds: d.holds, unavailable: d.unavailable, queuesPath: opts.queuesPath };
  const s = d.source;
  if (s === null) {
    const body = notFoundBody(
      `Source ${JSON.stringify(opts.asked)}`,
      html`The overview lists every source: <a href="/">Overview</a>.`,
    );
    return { status: 404, html: renderPage({ ...frame, title: 'source not found', body }) };
  }
  if (s === undefined) {
    return {
      status: 503,
      html: renderPage({ ...frame, title: `source ${opts.asked}`, body: unavailable(`Source ${opts.asked}`) }),
    };
  }
  const name = s.title ?? s.externalId;
  const freshness = freshnessOf(
    {
      paused: s.paused,
      cron: s.cron,
      lastSyncedAt: s.lastSyncedAt?.toISOString() ?? null,
      hasError: s.lastError !== null,
    },
    now,
  );
  const batchesPage = d.batches?.page ?? 1;
  const runsPage = d.runs?.page ?? 1;
  const web = isPageSourceKind(s.kind);
  const counts = web
    ? html`<div class="tile"><div class="k">Pages</div><div class="v" id="pages-count">${s.pages}</div><div class="s">held now (not gone)</div></div>`
    : html`<div class="tile"><div class="k">Videos</div><div class="v" id="videos">${s.videos}</div><div class="s">stored in videos</div></div>
    <div class="tile"><div class="k">Transcripts</div><div class="v" id="transcripts">${s.transcripts}</div><div class="s">any language</div></div>`;
  const contents = web
    ? html`<section id="pages"><h2>Pages</h2>${d.pages ? pagesTable(d.pages, s.id, { batchesPage, runsPage }, now) : unavailable('Pages')}</section>`
    : html`<section id="coverage"><h2>Language coverage</h2>${d.coverage ? coverageTable(d.coverage, s.langs) : unavailable('Language coverage')}</section>
  <section id="errors"><h2>Latest error codes</h2>${d.errors ? errorCodes(d.errors) : unavailable('Latest error codes')}</section>`;
  const body = html`<h2 class="page">${name} <span class="muted small">source #${s.id} · ${s.kind}</span></h2>
  <div class="tiles">
    ${counts}
    <div class="tile"><div class="k">Batches</div><div class="v">${d.batches ? d.batches.total : '–'}</div><div class="s">${d.runs ? `${plural(d.runs.total, 'sync run', 'sync runs')} kept` : ''}</div></div>
    <div class="tile"><div class="k">Freshness</div><div class="v">${pill(freshness.label, freshness.tone)}</div><div class="s">synced ${ago(s.lastSyncedAt?.toISOString() ?? null, now)}</div></div>
  </div>
  <section id="settings"><h2>Settings</h2>${settings(s, now)}</section>
  <section id="state"><h2>Freshness and last error</h2>${state(s, freshness, now)}</section>
  ${contents}
  <section id="batches"><h2>Batches</h2>${d.batches ? batchesTable(d.batches, s.id, runsPage, now, d.pages?.page) : unavailable('Batches')}</section>
  <section id="runs"><h2>Sync runs</h2>${d.runs ? runsTable(d.runs, s.id, batchesPage, now, d.pages?.page) : unavailable('Sync runs')}</section>`;
  return {
    status: 200,
    html: renderPage({
      ...frame,
      title: `source ${s.id}`,
      crumbs: [{ label: 'Overview', href: '/' }, { label: 'Sources', href: '/#sources' }, { label: `#${s.id}` }],
      body,
    }),
  };
}
