/**
 * The queue dashboard (bull-board) under `/admin/queues`: the BullMQ queues, their jobs, and
 * actions on them (pause, retry, clean, add a job). Mounted here with what bull-board does not do
 * itself:
 *
 * - its page links Google Fonts: the link is dropped from the page (the text falls back to the
 *   system's sans-serif), and its Content-Security-Policy allows this origin only, so nothing else
 *   of another site loads either;
 * - its API parses any request body as JSON (a `text/plain` form post included) and carries on
 *   with an empty one when that fails: a body must say `application/json` (415) and be JSON (400).
 *
 * Who may call it at all is decided before (request-guard.ts, auth.ts).
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { HonoAdapter } from '@bull-board/hono';
import { serveStatic } from '@hono/node-server/serve-static';
import type { Hono, MiddlewareHandler } from 'hono';
import type { PipelineQueues } from '../queues/queues.ts';
import { mediaTypeOf, SAFE_METHODS } from './request-guard.ts';

/**
 * The dashboard's Content-Security-Policy: its scripts, styles, images, fonts, worker and API
 * calls from this origin only, never framed. Inline styles stay allowed: its page carries a
 * `<style>` and `style` attributes. Its `<script type="application/json">` holds data, not code.
 */
export const DASHBOARD_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; " +
  "connect-src 'self'; worker-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

/** A `<link>` whose address names another host (`https://…`, `//…`), with the line break after it. */
const FOREIGN_LINK = /<link\b[^>]*?\bhref=["']?(?:[a-z][a-z0-9+.-]*:)?\/\/[^>]*>[ \t]*\r?\n?/gi;

/** The page without the links to other sites. */
export function withoutForeignLinks(page: string): string {
  return page.replace(FOREIGN_LINK, '');
}

/** A JSON media type: `application/json`, or a `+json` one. */
function isJson(type: string | undefined): boolean {
  return type === 'application/json' || (type?.endsWith('+json') ?? false);
}

/** The API's state-changing requests: a body, when there is one, is JSON. */
function jsonBodies(): MiddlewareHandler {
  return async (c, next) => {
    if (SAFE_METHODS.has(c.req.method)) return next();
    const length = c.req.header('content-length');
    const hasBody = c.req.header('transfer-encoding') !== undefined || (length !== undefined && length.trim() !== '0');
    if (!hasBody) return next();
    if (!isJson(mediaTypeOf(c.req.header('content-type')))) {
      return c.text('the queue dashboard takes a JSON body (Content-Type: application/json)\n', 415);
    }
    try {
      // parsed once here; bull-board's own read gets the same parsed body (hono keeps it)
      await c.req.json();
    } catch {
      return c.text('the request body is not valid JSON\n', 400);
    }
    return next();
  };
}

/** Its pages: this policy, and no link to another site. */
function ownPages(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    c.header('Content-Security-Policy', DASHBOARD_CSP);
    if (!(c.res.headers.get('content-type') ?? '').startsWith('text/html')) return;
    const page = await c.res.text();
    const headers = new Headers(c.res.headers);
    headers.delete('content-length');
    const status = c.res.status;
    // unset first: assigning over a response would copy its old headers (content-length) back
    c.res = undefined;
    c.res = new Response(withoutForeignLinks(page), { status, headers });
  };
}

export interface QueueDashboardOptions {
  /** where it is mounted, e.g. `/admin/queues` */
  path: string;
  queues: PipelineQueues;
}

/** Mount bull-board on `app` at `o.path`, for the schedule, poll and sink queues. */
export function mountQueueDashboard(app: Hono, o: QueueDashboardOptions): void {
  app.use(`${o.path}/*`, ownPages());
  app.use(`${o.path}/api/*`, jsonBodies());
  const board = new HonoAdapter(serveStatic);
  createBullBoard({
    queues: [o.queues.schedule, o.queues.poll, o.queues.sink].map((q) => new BullMQAdapter(q)),
    // @bull-board/hono 9.10.1 pins its own @bull-board/api 9.10.1, whose types differ from 9.10.2's
    // by a private field only; the adapter contract is the same (checked by the tests)
    serverAdapter: board as unknown as Parameters<typeof createBullBoard>[0]['serverAdapter'],
    options: { uiConfig: { boardTitle: 'videosite-ingest', hideDocsLink: true } },
  });
  board.setBasePath(o.path);
  app.route(o.path, board.registerPlugin());
}
