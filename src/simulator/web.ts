/**
 * Synthetic websites for the web endpoints (scrape, map, crawl): every origin has a
 * deterministic set of pages with Markdown content derived from the seed and the URL.
 */
import type { CrawledPage, Scrape } from '../api/schemas.ts';
import { hash32, rngFor } from './prng.ts';
import { sentence, title, words, type Lang } from './text.ts';

const SECTIONS = ['docs', 'blog', 'guide', 'about', 'pricing', 'changelog', 'faq'];

/** A parsed http(s) URL, or undefined for anything else. */
export function httpUrl(input: string): URL | undefined {
  try {
    const u = new URL(input);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u : undefined;
  } catch {
    return undefined;
  }
}

/** How the admin API changed a site since the seed made it (`/__admin/sites`). */
interface SiteEdits {
  /** pages of the site before `added` (undefined: the seed's 2..120) */
  size?: number;
  /** pages appended after the seed's */
  added: number;
  /** indexes of pages that no longer exist */
  removed: Set<number>;
  /** indexes of pages whose content was revised, with their revision */
  revisions: Map<number, number>;
}

/** A change to a site: pages revised, removed, restored or added (POST /__admin/sites). */
export interface SiteEdit {
  /** pages the seed makes; set before a site is first crawled (e.g. a 5000-page site for the bench) */
  size?: number | undefined;
  /** URLs whose content changes (a new revision each time) */
  change?: string[] | undefined;
  /** URLs that disappear (a crawl no longer finds them; a scrape answers not-found) */
  remove?: string[] | undefined;
  /** removed URLs that come back, as they were */
  restore?: string[] | undefined;
  /** new pages appended to the site */
  add?: number | undefined;
}

export class SyntheticWeb {
  private readonly edits = new Map<string, SiteEdits>();
  /** page URL to index, per origin, for the page count it was built at */
  private readonly indexes = new Map<string, { count: number; byUrl: Map<string, number> }>();

  constructor(private readonly seed: number) {}

  private editsOf(origin: string): SiteEdits {
    let e = this.edits.get(origin);
    if (!e) {
      e = { added: 0, removed: new Set(), revisions: new Map() };
      this.edits.set(origin, e);
    }
    return e;
  }

  /** Number of pages of the site at `origin` ever made (2..120 unless resized), removed ones included. */
  pageCount(origin: string): number {
    return this.seedCount(origin) + (this.edits.get(origin)?.added ?? 0);
  }

  /** The pages the seed (or a resize) made, before any was added: what page links point at. */
  private seedCount(origin: string): number {
    return this.edits.get(origin)?.size ?? 2 + (hash32(`${this.seed}|site|${origin}`) % 119);
  }

  /** The indexes of the site's live pages under `url`'s path (the crawl's child-path rule), in order. */
  livePages(url: URL): number[] {
    const prefix = url.pathname.replace(/\/+$/, '');
    const removed = this.edits.get(url.origin)?.removed;
    const out: number[] = [];
    const n = this.pageCount(url.origin);
    for (let i = 0; i < n; i++) {
      if (removed?.has(i)) continue;
      if (prefix !== '') {
        const path = new URL(this.pageUrl(url.origin, i)).pathname;
        if (path !== prefix && !path.startsWith(`${prefix}/`)) continue;
      }
      out.push(i);
    }
    return out;
  }

  /** The index of a page URL of its site, or undefined when the site never had it. */
  pageIndex(url: URL): number | undefined {
    const n = this.pageCount(url.origin);
    let cached = this.indexes.get(url.origin);
    if (cached?.count !== n) {
      const byUrl = new Map<string, number>();
      for (let i = 0; i < n; i++) byUrl.set(this.pageUrl(url.origin, i), i);
      cached = { count: n, byUrl };
      this.indexes.set(url.origin, cached);
    }
    return cached.byUrl.get(url.href);
  }

  /** Apply an edit; answers the site's live URLs after it, or the URLs it does not know. */
  editSite(origin: string, edit: SiteEdit): { urls: string[] } | { unknown: string[] } {
    const e = this.editsOf(origin);
    const indexes = (urls: string[] | undefined) => (urls ?? []).map((u) => [u, this.pageIndex(new URL(u))] as const);
    const named = [...indexes(edit.change), ...indexes(edit.remove), ...indexes(edit.restore)];
    const unknown = named.filter(([, i]) => i === undefined).map(([u]) => u);
    if (unknown.length > 0) return { unknown };
    if (edit.size !== undefined) e.size = edit.size;
    for (const [, i] of indexes(edit.change)) e.revisions.set(i!, (e.revisions.get(i!) ?? 0) + 1);
    for (const [, i] of indexes(edit.remove)) e.removed.add(i!);
    for (const [, i] of indexes(edit.restore)) e.removed.delete(i!);
    e.added += edit.add ?? 0;
    return { urls: this.siteUrls(origin) };
  }

  /** True when the page at `url` was removed by an edit. */
  isRemoved(url: URL): boolean {
    const i = this.pageIndex(url);
    return i !== undefined && (this.edits.get(url.origin)?.removed.has(i) ?? false);
  }

  /** URL of page `i` of a site; page 0 is the root. */
  pageUrl(origin: string, i: number): string {
    if (i === 0) return `${origin}/`;
    const r = rngFor(this.seed, 'page-url', origin, i);
    return `${origin}/${r.pick(SECTIONS)}/${words(r, 'en', r.int(1, 3)).replace(/ /g, '-')}-${i}`;
  }

  /** The live pages' URLs of the site at `origin`. */
  siteUrls(origin: string): string[] {
    return this.livePages(new URL(`${origin}/`)).map((i) => this.pageUrl(origin, i));
  }

  /** The Markdown of a page and the URLs it links to. */
  private page(
    url: URL,
    noLinks: boolean,
    lang: Lang,
  ): { name: string; description: string; content: string; urls: string[] } {
    const origin = url.origin;
    const r = rngFor(this.seed, 'page', url.href, lang);
    const name = title(r, lang);
    const description = sentence(r, lang, 6, 16);
    const n = this.seedCount(origin);
    const urls: string[] = [];
    const lines = [`# ${name}`, '', description, ''];
    const paragraphs = r.int(2, 12);
    for (let p = 0; p < paragraphs; p++) {
      if (r.chance(0.3)) lines.push(`## ${title(r, lang)}`, '');
      let para = `${sentence(r, lang, 6, 30)} ${sentence(r, lang, 6, 30)}`;
      if (r.chance(0.6)) {
        const target = this.pageUrl(origin, r.int(0, n - 1));
        const anchor = words(r, lang, r.int(1, 4));
        urls.push(target);
        para += noLinks ? ` ${anchor}` : ` [${anchor}](${target})`;
      }
      lines.push(para, '');
      if (r.chance(0.15)) lines.push('```', `const answer = ${r.int(0, 99)};`, '```', '');
    }
    const revisions = this.edits.get(origin)?.revisions;
    const revision = revisions && revisions.size > 0 ? (revisions.get(this.pageIndex(url) ?? -1) ?? 0) : 0;
    if (revision > 0) {
      const rv = rngFor(this.seed, 'revision', url.href, lang, revision);
      lines.push(`## Revision ${revision}`, '', sentence(rv, lang, 8, 24), '');
    }
    return { name, description, content: lines.join('\n'), urls: [...new Set(urls)] };
  }

  scrape(url: URL, noLinks: boolean, lang: Lang): Scrape {
    const p = this.page(url, noLinks, lang);
    return {
      url: url.href,
      content: p.content,
      name: p.name,
      description: p.description,
      ogUrl: url.href,
      countCharacters: p.content.length,
      urls: p.urls,
    };
  }

  crawledPage(origin: string, i: number): CrawledPage {
    const url = new URL(this.pageUrl(origin, i));
    const p = this.page(url, false, 'en');
    const out: CrawledPage = { url: url.href, content: p.content, countCharacters: p.content.length };
    if (i % 7 !== 3) out.name = p.name;
    if (i % 3 !== 1) out.description = p.description;
    if (i % 5 !== 2) out.ogUrl = url.href;
    return out;
  }
}
