/**
 * The simulator's item cache (used by the benchmark) changes no byte of an answer: a repeated
 * poll served from it reads exactly like one generated afresh, by a simulator without it too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';

let cached: Simulator;
let plain: Simulator;

const options = {
  seed: 3,
  catalog: { channels: 1, channelSizes: [60], transcriptChunks: { min: 20, max: 30 } },
  jobs: { queuedMs: 0, itemsPerSecond: 1_000_000 },
};

beforeAll(async () => {
  cached = await startSimulator({ ...options, itemCacheBytes: 10_000_000 });
  plain = await startSimulator(options);
});

afterAll(async () => {
  await cached?.close();
  await plain?.close();
});

async function batchAnswer(sim: Simulator, kind: 'video' | 'transcript'): Promise<string[]> {
  const headers = { 'x-api-key': sim.apiKey, 'content-type': 'application/json' };
  const channelId = sim.catalog.channels()[0]!.id;
  const created = await fetch(`${sim.baseUrl}/videosite/${kind}/batch`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ channelId, limit: 60, ...(kind === 'transcript' ? { lang: 'en' } : {}) }),
  });
  const { jobId } = (await created.json()) as { jobId: string };
  const reads: string[] = [];
  for (let i = 0; i < 2; i++) {
    const r = await fetch(`${sim.baseUrl}/videosite/batch/${jobId}`, { headers });
    reads.push(await r.text());
  }
  return reads;
}

describe('simulator item cache', () => {
  for (const kind of ['video', 'transcript'] as const) {
    it(`serves a repeated ${kind} batch read byte for byte as generated`, async () => {
      const [first, second] = await batchAnswer(cached, kind);
      const [fresh] = await batchAnswer(plain, kind);
      const items = (text: string) => (JSON.parse(text) as { results: unknown[] }).results;
      expect(items(first!).length).toBe(60);
      expect(second).toBe(first);
      // job IDs differ between simulators; the items do not
      expect(JSON.stringify(items(first!))).toBe(JSON.stringify(items(fresh!)));
    });
  }
});
