/**
 * The admin HTTP server of a daemon (`daemon --admin-port N`):
 *
 *   GET /healthz        200 while the process runs (liveness)
 *   GET /readyz         200 when Postgres (writable: not `read-only`) and Redis answer, migrations
 *                       are current, no newer migration it was not built for is incompatible
 *                       (`schema-newer`) and no upstream hold applies to this process's API key,
 *                       else 503
 *   GET /metrics        Prometheus text format (see metrics.ts)               (METRICS_TOKEN, if set)
 *   GET /               the overview page; ?page=N pages the sources         (token)
 *   GET /sources/:id, /batches, /batches/:jobId[/items/:videoId]
 *                       the drill-down pages (page-routes.ts)                 (token)
 *   /admin/queues       bull-board: the BullMQ queues, jobs, retries         (token)
 *
 * Before any route: a request naming a host that is not this server's is refused (421), and so
 * is a state-changing request a page of another site may have sent (403; request-guard.ts); then
 * the token (auth.ts); then request bodies past ADMIN_BODY_MAX_BYTES are refused (413). Every
 * answer says it may not be framed, sniffed or named in a Referer, and carries a
 * Content-Security-Policy (the pages' own, or one that allows nothing). Every text answer is
 * checked for the secrets it must never carry (the API key) and redacted, as a last line of
 * defence behind errors that already leave the key out.
 */
import type { EmbeddingsConfig } from '../config.ts';
import { Hono, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { listenHttp } from '../http-listen.ts';
import type { RedisClient } from '../queues/connection.ts';
import type { Pool } from '../db/statement-timeout.ts';
import type { Logger } from '../log.ts';
import type { PipelineQueues } from '../queues/queues.ts';
import { assertSafeExposure, requireToken } from './auth.ts';
import { createReadinessChecker } from './health.ts';
import { registerStateMetrics, type AdminMetrics } from './metrics.ts';
import { PAGE_CSP } from './layout.ts';
import { loadOverview, renderOverview } from './overview.ts';
import { registerPageRoutes } from './page-routes.ts';
import { readPageParam } from './paging.ts';
import { mountQueueDashboard } from './queue-dashboard.ts';
import { allowedHostNames, refuseCrossSite, refuseForeignHost } from './request-guard.ts';

export const DEFAULT_ADMIN_HOST = '127.0.0.1';
/** Where bull-board is mounted. */
export const QUEUES_PATH = '/admin/queues';
/** Longest wait for open connections (browsers keep them alive) when closing, in milliseconds. */
export const ADMIN_CLOSE_TIMEOUT_MS = 2_000;
/** What replaces a secret found in an answer. */
export const REDACTED = '[redacted]';
/**
 * Largest request body accepted, bytes (64 KiB). Only the queue dashboard's API reads bodies (a
 * job's data, a rate limit); a larger one is refused with 413 before it is read.
 */
export const ADMIN_BODY_MAX_BYTES = 64 * 1024;
/** The Content-Security-Policy of an answer that sets none (text, JSON, metrics, refusals): nothing may load or frame it. */
export const DEFAULT_CSP = "default-src 'none'; frame-ancestors 'none'";

export interface AdminAppOptions {
  /** required beyond /healthz, /readyz, /metrics; undefined: no authentication (loopback only) */
  token: string | undefined;
  /** METRICS_TOKEN: /metrics then needs it (or `token`) as a bearer token; undefined: /metrics is open */
  metricsToken?: string | undefined;
  /**
   * host names answered to besides `localhost` and IP addresses (ADMIN_ALLOWED_HOSTS;
   * startAdminServer adds its listen address); a request naming another host is refused (421)
   */
  allowedHosts?: readonly string[];
  /** a pool: /metrics and the overview read in transactions of their own (statement_timeout) */
  sql: Pool;
  redis: RedisClient;
  queues: PipelineQueues;
  /** from createMetrics(); the state gauges are added to its registry (once per registry) */
  metrics: AdminMetrics;
  /** values that must never appear in an answer (the API key); empty strings are ignored */
  secrets?: readonly (string | undefined)[];
  log: Logger;
  /** per readiness check, in milliseconds; default READY_CHECK_TIMEOUT_MS (2 000) */
  readyTimeoutMs?: number;
  /**
   * the fingerprint of this process's API key (ApiClient.keyFingerprint): /readyz answers 503
   * while an upstream hold applies to it, and `vsi_upstream_hold` reports them; unset: neither
   * looks at holds
   */
  keyFingerprint?: string | undefined;
  /**
   * longest one statement of /metrics or the overview may run before Postgres cancels it (its
   * family or section is left out), in milliseconds; defaults COLLECT_TIMEOUT_MS and
   * OVERVIEW_STATEMENT_TIMEOUT_MS (2 000 each)
   */
  queryTimeoutMs?: number;
  /** VIDEO_URL_TEMPLATE: search hits link to the video at their moment */
  videoUrlTemplate?: string | undefined;
  /** EMBEDDINGS_*: /metrics and the overview show the model's coverage, the search page searches by meaning; unset, embeddings are off */
  embeddings?: EmbeddingsConfig | undefined;
}

export interface AdminApp {
  app: Hono;
  /** from now on /readyz answers 503 (the process is shutting down) */
  markStopping(): void;
}

/** Answers whose body is text we can search for secrets (scripts and styles are bull-board's own files). */
const TEXT_TYPES = /^(text\/(html|plain)|application\/(json|openmetrics-text))/i;

function redactSecrets(secrets: string[], log: Logger): MiddlewareHandler {
  return async (c, next) => {
    await next();
    if (secrets.length === 0 || !TEXT_TYPES.test(c.res.headers.get('content-type') ?? '')) return;
    const body = await c.res.text();
    let clean = body;
    for (const s of secrets) clean = clean.split(s).join(REDACTED);
    if (clean !== body)
      log.error(
        { event: 'admin.secret_redacted', path: c.req.path },
        'an admin answer held a secret; redacted (a bug: report it)',
      );
    const headers = new Headers(c.res.headers);
    headers.delete('content-length');
    const status = c.res.status;
    // unset first: assigning over a response would copy its old headers (content-length) back
    c.res = undefined;
    c.res = new Response(clean, { status, headers });
  };
}

export function createAdminApp(opts: AdminAppOptions): AdminApp {
  const { log } = opts;
  const secrets = opts.secrets?.filter((s): s is string => typeof s === 'string' && s !== '') ?? [];
  const readiness = createReadinessChecker({
    sql: opts.sql,
    redis: opts.redis,
    log,
    timeoutMs: opts.readyTimeoutMs,
    keyFingerprint: opts.keyFingerprint,
  });
  registerStateMetrics(opts.metrics, {
    sql: opts.sql,
    redis: opts.redis,
    queues: opts.queues,
    log,
    timeoutMs: opts.queryTimeoutMs,
    keyFingerprint: opts.keyFingerprint,
    embeddings: opts.embeddings,
  });
  let stopping = false;

  // not strict: `/admin/queues/` and `/admin/queues` are the same page
  const app = new Hono({ strict: false });
  app.use('*', redactSecrets(secrets, log));
  app.use('*', async (c, next) => {
    await next();
    c.header('X-Content-Type-Options', 'nosniff');
    c.header('Referrer-Policy', 'no-referrer');
    c.header('X-Frame-Options', 'DENY');
    if (!c.res.headers.has('content-security-policy')) c.header('Content-Security-Policy', DEFAULT_CSP);
    if (!c.res.headers.has('cache-control')) c.header('Cache-Control', 'no-store');
  });
  app.use('*', refuseForeignHost(allowedHostNames(opts.allowedHosts ?? []), log));
  app.use('*', refuseCrossSite(log));
  app.use('*', requireToken({ token: opts.token, metricsToken: opts.metricsToken }));
  app.use(
    '*',
    bodyLimit({
      maxSize: ADMIN_BODY_MAX_BYTES,
      onError: (c) => c.text(`request body too large: at most ${ADMIN_BODY_MAX_BYTES} bytes\n`, 413),
    }),
  );

  app.get('/healthz', (c) => c.text('ok\n'));

  app.get('/readyz', async (c) => {
    const report = await readiness.check();
    const ready = report.ready && !stopping;
    return c.json({ ...report, ready, ...(stopping ? { stopping: true } : {}) }, ready ? 200 : 503);
  });

  app.get('/metrics', async (c) => {
    const text = await opts.metrics.registry.metrics();
    return c.body(text, 200, { 'Content-Type': opts.metrics.registry.contentType });
  });

  app.get('/', async (c) => {
    const pageNumber = readPageParam('page', c.req.query('page'));
    if (typeof pageNumber !== 'number') return c.text(pageNumber.error, 400);
    const data = await loadOverview(opts.sql, {
      page: pageNumber,
      log,
      timeoutMs: opts.queryTimeoutMs,
      keyFingerprint: opts.keyFingerprint,
      embeddings: opts.embeddings,
    });
    const page = renderOverview(data, { queuesPath: QUEUES_PATH });
    // the page has no script; styles and the chart are inline
    c.header('Content-Security-Policy', PAGE_CSP);
    return c.html(page);
  });

  registerPageRoutes(app, {
    sql: opts.sql,
    log,
    keyFingerprint: opts.keyFingerprint,
    timeoutMs: opts.queryTimeoutMs,
    queuesPath: QUEUES_PATH,
    videoUrlTemplate: opts.videoUrlTemplate,
    embeddings: opts.embeddings,
  });

  mountQueueDashboard(app, { path: QUEUES_PATH, queues: opts.queues });

  app.onError((err, c) => {
    log.error(
      { event: 'admin.request_failed', path: c.req.path, err: { message: err.message } },
      'admin request failed',
    );
    return c.text('internal error (see the daemon log)\n', 500);
  });

  return {
    app,
    markStopping() {
      stopping = true;
    },
  };
}

export interface AdminServerOptions extends AdminAppOptions {
  /** interface to listen on; default 127.0.0.1 (beyond loopback only with a token) */
  host?: string;
  /** TCP port; 0 picks a free one */
  port: number;
}

export interface AdminServer {
  /** `http://host:port` (a wildcard host is shown as 127.0.0.1) */
  url: string;
  host: string;
  port: number;
  markStopping(): void;
  close(): Promise<void>;
}

/**
 * Start listening. Refuses (ConfigError, before listening) to serve beyond loopback without a
 * token; a port that cannot be bound rejects with the socket error (`code` EADDRINUSE, ...).
 */
export async function startAdminServer(opts: AdminServerOptions): Promise<AdminServer> {
  const host = opts.host ?? DEFAULT_ADMIN_HOST;
  assertSafeExposure(host, opts.token);
  // the name it listens on is one of its names (an address is accepted anyway)
  const { app, markStopping } = createAdminApp({ ...opts, allowedHosts: [...(opts.allowedHosts ?? []), host] });
  const server = await listenHttp(app.fetch, {
    host,
    port: opts.port,
    closeTimeoutMs: ADMIN_CLOSE_TIMEOUT_MS,
    onError: (e) => opts.log.error({ event: 'admin.server_error', err: { message: e.message } }, 'admin server error'),
  });
  return { url: server.url, host, port: server.port, markStopping, close: server.close };
}
