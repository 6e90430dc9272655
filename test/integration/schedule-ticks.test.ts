/**
 * Cron ticks against the real queue, Postgres and the simulator: one sync at a time per source,
 * a tick that finds its source's sync still running is skipped and logged, and a slow source
 * does not hold up another one on the same cron. Source A's first listing is held 3.5 s by the
 * simulator; both sources tick every second. Their channels are empty, so a sync is the listing
 * alone and no batch is ever in flight (a sync of a source whose batches all are in flight
 * would also answer `in-flight`).
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLogger } from '../../src/log.ts';
import { syncSchedulers } from '../../src/pipeline/reconcile.ts';
import { registerSource } from '../../src/pipeline/sources.ts';
import { createPipelineHarness, FAST_PIPELINE, type PipelineHarness } from '../helpers/pipeline.ts';
import { waitUntil, type LogLine } from '../helpers/proc.ts';

const EVERY_SECOND = '* * * * * *';
const SLOW_LISTING_MS = 3_500;

let h: PipelineHarness;
const lines: LogLine[] = [];

beforeAll(async () => {
  h = await createPipelineHarness('schedule-ticks', { catalog: { channels: 2, channelSizes: [0, 0] } });
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
  const slow = await registerSource(h.deps, { kind: 'channel', ref: a!.id, limit: 50, langs: [], textOnly: false, cron: EVERY_SECOND });
  // the listing answer of whichever source lists first is held: make it A's by scripting before B exists
  h.sim.script([{ match: 'GET /videosite/channel/videos', delayMs: SLOW_LISTING_MS }]);
  await syncSchedulers(h.deps);
  h.startWorkers(['scheduler']);
  await waitUntil(async () => ((await runsOf(slow.id)).length > 0 ? true : undefined), 10_000, "A's first sync to start", 50);
  const fast = await registerSource(h.deps, { kind: 'channel', ref: b!.id, limit: 50, langs: [], textOnly: false, cron: EVERY_SECOND });
  // only B's scheduler is new: A's, unchanged, is not rewritten (a daemon reconciles every minute)
  expect(await syncSchedulers(h.deps)).toBe(1);

  // A's slow sync, then one more after it
  const runs = await waitUntil(async () => {
    const r = await runsOf(slow.id);
    return r.length >= 2 && r.every((x) => x.finished !== null) ? r : undefined;
  }, 20_000, "A's slow sync and the next one", 100);
  const first = runs[0]!;
  expect(first.finished!.getTime() - first.started.getTime()).toBeGreaterThanOrEqual(SLOW_LISTING_MS - 100);
  // one at a time: each run of A starts after the one before it finished
  for (let i = 1; i < runs.length; i++) expect(runs[i]!.started.getTime()).toBeGreaterThanOrEqual(runs[i - 1]!.finished!.getTime());

  // the ticks that came while A's sync ran were skipped, each logged with the sync they found
  const skipped = lines.filter((l) => l.event === 'schedule.tick_skipped' && l.sourceId === slow.id);
  expect(skipped.length).toBeGreaterThanOrEqual(2);
  expect(skipped.every((l) => l.pendingState === 'active')).toBe(true);
  const during = skipped.filter((l) => (l.tickAt as number) > first.started.getTime() && (l.tickAt as number) < first.finished!.getTime());
  expect(during.length).toBeGreaterThanOrEqual(2);
  // no sync of A ran into its own lock: the queue never ran two at once
  expect(lines.filter((l) => l.event === 'schedule.sync_in_flight')).toEqual([]);

  // B was not held up by A: it synced on its ticks while A's sync ran
  const bRuns = (await runsOf(fast.id)).filter((r) => r.started < first.finished!);
  expect(bRuns.length).toBeGreaterThanOrEqual(1);
  expect(lines.filter((l) => l.level >= 50)).toEqual([]);
});

async function runsOf(sourceId: number): Promise<{ started: Date; finished: Date | null }[]> {
  return h.database.sql<{ started: Date; finished: Date | null }[]>`
    select started_at as started, finished_at as finished from sync_runs where source_id = ${sourceId} order by started_at`;
}
