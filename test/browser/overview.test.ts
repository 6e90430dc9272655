/**
 * The admin pages as a person sees them: headless Chromium (Debian's `chromium`, driven by
 * playwright-core) against a real `daemon --admin-port` process, while a backfill is half done
 * (the simulator's clock is frozen mid-batch). The overview shows the sources and a batch's
 * progress bar; a person clicks from the overview to a source's page, on to the half-done batch
 * and to one of its items (the raw payload); the hold banner shows on every page while a hold
 * stands; the queue dashboard loads with the token and is refused without it, loads nothing from
 * another site and pauses a queue when asked; a page of another site can neither add a job with
 * a form post (the operator's cached credentials riding along) nor read a page through a name
 * re-pointed at this machine (DNS rebinding, played by `--host-resolver-rules`); a daemon stops
 * cleanly on SIGTERM (one of its own, so the pages keep theirs whatever the order). Screenshots
 * are saved to test-artifacts/ (overview, source, batch, item, hold, queues .png).
 *
 * Without /usr/bin/chromium the file is skipped locally (with a message) and fails in CI.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BATCH_ITEMS_PER_PAGE } from '../../src/admin/batch-page.ts';
import { syncSource } from '../../src/pipeline/ingest/sync-source.ts';
import { registerSource } from '../../src/pipeline/commands/sources.ts';
import { basic, bearer } from '../helpers/admin.ts';
import { createPipelineHarness, waitFor, type PipelineHarness } from '../helpers/pipeline.ts';
import { freePort, parseLogLines } from '../helpers/proc.ts';

const CHROMIUM_PATH = '/usr/bin/chromium';
/** A site of someone else's, served from this machine under a name of its own (CHROMIUM_ARGS). */
const EVIL_NAME = 'evil.example';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  // what a DNS-rebinding attacker's name does once re-pointed: resolve to this machine
  `--host-resolver-rules=MAP ${EVIL_NAME} 127.0.0.1`,
];
const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ARTIFACTS = join(REPO_ROOT, 'test-artifacts');
const TOKEN = 'browser-test-token-0123456789abcdef';
/** Items per simulated second; the clock is moved by hand. */
const ITEMS_PER_SECOND = 20;
const CHANNEL_VIDEOS = 80;

const chromiumMissing = !existsSync(CHROMIUM_PATH);
const inCi = Boolean(process.env.CI);
if (chromiumMissing && !inCi) {
  console.warn(
    `skipping test/browser/overview.test.ts: ${CHROMIUM_PATH} is missing (install it: apt-get install chromium)`,
  );
}

interface AdminDaemon {
  child: ChildProcess;
  exit: Promise<number | null>;
  /** its stderr so far (pino lines) */
  log(): string;
  adminUrl: string;
}

describe.skipIf(chromiumMissing && !inCi)('the admin pages in headless Chromium', () => {
  let h: PipelineHarness;
  /** the daemon the pages are read from */
  let daemon: AdminDaemon | undefined;
  let adminUrl: string;
  let context: BrowserContext | undefined;
  let userDataDir: string | undefined;
  let channelTitle: string;
  let channelId: number;
  let playlistTitle: string;
  let halfDoneJobId: string;

  beforeAll(async () => {
    if (chromiumMissing) throw new Error(`${CHROMIUM_PATH} is missing: .ci/run installs it (apt-get install chromium)`);
    h = await createPipelineHarness('browser', { catalog: { channels: 2, channelSizes: [CHANNEL_VIDEOS, 30] } });
    const [first, second] = h.sim.catalog.channels();
    const ch = await registerSource(h.deps, {
      kind: 'channel',
      ref: first!.handle,
      limit: CHANNEL_VIDEOS,
      langs: ['en'],
      textOnly: false,
      cron: null,
    });
    const pl = await registerSource(h.deps, {
      kind: 'playlist',
      ref: second!.playlistIds[0]!,
      limit: 30,
      langs: ['en'],
      textOnly: true,
      cron: null,
    });
    channelTitle = ch.title!;
    channelId = ch.id;
    playlistTitle = pl.title!;

    daemon = await startAdminDaemon();
    adminUrl = daemon.adminUrl;

    // submit with the upstream clock frozen, then let one simulated second pass: 20 of the
    // channel's 80 items finish, and the daemon polls them in
    h.sim.setJobSettings({ itemsPerSecond: ITEMS_PER_SECOND });
    h.sim.clock.setSpeed(0);
    await syncSource(h.deps, ch.id, { trigger: 'backfill' });
    await syncSource(h.deps, pl.id, { trigger: 'backfill' });
    h.sim.clock.advance(h.sim.jobSettings().queuedMs + 1_000);
    halfDoneJobId = await waitFor(
      async () => {
        const [b] = await h.database.sql<{ job_id: string }[]>`
        select job_id from batches
        where source_id = ${ch.id} and kind = 'video' and status = 'active' and succeeded + failed = ${ITEMS_PER_SECOND}`;
        return b?.job_id;
      },
      20_000,
      'the daemon to poll the channel batch a quarter done',
    );

    userDataDir = mkdtempSync(join(tmpdir(), 'vsi-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM_PATH,
      args: CHROMIUM_ARGS,
      viewport: { width: 1280, height: 900 },
    });
  });

  afterAll(async () => {
    await context?.close();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
    if (daemon && daemon.child.exitCode === null) {
      daemon.child.kill('SIGTERM');
      const code = await Promise.race([daemon.exit, new Promise((r) => setTimeout(() => r('timeout'), 10_000))]);
      if (code === 'timeout') daemon.child.kill('SIGKILL');
    }
    h?.sim.clock.setSpeed(1);
    await h?.close();
  });

  /** A real daemon with the admin server: it runs the poller and the sink; this file submits. */
  async function startAdminDaemon(): Promise<AdminDaemon> {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const child = spawn(
      process.execPath,
      ['bin/videosite-ingest.js', 'daemon', '--role', 'poller,sink', '--admin-port', String(port)],
      {
        cwd: REPO_ROOT,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '',
          ...h.env,
          ADMIN_TOKEN: TOKEN,
          LOG_LEVEL: 'info',
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let log = '';
    child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
    const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`daemon exited with ${child.exitCode}:\n${log}`);
        try {
          return (await fetch(`${url}/healthz`)).ok ? true : undefined;
        } catch {
          return undefined;
        }
      },
      30_000,
      'the daemon admin server',
    );
    return { child, exit, log: () => log, adminUrl: url };
  }

  it('the overview shows the sources and a batch progress bar', async () => {
    const page = await context!.newPage();
    await page.setExtraHTTPHeaders(bearer(TOKEN));
    const res = await page.goto(`${adminUrl}/`, { waitUntil: 'load' });
    expect(res?.status()).toBe(200);

    const sources = page.locator('#sources tbody tr');
    await expect.poll(() => sources.count()).toBe(2);
    expect(await page.locator('#sources').innerText()).toContain(channelTitle);
    expect(await page.locator('#sources').innerText()).toContain(playlistTitle);

    const bar = page.locator(`[role="progressbar"][aria-label="batch ${halfDoneJobId}"]`);
    expect(await bar.getAttribute('aria-valuemax')).toBe(String(CHANNEL_VIDEOS));
    expect(await bar.getAttribute('aria-valuenow')).toBe(String(ITEMS_PER_SECOND));
    // drawn a quarter full (green and red parts together), not empty, not full
    const outer = await bar.boundingBox();
    const parts = await bar.locator('span').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().width));
    const filled = parts.reduce((a, b) => a + b, 0);
    expect(outer).not.toBeNull();
    expect(filled / outer!.width).toBeGreaterThan(0.2);
    expect(filled / outer!.width).toBeLessThan(0.3);
    expect(await page.locator(`tr[data-job-id="${halfDoneJobId}"]`).innerText()).toContain(
      `${ITEMS_PER_SECOND} / ${CHANNEL_VIDEOS} finished`,
    );

    // the daemon's own metrics count its polls (the client hook wired through its context)
    const metrics = await (await fetch(`${adminUrl}/metrics`)).text();
    expect(metrics).toMatch(
      /^vsi_api_requests_total\{endpoint="GET \/videosite\/batch\/\{jobId\}",status="200"\} [1-9]/m,
    );

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'overview.png'), fullPage: true });
    await page.close();
  });

  it('clicks from the overview to a source, to a batch, to an item', async () => {
    const { sql } = h.database;
    const page = await context!.newPage();
    await page.setExtraHTTPHeaders(bearer(TOKEN));
    await page.goto(`${adminUrl}/`, { waitUntil: 'load' });

    await page.locator(`#sources tr[data-source-id="${channelId}"] a`).first().click();
    await page.waitForURL(`${adminUrl}/sources/${channelId}`);
    expect(await page.locator('h2.page').innerText()).toContain(channelTitle);
    const [stats] = await sql<
      { videos: number; transcripts: number }[]
    >`select videos, transcripts from source_stats where source_id = ${channelId}`;
    expect(await page.locator('#videos').innerText()).toBe(String(stats!.videos));
    expect(await page.locator('#transcripts').innerText()).toBe(String(stats!.transcripts));
    const batchRow = page.locator(`#batches tr[data-job-id="${halfDoneJobId}"]`);
    expect(await batchRow.innerText()).toContain(`${ITEMS_PER_SECOND} / ${CHANNEL_VIDEOS} finished`);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'source.png'), fullPage: true });

    await batchRow.locator('a').first().click();
    await page.waitForURL(`${adminUrl}/batches/${encodeURIComponent(halfDoneJobId)}`);
    expect(await page.locator('#summary').innerText()).toContain(channelTitle);
    expect(
      await page.locator(`[role="progressbar"][aria-label="batch ${halfDoneJobId}"]`).getAttribute('aria-valuenow'),
    ).toBe(String(ITEMS_PER_SECOND));
    const itemIds = (
      await sql<
        { video_id: string }[]
      >`select video_id from batch_items where job_id = ${halfDoneJobId} order by video_id`
    ).map((r) => r.video_id);
    // the first page of its items (finished ones, and those still processing), by video ID
    expect(
      await page.locator('#items tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-video-id'))),
    ).toEqual(itemIds.slice(0, BATCH_ITEMS_PER_PAGE));
    await page.screenshot({ path: join(ARTIFACTS, 'batch.png'), fullPage: true });

    // a stored one (its metadata in the payload), on the first page
    const [stored] = await sql<{ video_id: string; pretty: string }[]>`
      select video_id, jsonb_pretty(payload) as pretty from batch_items
      where job_id = ${halfDoneJobId} and state = 'sunk' and video_id = any(${itemIds.slice(0, BATCH_ITEMS_PER_PAGE)}::text[])
      order by video_id limit 1`;
    await page.locator(`#items tr[data-video-id="${stored!.video_id}"] a`).click();
    await page.waitForURL(
      `${adminUrl}/batches/${encodeURIComponent(halfDoneJobId)}/items/${encodeURIComponent(stored!.video_id)}`,
    );
    expect(await page.locator('#payload').innerText()).toBe(stored!.pretty);
    expect(stored!.pretty).toContain(`"videoId": "${stored!.video_id}"`);
    await page.screenshot({ path: join(ARTIFACTS, 'item.png'), fullPage: true });
    await page.close();
  });

  it('the hold banner shows on every page while a hold stands, and goes with it', async () => {
    const { sql } = h.database;
    const page = await context!.newPage();
    await page.setExtraHTTPHeaders(bearer(TOKEN));
    const paths = ['/', `/sources/${channelId}`, '/batches', `/batches/${encodeURIComponent(halfDoneJobId)}`];
    // upgrade-required: scope `submit` (the daemon's polls go on), and no daemon lifts it by itself
    await sql`insert into upstream_holds (code, scope, reason) values ('upgrade-required', 'submit', 'the plan has no batch access')`;
    try {
      for (const path of paths) {
        await page.goto(`${adminUrl}${path}`, { waitUntil: 'load' });
        const banner = page.locator('[data-hold="upgrade-required"]');
        expect(await banner.isVisible(), path).toBe(true);
        expect(await banner.innerText()).toContain('the plan has no batch access');
        if (path === `/sources/${channelId}`) await page.screenshot({ path: join(ARTIFACTS, 'hold.png') });
      }
    } finally {
      await sql`delete from upstream_holds where code = 'upgrade-required'`;
    }
    for (const path of paths) {
      await page.goto(`${adminUrl}${path}`, { waitUntil: 'load' });
      expect(await page.locator('[data-hold]').count(), path).toBe(0);
    }
    await page.close();
  });

  it('the queue dashboard loads with the token and is refused without it', async () => {
    // without credentials: the server answers 401 with a basic-auth challenge, which headless
    // Chromium, having nothing to offer, turns into a failed navigation
    const anonymous = await context!.newPage();
    const answer = anonymous.waitForResponse((r) => r.url() === `${adminUrl}/admin/queues`);
    const navigation = await anonymous.goto(`${adminUrl}/admin/queues`).then(
      () => 'loaded',
      (e: unknown) => String(e),
    );
    const refused = await answer;
    expect(refused.status()).toBe(401);
    expect(refused.headers()['www-authenticate']).toMatch(/^Basic realm="videosite-ingest admin"/);
    // (should a later Chromium show the 401 page instead, it says what is missing)
    const shown = navigation === 'loaded' ? await anonymous.locator('body').innerText() : navigation;
    expect(shown).toMatch(/ERR_INVALID_AUTH_CREDENTIALS|authentication required/);
    await anonymous.close();

    const page = await context!.newPage();
    // what a browser sends once the operator has logged in: the cached basic credentials, on every request
    await page.setExtraHTTPHeaders(basic(TOKEN));
    const requested: string[] = [];
    const refusedByPolicy: string[] = [];
    page.on('request', (r) => requested.push(r.url()));
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) refusedByPolicy.push(m.text());
    });
    const res = await page.goto(`${adminUrl}/admin/queues`, { waitUntil: 'domcontentloaded' });
    expect(res?.status()).toBe(200);
    expect(res?.headers()['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    // bull-board renders the queues from its API (fetched by the page with the same header)
    for (const name of ['schedule', 'poll', 'sink']) {
      await page.getByRole('link', { name, exact: true }).first().waitFor({ timeout: 15_000 });
    }
    await page.getByText('Loading...').waitFor({ state: 'detached', timeout: 15_000 });
    await page.screenshot({ path: join(ARTIFACTS, 'queues.png') });

    // its actions work as the operator clicks them: pause the schedule queue (no worker of this daemon reads it)
    try {
      await page.goto(`${adminUrl}/admin/queues/queue/schedule`, { waitUntil: 'domcontentloaded' });
      await page.getByRole('button', { name: 'Queue info' }).waitFor({ timeout: 15_000 });
      // the queue's actions menu
      await page.locator('main button[aria-haspopup="menu"]').first().click();
      await page.getByRole('menuitem', { name: 'Pause', exact: true }).click();
      await page.getByRole('button', { name: 'Confirm', exact: true }).click();
      await waitFor(
        async () => ((await h.queues.schedule.isPaused()) ? true : undefined),
        15_000,
        'the schedule queue paused from the dashboard',
      );
    } finally {
      await h.queues.schedule.resume();
    }
    // everything it loaded came from the admin server (no web fonts of another site), and nothing was blocked
    expect(requested.filter((u) => !u.startsWith(`${adminUrl}/`))).toEqual([]);
    expect(refusedByPolicy).toEqual([]);
    await page.close();
  });

  it("a page of another site can neither add a job through the operator's browser nor read the pages through a rebound name", async () => {
    const jobs = async () => Object.values(await h.queues.schedule.getJobCounts()).reduce((a, b) => a + b, 0);
    const before = await jobs();
    const adminPort = new URL(adminUrl).port;
    // the classic JSON-by-form post: a text/plain form whose body reads as the dashboard's "add job" JSON
    const evil = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(`<!doctype html><form id="f" method="POST" enctype="text/plain" action="${adminUrl}/admin/queues/api/queues/schedule/add">
        <input name='{"name":"sync","data":{"sourceId":1},"x":"' value='"}'></form><script>document.getElementById('f').submit()</script>`);
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    const page = await context!.newPage();
    try {
      await page.setExtraHTTPHeaders(basic(TOKEN));
      const posted = page.waitForResponse((r) => r.url() === `${adminUrl}/admin/queues/api/queues/schedule/add`);
      await page.goto(`http://${EVIL_NAME}:${(evil.address() as AddressInfo).port}/`);
      const answer = await posted;
      expect(answer.status()).toBe(403);
      expect(answer.request().headers()['content-type']).toMatch(/^text\/plain/);
      expect(await jobs()).toBe(before);

      // the same name, now resolving to the admin server: the browser sends it as Host
      const rebound = await page.goto(`http://${EVIL_NAME}:${adminPort}/`);
      expect(rebound?.status()).toBe(421);
      expect(await page.locator('body').innerText()).toMatch(/^refused: /);
      const queues = await page.goto(`http://${EVIL_NAME}:${adminPort}/admin/queues/api/queues`);
      expect(queues?.status()).toBe(421);
    } finally {
      await page.close();
      // the browser keeps its connection alive: close it too
      evil.closeAllConnections();
      await new Promise((resolve) => evil.close(resolve));
    }
  });

  it('the daemon stops cleanly on SIGTERM', async () => {
    const own = await startAdminDaemon();
    // the admin server answers before the daemon has finished starting: a SIGTERM before its
    // handlers are set (right after `daemon.started`) would be the default one
    await waitFor(
      async () => (parseLogLines(own.log()).some((l) => l.event === 'daemon.started') ? true : undefined),
      30_000,
      'daemon.started',
    );
    own.child.kill('SIGTERM');
    expect(await own.exit).toBe(0);
    const events = parseLogLines(own.log());
    expect(events.some((l) => l.event === 'admin.listening')).toBe(true);
    expect(events.some((l) => l.event === 'daemon.stopped')).toBe(true);
    for (const log of [own.log(), daemon!.log()]) expect(log).not.toContain(h.sim.apiKey);
  });
});
