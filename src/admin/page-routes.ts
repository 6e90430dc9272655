/**
 * The routes of the drill-down pages, behind the admin token like the overview (auth.ts guards
 * every path but the probes and /metrics):
 *
 *   GET /sources/:id                       a source: settings, errors, batches (?page=N), sync runs (?runs=N)
 *   GET /batches                           every batch, the latest first (?page=N, ?status=S)
 *   GET /batches/:jobId                    a batch and its items (?page=N)
 *   GET /batches/:jobId/items/:videoId     one item and its raw copy (a crawl's item: the page URL as videoId)
 *   GET /pages?url=URL                     a web page: fields, sources, versions, sections, latest events
 *   GET /search?q=words                    transcript and page search (?lang, ?source, ?channel, ?limit)
 *
 * A web source's page (website, pages) lists its pages (?pages=N) in place of the video sections.
 * A bad `page`, `runs`, `pages`, `status` or `url` is answered 400 naming the parameter; an
 * unknown source, batch, item or web page 404 with a page that says so (and still shows the hold
 * banners).
 */
import type { EmbeddingsConfig } from '../config.ts';
import type { Context, Hono } from 'hono';
import type { Pool } from '../db/statement-timeout.ts';
import type { Logger } from '../log.ts';
import { loadBatchPage, renderBatchPage } from './batch-page.ts';
import { loadBatchesPage, readStatusParam, renderBatchesPage } from './batches-page.ts';
import { loadItemPage, renderItemPage } from './item-page.ts';
import { PAGE_CSP } from './layout.ts';
import { readPageParam } from './paging.ts';
import { loadSearchPage, readSearchParams, renderSearchPage } from './search-page.ts';
import { loadSourcePage, renderSourcePage } from './source-page.ts';
import { loadWebPage, readPageUrlParam, renderWebPage } from './web-page.ts';

export interface PageRoutesOptions {
  sql: Pool;
  log: Logger;
  /** the fingerprint of the configured API key (whose holds the banners show) */
  keyFingerprint?: string | undefined;
  /** per statement, ms; default PAGE_STATEMENT_TIMEOUT_MS */
  timeoutMs?: number;
  /** where bull-board is mounted (the header links to it) */
  queuesPath: string;
  /** VIDEO_URL_TEMPLATE: search hits link to the video at their moment; undefined: no links */
  videoUrlTemplate?: string | undefined;
  /** the embeddings settings: the search page searches by meaning with them; undefined: text only */
  embeddings?: EmbeddingsConfig | undefined;
}

/** A source ID as the URL gives it: the digits of a Postgres integer, else no source at all. */
const SOURCE_ID = /^\d{1,9}$/;

function answer(c: Context, page: { status: 200 | 404 | 503; html: string }): Response {
  c.header('Content-Security-Policy', PAGE_CSP);
  return c.html(page.html, page.status);
}

export function registerPageRoutes(app: Hono, o: PageRoutesOptions): void {
  const read = { log: o.log, timeoutMs: o.timeoutMs, keyFingerprint: o.keyFingerprint };

  app.get('/sources/:id', async (c) => {
    const page = readPageParam('page', c.req.query('page'));
    if (typeof page !== 'number') return c.text(page.error, 400);
    const runsPage = readPageParam('runs', c.req.query('runs'));
    if (typeof runsPage !== 'number') return c.text(runsPage.error, 400);
    const pagesPage = readPageParam('pages', c.req.query('pages'));
    if (typeof pagesPage !== 'number') return c.text(pagesPage.error, 400);
    const asked = c.req.param('id');
    const data = await loadSourcePage(o.sql, SOURCE_ID.test(asked) ? Number(asked) : null, {
      ...read,
      page,
      runsPage,
      pagesPage,
    });
    return answer(c, renderSourcePage(data, { asked, queuesPath: o.queuesPath }));
  });

  app.get('/batches', async (c) => {
    const page = readPageParam('page', c.req.query('page'));
    if (typeof page !== 'number') return c.text(page.error, 400);
    const status = readStatusParam(c.req.query('status'));
    if (status !== null && typeof status === 'object') return c.text(status.error, 400);
    const data = await loadBatchesPage(o.sql, { ...read, page, status });
    return answer(c, { status: 200, html: renderBatchesPage(data, { queuesPath: o.queuesPath }) });
  });

  app.get('/batches/:jobId', async (c) => {
    const page = readPageParam('page', c.req.query('page'));
    if (typeof page !== 'number') return c.text(page.error, 400);
    const jobId = c.req.param('jobId');
    const data = await loadBatchPage(o.sql, jobId, { ...read, page });
    return answer(c, renderBatchPage(data, { jobId, queuesPath: o.queuesPath }));
  });

  app.get('/batches/:jobId/items/:videoId', async (c) => {
    const jobId = c.req.param('jobId');
    const videoId = c.req.param('videoId');
    const data = await loadItemPage(o.sql, jobId, videoId, read);
    return answer(c, renderItemPage(data, { jobId, videoId, queuesPath: o.queuesPath }));
  });

  app.get('/pages', async (c) => {
    const url = readPageUrlParam(c.req.query('url'));
    if (typeof url !== 'string') return c.text(url.error, 400);
    const data = await loadWebPage(o.sql, url, read);
    return answer(c, renderWebPage(data, { url, queuesPath: o.queuesPath }));
  });

  app.get('/search', async (c) => {
    const filter = readSearchParams(c.req.query());
    if ('error' in filter) return c.text(filter.error, 400);
    const data = await loadSearchPage(o.sql, filter, read, o.embeddings);
    return answer(c, {
      status: 200,
      html: renderSearchPage(data, { filter, queuesPath: o.queuesPath, videoUrlTemplate: o.videoUrlTemplate }),
    });
  });
}
