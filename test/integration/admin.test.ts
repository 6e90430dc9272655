/**
 * The admin server in process, against a real pipeline (simulator over HTTP, Postgres, Redis,
 * BullMQ workers): what a monitoring system and an operator see. Metrics are scraped while a
 * backfill is half done (the simulator's clock is frozen mid-batch) and after it, and compared
 * with Postgres and the simulator's own account; readiness follows a private Redis going away
 * and coming back; every page beyond the probes and /metrics needs the token; the overview pages
 * its sources (those needing attention first) and shows the storage per table and the latest
 * prune; a query Postgres cancels (statement_timeout) leaves its metrics family or overview
 * section out, logged, and frees its connection. Each scrape test runs its own backfill in a
 * pipeline of its own; the other blocks share one pipeline per block.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startAdminServer, type AdminServer } from '../../src/admin/server.ts';
import { createMetrics, STALEST_SOURCES_SHOWN, type AdminMetrics } from '../../src/admin/metrics.ts';
import { OVERVIEW_SOURCES_PER_PAGE } from '../../src/admin/overview.ts';
import { createApiClient, type ApiClient } from '../../src/api/client.ts';
import { ConfigError } from '../../src/config.ts';
import { SOURCE_KINDS } from '../../src/domain/sources.ts';
import { createLogger, silentLogger } from '../../src/log.ts';
import { isSettled } from '../../src/db/batch-progress.ts';
import { runBackfill, type BackfillReport } from '../../src/pipeline/commands/backfill.ts';
import type { PipelineDeps } from '../../src/pipeline/deps.ts';
import { registerSource } from '../../src/pipeline/commands/sources.ts';
import { startWorkers, type WorkerSet } from '../../src/pipeline/services/workers.ts';
import { closeRedis, createRedis } from '../../src/queues/connection.ts';
import { createQueues } from '../../src/queues/queues.ts';
import { basic, bearer, parseMetrics, samples, sum, value, type Sample } from '../helpers/admin.ts';
import { createPipelineHarness, runCli, waitFor, type PipelineHarness } from '../helpers/pipeline.ts';
import { once } from '../helpers/once.ts';
import { parseLogLines } from '../helpers/proc.ts';
import { startRedisServer } from '../helpers/redis-server.ts';

const TOKEN = 'admin-test-token-0123456789abcdef';
/** Items per simulated second while the clock is driven by hand. */
const ITEMS_PER_SECOND = 20;

// The pipeline of the running test, opened by its block's hooks (blocks and tests run one at a time).
let h: PipelineHarness;
let metrics: AdminMetrics;
let api: ApiClient;
let deps: PipelineDeps;
let workers: WorkerSet;
let admin: AdminServer;

async function get(
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(`${admin.url}${path}`, { headers });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

async function scrape(): Promise<Sample[]> {
  const r = await get('/metrics');
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  expect(r.text).not.toContain(h.sim.apiKey);
  return parseMetrics(r.text);
}

async function pgBatchesByStatus(): Promise<Record<string, number>> {
  const rows = await h.database.sql<
    { status: string; n: number }[]
  >`select status, count(*)::int as n from batches group by status`;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** A pipeline with the admin server and metrics wired as the daemon wires them. */
async function openPipeline(label: string): Promise<void> {
  h = await createPipelineHarness(label, { catalog: { channels: 2, channelSizes: [60, 40] } });
  metrics = createMetrics();
  // the harness's client, plus the metrics hook the daemon wires through its context
  api = createApiClient({
    baseUrl: h.sim.baseUrl,
    apiKey: h.sim.apiKey,
    platform: h.sim.platform,
    retry: { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 200 },
    onRequest: (e) => metrics.apiRequest(e),
  });
  deps = { ...h.deps, api, metrics };
  workers = startWorkers(deps, { roles: ['poller', 'sink'], connection: h.redis });
  admin = await startAdminServer({
    port: 0,
    token: TOKEN,
    sql: h.database.sql,
    redis: h.redis,
    queues: h.queues,
    metrics,
    secrets: [h.sim.apiKey],
    log: silentLogger(),
  });
  // connected before any test asks: /readyz reports a connection still connecting as down
  await h.redis.ping();
}

async function closePipeline(): Promise<void> {
  await workers?.close(2_000);
  await admin?.close();
  await api?.close();
  await h?.close();
}

/** A channel and a playlist of the catalog, registered as sources. */
async function registerSources(): Promise<number[]> {
  const [first, second] = h.sim.catalog.channels();
  const ch = await registerSource(deps, {
    kind: 'channel',
    ref: first!.handle,
    limit: 60,
    langs: ['en'],
    textOnly: false,
    cron: null,
  });
  const pl = await registerSource(deps, {
    kind: 'playlist',
    ref: second!.playlistIds[0]!,
    limit: 40,
    langs: ['en'],
    textOnly: true,
    cron: null,
  });
  return [ch.id, pl.id];
}

/** Start a backfill of both sources (upstream time as set), and what it is going to report. */
function startBackfill(sourceIds: number[]): Promise<BackfillReport> {
  return runBackfill(deps, { sourceIds, wait: true, timeoutMs: 30_000, checkIntervalMs: 100 });
}

describe('metrics during and after a backfill', () => {
  beforeEach(() => openPipeline('admin-metrics'));
  afterEach(closePipeline);

  it('mid-run: API requests, batches by status, queue depths, freshness and credits', async () => {
    const sourceIds = await registerSources();

    // freeze upstream time: the batches stay queued until the test moves the clock
    h.sim.setJobSettings({ itemsPerSecond: ITEMS_PER_SECOND });
    h.sim.clock.setSpeed(0);
    const run = startBackfill(sourceIds);
    try {
      const jobIds = await waitFor(
        async () => {
          const rows = await h.database.sql<{ job_id: string }[]>`select job_id from batches`;
          return rows.length === 4 ? rows.map((r) => r.job_id) : undefined;
        },
        15_000,
        'four batches submitted',
      );
      // one simulated second of work: 20 items of each batch finish
      h.sim.clock.advance(h.sim.jobSettings().queuedMs + 1_000);
      // (the playlist holds fewer videos than that: its batches are done)
      await waitFor(
        async () => {
          const rows = await h.database.sql<{ n: number }[]>`
          select count(*)::int as n from batches where succeeded + failed = least(total, ${ITEMS_PER_SECOND})`;
          return rows[0]!.n === jobIds.length ? true : undefined;
        },
        15_000,
        'every batch polled after one simulated second',
      );

      // every poll recorded in Postgres made its GET before (read first, then scrape)
      const [recorded] = await h.database.sql<{ n: number }[]>`select sum(polls)::int as n from batches`;
      const m = await scrape();
      // API traffic, by endpoint template and status, with latency
      const polls = value(m, 'vsi_api_requests_total', { endpoint: 'GET /videosite/batch/{jobId}', status: '200' });
      expect(recorded!.n).toBeGreaterThanOrEqual(jobIds.length);
      expect(polls).toBeGreaterThanOrEqual(recorded!.n);
      expect(sum(m, 'vsi_api_requests_total', { endpoint: 'POST /videosite/video/batch' })).toBe(2);
      expect(sum(m, 'vsi_api_requests_total', { endpoint: 'POST /videosite/transcript/batch' })).toBe(2);
      expect(
        value(m, 'vsi_api_request_duration_seconds_count', { endpoint: 'GET /videosite/batch/{jobId}', status: '200' }),
      ).toBe(polls);
      expect(
        value(m, 'vsi_api_request_duration_seconds_sum', { endpoint: 'GET /videosite/batch/{jobId}', status: '200' }),
      ).toBeGreaterThan(0);

      // batches by status, as Postgres has them (zeros included)
      const pg = await pgBatchesByStatus();
      expect(pg.active).toBe(2);
      for (const status of ['submitted', 'queued', 'active', 'completed', 'failed', 'expired']) {
        expect(value(m, 'vsi_batches', { status })).toBe(pg[status] ?? 0);
      }

      // one poll job per batch in flight, waiting for its next turn
      const pollJobs = ['waiting', 'active', 'delayed'].map((state) =>
        value(m, 'vsi_queue_jobs', { queue: 'poll', state })!,
      );
      expect(pollJobs.reduce((a, b) => a + b, 0)).toBe(pg.active);
      expect(value(m, 'vsi_queue_jobs', { queue: 'poll', state: 'failed' })).toBe(0);
      expect(value(m, 'vsi_queue_jobs', { queue: 'schedule', state: 'waiting' })).toBe(0);

      // both sources synced just now
      for (const id of sourceIds) {
        const age = value(m, 'vsi_source_seconds_since_sync', { source_id: String(id) });
        expect(age).toBeGreaterThanOrEqual(0);
        expect(age).toBeLessThan(60);
      }

      // credits: the latest /me snapshot (taken before the submissions)
      const [snap] = await h.database.sql<{ used: number; max: number }[]>`
        select used_credits::int as used, max_credits::int as max from credit_snapshots order by taken_at desc, id desc limit 1`;
      expect(value(m, 'vsi_credits_used')).toBe(snap!.used);
      expect(value(m, 'vsi_credits_max')).toBe(snap!.max);
      expect(value(m, 'vsi_credits_max')).toBeGreaterThan(0);

      // process metrics come along
      expect(value(m, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    } finally {
      // let the backfill end, so nothing of it outlives the test
      h.sim.clock.setSpeed(1);
      h.sim.clock.advance(10_000);
      await run;
    }
  });

  it('after the run: rows upserted by table, items by errorCode, credits equal to /me', async () => {
    // the same backfill, upstream time frozen and then moved past the batches' end
    h.sim.setJobSettings({ itemsPerSecond: ITEMS_PER_SECOND });
    h.sim.clock.setSpeed(0);
    const run = startBackfill(await registerSources());
    await waitFor(
      async () => {
        const rows = await h.database.sql<{ n: number }[]>`select count(*)::int as n from batches`;
        return rows[0]!.n === 4 ? true : undefined;
      },
      15_000,
      'four batches submitted',
    );
    h.sim.clock.setSpeed(1);
    h.sim.clock.advance(10_000);
    const report = await run;
    expect(report.exitCode).toBe(0);
    expect(report.batches.every(isSettled)).toBe(true);

    const m = await scrape();
    const { sql } = h.database;
    const [videos] = await sql<{ n: number }[]>`select count(*)::int as n from videos`;
    const [transcripts] = await sql<{ n: number }[]>`select count(*)::int as n from transcripts`;
    expect(videos!.n).toBeGreaterThan(0);
    expect(transcripts!.n).toBeGreaterThan(0);
    expect(value(m, 'vsi_rows_upserted_total', { table: 'videos', outcome: 'inserted' })).toBe(videos!.n);
    expect(value(m, 'vsi_rows_upserted_total', { table: 'transcripts', outcome: 'inserted' })).toBe(transcripts!.n);
    expect(value(m, 'vsi_rows_upserted_total', { table: 'videos', outcome: 'updated' })).toBe(0);

    expect(value(m, 'vsi_batches', { status: 'completed' })).toBe(4);
    expect(value(m, 'vsi_batches', { status: 'active' })).toBe(0);

    const errors = await sql<{ error_code: string; state: string; n: number }[]>`
      select error_code, state, count(*)::int as n from batch_items where error_code is not null group by 1, 2`;
    // the catalog has private, gone and transcript-less videos: each code is reported
    expect(new Set(errors.map((e) => e.error_code))).toEqual(
      new Set(['forbidden', 'not-found', 'transcript-unavailable']),
    );
    for (const e of errors) {
      expect(value(m, 'vsi_batch_items_by_error_code', { error_code: e.error_code, state: e.state })).toBe(e.n);
    }
    expect(sum(m, 'vsi_batch_items_by_error_code')).toBe(errors.reduce((n, e) => n + e.n, 0));

    const me = await h.api.me();
    expect(value(m, 'vsi_credits_used')).toBe(me.usedCredits);
    expect(value(m, 'vsi_credits_max')).toBe(me.maxCredits);

    for (const state of ['waiting', 'active', 'delayed']) {
      expect(value(m, 'vsi_queue_jobs', { queue: 'poll', state })).toBe(0);
      expect(value(m, 'vsi_queue_jobs', { queue: 'sink', state })).toBe(0);
    }
    expect(value(m, 'vsi_metrics_collect_errors_total', { family: 'queues' }) ?? 0).toBe(0);
  });
});

describe('probes and access control', () => {
  beforeAll(() => openPipeline('admin'));
  afterAll(closePipeline);
  /** the sources, backfilled once (the overview shows what the backfill left) */
  const backfilled = once(async () => {
    const sourceIds = await registerSources();
    expect((await startBackfill(sourceIds)).exitCode).toBe(0);
    return sourceIds;
  });

  it('/healthz and /readyz answer without a token', async () => {
    const health = await get('/healthz');
    expect(health.status).toBe(200);
    expect(health.text).toBe('ok\n');
    const ready = await get('/readyz');
    expect(ready.status, ready.text).toBe(200);
    expect(JSON.parse(ready.text)).toEqual({
      ready: true,
      checks: { postgres: 'ok', redis: 'ok', migrations: 'ok', schema: 'ok' },
    });
  });

  it('the overview and the queue dashboard need the token, as bearer or basic auth', async () => {
    for (const path of ['/', '/admin/queues', '/admin/queues/api/queues']) {
      const none = await get(path);
      expect(none.status, `${path} without a token`).toBe(401);
      expect(none.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
      expect((await get(path, bearer('not-the-token-0123456789'))).status, `${path} wrong token`).toBe(401);
      expect((await get(path, basic('not-the-token-0123456789'))).status, `${path} wrong basic`).toBe(401);
      expect((await get(path, bearer(TOKEN))).status, `${path} bearer`).toBe(200);
      expect((await get(path, basic(TOKEN))).status, `${path} basic`).toBe(200);
    }
    // the dashboard's API lists our three queues
    const queues = JSON.parse((await get('/admin/queues/api/queues', bearer(TOKEN))).text) as {
      queues: { name: string }[];
    };
    expect(queues.queues.map((q) => q.name).sort()).toEqual(['poll', 'schedule', 'sink']);
  });

  it('the overview shows sources, errors per source and the credit chart, and never the API key', async () => {
    const [first] = await backfilled();
    // an error text that somehow carries the key (say, an upstream echoing it): the page must not
    await h.database.sql`
      update sources set last_error = ${`upstream said: bad key ${h.sim.apiKey}`}, last_error_code = 'unauthorized', last_error_at = now()
      where id = ${first!}`;
    try {
      const page = await get('/', bearer(TOKEN));
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(page.text).not.toContain(h.sim.apiKey);
      expect(page.text).toContain('upstream said: bad key [redacted]');
      const [title] = await h.database.sql<{ title: string }[]>`select title from sources where id = ${first!}`;
      expect(page.text).toContain(title!.title);
      expect(page.text).toMatch(/<svg class="chart"[^>]*aria-label="Credits used over time/);
      expect(page.text).toContain('transcript-unavailable');
    } finally {
      await h.database
        .sql`update sources set last_error = null, last_error_code = null, last_error_at = null where id = ${first!}`;
    }
  });

  it('the overview lists the sources needing attention first, pages the rest, and shows the storage per table and the latest prune', async () => {
    const backfilledIds = await backfilled();
    const { sql } = h.database;
    // 120 more sources: every 10th with an error, every 15th never synced (and not paused)
    const added = await sql<{ id: number; title: string }[]>`
      insert into sources (kind, ref, external_id, max_videos, title, cron, last_synced_at, last_error, last_error_code, last_error_at)
      select 'playlist', 'PLpage' || i, 'PLpage' || i, 10, 'Paged source ' || i, '0 3 * * *',
        case when i % 15 = 0 then null else now() end,
        case when i % 10 = 0 then 'upstream said no to ' || i end, case when i % 10 = 0 then 'forbidden' end,
        case when i % 10 = 0 then now() end
      from generate_series(1, 120) i
      returning id, title`;
    const [prune] = await sql<{ id: number }[]>`
      insert into prune_runs (started_at, finished_at, trigger, freed)
      values (now() - interval '2 hours', now() - interval '2 hours' + interval '30 seconds', 'daily',
        '{"batch_items": {"rows": 1234, "bytes": 5242880}, "sync_runs": {"rows": 0, "bytes": 0}}')
      returning id::int`;
    try {
      const total = backfilledIds.length + added.length;
      const pages = Math.ceil(total / OVERVIEW_SOURCES_PER_PAGE);
      const rowsOf = (text: string) => [...text.matchAll(/<tr data-source-id="(\d+)">/g)].map((m) => Number(m[1]));
      const first = await get('/', bearer(TOKEN));
      expect(first.status).toBe(200);
      const firstRows = rowsOf(first.text);
      expect(firstRows).toHaveLength(OVERVIEW_SOURCES_PER_PAGE);
      // the 12 with an error, then the 4 never synced (every 15th that is not also every 10th), before any other
      const withError = added.filter((_, i) => (i + 1) % 10 === 0).map((s) => s.id);
      const neverSynced = added.filter((_, i) => (i + 1) % 15 === 0 && (i + 1) % 10 !== 0).map((s) => s.id);
      expect(firstRows.slice(0, withError.length)).toEqual(withError);
      expect(firstRows.slice(withError.length, withError.length + neverSynced.length)).toEqual(neverSynced);
      expect(first.text).toContain(`${total} sources: `);
      expect(first.text).toContain(`${withError.length + neverSynced.length} need attention`);
      expect(first.text).toContain(`href="?page=2#sources"`);
      expect(first.text).toContain(`href="?page=${pages}#sources"`);

      // every source on exactly one page, each page bounded
      const seen = [...firstRows];
      for (let n = 2; n <= pages; n++) {
        const r = await get(`/?page=${n}`, bearer(TOKEN));
        expect(r.status).toBe(200);
        const rows = rowsOf(r.text);
        expect(rows.length).toBeLessThanOrEqual(OVERVIEW_SOURCES_PER_PAGE);
        seen.push(...rows);
      }
      expect([...seen].sort((a, b) => a - b)).toEqual(
        [...backfilledIds, ...added.map((s) => s.id)].sort((a, b) => a - b),
      );
      // past the last page: the last one
      expect(rowsOf((await get(`/?page=${pages + 5}`, bearer(TOKEN))).text)).toEqual(
        seen.slice((pages - 1) * OVERVIEW_SOURCES_PER_PAGE),
      );
      const bad = await get('/?page=abc', bearer(TOKEN));
      expect(bad.status).toBe(400);
      expect(bad.text).toBe('page: invalid value "abc": expected a whole number from 1\n');

      // storage per table as the catalog has it, and the latest prune
      for (const table of ['batch_items', 'videos', 'transcripts', 'prune_runs'])
        expect(first.text).toContain(`<tr data-table="${table}">`);
      expect(first.text).toMatch(
        /<p class="small" id="last-prune">Last prune 2 h ago: daily prune freed 5\.0 MB: batch_items 1234 row\(s\), 5\.0 MB<\/p>/,
      );
    } finally {
      await sql`delete from sources where id = any(${added.map((s) => s.id)}::int[])`;
      await sql`delete from prune_runs where id = ${prune!.id}`;
    }
  });

  it(`/metrics gives the ${STALEST_SOURCES_SHOWN} unpaused sources longest without a sync a series each, and counts every source by kind and state`, async () => {
    await backfilled();
    const { sql } = h.database;
    const before = await scrape();
    // 130 synced playlists, the i-th a day and i hours ago (all staler than the backfilled two);
    // paused ones staler still, which must not take a place; some never synced
    const added = await sql<{ id: number; ref: string }[]>`
      insert into sources (kind, ref, external_id, max_videos, paused, last_synced_at)
      select 'playlist', 'PLstale' || i, 'PLstale' || i, 10, false, now() - interval '1 day' - i * interval '1 hour' from generate_series(1, 130) i
      union all select 'playlist', 'PLpausedStale' || i, 'PLpausedStale' || i, 10, true, now() - interval '30 days' from generate_series(1, 5) i
      union all select 'playlist', 'PLpausedNew' || i, 'PLpausedNew' || i, 10, true, null from generate_series(1, 2) i
      union all select 'playlist', 'PLnew' || i, 'PLnew' || i, 10, false, null from generate_series(1, 3) i
      returning id, ref`;
    try {
      const hoursOf = new Map(
        added
          .filter((s) => s.ref.startsWith('PLstale'))
          .map((s) => [String(s.id), 24 + Number(s.ref.slice('PLstale'.length))]),
      );
      const m = await scrape();
      const series = samples(m, 'vsi_source_seconds_since_sync');
      expect(series).toHaveLength(STALEST_SOURCES_SHOWN);
      // the 100 stalest of the 130: 31..130 hours past the day
      const expected = [...hoursOf].filter(([, hours]) => hours > 24 + 30).map(([id]) => id);
      expect(series.map((s) => s.labels.source_id).sort()).toEqual(expected.sort());
      for (const s of series) {
        expect(s.labels.kind).toBe('playlist');
        expect(Math.abs(s.value - hoursOf.get(s.labels.source_id!)! * 3_600)).toBeLessThan(120);
      }
      expect(
        Math.abs(value(m, 'vsi_source_seconds_since_sync_max', { kind: 'playlist' })! - (24 + 130) * 3_600),
      ).toBeLessThan(120);

      // every source counted once by kind and state, every kind and state present
      const [all] = await sql<{ n: number }[]>`select count(*)::int as n from sources`;
      expect(sum(m, 'vsi_sources')).toBe(all!.n);
      expect(samples(m, 'vsi_sources')).toHaveLength(SOURCE_KINDS.length * 3);
      const delta = (state: string) =>
        value(m, 'vsi_sources', { kind: 'playlist', state })! -
        value(before, 'vsi_sources', { kind: 'playlist', state })!;
      expect({ active: delta('active'), paused: delta('paused'), never_synced: delta('never_synced') }).toEqual({
        active: 130,
        paused: 7,
        never_synced: 3,
      });
      expect(value(m, 'vsi_sources', { kind: 'search', state: 'active' })).toBe(0);
    } finally {
      await sql`delete from sources where id = any(${added.map((s) => s.id)}::int[])`;
    }
  });

  it('a query Postgres cancels leaves its metrics family or overview section out, logged, and frees its connection', async () => {
    await backfilled();
    const lines: string[] = [];
    const log = createLogger({ level: 'warn', destination: { write: (line: string) => lines.push(line) } });
    const own = await startAdminServer({
      port: 0,
      token: TOKEN,
      sql: h.database.sql,
      redis: h.redis,
      queues: h.queues,
      metrics: createMetrics({ processMetrics: false }),
      log,
      queryTimeoutMs: 300,
    });
    // another session holds item_counts: every read of it waits for the lock
    const locker = await h.database.sql.reserve();
    try {
      await locker`begin`;
      await locker`lock table item_counts in access exclusive mode`;
      const started = Date.now();
      const res = await fetch(`${own.url}/metrics`);
      expect(res.status).toBe(200);
      const m = parseMetrics(await res.text());
      expect(Date.now() - started).toBeLessThan(2_000);
      // the families that read the item counters are left out, the others are served
      expect(sum(m, 'vsi_batch_items_by_error_code')).toBe(0);
      expect(sum(m, 'vsi_batch_items_quarantined')).toBe(0);
      expect(value(m, 'vsi_metrics_collect_errors_total', { family: 'item_errors' })).toBe(1);
      expect(value(m, 'vsi_metrics_collect_errors_total', { family: 'quarantined' })).toBe(1);
      expect(value(m, 'vsi_batches', { status: 'completed' })).toBe(4);
      expect(value(m, 'vsi_credits_used')).toBeGreaterThan(0);

      const page = await fetch(`${own.url}/`, { headers: bearer(TOKEN) });
      expect(page.status).toBe(200);
      const text = await page.text();
      // the storage read sizes item_counts too, which waits for the same lock
      expect(text).toContain('Not shown: items, storage (the database did not answer in time; see the daemon log).');
      expect(text).toMatch(/<tr data-source-id="\d+">/);
      expect(text).toMatch(/<svg class="chart"/);

      // Postgres cancelled them: nothing of ours still waits on the lock
      const waiting = await h.database.sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and pid <> ${(await locker<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!.pid}`;
      expect(waiting[0]!.n).toBe(0);
      const events = parseLogLines(lines.join(''));
      expect(
        events
          .filter((l) => l.event === 'metrics.family_failed')
          .map((l) => [l.family, l.cancelled])
          .sort(),
      ).toEqual([
        ['item_errors', true],
        ['quarantined', true],
      ]);
      expect(events.filter((l) => l.event === 'overview.section_failed').map((l) => [l.section, l.cancelled])).toEqual([
        ['items', true],
        ['storage', true],
      ]);
    } finally {
      await locker`rollback`;
      locker.release();
      await own.close();
    }
  });

  it('refuses to listen beyond loopback without a token; listens with one', async () => {
    const base = { port: 0, sql: h.database.sql, redis: h.redis, queues: h.queues, log: silentLogger() };
    await expect(
      startAdminServer({
        ...base,
        host: '0.0.0.0',
        token: undefined,
        metrics: createMetrics({ processMetrics: false }),
      }),
    ).rejects.toThrow(ConfigError);
    await expect(
      startAdminServer({
        ...base,
        host: '0.0.0.0',
        token: undefined,
        metrics: createMetrics({ processMetrics: false }),
      }),
    ).rejects.toThrow(/ADMIN_TOKEN: not set, but the admin server would listen on 0\.0\.0\.0, beyond loopback/);
    const open = await startAdminServer({
      ...base,
      host: '0.0.0.0',
      token: TOKEN,
      metrics: createMetrics({ processMetrics: false }),
    });
    try {
      expect((await fetch(`${open.url}/`)).status).toBe(401);
      expect((await fetch(`${open.url}/healthz`)).status).toBe(200);
    } finally {
      await open.close();
    }
    // on loopback without a token, every page is served
    const local = await startAdminServer({
      ...base,
      host: '127.0.0.1',
      token: undefined,
      metrics: createMetrics({ processMetrics: false }),
    });
    try {
      expect((await fetch(`${local.url}/admin/queues`)).status).toBe(200);
    } finally {
      await local.close();
    }
  });

  it('daemon --admin-host 0.0.0.0 without ADMIN_TOKEN, or with a short one, exits 2 before doing anything', async () => {
    const args = ['daemon', '--admin-port', '0', '--admin-host', '0.0.0.0'];
    // info: a daemon that started would say so (the harness logs warnings only)
    const env = { ...h.env, LOG_LEVEL: 'info' };
    const [noToken, shortToken] = await Promise.all([
      runCli(args, env, 30_000),
      runCli(args, { ...env, ADMIN_TOKEN: 'short' }, 30_000),
    ]);
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toMatch(/^error: ADMIN_TOKEN: not set, but the admin server would listen on 0\.0\.0\.0/m);
    expect(parseLogLines(noToken.stderr).filter((l) => l.event === 'daemon.started')).toEqual([]);
    expect(shortToken.code).toBe(2);
    expect(shortToken.stderr).toMatch(
      /^error: ADMIN_TOKEN: invalid value \(value hidden\): expected at least 16 characters/m,
    );
    expect(shortToken.stderr).not.toContain('short');
  });
});

describe('readiness follows its own Redis', () => {
  beforeAll(() => openPipeline('admin-ready'));
  afterAll(closePipeline);

  it('/readyz turns 503 when Redis stops and 200 when it returns; /metrics keeps answering', async () => {
    const server = await startRedisServer();
    const redis = createRedis(server.url);
    redis.on('error', () => undefined);
    const queues = createQueues(redis, h.prefix);
    const own = await startAdminServer({
      port: 0,
      token: TOKEN,
      sql: h.database.sql,
      redis,
      queues,
      metrics: createMetrics({ processMetrics: false }),
      log: silentLogger(),
      readyTimeoutMs: 1_000,
    });
    const ready = async () => {
      const res = await fetch(`${own.url}/readyz`);
      return { status: res.status, body: (await res.json()) as { ready: boolean; checks: Record<string, string> } };
    };
    try {
      await waitFor(async () => ((await ready()).status === 200 ? true : undefined), 10_000, 'ready with its Redis up');

      await server.kill();
      const down = await waitFor(
        async () => {
          const r = await ready();
          return r.status === 503 ? r : undefined;
        },
        10_000,
        'unready with its Redis down',
      );
      expect(down.body).toEqual({
        ready: false,
        checks: { postgres: 'ok', redis: 'down', migrations: 'ok', schema: 'ok' },
      });
      const m = await fetch(`${own.url}/metrics`);
      expect(m.status).toBe(200);
      const text = await m.text();
      expect(text).not.toMatch(/^vsi_queue_jobs\{/m);
      expect(
        value(parseMetrics(text), 'vsi_metrics_collect_errors_total', { family: 'queues' }),
      ).toBeGreaterThanOrEqual(1);

      await server.start();
      const up = await waitFor(
        async () => {
          const r = await ready();
          return r.status === 200 ? r : undefined;
        },
        15_000,
        'ready again with its Redis back',
      );
      expect(up.body.checks).toEqual({ postgres: 'ok', redis: 'ok', migrations: 'ok', schema: 'ok' });
    } finally {
      await own.close();
      await queues.close();
      await closeRedis(redis);
      await server.stop();
    }
  });
});
