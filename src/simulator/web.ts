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

export class SyntheticWeb {
  constructor(private readonly seed: number) {}

  /** Number of pages of the site at `origin` (2..120). */
  pageCount(origin: string): number {
    return 2 + (hash32(`${this.seed}|site|${origin}`) % 119);
  }

  /** URL of page `i` of a site; page 0 is the root. */
  pageUrl(origin: string, i: number): string {
    if (i === 0) return `${origin}/`;
    const r = rngFor(this.seed, 'page-url', origin, i);
    return `${origin}/${r.pick(SECTIONS)}/${words(r, 'en', r.int(1, 3)).replace(/ /g, '-')}-${i}`;
  }

  siteUrls(origin: string): string[] {
    const n = this.pageCount(origin);
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(this.pageUrl(origin, i));
    return out;
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
    const n = this.pageCount(origin);
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
