import { describe, expect, it } from 'vitest';
import {
  dueAgainNow,
  planNextPollMs,
  POLL_ETA_MARGIN_MS,
  POLL_LAND_MARGIN_MS,
  type PollProgress,
} from '../../src/pipeline/ingest/poll-batch.ts';

const settings = { pollMinDelayMs: 1_000, pollMaxDelayMs: 60_000, pollLandWithinMs: 10_000 };

function progress(p: Partial<PollProgress>): PollProgress {
  return {
    status: 'active',
    total: 5000,
    finished: 0,
    finishedBefore: 0,
    sinceBeforeMs: 0,
    sinceAnswerMs: 0,
    pollMs: 0,
    ...p,
  };
}

describe('planNextPollMs', () => {
  it('backs off, doubling, while a batch has not started', () => {
    expect(planNextPollMs(2_000, progress({ status: 'queued' }), settings)).toBe(4_000);
    expect(planNextPollMs(40_000, progress({ status: 'queued' }), settings)).toBe(60_000);
  });

  it('comes back when the rate of finishing says the batch will be complete', () => {
    // 1000 of 5000 done in 5 s: 200 items/s, 4000 left = 20 s; but that is past the land budget
    const far = planNextPollMs(2_000, progress({ finished: 1000, sinceBeforeMs: 5_000, pollMs: 200 }), settings);
    expect(far).toBe(5_000 - 200 - POLL_LAND_MARGIN_MS);
    // 4900 done, 200/s: the last 100 take 0.5 s, of which the reading took 300 ms
    const near = planNextPollMs(
      2_000,
      progress({ finished: 4900, finishedBefore: 3900, sinceBeforeMs: 5_000, sinceAnswerMs: 300, pollMs: 400 }),
      settings,
    );
    expect(near).toBe(Math.max(settings.pollMinDelayMs, 500 - 300 + POLL_ETA_MARGIN_MS));
    const nearSlow = planNextPollMs(
      2_000,
      progress({ total: 250, finished: 100, finishedBefore: 0, sinceBeforeMs: 2_000, sinceAnswerMs: 100, pollMs: 150 }),
      settings,
    );
    // 50 items/s, 150 left: 3 s from the answer
    expect(nearSlow).toBe(3_000 - 100 + POLL_ETA_MARGIN_MS);
  });

  it('keeps a finished item from waiting longer than the land-within budget, however slow the batch', () => {
    // 10 items/s with 4000 left would mean 400 s: half the budget minus this poll
    const quick = planNextPollMs(
      30_000,
      progress({ finished: 1000, finishedBefore: 900, sinceBeforeMs: 10_000, pollMs: 500 }),
      settings,
    );
    expect(quick).toBe(5_000 - 500 - POLL_LAND_MARGIN_MS);
    // a long poll: what is left after three of them
    const slow = planNextPollMs(
      30_000,
      progress({ finished: 1000, finishedBefore: 900, sinceBeforeMs: 10_000, pollMs: 3_000 }),
      settings,
    );
    expect(slow).toBe(Math.max(1_000, 10_000 - 9_000 - POLL_LAND_MARGIN_MS));
    // a poll that takes longer than the budget: poll again as soon as allowed
    expect(
      planNextPollMs(
        30_000,
        progress({ finished: 1000, finishedBefore: 900, sinceBeforeMs: 10_000, pollMs: 4_000 }),
        settings,
      ),
    ).toBe(1_000);
  });

  it('backs off within the budget while a running batch shows no progress', () => {
    expect(
      planNextPollMs(
        2_000,
        progress({ finished: 1000, finishedBefore: 1000, sinceBeforeMs: 4_000, pollMs: 100 }),
        settings,
      ),
    ).toBe(4_000);
    expect(
      planNextPollMs(
        8_000,
        progress({ finished: 1000, finishedBefore: 1000, sinceBeforeMs: 4_000, pollMs: 100 }),
        settings,
      ),
    ).toBe(5_000 - 100 - POLL_LAND_MARGIN_MS);
  });

  it('stays within the configured bounds', () => {
    const tight = { pollMinDelayMs: 50, pollMaxDelayMs: 400, pollLandWithinMs: 10_000 };
    expect(planNextPollMs(100, progress({ finished: 10, sinceBeforeMs: 100_000 }), tight)).toBe(400);
    // 999 items/s, 1 left: a millisecond, plus the margin
    expect(planNextPollMs(100, progress({ finished: 4999, finishedBefore: 4000, sinceBeforeMs: 1_000 }), tight)).toBe(
      Math.round(1_000 / 999 + POLL_ETA_MARGIN_MS),
    );
  });
});

describe('dueAgainNow', () => {
  it('reads again at once a batch that should have completed while this poll landed its items', () => {
    // 230 of 250 finished in 2 s: the last 20 take ~0.17 s; landing the 230 took 4.3 s
    const late = progress({ total: 250, finished: 230, sinceBeforeMs: 2_000, sinceAnswerMs: 4_300, pollMs: 4_400 });
    expect(dueAgainNow(late, settings)).toBe(true);
    // the same answer landed quickly: the delay (at least pollMinDelayMs) comes first
    expect(dueAgainNow({ ...late, sinceAnswerMs: 600, pollMs: 700 }, settings)).toBe(false);
  });

  it('not while the rest is still expected to take longer than the poll took', () => {
    // 1000 of 5000 in 5 s: 20 s left, the poll took 3 s
    expect(
      dueAgainNow(progress({ finished: 1000, sinceBeforeMs: 5_000, sinceAnswerMs: 3_000, pollMs: 3_100 }), settings),
    ).toBe(false);
    // 4990 of 5000 at 200/s: 50 ms left, plus the margin, within the 1.2 s the poll took
    expect(
      dueAgainNow(
        progress({ finished: 4990, finishedBefore: 3990, sinceBeforeMs: 5_000, sinceAnswerMs: 1_200 }),
        settings,
      ),
    ).toBe(true);
  });

  it('not for a batch that shows no progress, nor one not running', () => {
    expect(
      dueAgainNow(
        progress({ total: 250, finished: 249, finishedBefore: 249, sinceBeforeMs: 2_000, sinceAnswerMs: 5_000 }),
        settings,
      ),
    ).toBe(false);
    expect(
      dueAgainNow(progress({ status: 'queued', total: 250, sinceBeforeMs: 2_000, sinceAnswerMs: 5_000 }), settings),
    ).toBe(false);
  });
});
