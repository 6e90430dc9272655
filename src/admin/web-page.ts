/**
 * A web page's page (`/pages?url=<url>`): its fields (name, description, og:url, characters, content
 * hash, first and last seen, gone), the sources that found it, its versions (the newest first),
 * its search sections (heading path, anchor, the start of the text) and its latest `page.*`
 * events, with a link to the batch item it was stored from. Everything shown comes from the
 * crawled site and goes through `html` (escaped); a link to the page itself is made only for an
 * http(s) URL.
 */
import {
  countPageVersions,
  pageDetail,
  pageEvents,
  pageSectionsPage,
  pageSources,
  pageVersionsPage,
  type PageDetail,
  type PageEventRow,
  type PageSectionRow,
  type PageSourceRow,
  type PageVersionRow,
} from '../db/admin-pages.ts';
import { databaseNow } from '../db/connection.ts';
import type { Pool } from '../db/statement-timeout.ts';
import { sectionLink } from '../domain/pages.ts';
import { readHolds, type HoldsStatus } from '../pipeline/read/status.ts';
import { html, type SafeHtml } from './html.ts';
import { itemHref, jobLink, notFoundBody, pill, renderPage, sourceHref, unavailable, when } from './layout.ts';
import { readPageSections, type PageReadOptions } from './page-sections.ts';

/** Versions shown (the newest); the count says how many are kept. */
export const PAGE_VERSIONS_SHOWN = 50;
/** Sections shown (in page order); the count says how many there are. */
export const PAGE_SECTIONS_SHOWN = 100;
/** Characters of a section's text shown. */
export const PAGE_SECTION_CHARS_SHOWN = 200;
/** Latest events shown. */
export const PAGE_EVENTS_SHOWN = 20;
/** The longest `url` parameter taken (a URL longer than this is no stored page's). */
export const PAGE_URL_MAX_CHARS = 8192;

/** The page's address on the admin server. */
export const webPageHref = (url: string): string => `/pages?url=${encodeURIComponent(url)}`;

/** A link to an upstream URL when it is http(s); anything else (javascript:, data:) is shown as text. */
export function externalLink(url: string, label: unknown = url): SafeHtml {
  return /^https?:\/\//i.test(url)
    ? html`<a href="${url}" rel="noreferrer noopener">${label}</a>`
    : html`<code>${label}</code>`;
}

/** The `url` parameter as given, or the message of a 400 answer. */
export function readPageUrlParam(value: string | undefined): string | { error: string } {
  if (value === undefined || value.trim() === '') return { error: 'url: missing: expected the URL of a stored page\n' };
  if (value.length > PAGE_URL_MAX_CHARS) return { error: `url: expected at most ${PAGE_URL_MAX_CHARS} characters\n` };
  // a NUL cannot be in a text column (and would fail the query): no URL has one
  if (/[\u0000-\u001f\u007f]/.test(value))
    return { error: `url: invalid value ${JSON.stringify(value)}: control characters are not in a URL\n` };
  return value;
}

export interface WebPageData {
  now: Date;
  holds?: HoldsStatus;
  /** null: no such page; undefined: not readable */
  page?: PageDetail | null;
  sources?: PageSourceRow[];
  versions?: { total: number; rows: PageVersionRow[] };
  sections?: { total: number; rows: PageSectionRow[] };
  events?: PageEventRow[];
  unavailable: string[];
}

export async function loadWebPage(pool: Pool, url: string, opts: PageReadOptions): Promise<WebPageData> {
  let now = new Date();
  let found = false;
  const { values, unavailable } = await readPageSections<Omit<WebPageData, 'unavailable'>>(pool, 'page', opts, {
    now: async (q) => (now = await databaseNow(q)),
    holds: (q) => readHolds(q, opts.keyFingerprint),
    page: async (q) => {
      const p = (await pageDetail(q, url)) ?? null;
      found = p !== null;
      return p;
    },
    sources: async (q) => (found ? pageSources(q, url) : undefined),
    versions: async (q) =>
      found
        ? {
            total: await countPageVersions(q, url),
            rows: await pageVersionsPage(q, url, { limit: PAGE_VERSIONS_SHOWN, offset: 0 }),
          }
        : undefined,
    sections: async (q) =>
      found
        ? pageSectionsPage(q, url, { limit: PAGE_SECTIONS_SHOWN, offset: 0, chars: PAGE_SECTION_CHARS_SHOWN })
        : undefined,
    events: async (q) => (found ? pageEvents(q, url, PAGE_EVENTS_SHOWN) : undefined),
  });
  return { ...values, now, unavailable };
}

const short = (sha: string | null) => (sha === null ? '' : sha.slice(0, 12));
const none = (text = 'none') => html`<span class="muted">${text}</span>`;

function facts(p: PageDetail, now: Date): SafeHtml {
  return html`<dl class="facts">
    <dt>URL</dt><dd id="page-url">${externalLink(p.url)}</dd>
    <dt>name</dt><dd id="page-name">${p.name ?? none()}</dd>
    <dt>description</dt><dd id="page-description">${p.description ?? none()}</dd>
    <dt>og:url</dt><dd id="page-og-url">${p.ogUrl === null ? none() : externalLink(p.ogUrl)}</dd>
    <dt>characters</dt><dd id="page-characters">${p.countCharacters ?? none('not reported')} <span class="muted small">(${p.contentChars} characters of Markdown stored)</span></dd>
    <dt>content sha256</dt><dd><code id="page-sha256">${p.contentSha256}</code></dd>
    <dt>first seen</dt><dd>${when(p.firstSeenAt, now)}</dd>
    <dt>last seen</dt><dd>${when(p.lastSeenAt, now)}</dd>
    <dt>changed</dt><dd>${when(p.updatedAt, now)}</dd>
    <dt>gone</dt><dd id="page-gone">${p.goneAt === null ? 'no' : html`${pill('gone', 'bad')} ${when(p.goneAt, now)} <span class="muted small">no source finds it any more</span>`}</dd>
    <dt>stored from</dt><dd id="page-item">${
      p.jobId === null
        ? none('no batch recorded')
        : html`<a href="${itemHref(p.jobId, p.url)}">the batch item</a> of ${jobLink(p.jobId)}`
    }</dd>
  </dl>`;
}

function sourcesTable(rows: PageSourceRow[], now: Date): SafeHtml {
  if (rows.length === 0) return html`<p class="muted">No source holds this page.</p>`;
  return html`<table>
    <thead><tr><th>source</th><th>kind</th><th>first seen</th><th>last seen</th><th>there</th></tr></thead>
    <tbody>${rows.map(
      (s) => html`<tr data-source-id="${s.sourceId}">
        <td><a href="${sourceHref(s.sourceId)}"><span class="nowrap">#${s.sourceId}</span> ${s.title ?? s.externalId}</a></td>
        <td>${s.kind}</td><td class="small nowrap">${when(s.firstSeenAt, now)}</td>
        <td class="small nowrap">${when(s.lastSeenAt, now)}</td>
        <td>${s.goneAt === null ? 'yes' : html`${pill('gone', 'muted')} <span class="small">${when(s.goneAt, now)}</span>`}</td>
      </tr>`,
    )}</tbody>
  </table>`;
}

function versionsTable(d: NonNullable<WebPageData['versions']>, current: string, now: Date): SafeHtml {
  if (d.total === 0) return html`<p class="muted">No versions kept.</p>`;
  return html`<p class="small muted">${d.total} ${d.total === 1 ? 'version' : 'versions'} kept, the newest first${d.total > d.rows.length ? ` (${d.rows.length} shown)` : ''}</p>
  <table>
    <thead><tr><th>content sha256</th><th>name</th><th class="num">characters</th><th>stored</th><th>batch</th></tr></thead>
    <tbody>${d.rows.map(
      (v) => html`<tr data-version-sha256="${v.contentSha256}">
        <td><code title="${v.contentSha256}">${short(v.contentSha256)}</code>${v.contentSha256 === current ? html` ${pill('current', 'ok')}` : ''}</td>
        <td>${v.name ?? none()}</td><td class="num">${v.countCharacters ?? '–'}</td>
        <td class="small nowrap">${when(v.storedAt, now)}</td>
        <td>${v.jobId === null ? none() : jobLink(v.jobId)}</td>
      </tr>`,
    )}</tbody>
  </table>`;
}

function sectionsTable(d: NonNullable<WebPageData['sections']>, url: string): SafeHtml {
  if (d.total === 0) return html`<p class="muted">No search sections (an empty page).</p>`;
  return html`<p class="small muted">${d.total} ${d.total === 1 ? 'section' : 'sections'} in page order${d.total > d.rows.length ? ` (the first ${d.rows.length} shown)` : ''}; the first ${PAGE_SECTION_CHARS_SHOWN} characters of each</p>
  <table>
    <thead><tr><th class="num">n</th><th>headings</th><th>anchor</th><th>text</th></tr></thead>
    <tbody>${d.rows.map(
      (s) => html`<tr data-section="${s.n}">
        <td class="num">${s.n}</td>
        <td>${s.headings.length === 0 ? none('before the first heading') : s.headings.join(' › ')}</td>
        <td>${s.anchor === null ? none() : externalLink(sectionLink(url, s.anchor), `#${s.anchor}`)}</td>
        <td class="small"><pre class="payload">${s.text}${s.chars > s.text.length ? '…' : ''}</pre></td>
      </tr>`,
    )}</tbody>
  </table>`;
}

function eventsTable(rows: PageEventRow[], now: Date): SafeHtml {
  if (rows.length === 0) return html`<p class="muted">No page events kept.</p>`;
  return html`<table>
    <thead><tr><th class="num">id</th><th>type</th><th>when</th><th>source</th><th>batch</th><th>sha256</th></tr></thead>
    <tbody>${rows.map(
      (e) => html`<tr data-event-type="${e.type}">
        <td class="num">${e.id}</td><td><code>${e.type}</code></td><td class="small nowrap">${when(e.occurredAt, now)}</td>
        <td>${e.sourceId === null ? none() : html`<a href="${sourceHref(e.sourceId)}">#${e.sourceId}</a>`}</td>
        <td>${e.jobId === null ? none() : jobLink(e.jobId)}</td>
        <td><code>${short(e.previousSha256)}${e.previousSha256 !== null ? ' → ' : ''}${short(e.sha256)}</code></td>
      </tr>`,
    )}</tbody>
  </table>`;
}

export function renderWebPage(
  d: WebPageData,
  opts: { queuesPath?: string; url: string },
): { status: 200 | 404 | 503; html: string } {
  const { now } = d;
  const frame = { now, holds: d.holds, unavailable: d.unavailable, queuesPath: opts.queuesPath };
  const crumbs = [{ label: 'Overview', href: '/' }, { label: 'Pages' }, { label: opts.url }];
  const p = d.page;
  if (p === null) {
    const body = notFoundBody(
      `Page ${JSON.stringify(opts.url)}`,
      html`No stored page has this URL (exactly: scheme, host, path and query). A web source's page lists its pages.`,
    );
    return { status: 404, html: renderPage({ ...frame, title: 'page not found', crumbs, body }) };
  }
  if (p === undefined)
    return {
      status: 503,
      html: renderPage({ ...frame, title: 'page', crumbs, body: unavailable(`Page ${opts.url}`) }),
    };
  const body = html`<h2 class="page">${p.name ?? p.url} <span class="muted small">web page${p.goneAt !== null ? ' · gone' : ''}</span></h2>
  <section id="page"><h2>Page</h2>${facts(p, now)}</section>
  <section id="sources"><h2>Sources</h2>${d.sources ? sourcesTable(d.sources, now) : unavailable('Sources')}</section>
  <section id="versions"><h2>Versions</h2>${d.versions ? versionsTable(d.versions, p.contentSha256, now) : unavailable('Versions')}</section>
  <section id="sections"><h2>Sections</h2>${d.sections ? sectionsTable(d.sections, p.url) : unavailable('Sections')}</section>
  <section id="events"><h2>Latest events</h2>${d.events ? eventsTable(d.events, now) : unavailable('Latest events')}</section>`;
  return { status: 200, html: renderPage({ ...frame, title: `page ${p.name ?? p.url}`, crumbs, body }) };
}
