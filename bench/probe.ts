/**
 * The simulator alone: how fast it streams a finished transcript batch to a client that only
 * counts bytes, the first time (every item generated) and again (items re-sent from its item
 * cache, as later polls get them). Whatever the pipeline does with an answer, it cannot poll
 * faster than this, so the figures say whether the simulator (not the pipeline) limits a poll.
 * Both include the simulator's 100 ms latency.
 *
 * It uses a key of its own, so the dev account's credits stay the workloads' alone.
 */
import { request } from 'undici';
import type { Simulator } from '../src/simulator/server.ts';

export interface ProbeFigures {
  items: number;
  mb: number;
  /** first read: every item generated and serialised, s */
  firstReadS: number;
  firstReadMbPerS: number;
  /** best later read: items re-sent from the simulator's item cache, s */
  repeatReadS: number;
  repeatReadMbPerS: number;
}

const PROBE_KEY = 'vsi-bench-probe-key';
const PROBE_READS = 3;
const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

export async function probeSimulator(
  sim: Simulator,
  channelId: string,
  items: number,
  lang: string,
): Promise<ProbeFigures> {
  sim.setAccount(PROBE_KEY, {});
  const headers = { 'x-api-key': PROBE_KEY, 'content-type': 'application/json' };
  const before = sim.jobSettings();
  let jobId: string;
  try {
    // finished at once: only the streaming is timed
    sim.setJobSettings({ queuedMs: 0, itemsPerSecond: 1_000_000 });
    const res = await request(`${sim.baseUrl}/${sim.platform}/transcript/batch`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ channelId, limit: items, lang }),
    });
    if (res.statusCode !== 200)
      throw new Error(`probe: batch not created (HTTP ${res.statusCode}): ${await res.body.text()}`);
    ({ jobId } = (await res.body.json()) as { jobId: string });
  } finally {
    sim.setJobSettings(before);
  }
  await new Promise((r) => setTimeout(r, 50));
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < PROBE_READS; i++) {
    const t0 = performance.now();
    const res = await request(`${sim.baseUrl}/${sim.platform}/batch/${jobId}`, { headers });
    let n = 0;
    for await (const chunk of res.body) n += (chunk as Buffer).length;
    times.push((performance.now() - t0) / 1000);
    bytes = n;
  }
  const first = times[0]!;
  const repeat = Math.min(...times.slice(1));
  return {
    items,
    mb: round(bytes / 1e6),
    firstReadS: round(first),
    firstReadMbPerS: round(bytes / 1e6 / first),
    repeatReadS: round(repeat),
    repeatReadMbPerS: round(bytes / 1e6 / repeat),
  };
}
