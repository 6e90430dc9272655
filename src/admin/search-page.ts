/**
 * Transcript search (`/search?q=words`, optional `lang`, `source`, `channel`, `limit`): the hits
 * `videosite-ingest search` prints (src/db/search.ts), best first, each with its moment, snippet
 * (the words found in <mark>) and, when VIDEO_URL_TEMPLATE is set, a link to the video at that
 * second. Page hits (src/db/search.ts `searchPages`) beside them: the page (linked to its admin
 * page), the section's headings and a link to the section on the site; not asked when `lang` or
 * `channel` narrows the search to videos. The box is in every page's header (layout.ts); no script.
 *
 * `mode` (text, semantic, hybrid; default as `search`'s: hybrid once the model in use covers every
 * passage): by meaning, one list of hits of every kind (src/pipeline/read/search.ts) instead,
 * each with its link and distance; without embeddings or pgvector, what to set or install.
 */
import { databaseNow } from '../db/connection.ts';
import { searchPages, searchTranscripts, type PageSearchHit, type SearchFilter, type SearchHit } from '../db/search.ts';
import { sectionLink } from '../domain/pages.ts';
import type { Pool } from '../db/statement-timeout.ts';
import {
  fillVideoUrl,
  formatMoment,
  SEARCH_HITS_DEFAULT,
  SEARCH_HITS_MAX,
  SEARCH_QUERY_MAX_CHARS,
  searchQueryProblem,
  snippetParts,
} from '../domain/search.ts';
import { readHolds, type HoldsStatus } from '../pipeline/read/status.ts';
import type { EmbeddingsConfig } from '../config.ts';
import {
  hitLink,
  resolveSearchMode,
  SEARCH_MODES,
  countQueryTokens,
  searchCorpusIn,
  SearchModeUnavailableError,
  type CorpusAnswer,
  type SearchMode,
} from '../pipeline/read/search.ts';
import { html, type SafeHtml } from './html.ts';
import { renderPage, unavailable } from './layout.ts';
import { readPageSections, type PageReadOptions } from './page-sections.ts';
import { externalLink, webPageHref } from './web-page.ts';
import { LANG_CODE_RE } from '../domain/langs.ts';

/** The search asked for by the query string (`q` absent or blank: the empty page), or the message of a 400 answer. */
export type SearchPageFilter = SearchFilter & { mode?: SearchMode | undefined };

export function readSearchParams(p: Record<string, string | undefined>): SearchPageFilter | { error: string } {
  const query = (p.q ?? '').trim();
  if (query.length > SEARCH_QUERY_MAX_CHARS)
    return { error: `q: expected at most ${SEARCH_QUERY_MAX_CHARS} characters\n` };
  if (query !== '') {
    // a NUL or another control character would fail in Postgres (read as "did not answer in time")
    const problem = searchQueryProblem(query);
    if (problem !== null) return { error: `q: ${problem.replace(/^words: /, '')}\n` };
  }
  const lang = p.lang === undefined || p.lang === '' ? undefined : p.lang;
  if (lang !== undefined && !LANG_CODE_RE.test(lang))
    return { error: `lang: invalid value ${JSON.stringify(lang)}: expected a language code such as en or pt-BR\n` };
  const source = p.source === undefined || p.source === '' ? undefined : p.source;
  if (source !== undefined && !/^\d{1,9}$/.test(source))
    return { error: `source: invalid value ${JSON.stringify(source)}: expected a source ID\n` };
  const limitText = p.limit === undefined || p.limit === '' ? undefined : p.limit;
  const limit = limitText === undefined ? SEARCH_HITS_DEFAULT : Number(limitText);
  if (!/^\d+$/.test(limitText ?? '1') || limit < 1 || limit > SEARCH_HITS_MAX) {
    return {
      error: `limit: invalid value ${JSON.stringify(limitText)}: expected a whole number from 1 to ${SEARCH_HITS_MAX}\n`,
    };
  }
  const channel = p.channel === undefined || p.channel === '' ? undefined : p.channel;
  const mode = p.mode === undefined || p.mode === '' ? undefined : p.mode;
  if (mode !== undefined && !(SEARCH_MODES as readonly string[]).includes(mode))
    return { error: `mode: invalid value ${JSON.stringify(mode)}: expected one of ${SEARCH_MODES.join(', ')}\n` };
  return {
    query,
    lang,
    sourceId: source === undefined ? undefined : Number(source),
    channelId: channel,
    limit,
    mode: mode as SearchMode | undefined,
  };
}

export interface SearchPageData {
  now: Date;
  holds?: HoldsStatus;
  /** undefined: no words asked, or the section could not be read (then named in `unavailable`) */
  hits?: SearchHit[];
  /** page hits; undefined: not asked (no words, or a video-only filter), or not readable */
  pageHits?: PageSearchHit[];
  /** by meaning (semantic, hybrid): every kind in one list, or why it cannot run */
  meaning?: CorpusAnswer | { problem: string } | null;
  unavailable: string[];
}

export async function loadSearchPage(
  pool: Pool,
  filter: SearchPageFilter,
  opts: PageReadOptions,
  embeddings?: EmbeddingsConfig | undefined,
): Promise<SearchPageData> {
  let now = new Date();
  const asked = filter.query !== '';
  // sections run in order: the text sections only when the search is not by meaning
  let byMeaning = false;
  const { values, unavailable } = await readPageSections<Omit<SearchPageData, 'unavailable'>>(pool, 'search', opts, {
    now: async (q) => (now = await databaseNow(q)),
    holds: (q) => readHolds(q, opts.keyFingerprint),
    ...(asked && filter.mode !== 'text'
      ? {
          meaning: async (q) => {
            try {
              if ((await resolveSearchMode(q, filter.mode, embeddings)).mode === 'text') return null;
              byMeaning = true;
              const words = { ...filter, words: filter.query };
              return await searchCorpusIn(q, words, embeddings);
            } catch (e: unknown) {
              if (!(e instanceof SearchModeUnavailableError)) throw e;
              byMeaning = true;
              return { problem: e.message };
            }
          },
        }
      : {}),
    ...(asked ? { hits: async (q) => (byMeaning ? [] : searchTranscripts(q, filter)) } : {}),
    ...(asked && pagesAsked(filter)
      ? {
          pageHits: async (q) =>
            byMeaning ? [] : searchPages(q, { query: filter.query, sourceId: filter.sourceId, limit: filter.limit }),
        }
      : {}),
  });
  if (values.meaning != null && !('problem' in values.meaning)) await countQueryTokens(pool, values.meaning, opts.log);
  return { ...values, now, unavailable };
}

function meaningResults(a: CorpusAnswer | { problem: string }, videoUrlTemplate: string | undefined): SafeHtml {
  if ('problem' in a) return html`<p class="muted" id="mode-problem">${a.problem}</p>`;
  if (a.hits.length === 0) return html`<p class="muted" id="no-matches">No matches.</p>`;
  const rows = a.hits.map((h) => {
    const link = hitLink(h, videoUrlTemplate);
    const what =
      h.kind === 'video'
        ? html`<strong>${h.hit.title ?? h.hit.videoId}</strong><div class="small muted"><code>${h.hit.videoId}</code> · <code>${h.hit.lang}</code></div>`
        : h.kind === 'page'
          ? html`<a href="${webPageHref(h.hit.url)}"><strong>${h.hit.name ?? h.hit.url}</strong></a><div class="small muted"><code>${h.hit.url}</code></div>`
          : html`<strong>${h.hit.title ?? h.hit.url}</strong><div class="small muted"><code>${h.hit.platform}</code> · <code>${h.hit.url}</code></div>`;
    const where =
      h.kind === 'page'
        ? h.hit.headings.length === 0
          ? 'top'
          : h.hit.headings.join(' › ')
        : h.hit.seconds === null
          ? h.kind === 'media'
            ? 'title'
            : 'no timings'
          : formatMoment(h.hit.seconds);
    return html`<tr data-kind="${h.kind}">
      <td>${what}</td>
      <td class="nowrap">${link === undefined ? where : externalLink(link, where)}</td>
      <td class="small">${snippetHtml(h.hit.snippet)}</td>
      <td class="small nowrap">${h.distance === undefined ? '' : h.distance.toFixed(3)}</td>
    </tr>`;
  });
  return html`<p class="small muted" id="search-mode">${a.mode}${a.model === undefined ? '' : html` · model <code>${a.model}</code>`}</p>
    <table>
      <thead><tr><th>what</th><th>where</th><th>passage</th><th>distance</th></tr></thead>
      <tbody>${rows}</tbody>
    </table>`;
}

/** Links to the same search in each mode. */
function modeLinks(filter: SearchPageFilter): SafeHtml {
  const link = (mode: SearchMode) => {
    const p = new URLSearchParams({ q: filter.query, mode });
    if (filter.lang !== undefined) p.set('lang', filter.lang);
    if (filter.sourceId !== undefined) p.set('source', String(filter.sourceId));
    if (filter.channelId !== undefined) p.set('channel', filter.channelId);
    if (filter.limit !== SEARCH_HITS_DEFAULT) p.set('limit', String(filter.limit));
    return filter.mode === mode ? html`<strong>${mode}</strong>` : html`<a href="?${p.toString()}">${mode}</a>`;
  };
  return html`<p class="small" id="search-modes">mode: ${SEARCH_MODES.map((m, i) => html`${i > 0 ? ' · ' : ''}${link(m)}`)}</p>`;
}

/** Pages are searched unless the filter is one only videos have (a language, a channel). */
export function pagesAsked(filter: SearchFilter): boolean {
  return filter.lang === undefined && filter.channelId === undefined;
}

function pageResults(d: SearchPageData, filter: SearchFilter): SafeHtml {
  if (!pagesAsked(filter))
    return html`<p class="muted small">Pages are not searched with a language or channel filter.</p>`;
  if (d.pageHits === undefined) return unavailable('The page results');
  if (d.pageHits.length === 0) return html`<p class="muted" id="no-page-matches">No page matches.</p>`;
  return html`<table>
      <thead><tr><th>page</th><th>section</th><th>where it is written</th></tr></thead>
      <tbody>${d.pageHits.map(
        (h) => html`<tr data-page-url="${h.url}">
          <td><a href="${webPageHref(h.url)}"><strong>${h.name ?? h.url}</strong></a><div class="small muted"><code>${h.url}</code></div></td>
          <td>${h.headings.length === 0 ? html`<span class="muted">top</span>` : h.headings.join(' › ')}
            <div class="small">${externalLink(sectionLink(h.url, h.anchor), h.anchor === null ? 'the page' : `#${h.anchor}`)}</div></td>
          <td class="small">${snippetHtml(h.snippet)}</td>
        </tr>`,
      )}</tbody>
    </table>`;
}

function snippetHtml(snippet: string): SafeHtml {
  return html`${snippetParts(snippet).map((p) => (p.marked ? html`<mark>${p.text}</mark>` : p.text))}`;
}

export function renderSearchPage(
  d: SearchPageData,
  o: { filter: SearchPageFilter; queuesPath: string; videoUrlTemplate?: string | undefined },
): string {
  const q = o.filter.query;
  const meaning = d.meaning;
  const rows = (d.hits ?? []).map((h) => {
    const moment = h.seconds === null ? 'no timings' : formatMoment(h.seconds);
    const url = o.videoUrlTemplate === undefined ? undefined : fillVideoUrl(o.videoUrlTemplate, h.videoId, h.seconds);
    return html`<tr data-video-id="${h.videoId}">
      <td><strong>${h.title ?? h.videoId}</strong><div class="small muted"><code>${h.videoId}</code> · ${h.channelName ?? h.channelId ?? ''}</div></td>
      <td class="nowrap">${url === undefined ? moment : html`<a href="${url}" rel="noreferrer">${moment}</a>`}</td>
      <td><code>${h.lang}</code></td>
      <td class="small">${snippetHtml(h.snippet)}</td>
    </tr>`;
  });
  const results =
    q === ''
      ? html`<p class="muted">Words, a "quoted phrase", <code>a or b</code>, <code>-word</code> to leave out (also: <code>videosite-ingest search</code>).</p>`
      : d.hits === undefined
        ? unavailable('The results')
        : d.hits.length === 0
          ? html`<p class="muted" id="no-matches">No matches.</p>`
          : html`<table>
      <thead><tr><th>video</th><th>moment</th><th>lang</th><th>where it is said</th></tr></thead>
      <tbody>${rows}</tbody>
    </table>`;
  const body =
    meaning !== undefined && meaning !== null
      ? html`<h2 class="page">Search <code>${q}</code></h2>${modeLinks(o.filter)}
  <section id="search-results"><h2>By meaning</h2>${meaningResults(meaning, o.videoUrlTemplate)}</section>`
      : html`<h2 class="page">Search${q === '' ? '' : html` <code>${q}</code>`}</h2>${q === '' ? '' : modeLinks(o.filter)}
  <section id="search-results">${q === '' ? results : html`<h2>Transcripts</h2>${results}`}</section>
  ${q === '' ? '' : html`<section id="page-results"><h2>Web pages</h2>${pageResults(d, o.filter)}</section>`}`;
  return renderPage({
    title: 'search',
    now: d.now,
    holds: d.holds,
    unavailable: d.unavailable,
    queuesPath: o.queuesPath,
    query: q,
    body,
  });
}
