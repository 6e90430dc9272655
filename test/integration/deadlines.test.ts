/**
 * Deadlines and signals: an upstream that trickles its answer a byte at a time never trips the
 * silence timeout, so only an overall deadline ends it. `backfill --timeout` and Ctrl-C
 * (SIGINT, SIGTERM) end a sync stuck in such a listing within seconds, with the source's lease
 * released and the run recorded; and a client request ends at `requestTimeoutMs`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/client.ts';
import { registerSource } from '../../src/pipeline/commands/sources.ts';
import { createPipelineHarness, waitFor, type PipelineHarness } from '../helpers/pipeline.ts';
import { runCliToEnd, startCli } from '../helpers/proc.ts';

let h: PipelineHarness;
let sourceId: number;

/** The channel listing answers a tenth of its body, then a byte every 2 s: minutes for the rest. */
const TRICKLE = [
  { match: 'GET /videosite/channel/videos', process: true, trickle: { afterFraction: 0.1, byteEveryMs: 2_000 } },
];

beforeAll(async () => {
  h = await createPipelineHarness('deadlines', { catalog: { channels: 2, channelSizes: [40, 10] } });
  const s = await registerSource(h.deps, {
    kind: 'channel',
    ref: h.sim.catalog.channels()[0]!.id,
    limit: 100,
    langs: ['en'],
    textOnly: false,
    cron: null,
  });
  sourceId = s.id;
});

afterAll(async () => {
  await h?.close();
});

async function leaseHeld(): Promise<boolean> {
  return (
    (
      await h.database
        .sql`select 1 from source_sync_leases where source_id = ${sourceId} and expires_at > clock_timestamp()`
    ).length > 0
  );
}

async function lastRun(): Promise<{ outcome: string | null; finished: boolean }> {
  const [r] = await h.database.sql<{ outcome: string | null; finished: boolean }[]>`
    select outcome, finished_at is not null as finished from sync_runs where source_id = ${sourceId} order by id desc limit 1`;
  return r!;
}

describe('a trickling listing', () => {
  it('backfill --timeout 3s ends within seconds, the lease released and the run recorded', async () => {
    h.sim.script(TRICKLE);
    try {
      const r = await runCliToEnd(['backfill', '--source', String(sourceId), '--timeout', '3s'], h.env, 120_000);
      expect(r.code, r.stderr).toBe(1);
      // 3 s of deadline, then the sync's own ending and the workers' close
      expect(r.ms).toBeLessThan(20_000);
      expect(r.stdout).toMatch(/timed out \(--timeout 3000 ms\)/);
      expect(await leaseHeld()).toBe(false);
      expect(await lastRun()).toEqual({ outcome: 'error', finished: true });
    } finally {
      h.sim.clearScript();
    }
  });

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`${signal} ends it within seconds, the lease released`, async () => {
      h.sim.script(TRICKLE);
      const listingsBefore = h.sim.stats().byEndpoint['GET /videosite/channel/videos']?.total ?? 0;
      try {
        const p = startCli(['backfill', '--source', String(sourceId)], h.env);
        // the listing is under way (its answer trickling) before the signal
        await waitFor(
          async () =>
            (h.sim.stats().byEndpoint['GET /videosite/channel/videos']?.total ?? 0) > listingsBefore ? true : undefined,
          30_000,
          'the listing requested',
        );
        await waitFor(async () => ((await leaseHeld()) ? true : undefined), 10_000, 'the lease taken');
        const sent = Date.now();
        p.kill(signal);
        const exit = await Promise.race([p.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 30_000))]);
        if (exit === 'hung') p.kill('SIGKILL');
        expect(exit).not.toBe('hung');
        expect(Date.now() - sent).toBeLessThan(15_000);
        expect((exit as { code: number | null }).code, p.stderr()).toBe(1);
        expect(p.stdout()).toContain('interrupted');
        expect(await leaseHeld()).toBe(false);
        expect(await lastRun()).toEqual({ outcome: 'error', finished: true });
      } finally {
        h.sim.clearScript();
      }
    });
  }
});

describe('the client', () => {
  it('gives an attempt up at requestTimeoutMs however steadily the answer trickles', async () => {
    h.sim.script([
      { match: 'GET /videosite/channel', process: true, trickle: { afterFraction: 0.1, byteEveryMs: 200 } },
    ]);
    const client = createApiClient({
      baseUrl: h.sim.baseUrl,
      apiKey: h.sim.apiKey,
      platform: h.sim.platform,
      requestTimeoutMs: 1_500,
      retry: { maxAttempts: 1 },
    });
    try {
      const started = Date.now();
      await expect(client.getChannel({ id: h.sim.catalog.channels()[1]!.id })).rejects.toMatchObject({
        code: 'timeout',
      });
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      h.sim.clearScript();
      await client.close();
    }
  });
});
