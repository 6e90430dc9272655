/**
 * A backfill syncs its sources side by side (issue #4: one by one, 20 sources spent ~9 s just
 * submitting). Together they must still keep to the credit budget: each sync's guard counts
 * what the others have reserved and not yet shown in `/me`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKFILL_SYNC_CONCURRENCY, runBackfill } from '../../src/pipeline/commands/backfill.ts';
import { registerSource } from '../../src/pipeline/commands/sources.ts';
import { createPipelineHarness, type PipelineHarness } from '../helpers/pipeline.ts';

let h: PipelineHarness;
const VIDEOS = 30;
/** channels of the budget test; the two after them are the slow-POST test's */
const CHANNELS = 6;

beforeAll(async () => {
  // a little latency, so the syncs really overlap while they wait on the API
  h = await createPipelineHarness('backfill_side_by_side', {
    latencyMs: 50,
    catalog: { channels: CHANNELS + 2, channelSizes: Array<number>(CHANNELS + 2).fill(VIDEOS) },
  });
});

afterAll(async () => {
  await h?.close();
});

describe('backfill of many sources', () => {
  it('syncs them side by side, spending no more than the budget allows, and reports them in order', async () => {
    expect(BACKFILL_SYNC_CONCURRENCY).toBeGreaterThan(1);
    const ids: number[] = [];
    for (const ch of h.sim.catalog.channels().slice(0, CHANNELS)) {
      const s = await registerSource(h.deps, {
        kind: 'channel',
        ref: ch.id,
        limit: VIDEOS,
        langs: ['en'],
        textOnly: false,
        cron: null,
      });
      ids.push(s.id);
    }
    // a first sync costs its listing, then a metadata and a transcript batch: 2 x (1 + VIDEOS). Room for 1 of 6:
    // the syncs that run together read /me at about the same time, and each sees room for itself
    const perSource = 2 * (1 + VIDEOS);
    const before = (await h.api.me()).usedCredits;
    h.sim.setAccount(h.sim.apiKey, { maxCredits: before + perSource + perSource / 2 });
    try {
      const report = await runBackfill(h.deps, { sourceIds: ids, wait: false });
      expect(report.syncs.map((s) => s.sourceId)).toEqual(ids);
      const submitted = report.syncs.filter((s) => s.outcome === 'submitted');
      const refused = report.syncs.filter((s) => s.outcome === 'refused-credits');
      expect(submitted).toHaveLength(1);
      expect(refused).toHaveLength(5);
      expect(report.syncErrors).toEqual([]);
      const me = await h.api.me();
      // the listings the guard let through (a listing is reserved like a batch, so one may be
      // refused too) and one pair of batches
      expect(me.usedCredits - before).toBe(perSource + report.syncs.reduce((n, s) => n + s.listingCredits, 0));
      expect(me.usedCredits).toBeLessThanOrEqual(me.maxCredits);
      expect(report.exitCode).toBe(3);
    } finally {
      h.sim.setAccount(h.sim.apiKey, { maxCredits: 1_000_000 });
    }
  });
});

describe('side by side with slow POSTs', () => {
  it('never waits on its own connection pool: a POST holds no connection, and each sync needs at most two', async () => {
    // Two syncs at once on a pool of 4 (the harness's), each POST answered after 1.5 s: a sync
    // that held a transaction across its POST and then asked the pool for another connection
    // would leave both syncs waiting on each other until the test's timeout.
    expect(h.database.sql.options.max).toBe(4);
    // two sources of its own: nothing of theirs in flight, everything still due
    const ids: number[] = [];
    for (const ch of h.sim.catalog.channels().slice(CHANNELS)) {
      const s = await registerSource(h.deps, {
        kind: 'channel',
        ref: ch.id,
        limit: VIDEOS,
        langs: ['en'],
        textOnly: false,
        cron: null,
      });
      ids.push(s.id);
    }
    expect(ids).toHaveLength(2);
    h.sim.script([
      { match: 'POST /videosite/video/batch', process: true, delayMs: 1_500 },
      { match: 'POST /videosite/video/batch', process: true, delayMs: 1_500 },
    ]);
    const started = Date.now();
    // submitted only: this file runs no poller, and the property is about submitting
    const report = await runBackfill(h.deps, { sourceIds: ids, wait: false });
    expect(report.syncErrors).toEqual([]);
    expect(report.syncs.map((s) => s.outcome)).toEqual(['submitted', 'submitted']);
    expect(Date.now() - started).toBeLessThan(20_000);
    // and each video was bought once
    for (const byVideo of Object.values(h.sim.stats().postsByVideo)) {
      expect(Math.max(...Object.values(byVideo))).toBe(1);
    }
  });
});
