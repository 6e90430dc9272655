/**
 * What a user paid for, per video, as the simulator saw it: every batch POST that named a video,
 * whatever its answer. A fault scenario proves "no credit spent twice" with these, after running
 * more syncs than the fault needed (a bug that re-buys shows on the second or third).
 */
import type { Simulator } from '../../src/simulator/server.ts';
import type { FaultRig } from './fault-rig.ts';

/** POSTs per video for one purchase (`video`, `transcript`, `transcript:<lang>`). */
export function postsPerVideo(sim: Simulator, what: string): Map<string, number> {
  return new Map(Object.entries(sim.stats().postsByVideo[what] ?? {}));
}

/** The most POSTs that named any one video, over every kind and language. */
export function postsPerVideoMax(sim: Simulator): number {
  let max = 0;
  for (const byVideo of Object.values(sim.stats().postsByVideo)) {
    for (const n of Object.values(byVideo)) max = Math.max(max, n);
  }
  return max;
}

/** Videos named by more than one POST for the same purchase. */
export function videosPaidTwice(sim: Simulator): { what: string; videoId: string; posts: number }[] {
  const twice: { what: string; videoId: string; posts: number }[] = [];
  for (const [what, byVideo] of Object.entries(sim.stats().postsByVideo)) {
    for (const [videoId, posts] of Object.entries(byVideo)) if (posts > 1) twice.push({ what, videoId, posts });
  }
  return twice;
}

/**
 * Run `backfill --source ...` `times` more times, one after the other, each to its end; returns
 * their exit codes. The scenario then checks POSTs per video did not grow where they must not.
 */
export async function moreSyncs(
  rig: FaultRig,
  sourceIds: number[],
  times = 3,
  env: Record<string, string> = {},
): Promise<number[]> {
  const codes: number[] = [];
  for (let i = 0; i < times; i++) {
    const args = ['backfill', ...sourceIds.flatMap((id) => ['--source', String(id)]), '--timeout', '60s'];
    const r = await rig.run(args, env);
    codes.push(r.code ?? -1);
  }
  return codes;
}
