/**
 * Crawl jobs of `POST /web/crawl`: `scraping` while pages are fetched at a simulated pace, then
 * `completed` with the pages, paged through `skip` (the answer's `next` names the next offset in
 * the shape the job settings ask for, `crawlNext`; present only when more pages exist).
 */
import { randomUUID } from 'node:crypto';
import type { CrawlJob } from '../api/schemas.ts';
import { PRICES } from '../domain/prices.ts';
import type { SyntheticWeb } from './web.ts';

/** Pages per crawl answer. */
export const CRAWL_PAGE_SIZE = 10;

/**
 * How an answer's `next` names the following page (the interface leaves it open, UPSTREAM.md):
 * `absolute` this endpoint's own URL, `published` the provider's documented example (absolute,
 * `/v1/crawl/{jobId}`, no `/web`), `relative` an absolute path, `token` a bare `skip=N`, `offset`
 * a bare `N`, `foreign` an absolute URL on another origin (read for its offset, never requested).
 */
export const CRAWL_NEXT_SHAPES = ['absolute', 'published', 'relative', 'token', 'offset', 'foreign'] as const;
export type CrawlNextShape = (typeof CRAWL_NEXT_SHAPES)[number];

/** The `next` of a crawl answer in `shape`; `origin` is `http://host:port` as the client addressed the simulator. */
export function crawlNext(shape: CrawlNextShape, origin: string, jobId: string, skip: number): string {
  const id = encodeURIComponent(jobId);
  switch (shape) {
    case 'absolute':
      return `${origin}/v1/web/crawl/${id}?skip=${skip}`;
    case 'published':
      return `${origin}/v1/crawl/${id}?skip=${skip}`;
    case 'relative':
      return `/v1/web/crawl/${id}?skip=${skip}`;
    case 'token':
      return `skip=${skip}`;
    case 'offset':
      return String(skip);
    case 'foreign':
      return `https://elsewhere.invalid/v1/web/crawl/${id}?skip=${skip}`;
  }
}

/**
 * A crawl fault for crawls started from now on (job setting `crawlFault`): `failed` or
 * `cancelled` end the crawl so with no pages; `results-gone` answers not-found from the middle of
 * its results on (the job purged while they are read).
 */
export const CRAWL_FAULTS = ['none', 'failed', 'cancelled', 'results-gone'] as const;
export type CrawlFault = (typeof CRAWL_FAULTS)[number];

interface Crawl {
  id: string;
  apiKey: string;
  origin: string;
  /** the site's pages the crawl found, by index, snapshotted when it started */
  pages: number[];
  fault: CrawlFault;
  createdMs: number;
  doneMs: number;
  purgeMs: number;
  /** its pages are charged (1 credit each, UPSTREAM.md), once, when it is first seen completed */
  charged: boolean;
}

export class CrawlJobs {
  private readonly crawls = new Map<string, Crawl>();

  /**
   * `chargePages(apiKey, credits)` bills a crawl's pages: the POST's answer bills only the
   * request; the pages are crawled, and charged, after it (polling stays free, so no answer's
   * `x-billable-requests` carries them: only `/me` shows them)
   */
  constructor(
    private readonly web: SyntheticWeb,
    private readonly chargePages: (apiKey: string, credits: number) => void = () => {},
  ) {}

  create(
    apiKey: string,
    url: URL,
    limit: number,
    nowMs: number,
    t: { pageMs: number; purgeMs: number; fault: CrawlFault },
  ): string {
    for (const [id, c] of this.crawls) if (nowMs >= c.doneMs + c.purgeMs) this.crawls.delete(id);
    const pages = this.web.livePages(url).slice(0, limit);
    const id = `crawl_${randomUUID()}`;
    this.crawls.set(id, {
      id,
      apiKey,
      origin: url.origin,
      pages,
      fault: t.fault,
      createdMs: nowMs,
      doneMs: nowMs + pages.length * t.pageMs,
      purgeMs: t.purgeMs,
      charged: false,
    });
    return id;
  }

  /**
   * The CrawlJob at `nowMs`; `nextUrl(skip)` builds the absolute URL of the next page of results.
   * Undefined when the crawl is unknown, purged or another key's.
   */
  view(
    id: string,
    apiKey: string,
    skip: number,
    nowMs: number,
    nextUrl: (skip: number) => string,
  ): CrawlJob | undefined {
    const c = this.crawls.get(id);
    if (!c || c.apiKey !== apiKey) return undefined;
    if (nowMs >= c.doneMs + c.purgeMs) {
      this.crawls.delete(id);
      return undefined;
    }
    if (nowMs < c.doneMs) return { status: 'scraping' };
    if (c.fault === 'failed' || c.fault === 'cancelled') return { status: c.fault };
    if (!c.charged) {
      c.charged = true;
      this.chargePages(c.apiKey, c.pages.length * PRICES.crawlPage);
    }
    if (c.fault === 'results-gone' && skip >= Math.floor(c.pages.length / 2)) {
      this.crawls.delete(id);
      return undefined;
    }
    const pages = [];
    const end = Math.min(c.pages.length, skip + CRAWL_PAGE_SIZE);
    for (let i = skip; i < end; i++) pages.push(this.web.crawledPage(c.origin, c.pages[i]!));
    const out: CrawlJob = { status: 'completed', pages };
    if (end < c.pages.length) out.next = nextUrl(end);
    return out;
  }
}
