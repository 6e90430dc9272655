/**
 * What the design relies on: several daemons share the work without paying twice, and losing
 * Redis loses nothing because Postgres rebuilds the work in flight.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchProgress, isSettled } from '../../src/db/batch-progress.ts';
import { reconcile } from '../../src/pipeline/services/reconcile.ts';
import { syncSource } from '../../src/pipeline/ingest/sync-source.ts';
import { registerSource } from '../../src/pipeline/commands/sources.ts';
import { deletePrefixKeys } from '../../src/queues/connection.ts';
import { createPipelineHarness, waitFor, type PipelineHarness } from '../helpers/pipeline.ts';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

function startDaemon(env: Record<string, string>): {
  child: ChildProcess;
  exited: Promise<number | null>;
  stderr: () => string;
} {
  const child = spawn(process.execPath, ['bin/videosite-ingest.js', 'daemon'], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, exited, stderr: () => err };
}

describe('two daemons at once', () => {
  let h: PipelineHarness;
  beforeAll(async () => {
    h = await createPipelineHarness('daemons', { catalog: { channels: 2, channelSizes: [80, 50] } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('submit each batch once, land everything, and stop cleanly on SIGTERM', async () => {
    const sources = [];
    for (const ch of h.sim.catalog.channels()) {
      // every second: both daemons see every tick; the job scheduler fires once per tick
      sources.push(
        await registerSource(h.deps, {
          kind: 'channel',
          ref: ch.id,
          limit: 5000,
          langs: ['en'],
          textOnly: false,
          cron: '* * * * * *',
        }),
      );
    }
    const daemons = [startDaemon(h.env), startDaemon(h.env)];
    try {
      const expected = h.sim.catalog
        .channels()
        .flatMap((c) => h.sim.catalog.videoIds(c.id)!)
        .filter((id) => h.sim.catalog.videoInfo(id)!.fate === 'public');
      await waitFor(
        async () => {
          const [r] = await h.database.sql<{ n: number }[]>`select count(*)::int as n from videos`;
          const [pending] = await h.database.sql<{ n: number }[]>`
          select count(*)::int as n from batches where status in ('submitted', 'queued', 'active')`;
          return r!.n === expected.length && pending!.n === 0 ? true : undefined;
        },
        45_000,
        'both channels to land',
      );
      // let a few more cron ticks pass: later syncs must find nothing to submit
      await new Promise((r) => setTimeout(r, 2500));
    } finally {
      for (const d of daemons) d.child.kill('SIGTERM');
    }
    const codes = await Promise.all(daemons.map((d) => d.exited));
    expect(codes, daemons.map((d) => d.stderr()).join('\n')).toEqual([0, 0]);

    // one metadata and one transcript batch per source, never more
    const batches = await h.database.sql<{ source_id: number; kind: string }[]>`
      select source_id, kind from batches order by source_id, kind`;
    expect(batches.map((b) => `${b.source_id}/${b.kind}`)).toEqual(
      sources.flatMap((s) => [`${s.id}/transcript`, `${s.id}/video`]).sort(),
    );
    const stats = h.sim.stats();
    expect(stats.byEndpoint['POST /videosite/video/batch']?.total).toBe(2);
    expect(stats.byEndpoint['POST /videosite/transcript/batch']?.total).toBe(2);
    // no video went to two batches of the same kind
    const dup = await h.database.sql`
      select i.video_id, b.kind from batch_items i join batches b using (job_id)
      group by i.video_id, b.kind having count(*) > 1`;
    expect(dup).toHaveLength(0);
  });
});

describe('Redis loses everything mid-run', () => {
  let h: PipelineHarness;
  beforeAll(async () => {
    h = await createPipelineHarness('redisloss', { catalog: { channels: 1, channelSizes: [150] } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('reconcile rebuilds the work from Postgres and the run completes with nothing lost or paid twice', async () => {
    const ch = h.sim.catalog.channels()[0]!;
    const s = await registerSource(h.deps, {
      kind: 'channel',
      ref: ch.id,
      limit: 5000,
      langs: ['en'],
      textOnly: false,
      cron: null,
    });
    h.sim.setJobSettings({ itemsPerSecond: 40 });
    h.startWorkers(['poller', 'sink']);
    const r = await syncSource(h.deps, s.id);
    expect(r.jobIds).toHaveLength(2);

    // some items land, then Redis is wiped (as a restart without persistence would)
    await waitFor(
      async () => {
        const [n] = await h.database.sql<
          { n: number }[]
        >`select count(*)::int as n from batch_items where state in ('landed', 'sunk')`;
        return n!.n > 20 ? true : undefined;
      },
      20_000,
      'the first items to land',
    );
    // wiped under running workers, as a Redis restart without persistence would do
    // (the workers keep running: a poll in progress may still write its own job back)
    const keysBefore = (await h.redis.keys(`${h.prefix}*`)).length;
    expect(keysBefore).toBeGreaterThan(0);
    await deletePrefixKeys(h.redis, h.prefix);

    // the daemon's periodic reconcile finds the batches in Postgres and re-creates their work
    const rec = await reconcile(h.deps);
    expect(rec.polls).toBeGreaterThanOrEqual(1);
    const settled = await waitFor(
      async () => {
        const b = await batchProgress(h.database.sql, r.jobIds);
        return b.every(isSettled) ? b : undefined;
      },
      30_000,
      'the batches to finish after the wipe',
    );
    expect(settled.map((b) => b.status)).toEqual(['completed', 'completed']);

    const publicIds = h.sim.catalog.videoIds(ch.id)!.filter((id) => h.sim.catalog.videoInfo(id)!.fate === 'public');
    const [videos] = await h.database.sql<{ n: number }[]>`select count(*)::int as n from videos`;
    expect(videos!.n).toBe(publicIds.length);
    const [items] = await h.database.sql<{ n: number }[]>`select count(*)::int as n from batch_items`;
    expect(items!.n).toBe(2 * 150);
    const [notSunk] = await h.database.sql<
      { n: number }[]
    >`select count(*)::int as n from batch_items where state = 'landed'`;
    expect(notSunk!.n).toBe(0);
    expect(h.sim.stats().byEndpoint['POST /videosite/video/batch']?.total).toBe(1);
  });
});
