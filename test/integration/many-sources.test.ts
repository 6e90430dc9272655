/**
 * 2 000 sources on one cron: one job scheduler in Redis, and a real daemon process, against the
 * simulator over HTTP, lets one tick fire: one tick job queues the 2 000 syncs. Every source
 * syncs exactly once (one `sync_runs` row each, none an error), no sync
 * starts before its source's offset in the SCHEDULE_JITTER_MS window after the tick (the jitter
 * of src/domain/schedule.ts), the starts cover the window rather than bunching at the tick, and
 * the daemon logs no error, no failed job, no rate-limit pause and no connection trouble, with
 * DATABASE_POOL_MAX exactly what its settings need (src/domain/connections.ts). One connection
 * fewer makes `daemon` exit 2 before connecting to anything, and so does `backfill` with more
 * polls than the pool holds.
 *
 * The figures (time to write the schedulers, the tick job's time to queue the syncs, time from
 * the tick to the last sync, connections the daemon opened, how late syncs started after their
 * offset) are printed as `many-sources: ...`.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syncSchedulers } from '../../src/pipeline/services/reconcile.ts';
import { SEARCH_INDEX_CONNECTIONS, WEBHOOK_CONNECTIONS } from '../../src/domain/connections.ts';
import { jitterWindowMs, syncOffsetMs } from '../../src/domain/schedule.ts';
import { cronSchedulerId } from '../../src/queues/names.ts';
import { expectCleanError } from '../helpers/cli.ts';
import { startCli, waitUntil, within, type CliProcess } from '../helpers/proc.ts';
import { createPipelineHarness, runCli, type PipelineHarness } from '../helpers/pipeline.ts';

const CHANNELS = 1_000;
/** a channel source and a playlist source per channel */
const SOURCES = 2 * CHANNELS;
const JITTER_MS = 15_000;
const SCHEDULE_CONCURRENCY = 8;
const POLL_CONCURRENCY = 4;
const SINK_CONCURRENCY = 2;
/** 8 syncs × 2 + 4 polls + 2 sinks + reconcile, daily prune, hold re-check, search indexer, webhook delivery: not one more */
const POOL_NEEDED =
  SCHEDULE_CONCURRENCY * 2 + POLL_CONCURRENCY + SINK_CONCURRENCY + 3 + SEARCH_INDEX_CONNECTIONS + WEBHOOK_CONNECTIONS;
/** the tick fires this long after the schedulers are written: time for the daemon to start */
const TICK_LEAD_MS = 12_000;
/** a DB clock and this process's clock on one machine agree within this */
const CLOCK_SLACK_MS = 50;
const TEST_MS = 240_000;

let h: PipelineHarness;
let daemon: CliProcess | undefined;
let watch: postgres.Sql | undefined;

const daemonEnv = (extra: Record<string, string> = {}): Record<string, string> => ({
  ...h.env,
  LOG_LEVEL: 'info',
  SCHEDULE_JITTER_MS: String(JITTER_MS),
  SCHEDULE_CONCURRENCY: String(SCHEDULE_CONCURRENCY),
  POLL_CONCURRENCY: String(POLL_CONCURRENCY),
  SINK_CONCURRENCY: String(SINK_CONCURRENCY),
  DATABASE_POOL_MAX: String(POOL_NEEDED),
  // fast, but under the simulator's 1 000 requests/s: a 429 would be a failure here
  API_RATE_PER_SECOND: '500',
  API_RATE_BURST: '50',
  ...extra,
});

beforeAll(async () => {
  h = await createPipelineHarness('many-sources', {
    // Empty channels and playlists: each sync is its listing alone (the credit reservation's /me,
    // the channel or playlist record, the listing: 3 requests and ~20 statements), so the test
    // weighs the schedule, not the batches. With one video each, a sync also reserves and posts
    // two batches (8 requests): ~80 ms of this 2-core machine per sync under load, 2 000 in ~3 min.
    catalog: {
      channels: CHANNELS,
      videosPerChannel: { min: 0, max: 0 },
      shortsPerChannel: 0,
      livesPerChannel: 0,
      playlistsPerChannel: 1,
      playlistSize: { min: 0, max: 0 },
    },
  });
});

afterAll(async () => {
  daemon?.kill('SIGKILL');
  await within(daemon?.exited, 5_000);
  await watch?.end({ timeout: 5 });
  await h?.close();
});

describe('pool size against the concurrency settings at startup', () => {
  it('daemon and backfill exit 2 with one connection too few, naming both settings, their values and a combination that fits', async () => {
    const env = daemonEnv({ DATABASE_POOL_MAX: String(POOL_NEEDED - 1) });
    const [d, b] = await Promise.all([
      runCli(['daemon'], env, 30_000),
      runCli(['backfill', '--all'], { ...env, POLL_CONCURRENCY: '30' }, 30_000),
    ]);
    expectCleanError(
      d,
      2,
      `DATABASE_POOL_MAX: ${POOL_NEEDED - 1} connections per pool are too few`,
      `SCHEDULE_CONCURRENCY=${SCHEDULE_CONCURRENCY} POLL_CONCURRENCY=${POLL_CONCURRENCY} SINK_CONCURRENCY=${SINK_CONCURRENCY} may hold ${POOL_NEEDED} at once`,
      `Valid: DATABASE_POOL_MAX=${POOL_NEEDED} with`,
      `or DATABASE_POOL_MAX=${POOL_NEEDED - 1} with SCHEDULE_CONCURRENCY=7 POLL_CONCURRENCY=${POLL_CONCURRENCY} SINK_CONCURRENCY=${SINK_CONCURRENCY}`,
    );
    // backfill: 4 syncs side by side × 2 + 30 polls + 2 sinks + its progress read
    expectCleanError(
      b,
      2,
      `DATABASE_POOL_MAX: ${POOL_NEEDED - 1} connections per pool are too few`,
      'POLL_CONCURRENCY=30',
      'may hold 42 at once',
      'Valid: DATABASE_POOL_MAX=42',
    );
    // refused before connecting: no source was touched, no scheduler written
    expect(await h.queues.schedule.getJobSchedulers(0, -1)).toHaveLength(0);
  });
});

describe('2 000 sources on one cron', () => {
  it(
    'one tick: every source synced exactly once, none before its offset, spread over the jitter window, no error, no pool or rate trouble',
    async () => {
      const { sql } = h.database;
      const channels = h.sim.catalog.channels();
      expect(channels).toHaveLength(CHANNELS);

      // a cron that fires once in this test: at a chosen second of the day (six fields, UTC)
      const tickAt = Math.ceil((Date.now() + TICK_LEAD_MS) / 1000) * 1000;
      const t = new Date(tickAt);
      const cron = `${t.getUTCSeconds()} ${t.getUTCMinutes()} ${t.getUTCHours()} * * *`;
      const rows = channels.flatMap((c) => [
        { kind: 'channel', ref: c.id, external_id: c.id, max_videos: 50, cron },
        { kind: 'playlist', ref: c.playlistIds[0]!, external_id: c.playlistIds[0]!, max_videos: 50, cron },
      ]);
      await sql`insert into sources ${sql(rows)}`;
      const ids = (await sql<{ id: number }[]>`select id from sources order by id`).map((r) => r.id);
      expect(ids).toHaveLength(SOURCES);
      // what `sources add` does; the daemon's reconcile at start then finds it in place. One
      // scheduler for the one pattern, not one per source
      const writing = Date.now();
      expect(await syncSchedulers({ sql, queues: h.queues })).toBe(1);
      const schedulersWrittenMs = Date.now() - writing;
      const schedulers = await h.queues.schedule.getJobSchedulers(0, -1);
      expect(schedulers.map((x) => ({ key: x.key, pattern: x.pattern, data: x.template?.data }))).toEqual([
        { key: cronSchedulerId(cron), pattern: cron, data: { cron } },
      ]);
      expect(Date.now()).toBeLessThan(tickAt - 2_000);

      // a connection of its own, opened before the daemon: every other backend on this database is the daemon's
      watch = postgres(h.database.url, { max: 1, onnotice: () => {} });
      const [me] = await watch<{ pid: number }[]>`select pg_backend_pid() as pid`;
      const before = new Set(
        (await watch<{ pid: number }[]>`select pid from pg_stat_activity where datname = current_database()`).map(
          (r) => r.pid,
        ),
      );
      before.add(me!.pid);

      daemon = startCli(['daemon'], daemonEnv(), 'daemon');
      await daemon.waitForLog((l) => l.event === 'daemon.started', 30_000, 'daemon started');
      const startedBeforeTick = Date.now() < tickAt;

      let peakOpen = 0;
      let peakBusy = 0;
      let peakSyncing = 0;
      let peakLockWaits = 0;
      let samples = 0;
      let lockWaitSamples = 0;
      const done = await waitUntil(
        async () => {
          const activity = await watch!<{ pid: number; state: string | null; lockWait: boolean }[]>`
            select a.pid, a.state, a.wait_event_type = 'Lock' and a.wait_event = 'advisory' as "lockWait"
            from pg_stat_activity a where a.datname = current_database()`;
          // a running sync holds its source's lease (src/db/leases.ts), a row, for its whole run
          const [leases] = await watch!<
            { n: number }[]
          >`select count(*)::int as n from source_sync_leases where expires_at > clock_timestamp()`;
          const theirs = activity.filter((a) => !before.has(a.pid));
          peakOpen = Math.max(peakOpen, theirs.length);
          peakBusy = Math.max(peakBusy, theirs.filter((a) => a.state !== 'idle').length);
          peakSyncing = Math.max(peakSyncing, leases!.n);
          peakLockWaits = Math.max(peakLockWaits, theirs.filter((a) => a.lockWait).length);
          samples++;
          lockWaitSamples += theirs.filter((a) => a.lockWait).length;
          const [r] = await watch!<
            { n: number }[]
          >`select count(*)::int as n from sync_runs where finished_at is not null`;
          return r!.n >= SOURCES ? r!.n : undefined;
        },
        Math.max(0, tickAt - Date.now()) + JITTER_MS + 150_000,
        `${SOURCES} finished sync runs`,
        200,
      );
      expect(done).toBe(SOURCES);

      const runs = await sql<{ source_id: number; n: number; started: Date; finished: Date; outcomes: string[] }[]>`
        select source_id, count(*)::int as n, min(started_at) as started, max(finished_at) as finished, array_agg(outcome) as outcomes
        from sync_runs group by source_id order by source_id`;
      // exactly once each, and never an error
      expect(runs.map((r) => r.source_id)).toEqual(ids);
      expect(runs.filter((r) => r.n !== 1)).toEqual([]);
      const outcomes = new Map<string, number>();
      for (const r of runs) for (const o of r.outcomes) outcomes.set(o, (outcomes.get(o) ?? 0) + 1);
      expect([...outcomes.keys()].filter((o) => o !== 'submitted' && o !== 'up-to-date')).toEqual([]);

      // none before its offset in the window; late only by the queue (the workers were busy)
      const windowMs = jitterWindowMs(JITTER_MS, 24 * 3_600_000);
      const lateMs = runs
        .map((r) => r.started.getTime() - (tickAt + syncOffsetMs(r.source_id, windowMs)))
        .sort((a, b) => a - b);
      expect(lateMs[0]!).toBeGreaterThanOrEqual(-CLOCK_SLACK_MS);
      // spread: each tenth of the window saw syncs start, and no tenth more than a quarter of them
      const startsPerTenth = new Array<number>(10).fill(0);
      for (const r of runs) {
        const at = r.started.getTime() - tickAt;
        if (at < windowMs) startsPerTenth[Math.max(0, Math.floor(at / (windowMs / 10)))]!++;
      }
      const lastFinished = Math.max(...runs.map((r) => r.finished.getTime()));
      // one tick job for the 2 000 sources, which queued each one's sync
      const ticks = daemon.logs().filter((l) => l.event === 'schedule.tick_done');
      expect(
        ticks.map((l) => ({
          cron: l.cron,
          tickAt: l.tickAt,
          sources: l.sources,
          queued: l.queued,
          skipped: l.skipped,
        })),
      ).toEqual([{ cron, tickAt, sources: SOURCES, queued: SOURCES, skipped: 0 }]);
      const q = (p: number) => lateMs[Math.min(lateMs.length - 1, Math.floor(p * lateMs.length))]!;
      process.stdout.write(
        `many-sources: sources=${SOURCES} schedulers=${schedulers.length} schedulers_written_ms=${schedulersWrittenMs} ` +
          `daemon_up_before_tick=${startedBeforeTick} tick_job_ms=${ticks[0]!.ms as number} ` +
          `jitter_ms=${windowMs} tick_to_last_sync_ms=${lastFinished - tickAt} ` +
          `late_after_offset_ms_p50=${q(0.5)} p95=${q(0.95)} max=${lateMs[lateMs.length - 1]} ` +
          `starts_per_tenth=${startsPerTenth.join(',')} outcomes=${[...outcomes].map(([k, v]) => `${k}:${v}`).join(',')} ` +
          `pool_max=${POOL_NEEDED} peak_open=${peakOpen} peak_busy=${peakBusy} peak_syncing=${peakSyncing} ` +
          `peak_advisory_lock_waits=${peakLockWaits} mean_advisory_lock_waits=${(lockWaitSamples / Math.max(1, samples)).toFixed(1)}\n`,
      );

      expect(startsPerTenth.filter((n) => n === 0)).toEqual([]);
      expect(Math.max(...startsPerTenth)).toBeLessThanOrEqual(SOURCES / 4);

      // the daemon: no error of any kind, no tick skipped, no rate-limit pause, no pool or connection trouble
      const logs = daemon.logs();
      const errors = logs.filter((l) => l.level >= 50);
      expect(errors.map((l) => `${l.event ?? ''} ${l.msg}`)).toEqual([]);
      expect(
        logs.filter((l) => l.event === 'job.failed' || l.event === 'worker.error' || l.event === 'rate_limit.paused'),
      ).toEqual([]);
      expect(logs.filter((l) => l.event === 'schedule.tick_skipped' || l.event === 'schedule.sync_in_flight')).toEqual(
        [],
      );
      // its reconcile at start found the scheduler as written, and did not rewrite it
      expect(logs.filter((l) => l.event === 'reconcile.requeued' && l.schedulers !== 0)).toEqual([]);
      // postgres.js: a connection not made in time; Postgres: 53300 "sorry, too many clients already"
      expect(daemon.stderr()).not.toMatch(/CONNECT_TIMEOUT|"code":"53300"|too many clients/);
      expect(logs.filter((l) => l.level >= 40).map((l) => `${l.event ?? ''} ${l.msg}`)).toEqual([]);
      const stats = h.sim.stats();
      const throttled = Object.values(stats.byEndpoint).reduce((n, e) => n + (e.byStatus['429'] ?? 0), 0);
      expect(throttled).toBe(0);
      // one pool: never more than the plan's count
      expect(peakOpen).toBeLessThanOrEqual(POOL_NEEDED);
      expect(peakSyncing).toBeLessThanOrEqual(SCHEDULE_CONCURRENCY);

      daemon.kill('SIGTERM');
      expect((await daemon.exited).code).toBe(0);
    },
    TEST_MS,
  );
});
