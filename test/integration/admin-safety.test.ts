/**
 * The admin server against the web pages its operator visits (issue #27, "Safe by default"):
 * requests are sent on the wire as a browser sends them for a hostile page, with the Host,
 * Origin, Sec-Fetch-Site, content type and cached basic-auth credentials that page would make
 * the browser send, and the outcome is read where an operator would see it (the queues in
 * Redis: nothing added, nothing paused).
 *
 * - DNS rebinding: a page whose name now resolves to 127.0.0.1 reaches the server with its own
 *   name in Host; refused (421), loopback names, IP addresses and ADMIN_ALLOWED_HOSTS accepted.
 * - Cross-site requests: a form POST (`text/plain`, with cached basic credentials) to the queue
 *   dashboard's "add job" route is refused and adds no job; so is a state-changing request whose
 *   Origin is foreign or whose Sec-Fetch-Site says another site sent it; the dashboard's own
 *   requests (PUT, JSON POST) still work, with the token and without one.
 * - Headers: every answer carries a CSP with `frame-ancestors 'none'` and no third-party source,
 *   X-Frame-Options, nosniff, no-referrer; the dashboard's page links nothing of another site.
 * - Request bodies are bounded (413); `/metrics` takes METRICS_TOKEN when it is set.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/admin/metrics.ts';
import { startAdminServer, type AdminServer } from '../../src/admin/server.ts';
import { silentLogger } from '../../src/log.ts';
import { basic, bearer, rawRequest, type RawAnswer, type RawRequest } from '../helpers/admin.ts';
import { createPipelineHarness, type PipelineHarness } from '../helpers/pipeline.ts';
import { freePort, startCli, waitUntil } from '../helpers/proc.ts';

const TOKEN = 'admin-safety-token-0123456789abcdef';
const METRICS_TOKEN = 'metrics-safety-token-0123456789ab';
const ALLOWED_NAME = 'admin.example.internal';

let h: PipelineHarness;
/** the local default: no ADMIN_TOKEN, on loopback */
let open: AdminServer;
/** with a token, a metrics token and one extra host name */
let guarded: AdminServer;

beforeAll(async () => {
  h = await createPipelineHarness('admin-safety');
  const base = { port: 0, sql: h.database.sql, redis: h.redis, queues: h.queues, log: silentLogger() };
  open = await startAdminServer({ ...base, token: undefined, metrics: createMetrics({ processMetrics: false }) });
  guarded = await startAdminServer({
    ...base,
    token: TOKEN,
    metricsToken: METRICS_TOKEN,
    allowedHosts: [ALLOWED_NAME],
    metrics: createMetrics({ processMetrics: false }),
  });
  await h.redis.ping();
});

afterAll(async () => {
  await open?.close();
  await guarded?.close();
  await h?.close();
});

const send = (server: AdminServer, r: RawRequest): Promise<RawAnswer> => rawRequest(server.url, r);
const portOf = (server: AdminServer) => server.port;
const header = (a: RawAnswer, name: string) => {
  const v = a.headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
};

/** Every job of the schedule queue, whatever its state. */
async function scheduleJobs(): Promise<number> {
  const counts = await h.queues.schedule.getJobCounts();
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

/** What the dashboard's "add job" form sends, as a sync of source 1 (what a hostile page would ask for). */
const ADD_SYNC = JSON.stringify({ name: 'sync', data: { sourceId: 1, trigger: 'cron' }, options: {} });
const ADD_PATH = '/admin/queues/api/queues/schedule/add';
const PAUSE_PATH = '/admin/queues/api/queues/schedule/pause';
const RESUME_PATH = '/admin/queues/api/queues/schedule/resume';

/** The headers a same-origin page (the dashboard itself) sends along with its requests. */
function sameOrigin(server: AdminServer): Record<string, string> {
  return { origin: `http://127.0.0.1:${portOf(server)}`, 'sec-fetch-site': 'same-origin' };
}

describe('DNS rebinding: the Host must be a name of this server', () => {
  it('refuses a foreign name with 421 and a short reason, on every path, with or without a token', async () => {
    for (const server of [open, guarded]) {
      const auth = server === guarded ? bearer(TOKEN) : {};
      for (const path of ['/', '/batches', '/admin/queues', '/admin/queues/api/queues', '/metrics', '/readyz']) {
        const r = await send(server, { path, headers: { host: `evil.example:${portOf(server)}`, ...auth } });
        expect(r.status, `${path} with a rebound name`).toBe(421);
        expect(header(r, 'content-type')).toMatch(/^text\/plain/);
        expect(r.text).toMatch(/Host/);
        expect(r.text.length).toBeLessThan(400);
        expect(r.text).not.toMatch(/<tr data-source-id|"queues"|vsi_/);
      }
    }
  });

  it('a rebound page can neither pause a queue nor add a job', async () => {
    const before = await scheduleJobs();
    const host = { host: `evil.example:${portOf(open)}` };
    // the page is same-origin with itself: its requests look like the dashboard's own
    const origin = { origin: `http://evil.example:${portOf(open)}`, 'sec-fetch-site': 'same-origin' };
    expect((await send(open, { method: 'PUT', path: PAUSE_PATH, headers: { ...host, ...origin } })).status).toBe(421);
    const add = await send(open, {
      method: 'POST',
      path: ADD_PATH,
      headers: { ...host, ...origin, 'content-type': 'application/json' },
      body: ADD_SYNC,
    });
    expect(add.status).toBe(421);
    expect(await h.queues.schedule.isPaused()).toBe(false);
    expect(await scheduleJobs()).toBe(before);
  });

  it('accepts the loopback names, IP addresses and ADMIN_ALLOWED_HOSTS, with the port', async () => {
    const port = portOf(guarded);
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      `LocalHost:${port}`,
      `[::1]:${port}`,
      `10.1.2.3:${port}`,
      `${ALLOWED_NAME}:${port}`,
      ALLOWED_NAME.toUpperCase(),
    ]) {
      const r = await send(guarded, { path: '/', headers: { host, ...bearer(TOKEN) } });
      expect(r.status, host).toBe(200);
    }
    // the extra name is this server's only: the local default does not take it
    expect((await send(open, { path: '/', headers: { host: `${ALLOWED_NAME}:${portOf(open)}` } })).status).toBe(421);
    for (const host of [
      `${ALLOWED_NAME}.evil.example:${port}`,
      `localhost.evil.example:${port}`,
      `127.0.0.1.nip.io:${port}`,
    ]) {
      expect((await send(guarded, { path: '/', headers: { host, ...bearer(TOKEN) } })).status, host).toBe(421);
    }
  });
});

describe('cross-site requests cannot change anything', () => {
  it('a cross-site form POST (text/plain, cached basic credentials) to "add job" is refused and adds no job', async () => {
    const before = await scheduleJobs();
    const form = { ...basic(TOKEN), 'content-type': 'text/plain;charset=UTF-8' };
    const attempts: Record<string, string>[] = [
      { ...form, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      // a browser that sends no Sec-Fetch-Site, or no Origin
      { ...form, origin: 'https://evil.example' },
      { ...form, 'sec-fetch-site': 'cross-site' },
      // another site of the same registrable domain
      { ...form, origin: 'http://other.localhost', 'sec-fetch-site': 'same-site' },
      // an old browser that sends neither: the form's content type alone gives it away
      form,
      { ...basic(TOKEN), 'content-type': 'application/x-www-form-urlencoded' },
      { ...basic(TOKEN), 'content-type': 'multipart/form-data; boundary=x' },
      basic(TOKEN),
    ];
    for (const headers of attempts) {
      const r = await send(guarded, { method: 'POST', path: ADD_PATH, headers, body: ADD_SYNC });
      expect(r.status, JSON.stringify(headers)).toBe(403);
      expect(header(r, 'content-type')).toMatch(/^text\/plain/);
      expect(r.text.length).toBeLessThan(400);
    }
    // without a token the same forms are refused too (the page needs no credentials then)
    const local: Record<string, string>[] = [
      { 'content-type': 'text/plain', origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      { 'content-type': 'text/plain' },
    ];
    for (const headers of local) {
      expect(
        (await send(open, { method: 'POST', path: ADD_PATH, headers, body: ADD_SYNC })).status,
        JSON.stringify(headers),
      ).toBe(403);
    }
    expect(await scheduleJobs()).toBe(before);
  });

  it('a state-changing request from a foreign Origin, or that Sec-Fetch-Site marks cross-site, is refused', async () => {
    for (const [server, auth] of [
      [guarded, basic(TOKEN)],
      [open, {}],
    ] as const) {
      const foreign: Record<string, string>[] = [
        { origin: 'https://evil.example' },
        { origin: 'null' },
        { origin: `http://localhost:${portOf(server) + 1}` },
        { 'sec-fetch-site': 'cross-site' },
        { 'sec-fetch-site': 'same-site' },
      ];
      for (const extra of foreign) {
        const r = await send(server, { method: 'PUT', path: PAUSE_PATH, headers: { ...auth, ...extra } });
        expect(r.status, JSON.stringify(extra)).toBe(403);
      }
    }
    expect(await h.queues.schedule.isPaused()).toBe(false);
    // reading stays possible from a link (a navigation from another site is a GET)
    expect(
      (await send(guarded, { path: '/', headers: { ...bearer(TOKEN), 'sec-fetch-site': 'cross-site' } })).status,
    ).toBe(200);
  });

  it("the dashboard's own requests still work: PUT and JSON POST, with the token (bearer or basic) and without one", async () => {
    const before = await scheduleJobs();
    try {
      for (const [server, auth] of [
        [guarded, basic(TOKEN)],
        [guarded, bearer(TOKEN)],
        [open, {}],
      ] as const) {
        const headers = { ...auth, ...sameOrigin(server) };
        const pause = await send(server, { method: 'PUT', path: PAUSE_PATH, headers });
        expect(pause.status, pause.text).toBeLessThan(300);
        expect(await h.queues.schedule.isPaused()).toBe(true);
        const resume = await send(server, { method: 'PUT', path: RESUME_PATH, headers });
        expect(resume.status, resume.text).toBeLessThan(300);
        expect(await h.queues.schedule.isPaused()).toBe(false);
      }
      // "add job" as the dashboard sends it (axios: a JSON body), and as a script sends it
      const ui = await send(guarded, {
        method: 'POST',
        path: ADD_PATH,
        headers: { ...basic(TOKEN), ...sameOrigin(guarded), 'content-type': 'application/json' },
        body: ADD_SYNC,
      });
      expect(ui.status, ui.text).toBe(200);
      const script = await send(guarded, {
        method: 'POST',
        path: ADD_PATH,
        headers: { ...bearer(TOKEN), 'content-type': 'application/json' },
        body: ADD_SYNC,
      });
      expect(script.status, script.text).toBe(200);
      const local = await send(open, {
        method: 'POST',
        path: ADD_PATH,
        headers: { 'content-type': 'application/json' },
        body: ADD_SYNC,
      });
      expect(local.status, local.text).toBe(200);
      expect(await scheduleJobs()).toBe(before + 3);
      // the dashboard's routes read JSON only: another body type, or a body that is not JSON, adds nothing
      const notJson = await send(guarded, {
        method: 'POST',
        path: ADD_PATH,
        headers: { ...bearer(TOKEN), 'content-type': 'text/plain' },
        body: ADD_SYNC,
      });
      expect(notJson.status).toBe(415);
      const broken = await send(guarded, {
        method: 'POST',
        path: ADD_PATH,
        headers: { ...bearer(TOKEN), 'content-type': 'application/json' },
        body: '{"name":',
      });
      expect(broken.status).toBe(400);
      expect(await scheduleJobs()).toBe(before + 3);
    } finally {
      await h.queues.schedule.resume();
      await h.queues.schedule.obliterate({ force: true });
    }
  });

  it('a state-changing request needs the token as before: none, a wrong one, or basic without it is 401', async () => {
    for (const auth of [{}, bearer('not-the-token-0123456789'), basic('not-the-token-0123456789')]) {
      const r = await send(guarded, { method: 'PUT', path: PAUSE_PATH, headers: { ...auth, ...sameOrigin(guarded) } });
      expect(r.status, JSON.stringify(auth)).toBe(401);
    }
    expect(await h.queues.schedule.isPaused()).toBe(false);
  });
});

describe('headers every answer carries', () => {
  const frameHeaders = (a: RawAnswer, what: string) => {
    const csp = header(a, 'content-security-policy');
    expect(csp, `${what}: CSP`).toBeDefined();
    expect(csp, what).toMatch(/frame-ancestors 'none'/);
    // sources of this origin only: no scheme, host or wildcard source anywhere
    expect(csp, what).not.toMatch(/https?:|\*|\/\//);
    expect(header(a, 'x-frame-options'), what).toBe('DENY');
    expect(header(a, 'x-content-type-options'), what).toBe('nosniff');
    expect(header(a, 'referrer-policy'), what).toBe('no-referrer');
  };

  it('our pages, the dashboard, its API, the probes, metrics and refusals', async () => {
    const port = portOf(guarded);
    const answers: [string, RawAnswer][] = [];
    for (const path of [
      '/',
      '/batches',
      '/search?q=x',
      '/admin/queues',
      '/admin/queues/',
      '/admin/queues/api/queues',
      '/healthz',
      '/readyz',
    ]) {
      const r = await send(guarded, { path, headers: bearer(TOKEN) });
      expect(r.status, path).toBeLessThan(300);
      answers.push([path, r]);
    }
    answers.push(['/metrics', await send(guarded, { path: '/metrics', headers: bearer(METRICS_TOKEN) })]);
    answers.push(['401', await send(guarded, { path: '/' })]);
    answers.push(['421', await send(guarded, { path: '/', headers: { host: `evil.example:${port}` } })]);
    answers.push([
      '403',
      await send(guarded, {
        method: 'POST',
        path: ADD_PATH,
        headers: { ...basic(TOKEN), 'content-type': 'text/plain' },
        body: ADD_SYNC,
      }),
    ]);
    answers.push(['open /admin/queues', await send(open, { path: '/admin/queues' })]);
    for (const [what, r] of answers) frameHeaders(r, what);
  });

  it("the dashboard's page loads nothing from another site, and what it loads is served", async () => {
    const page = await send(guarded, { path: '/admin/queues', headers: bearer(TOKEN) });
    expect(page.status).toBe(200);
    expect(page.text).toContain('id="root"');
    const refs = [...page.text.matchAll(/<(?:link|script)\b[^>]*?\b(?:href|src)="([^"]*)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(2);
    for (const ref of refs) expect(ref, 'a reference to another site').not.toMatch(/^(https?:)?\/\//i);
    expect(page.text).not.toMatch(/fonts\.(googleapis|gstatic)\.com/);
    // its scripts and styles (relative to <base href="/admin/queues/">) are served here
    const base = /<base href="([^"]*)"/.exec(page.text)?.[1] ?? '/admin/queues/';
    for (const ref of refs.filter((r) => /\.(js|css)$/.test(r))) {
      const asset = await send(guarded, { path: `${base}${ref}`, headers: bearer(TOKEN) });
      expect(asset.status, ref).toBe(200);
    }
    // the page's policy lets its own scripts, styles and API calls through
    const csp = header(page, 'content-security-policy')!;
    expect(csp).toMatch(/script-src 'self'/);
    expect(csp).toMatch(/connect-src 'self'/);
  });
});

describe('request bodies are bounded', () => {
  it('a body past the limit is refused with 413, declared or chunked, and adds no job', async () => {
    const before = await scheduleJobs();
    const big = JSON.stringify({ name: 'sync', data: { sourceId: 1, pad: 'x'.repeat(100 * 1024) } });
    for (const chunked of [false, true]) {
      for (const [server, auth] of [
        [guarded, bearer(TOKEN)],
        [open, {}],
      ] as const) {
        const r = await send(server, {
          method: 'POST',
          path: ADD_PATH,
          headers: { ...auth, 'content-type': 'application/json' },
          body: big,
          chunked,
        });
        expect(r.status, `chunked ${chunked}`).toBe(413);
        expect(r.text.length).toBeLessThan(400);
      }
    }
    expect(await scheduleJobs()).toBe(before);
  });
});

describe('/metrics with METRICS_TOKEN', () => {
  it('needs the metrics token (or the admin token) as a bearer token when one is set; stays open when not', async () => {
    expect((await send(guarded, { path: '/metrics' })).status).toBe(401);
    expect((await send(guarded, { path: '/metrics', headers: bearer('not-the-metrics-token-0123') })).status).toBe(401);
    const ok = await send(guarded, { path: '/metrics', headers: bearer(METRICS_TOKEN) });
    expect(ok.status).toBe(200);
    expect(ok.text).toMatch(/^vsi_batches\{/m);
    expect((await send(guarded, { path: '/metrics', headers: bearer(TOKEN) })).status).toBe(200);
    // the metrics token opens nothing else
    expect((await send(guarded, { path: '/', headers: bearer(METRICS_TOKEN) })).status).toBe(401);
    expect((await send(open, { path: '/metrics' })).status).toBe(200);
    // the probes stay open
    expect((await send(guarded, { path: '/healthz' })).status).toBe(200);
  });

  it('a daemon takes METRICS_TOKEN and ADMIN_ALLOWED_HOSTS from its environment', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const daemon = startCli(['daemon', '--role', 'sink', '--admin-port', String(port)], {
      ...h.env,
      ADMIN_TOKEN: TOKEN,
      METRICS_TOKEN,
      ADMIN_ALLOWED_HOSTS: `${ALLOWED_NAME}, other.example.internal`,
    });
    try {
      await waitUntil(
        async () => {
          if (!daemon.running()) throw new Error(`daemon exited:\n${daemon.stderr()}`);
          return (await rawRequest(url, { path: '/healthz' }).catch(() => undefined))?.status === 200
            ? true
            : undefined;
        },
        30_000,
        'the daemon admin server',
      );
      expect((await rawRequest(url, { path: '/metrics' })).status).toBe(401);
      expect((await rawRequest(url, { path: '/metrics', headers: bearer(METRICS_TOKEN) })).status).toBe(200);
      expect(
        (await rawRequest(url, { path: '/', headers: { host: `other.example.internal:${port}`, ...bearer(TOKEN) } }))
          .status,
      ).toBe(200);
      expect(
        (await rawRequest(url, { path: '/', headers: { host: `evil.example:${port}`, ...bearer(TOKEN) } })).status,
      ).toBe(421);
    } finally {
      daemon.kill('SIGTERM');
      await daemon.exited;
    }
  });
});
