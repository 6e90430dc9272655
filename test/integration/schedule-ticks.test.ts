/**
 * Cron ticks against the real queue, Postgres and the simulator: one job scheduler per cron
 * pattern (not per source), one sync at a time per source, a tick that finds its source's sync
 * still running is skipped and logged, and a slow source does not hold up another one on the
 * same cron. Source A's first listing is held 3.5 s by the simulator; both sources tick every
 * second. Their channels are empty, so a sync is the listing alone and no batch is ever in
 * flight (a sync of a source whose batches all are in flight would also answer `in-flight`).
 * The tests run in order on one queue, with the schedule workers of the first still running.
 */
import { Writable } from 'node:stream';
import type { Job } from 'bullmq';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { setSourcePaused } from '../../src/db/sources.ts';
import { createLogger } from '../../src/log.ts';
import { syncSchedulers, TICK_JOB_NAME, TICK_PRIORITY } from '../../src/pipeline/services/reconcile.ts';
import { registerSource } from '../../src/pipeline/commands/sources.ts';
import { queueCronTick } from '../../src/pipeline/services/cron-ticks.ts';
import { cronSchedulerId, scheduledSyncJobId } from '../../src/queues/names.ts';
import { createPipelineHarness, FAST_PIPELINE, type PipelineHarness } from '../helpers/pipeline.ts';
import { waitUntil, type LogLine } from '../helpers/proc.ts';

const EVERY_SECOND = '* * * * * *';
/** patterns that never fire while the tests run (January 1st) */
const NEW_YEAR = '0 0 3 1 1 *';
const NEW_YEAR_LATE = '0 0 4 1 1 *';
const SLOW_LISTING_MS = 3_500;

let h: PipelineHarness;
const lines: LogLine[] = [];

beforeAll(async () => {
  h = await createPipelineHarness('schedule-ticks', { catalog: { channels: 3, channelSizes: [0, 0, 0] } });
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l.startsWith('{')) lines.push(JSON.parse(l) as LogLine);
      done();
    },
  });
  h.deps.log = createLogger({ level: 'debug', destination: sink });
  // the default jitter (SCHEDULE_JITTER_MS), capped at half of the one-second period
  h.deps.settings = { ...FAST_PIPELINE };
});

afterAll(async () => {
  await h?.close();
});

it('a tick while its source still syncs is skipped and logged; one sync at a time; the other source keeps its ticks', async () => {
  const [a, b] = h.sim.catalog.channels();
  const slow = await registerSource(h.deps, {
    kind: 'channel',
    ref: a!.id,
    limit: 50,
    langs: [],
    textOnly: false,
    cron: EVERY_SECOND,
  });
  // the listing answer of whichever source lists first is held: make it A's by scripting before B exists
  h.sim.script([{ match: 'GET /videosite/channel/videos', delayMs: SLOW_LISTING_MS }]);
  expect(await syncSchedulers(h.deps)).toBe(1);
  h.startWorkers(['scheduler']);
  await waitUntil(
    async () => ((await runsOf(slow.id)).length > 0 ? true : undefined),
    10_000,
    "A's first sync to start",
    50,
  );
  const fast = await registerSource(h.deps, {
    kind: 'channel',
    ref: b!.id,
    limit: 50,
    langs: [],
    textOnly: false,
    cron: EVERY_SECOND,
  });
  // B joins the scheduler of its pattern, A's: nothing to write (its ticks read their sources
  // from Postgres), and the one scheduler is not rewritten (a daemon reconciles every minute)
  expect(await syncSchedulers(h.deps)).toBe(0);
  expect(await schedulers()).toEqual([
    { key: cronSchedulerId(EVERY_SECOND), pattern: EVERY_SECOND, data: { cron: EVERY_SECOND } },
  ]);

  // A's slow sync, then one more after it
  const runs = await waitUntil(
    async () => {
      const r = await runsOf(slow.id);
      return r.length >= 2 && r.every((x) => x.finished !== null) ? r : undefined;
    },
    20_000,
    "A's slow sync and the next one",
    100,
  );
  const first = runs[0]!;
  expect(first.finished!.getTime() - first.started.getTime()).toBeGreaterThanOrEqual(SLOW_LISTING_MS - 100);
  // one at a time: each run of A starts after the one before it finished
  for (let i = 1; i < runs.length; i++)
    expect(runs[i]!.started.getTime()).toBeGreaterThanOrEqual(runs[i - 1]!.finished!.getTime());

  // the ticks that came while A's sync ran were skipped, each logged with the sync they found
  const skipped = lines.filter((l) => l.event === 'schedule.tick_skipped' && l.sourceId === slow.id);
  expect(skipped.length).toBeGreaterThanOrEqual(2);
  expect(skipped.every((l) => l.pendingState === 'active')).toBe(true);
  const during = skipped.filter(
    (l) => (l.tickAt as number) > first.started.getTime() && (l.tickAt as number) < first.finished!.getTime(),
  );
  expect(during.length).toBeGreaterThanOrEqual(2);
  // no sync of A ran into its own lock: the queue never ran two at once
  expect(lines.filter((l) => l.event === 'schedule.sync_in_flight')).toEqual([]);

  // B was not held up by A: it synced on its ticks while A's sync ran
  const bRuns = (await runsOf(fast.id)).filter((r) => r.started < first.finished!);
  expect(bRuns.length).toBeGreaterThanOrEqual(1);
  // one line per tick of the pattern, counting both sources once B was registered
  expect(lines.some((l) => l.event === 'schedule.tick_done' && l.cron === EVERY_SECOND && l.sources === 2)).toBe(true);
  expect(lines.filter((l) => l.level >= 50)).toEqual([]);
});

it('a source paused after its pattern is scheduled is left out by the next ticks, with no Redis write', async () => {
  const fast = await sourceOn(1);
  const before = await schedulers();
  // Postgres only, no syncSchedulers: the ticks read their sources when they fire
  await setSourcePaused(h.deps.sql, fast, true);
  const pausedAt = Date.now();
  const ticks = await waitUntil(
    () => {
      const t = lines.filter(
        (l) => l.event === 'schedule.tick_done' && l.cron === EVERY_SECOND && (l.tickAt as number) > pausedAt,
      );
      return t.length >= 2 ? t : undefined;
    },
    10_000,
    'two ticks after the pause',
    50,
  );
  expect(ticks.map((l) => l.sources)).toEqual(ticks.map(() => 1));
  // no sync of B was queued for them (a finished sync's job stays in Redis for minutes)
  expect(
    lines.filter((l) => l.event === 'schedule.sync_queued' && l.sourceId === fast && (l.tickAt as number) > pausedAt),
  ).toEqual([]);
  for (const l of ticks)
    expect(await h.queues.schedule.getJob(scheduledSyncJobId(fast, l.tickAt as number))).toBeUndefined();
  // the scheduler is the same, and A still has it: nothing for a reconcile to write
  expect(await schedulers()).toEqual(before);
  expect(await syncSchedulers(h.deps)).toBe(0);
});

it('one scheduler per pattern: a second pattern gets its own; pausing every source of a pattern removes it', async () => {
  const { sql } = h.database;
  const [c, d] = await sql<{ id: number }[]>`
    insert into sources (kind, ref, external_id, max_videos, cron)
    values ('channel', 'UCnewyear1', 'UCnewyear1', 10, ${NEW_YEAR}), ('channel', 'UCnewyear2', 'UCnewyear2', 10, ${NEW_YEAR})
    returning id`;
  expect(await syncSchedulers(h.deps)).toBe(1);
  expect(await schedulers()).toEqual(
    [EVERY_SECOND, NEW_YEAR]
      .map((cron) => ({ key: cronSchedulerId(cron), pattern: cron, data: { cron } }))
      .sort((x, y) => x.key.localeCompare(y.key)),
  );
  // one of its sources paused: the pattern still has the other
  await setSourcePaused(h.deps.sql, c!.id, true);
  expect(await syncSchedulers(h.deps)).toBe(0);
  expect(await schedulers()).toHaveLength(2);
  // both paused: its scheduler goes; the other pattern's stays
  await setSourcePaused(h.deps.sql, d!.id, true);
  expect(await syncSchedulers(h.deps)).toBe(1);
  expect((await schedulers()).map((x) => x.key)).toEqual([cronSchedulerId(EVERY_SECOND)]);
});

it("upgrade: an older release's per-source scheduler still syncs its source, and reconcile replaces it with its pattern's", async () => {
  const [, , ch] = h.sim.catalog.channels();
  const e = await registerSource(h.deps, {
    kind: 'channel',
    ref: ch!.id,
    limit: 50,
    langs: [],
    textOnly: false,
    cron: NEW_YEAR_LATE,
  });
  // what a release with a scheduler per source left in Redis: its key and its ticks' payload
  const oldKey = `source.${e.id}`;
  await h.queues.schedule.upsertJobScheduler(
    oldKey,
    { pattern: EVERY_SECOND, tz: 'UTC' },
    { name: TICK_JOB_NAME, data: { sourceId: e.id, trigger: 'cron' }, opts: { priority: TICK_PRIORITY } },
  );
  // its tick fires and queues E's sync, which runs
  await waitUntil(
    async () => ((await runsOf(e.id)).some((r) => r.finished !== null) ? true : undefined),
    10_000,
    "E's sync from its old tick",
    50,
  );
  expect(lines.some((l) => l.event === 'schedule.sync_queued' && l.sourceId === e.id)).toBe(true);
  expect(lines.filter((l) => l.event === 'job.failed' || l.level >= 50)).toEqual([]);
  expect(await h.queues.schedule.getJobCounts('failed')).toEqual({ failed: 0 });

  // reconcile removes the old scheduler and schedules E's pattern
  expect(await syncSchedulers(h.deps)).toBe(2);
  expect((await schedulers()).map((x) => x.key).sort()).toEqual(
    [cronSchedulerId(EVERY_SECOND), cronSchedulerId(NEW_YEAR_LATE)].sort(),
  );
  expect(await syncSchedulers(h.deps)).toBe(0);
});

it('a tick run again after its syncs finished (a retry, a stalled worker) syncs no source twice', async () => {
  const e = (await h.database.sql<{ id: number }[]>`select id from sources where cron = ${NEW_YEAR_LATE}`)[0]!.id;
  // E's pattern never fires here: run its tick by hand, as a worker would, a jitter window late
  // so that E's sync is due at once
  const tickAt = Math.floor(Date.now() / 1000) * 1000 - h.deps.settings.scheduleJitterMs;
  const tick = {
    id: `repeat:${cronSchedulerId(NEW_YEAR_LATE)}:${tickAt}`,
    opts: {},
    timestamp: tickAt,
  } as unknown as Job;
  const before = (await runsOf(e)).length;
  expect(await queueCronTick(h.deps, tick, NEW_YEAR_LATE)).toEqual({
    cron: NEW_YEAR_LATE,
    tickAt,
    sources: 1,
    queued: 1,
    skipped: 0,
  });
  await waitUntil(
    async () => {
      const r = await runsOf(e);
      return r.length === before + 1 && r.every((x) => x.finished !== null) ? true : undefined;
    },
    10_000,
    "E's sync for the tick",
    50,
  );
  // again: the sync it stands for is found finished, nothing is added
  expect(await queueCronTick(h.deps, tick, NEW_YEAR_LATE)).toEqual({
    cron: NEW_YEAR_LATE,
    tickAt,
    sources: 1,
    queued: 1,
    skipped: 0,
  });
  await new Promise((r) => setTimeout(r, 1_500));
  expect(await runsOf(e)).toHaveLength(before + 1);
});

/** The job schedulers in Redis: key, pattern and what their ticks carry, by key. */
async function schedulers(): Promise<{ key: string; pattern: string | undefined | null; data: unknown }[]> {
  const all = await h.queues.schedule.getJobSchedulers(0, -1);
  return all
    .map((s) => ({ key: s.key, pattern: s.pattern, data: s.template?.data }))
    .sort((x, y) => x.key.localeCompare(y.key));
}

/** The ID of the source registered `n`th (0: A, 1: B). */
async function sourceOn(n: number): Promise<number> {
  const rows = await h.database.sql<{ id: number }[]>`select id from sources order by id`;
  return rows[n]!.id;
}

async function runsOf(sourceId: number): Promise<{ started: Date; finished: Date | null }[]> {
  return h.database.sql<{ started: Date; finished: Date | null }[]>`
    select started_at as started, finished_at as finished from sync_runs where source_id = ${sourceId} order by started_at`;
}
