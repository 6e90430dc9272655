/**
 * Two startup-and-schedule rules of src/domain/: whether DATABASE_POOL_MAX covers what the
 * concurrency settings may hold at once (connections.ts), and when a cron-fired sync starts
 * (schedule.ts). Pure functions.
 */
import { describe, expect, it } from 'vitest';
import {
  ADMIN_CONNECTIONS,
  backfillPoolPlan,
  checkPool,
  daemonPoolPlan,
  poolDemand,
  type DaemonPoolInput,
} from '../../src/domain/connections.ts';
import { jitterWindowMs, syncOffsetMs } from '../../src/domain/schedule.ts';
import { DATABASE_POOL_MAX, loadConfig } from '../../src/config.ts';
import { syncConcurrency } from '../../src/pipeline/commands/backfill.ts';

const ALL_ROLES = { scheduler: true, poller: true, sink: true };
const daemon = (d: Partial<DaemonPoolInput> = {}) =>
  daemonPoolPlan({
    scheduleConcurrency: 2,
    pollConcurrency: 4,
    sinkConcurrency: 2,
    roles: ALL_ROLES,
    admin: false,
    ...d,
  });

describe('DATABASE_POOL_MAX against the concurrency settings', () => {
  it('counts a sync at two connections (its session lock and a statement), a poll and a sink at one, and the background work', () => {
    // 2 syncs × 2 + 4 polls + 2 sinks + reconcile, daily prune, hold re-check, search indexer
    expect(poolDemand(daemon())).toBe(14);
    expect(poolDemand(daemon({ admin: true }))).toBe(14 + ADMIN_CONNECTIONS);
    // only the roles it runs; a sink-only daemon makes no API call, so no hold re-check, but it
    // runs the search indexer
    expect(poolDemand(daemon({ roles: { scheduler: false, poller: false, sink: true } }))).toBe(2 + 2 + 1);
    expect(
      poolDemand(daemon({ scheduleConcurrency: 10, roles: { scheduler: true, poller: false, sink: false } })),
    ).toBe(20 + 3);
  });

  it('the defaults fit the default pool, for the daemon with an admin server and for backfill', () => {
    const p = loadConfig({}).pipeline;
    const input = {
      scheduleConcurrency: p.scheduleConcurrency,
      pollConcurrency: p.pollConcurrency,
      sinkConcurrency: p.sinkConcurrency,
    };
    expect(checkPool(DATABASE_POOL_MAX, () => daemon({ ...input, admin: true })).fits).toBe(true);
    const backfill = (pool: number) => backfillPoolPlan({ ...input, syncs: syncConcurrency(pool), wait: true });
    expect(checkPool(DATABASE_POOL_MAX, backfill).fits).toBe(true);
  });

  it('a pool too small names DATABASE_POOL_MAX and every concurrency setting with its value, and two combinations that fit', () => {
    const v = checkPool(10, () => daemon());
    expect(v.fits).toBe(false);
    if (v.fits) return;
    expect(v.demand).toBe(14);
    expect(v.message).toContain('10 connections per pool are too few');
    expect(v.message).toContain('SCHEDULE_CONCURRENCY=2 POLL_CONCURRENCY=4 SINK_CONCURRENCY=2 may hold 14 at once');
    expect(v.message).toContain(
      'Valid: DATABASE_POOL_MAX=14 with SCHEDULE_CONCURRENCY=2 POLL_CONCURRENCY=4 SINK_CONCURRENCY=2',
    );
    // lowered one step at a time, the biggest holder first, until it fits the pool as it is
    expect(v.lowered).toEqual({ SCHEDULE_CONCURRENCY: 1, POLL_CONCURRENCY: 2, SINK_CONCURRENCY: 2 });
    expect(v.message).toContain(
      'or DATABASE_POOL_MAX=10 with SCHEDULE_CONCURRENCY=1 POLL_CONCURRENCY=2 SINK_CONCURRENCY=2',
    );
    // both suggestions really fit
    expect(checkPool(14, () => daemon()).fits).toBe(true);
    expect(checkPool(10, () => daemon({ scheduleConcurrency: 1, pollConcurrency: 2, sinkConcurrency: 2 })).fits).toBe(
      true,
    );
  });

  it('suggests only a bigger pool when even one job of each kind does not fit', () => {
    const v = checkPool(8, () => daemon({ admin: true }));
    expect(v.fits).toBe(false);
    if (v.fits) return;
    expect(v.lowered).toBeUndefined();
    expect(v.message).toContain('Valid: DATABASE_POOL_MAX=22 with');
    expect(v.message).not.toContain(', or DATABASE_POOL_MAX=8');
  });

  it('every suggestion fits, over a grid of settings and pools', () => {
    for (const pool of [1, 3, 5, 8, 13, 24])
      for (const s of [1, 3, 8])
        for (const p of [1, 4, 16])
          for (const k of [1, 2, 9]) {
            const planFor = () => daemon({ scheduleConcurrency: s, pollConcurrency: p, sinkConcurrency: k });
            const v = checkPool(pool, planFor);
            expect(v.fits).toBe(poolDemand(planFor()) <= pool);
            if (v.fits) continue;
            const bigger = Number(/Valid: DATABASE_POOL_MAX=(\d+)/.exec(v.message)![1]);
            expect(checkPool(bigger, planFor).fits).toBe(true);
            if (v.lowered) {
              const l = v.lowered;
              const lowered = () =>
                daemon({
                  scheduleConcurrency: l.SCHEDULE_CONCURRENCY!,
                  pollConcurrency: l.POLL_CONCURRENCY!,
                  sinkConcurrency: l.SINK_CONCURRENCY!,
                });
              expect(checkPool(pool, lowered).fits).toBe(true);
            }
          }
  });

  it('backfill: its syncs side by side grow with the pool, so the pool it suggests fits with the syncs that pool brings', () => {
    const planFor = (pool: number) =>
      backfillPoolPlan({ pollConcurrency: 1, sinkConcurrency: 1, syncs: syncConcurrency(pool), wait: true });
    const v = checkPool(4, planFor);
    expect(v.fits).toBe(false);
    if (v.fits) return;
    // 4 connections: 2 syncs × 2 + 1 poll + 1 sink + progress + search indexer = 8; but a pool
    // of 8 runs 3 syncs (10), one of 10 runs 4 (12), and 12 is enough: the cap of 4 syncs is reached
    expect(v.demand).toBe(8);
    const bigger = Number(/Valid: DATABASE_POOL_MAX=(\d+)/.exec(v.message)![1]);
    expect(bigger).toBe(12);
    expect(checkPool(bigger, planFor).fits).toBe(true);
    // without --wait it runs no workers: only its syncs and the progress read
    expect(poolDemand(backfillPoolPlan({ pollConcurrency: 50, sinkConcurrency: 50, syncs: 4, wait: false }))).toBe(9);
  });
});

describe('when a cron-fired sync starts', () => {
  it('the window is SCHEDULE_JITTER_MS, at most a quarter of the time to the next tick', () => {
    expect(jitterWindowMs(60_000, 3_600_000)).toBe(60_000);
    expect(jitterWindowMs(60_000, 240_000)).toBe(60_000);
    expect(jitterWindowMs(60_000, 60_000)).toBe(15_000);
    expect(jitterWindowMs(60_000, 1_000)).toBe(250);
    expect(jitterWindowMs(60_000, undefined)).toBe(60_000);
    expect(jitterWindowMs(0, 3_600_000)).toBe(0);
  });

  it('each source has a fixed offset inside the window, the same at every tick', () => {
    for (const id of [1, 2, 3, 1_000, 2_147_483_647]) {
      const o = syncOffsetMs(id, 60_000);
      expect(o).toBeGreaterThanOrEqual(0);
      expect(o).toBeLessThan(60_000);
      expect(syncOffsetMs(id, 60_000)).toBe(o);
    }
    expect(syncOffsetMs(7, 0)).toBe(0);
  });

  it('2 000 sources registered one after the other spread evenly: every tenth of the window gets 200 ± 2', () => {
    const windowMs = 10_000;
    const perTenth = new Array<number>(10).fill(0);
    let largestGap = 0;
    const offsets = Array.from({ length: 2_000 }, (_, i) => syncOffsetMs(i + 1, windowMs)).sort((a, b) => a - b);
    for (const o of offsets) perTenth[Math.floor(o / (windowMs / 10))]!++;
    for (let i = 1; i < offsets.length; i++) largestGap = Math.max(largestGap, offsets[i]! - offsets[i - 1]!);
    for (const n of perTenth) expect(Math.abs(n - 200)).toBeLessThanOrEqual(2);
    // at most 2 / n of the window between two starts (a random draw leaves gaps ~8x the mean)
    expect(largestGap).toBeLessThanOrEqual((2 * windowMs) / 2_000);
  });
});
