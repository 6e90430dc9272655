/**
 * Scenario 23: the credits run out, then the billing period renews, and nobody touches the
 * pipeline. A scheduled sync is refused and a `credits` hold set (no paid call while it
 * stands, only the free `/me` re-checks); when the upstream shows credits again the daemon's
 * re-check (HOLD_RECHECK_MS) lifts the hold by itself, records it, and the next cron tick
 * syncs and lands what became due meanwhile. Three more syncs buy nothing twice.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { settle } from '../helpers/fault-checks.ts';
import { countOf, figures, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { moreSyncs, postsPerVideoMax } from '../helpers/posts.ts';
import { waitUntil, type CliProcess } from '../helpers/proc.ts';

/** Six fields: a tick every second (BullMQ's cron parser takes seconds). */
const EVERY_SECOND = '* * * * * *';
const HOLD_RECHECK_MS = 1000;
/** Watched while the hold stands: several ticks and re-checks. */
const HELD_WINDOW_MS = 3_000;

let rig: FaultRig;
let daemon: CliProcess;
let sourceId: number;
let channelId: string;

beforeAll(async () => {
  rig = await startFaultRig('23-billing-renewal', {
    sim: { catalog: { channels: 1, channelSizes: [20], privateShare: 0, goneShare: 0 } },
  });
  channelId = rig.sim.catalog.channels()[0]!.id;
  sourceId = (await rig.addSource({ ref: channelId, cron: EVERY_SECOND })).id;
  daemon = rig.cli(['daemon'], { HOLD_RECHECK_MS: String(HOLD_RECHECK_MS) }, 'daemon');
  await daemon.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
  // the first scheduled sync buys the catalog; later ticks list and find nothing due
  await settle(rig, [sourceId], 60_000);
});
afterAll(async () => {
  await rig?.close();
});

const storedVideos = () => countOf(rig.db().sql`select count(*)::int as n from videos`);
const callsBy = () => structuredClone(rig.sim.stats().byEndpoint);

it('23 credits used up, then the billing period renews: the hold lifts by itself and the next tick lands', async () => {
  const { sql } = rig.db();
  const before = await storedVideos();
  const limitExceeded = () =>
    Object.values(rig.sim.stats().byEndpoint).reduce((n, e) => n + (e.byStatus['429'] ?? 0), 0);
  const refusedBefore = limitExceeded();

  // the account's credits are used up; new videos are due meanwhile
  const account = rig.sim.getAccount(rig.sim.apiKey)!;
  rig.sim.setAccount(rig.sim.apiKey, { usedCredits: account.maxCredits });
  const added = rig.sim.catalog.addVideos(channelId, 5)!;
  await waitUntil(
    async () => {
      const [h] = await sql<{ code: string }[]>`select code from upstream_holds`;
      return h?.code;
    },
    30_000,
    'a hold after the refusal',
  );
  // the hold is written before the refused sync records its run: wait for both
  const refusedRunsNow = () =>
    countOf(
      sql`select count(*)::int as n from sync_runs where source_id = ${sourceId} and outcome in ('refused-credits', 'refused-upstream')`,
    );
  await waitUntil(
    async () => ((await refusedRunsNow()) >= 1 ? true : undefined),
    15_000,
    'the refused sync run recorded',
  ).catch(() => undefined);
  const held = await sql<{ code: string; scope: string }[]>`select code, scope from upstream_holds`;
  const refusedRuns = await refusedRunsNow();
  const status = JSON.parse((await rig.run(['status', '--json'])).stdout) as { upstreamHolds: { code: string }[] };

  // while it stands: ticks make no call; the re-checks ask /me (free), nothing else
  const at = callsBy();
  await new Promise((r) => setTimeout(r, HELD_WINDOW_MS));
  const delta = Object.entries(callsBy()).map(([e, s]) => [e, s.total - (at[e]?.total ?? 0)] as const);
  const paidCallsWhileHeld = delta.filter(([e]) => !e.endsWith(' /me')).reduce((n, [, d]) => n + d, 0);
  const meWhileHeld = delta.filter(([e]) => e.endsWith(' /me')).reduce((n, [, d]) => n + d, 0);
  const storedWhileHeld = await storedVideos();

  // the billing period renews upstream; nobody touches the pipeline
  const renewedAt = Date.now();
  rig.sim.setAccount(rig.sim.apiKey, { usedCredits: 0 });
  await waitUntil(
    async () => ((await countOf(sql`select count(*)::int as n from upstream_holds`)) === 0 ? true : undefined),
    15_000,
    'the hold to lift',
  );
  const liftMs = Date.now() - renewedAt;
  const events = await sql<{ code: string; event: string; reason: string | null }[]>`
    select code, event, reason from upstream_hold_events order by id`;
  const liftedLog = await daemon.waitForLog((l) => l.event === 'hold.recheck_cleared', 5_000, 'the lift logged');
  await waitUntil(
    async () => ((await storedVideos()) === before + added.length ? true : undefined),
    30_000,
    'the next tick to land the new videos',
  );
  const landMs = Date.now() - renewedAt;
  await settle(rig, [sourceId], 30_000);
  const [src] = await sql<
    { last_error_code: string | null }[]
  >`select last_error_code from sources where id = ${sourceId}`;
  const statusAfter = JSON.parse((await rig.run(['status', '--json'])).stdout) as {
    upstreamHolds: unknown[];
    holdEvents: { code: string; event: string }[];
  };

  const syncs = await moreSyncs(rig, [sourceId]);
  const max = postsPerVideoMax(rig.sim);
  daemon.kill('SIGTERM');
  const end = await daemon.exited;

  figures('23 billing-renewal', {
    refused_429s: limitExceeded() - refusedBefore,
    refused_syncs: refusedRuns,
    hold: held[0]?.code ?? 'none',
    paid_calls_while_held: paidCallsWhileHeld,
    me_rechecks_while_held: meWhileHeld,
    lift_s: liftMs / 1000,
    landed_after_renewal_s: landMs / 1000,
    new_videos_stored: (await storedVideos()) - before,
    posts_per_video_max: max,
  });
  expect(held).toEqual([{ code: 'credits', scope: 'submit' }]);
  expect(refusedRuns).toBeGreaterThanOrEqual(1);
  expect(status.upstreamHolds.map((h) => h.code)).toEqual(['credits']);
  expect(paidCallsWhileHeld).toBe(0);
  // the daemon keeps looking by itself (about one /me a second)
  expect(meWhileHeld).toBeGreaterThanOrEqual(2);
  expect(storedWhileHeld).toBe(before);
  // lifted by the re-check, within a few re-check intervals, and recorded
  expect(liftMs).toBeLessThan(5 * HOLD_RECHECK_MS);
  expect(events.map((e) => [e.code, e.event])).toEqual([
    ['credits', 'set'],
    ['credits', 'lifted'],
  ]);
  expect(events[1]!.reason).toMatch(/recheck/);
  expect(liftedLog.cleared).toEqual(['credits']);
  expect(statusAfter.upstreamHolds).toEqual([]);
  expect(statusAfter.holdEvents.map((e) => e.event)).toEqual(['lifted', 'set']);
  // the schedule resumed by itself: the new videos landed without a backfill
  expect(landMs).toBeLessThan(15_000);
  expect(src!.last_error_code).toBeNull();
  expect(syncs).toEqual([0, 0, 0]);
  expect(await storedVideos()).toBe(before + added.length);
  expect(max).toBe(1);
  expect(end.code).toBe(0);
});
