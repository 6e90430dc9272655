/**
 * Crawl jobs of `POST /web/crawl`: `scraping` while pages are fetched at a simulated pace, then
 * `completed` with the pages, paged through `skip` (the answer's `next` is the absolute URL of
 * the same endpoint with the next offset, present only when more pages exist).
 */
import { randomUUID } from 'node:crypto';
import type { CrawlJob } from '../api/schemas.ts';
import type { SyntheticWeb } from './web.ts';

/** Pages per crawl answer. */
export const CRAWL_PAGE_SIZE = 10;

interface Crawl {
  id: string;
  apiKey: string;
  origin: string;
  pages: number;
  createdMs: number;
  doneMs: number;
  purgeMs: number;
}

export class CrawlJobs {
  private readonly crawls = new Map<string, Crawl>();

  constructor(private readonly web: SyntheticWeb) {}

  create(apiKey: string, url: URL, limit: number, nowMs: number, t: { pageMs: number; purgeMs: number }): string {
    for (const [id, c] of this.crawls) if (nowMs >= c.doneMs + c.purgeMs) this.crawls.delete(id);
    const pages = Math.min(limit, this.web.pageCount(url.origin));
    const id = `crawl_${randomUUID()}`;
    this.crawls.set(id, {
      id,
      apiKey,
      origin: url.origin,
      pages,
      createdMs: nowMs,
      doneMs: nowMs + pages * t.pageMs,
      purgeMs: t.purgeMs,
    });
    return id;
  }

  /**
   * The CrawlJob at `nowMs`; `nextUrl(skip)` builds the absolute URL of the next page of results.
   * Undefined when the crawl is unknown, purged or another key's.
   */
  view(id: string, apiKey: string, skip: number, nowMs: number, nextUrl: (skip: number) => string): CrawlJob | undefined {
    const c = this.crawls.get(id);
    if (!c || c.apiKey !== apiKey) return undefined;
    if (nowMs >= c.doneMs + c.purgeMs) {
      this.crawls.delete(id);
      return undefined;
    }
    if (nowMs < c.doneMs) return { status: 'scraping' };
    const pages = [];
    const end = Math.min(c.pages, skip + CRAWL_PAGE_SIZE);
    for (let i = skip; i < end; i++) pages.push(this.web.crawledPage(c.origin, i));
    const out: CrawlJob = { status: 'completed', pages };
    if (end < c.pages) out.next = nextUrl(end);
    return out;
  }
}
