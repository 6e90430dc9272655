import { describe, expect, it } from 'vitest';
import { finishTimeMs, landingLag } from '../../bench/lag.ts';
import type { LogLine } from '../../bench/procs.ts';

describe('benchmark landing lag', () => {
  // 1000 items at 100 items/s: started at t = 10 000, completed at t = 20 000
  const batch = { jobId: 'b', total: 1000, completedAtMs: 20_000 };

  it('knows when each item finished upstream', () => {
    expect(finishTimeMs(batch, 100, 0)).toBe(10_010);
    expect(finishTimeMs(batch, 100, 999)).toBe(20_000);
  });

  it('takes, per poll, the wait of the earliest item that poll recorded', () => {
    const polls: LogLine[] = [
      { time: 12_500, event: 'poll.landed', msg: 'batch polled', jobId: 'b', finished: 200 }, // items 0..199: item 0 done at 10 010
      { time: 21_000, event: 'poll.landed', msg: 'batch polled', jobId: 'b', finished: 1000 }, // items 200..999: item 200 done at 12 010
      { time: 30_000, event: 'poll.landed', msg: 'batch polled', jobId: 'other', finished: 5 },
      { time: 9_000, event: 'sink.done', msg: 'batch sunk', jobId: 'b' },
    ];
    const r = landingLag([batch], polls, 100);
    expect(r.maxLagMs).toBe(21_000 - 12_010);
    expect(r.worstJobId).toBe('b');
    expect(r.unmeasured).toBe(0);
  });

  it('says so when a batch has no poll lines to measure', () => {
    expect(landingLag([batch], [], 100)).toEqual({ maxLagMs: undefined, worstJobId: undefined, unmeasured: 1 });
  });

  it('reads the poll.landed event, not the message text', () => {
    // the same line without its event (an older log, a reworded one) does not count
    const unnamed: LogLine[] = [{ time: 12_500, msg: 'batch polled', jobId: 'b', finished: 200 }];
    expect(landingLag([batch], unnamed, 100)).toEqual({ maxLagMs: undefined, worstJobId: undefined, unmeasured: 1 });
    const reworded: LogLine[] = [
      { time: 12_500, event: 'poll.landed', msg: 'a batch answer was read', jobId: 'b', finished: 200 },
    ];
    expect(landingLag([batch], reworded, 100)).toEqual({ maxLagMs: 12_500 - 10_010, worstJobId: 'b', unmeasured: 0 });
  });
});
