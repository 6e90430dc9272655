/**
 * Web pages in the corpus: which source kinds hold pages, what a crawl or a scrape costs before it
 * is bought, how a crawl's status reads, what makes a page's content hash, and how a page's
 * Markdown is cut into the sections search answers with (a heading path and its anchor).
 */
import { createHash } from 'node:crypto';
import type { BatchStatus } from './batches.ts';
import { crawlCredits, PRICES } from './prices.ts';
import type { SourceKind } from './sources.ts';

/** Source kinds whose documents are web pages: a crawled site, and a list of pages scraped. */
export const PAGE_SOURCE_KINDS = ['website', 'pages'] as const satisfies readonly SourceKind[];
export type PageSourceKind = (typeof PAGE_SOURCE_KINDS)[number];

export function isPageSourceKind(kind: SourceKind): kind is PageSourceKind {
  return (PAGE_SOURCE_KINDS as readonly SourceKind[]).includes(kind);
}

/** `--limit` of a website source when not given: the interface's own default for a crawl. */
export const WEBSITE_LIMIT_DEFAULT = 100;
/** The most pages one crawl may ask for (`POST /web/crawl` takes 1..5000). */
export const WEBSITE_LIMIT_MAX = 5000;

/** What a crawl of at most `limit` pages can cost: 1 for the request, 1 per page (UPSTREAM.md). */
export function crawlEstimate(limit: number): number {
  return crawlCredits(limit);
}

/** What scraping `pages` pages costs: 1 each. */
export function scrapeEstimate(pages: number): number {
  return pages * PRICES.scrape;
}

/** A crawl's status as this pipeline records it on its `batches` row. */
export interface CrawlReading {
  status: BatchStatus;
  terminal: boolean;
  /** why a crawl ended without its pages (`batches.error_code`) */
  errorCode: string | null;
  /** a status this interface version does not list (kept in flight, polled with backoff) */
  unknownStatus: string | null;
}

/** Why a crawl ended without pages: the upstream's `failed` and `cancelled`. */
export const CRAWL_END_CODES = { failed: 'crawl-failed', cancelled: 'crawl-cancelled' } as const;

/**
 * `scraping` is in flight, `completed` holds the pages, `failed` and `cancelled` end the crawl
 * (what it delivered before is kept); any other status is read as still in flight.
 */
export function readCrawlStatus(status: string): CrawlReading {
  switch (status) {
    case 'scraping':
      return { status: 'active', terminal: false, errorCode: null, unknownStatus: null };
    case 'completed':
      return { status: 'completed', terminal: true, errorCode: null, unknownStatus: null };
    case 'failed':
    case 'cancelled':
      return { status: 'failed', terminal: true, errorCode: CRAWL_END_CODES[status], unknownStatus: null };
    default:
      return { status: 'active', terminal: false, errorCode: null, unknownStatus: status };
  }
}

/** A page's content hash: sha256 (hex) of its Markdown as delivered; `page.changed` only when it changes. */
export function pageSha256(content: string): string {
  return createHash('sha256').update(content, 'utf8').digest('hex');
}

/** One searchable part of a page: the text under one heading (a long one cut in parts). */
export interface PageSection {
  /** position in the page, from 0 */
  n: number;
  /** the headings it is under, outermost first (empty before the first heading) */
  headings: string[];
  /** the fragment of its nearest heading (`#getting-started`), null before the first heading */
  anchor: string | null;
  text: string;
}

/** Longest section text, in characters; a longer one is cut at a paragraph (or line) into parts. */
export const PAGE_SECTION_MAX_CHARS = 4000;

/**
 * The sections of a page's Markdown: ATX headings (`#` to `######`) outside code fences start a
 * section; its anchor is the heading's slug as GitHub and most static site generators make it
 * (lower case, punctuation dropped, spaces to `-`, `-1`, `-2` for repeats).
 */
export function pageSections(markdown: string): PageSection[] {
  const out: PageSection[] = [];
  const path: { level: number; title: string }[] = [];
  const slugs = new Map<string, number>();
  let anchor: string | null = null;
  let lines: string[] = [];
  let fence: string | null = null;
  const flush = () => {
    const text = lines.join('\n').trim();
    lines = [];
    if (text === '') return;
    for (const part of cut(text, PAGE_SECTION_MAX_CHARS)) {
      out.push({ n: out.length, headings: path.map((h) => h.title), anchor, text: part });
    }
  };
  for (const line of markdown.split(/\r?\n/)) {
    const fenceMark = /^\s{0,3}(```+|~~~+)/.exec(line)?.[1];
    if (fenceMark !== undefined) {
      if (fence === null) fence = fenceMark[0]!;
      else if (fenceMark[0] === fence) fence = null;
    }
    const heading = fence === null ? /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line) : null;
    if (!heading) {
      lines.push(line);
      continue;
    }
    flush();
    const level = heading[1]!.length;
    const title = heading[2]!;
    while (path.length > 0 && path[path.length - 1]!.level >= level) path.pop();
    path.push({ level, title });
    anchor = uniqueSlug(slugs, title);
    lines.push(title);
  }
  flush();
  return out;
}

function uniqueSlug(seen: Map<string, number>, title: string): string {
  const base = title
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .trim()
    .replace(/\s/g, '-');
  const n = seen.get(base) ?? 0;
  seen.set(base, n + 1);
  return n === 0 ? base : `${base}-${n}`;
}

/** `text` in parts of at most `max` characters, cut at a blank line, else a line, else a space. */
function cut(text: string, max: number): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > max) {
    const window = rest.slice(0, max);
    let at = window.lastIndexOf('\n\n');
    if (at < max / 2) at = window.lastIndexOf('\n');
    if (at < max / 2) at = window.lastIndexOf(' ');
    if (at <= 0) at = max;
    parts.push(rest.slice(0, at).trim());
    rest = rest.slice(at).trim();
  }
  if (rest !== '') parts.push(rest);
  return parts;
}

/** The link of a section: the page's URL with the section's anchor as its fragment. */
export function sectionLink(url: string, anchor: string | null): string {
  if (anchor === null || anchor === '') return url;
  try {
    const u = new URL(url);
    u.hash = anchor;
    return u.href;
  } catch {
    return `${url}#${anchor}`;
  }
}
