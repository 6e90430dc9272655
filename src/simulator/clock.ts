/**
 * The simulator's notion of time. Job lifecycles, expiry, retention and rate limits all read
 * this clock, so tests reach an hour-long expiry by advancing it instead of sleeping.
 *
 * Simulated time = the simulated instant at the last anchor + (real time since the anchor) x
 * speed. Changing the speed re-anchors first, so time never jumps backwards.
 */

export interface Clock {
  /** simulated epoch milliseconds */
  now(): number;
  /** jump forward by `ms` simulated milliseconds (negative values are refused) */
  advance(ms: number): void;
  /** run `factor` simulated milliseconds per real millisecond (0 freezes time) */
  setSpeed(factor: number): void;
  /** the current speed factor */
  speed(): number;
}

export interface ClockOptions {
  /** simulated epoch ms at start; default: the real time at start */
  startMs?: number;
  /** simulated ms per real ms; default 1 */
  speed?: number;
  /** the real time source (ms); default `Date.now` */
  realNow?: () => number;
}

export function createClock(opts: ClockOptions = {}): Clock {
  const realNow = opts.realNow ?? Date.now;
  let anchorReal = realNow();
  let anchorSim = opts.startMs ?? anchorReal;
  let factor = checkSpeed(opts.speed ?? 1);

  const now = (): number => Math.floor(anchorSim + (realNow() - anchorReal) * factor);
  return {
    now,
    advance(ms: number) {
      if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`clock advance must be >= 0 ms, got ${ms}`);
      anchorSim = now() + ms;
      anchorReal = realNow();
    },
    setSpeed(f: number) {
      const checked = checkSpeed(f);
      anchorSim = now();
      anchorReal = realNow();
      factor = checked;
    },
    speed: () => factor,
  };
}

function checkSpeed(f: number): number {
  if (!Number.isFinite(f) || f < 0) throw new RangeError(`clock speed must be a finite number >= 0, got ${f}`);
  return f;
}
