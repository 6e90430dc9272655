/**
 * A poll that ran past its batch's expected end reads the batch again at once, in the same turn
 * (poller.ts `dueAgainNow`), instead of after POLL_MIN_DELAY_MS and a wait behind other polls.
 * Real simulator (a batch finishing 10 items a second), Postgres and Redis; the first poll is
 * made slow by holding the tables it writes locked until well after the batch completed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syncSource } from '../../src/pipeline/ingest/sync-source.ts';
import { registerSource } from '../../src/pipeline/commands/sources.ts';
import { startWorkers, type WorkerSet } from '../../src/pipeline/services/workers.ts';
import { createPipelineHarness, FAST_PIPELINE, waitFor, type PipelineHarness } from '../helpers/pipeline.ts';

const VIDEOS = 30;
const ITEMS_PER_SECOND = 10;
/** the next poll after a slow one would come at least this long after it */
const MIN_DELAY_MS = 4_000;
/**
 * How long the first poll's landing is held up: its answer (read while the batch runs, within
 * its first 3 s) is then more than MIN_DELAY_MS old when the poll ends, and the batch complete
 */
const HOLD_MS = 7_000;

let h: PipelineHarness;
let workers: WorkerSet | undefined;
beforeAll(async () => {
  h = await createPipelineHarness('pollagain', {
    catalog: { channels: 1, channelSizes: [VIDEOS] },
    jobs: { queuedMs: 0, itemsPerSecond: ITEMS_PER_SECOND },
  });
});
afterAll(async () => {
  await workers?.close(2_000);
  await h?.close();
});

describe("a poll that ran past its batch's expected end", () => {
  it('reads the batch again at once and lands the rest, not after the minimum delay', async () => {
    const ch = h.sim.catalog.channels()[0]!;
    const s = await registerSource(h.deps, {
      kind: 'channel',
      ref: ch.id,
      limit: VIDEOS,
      langs: ['en'],
      textOnly: false,
      cron: null,
    });
    const settings = {
      ...FAST_PIPELINE,
      pollInitialDelayMs: 1_000,
      pollMinDelayMs: MIN_DELAY_MS,
      pollMaxDelayMs: 2 * MIN_DELAY_MS,
    };
    const { sql } = h.database;
    const deps = { ...h.deps, settings };
    const submitted = await syncSource(deps, s.id);
    expect(submitted.jobIds).toHaveLength(2);

    // the first polls (1 s in, a third of each batch finished: enough for a steady rate) cannot
    // write until released
    let released = 0;
    const holding = sql.begin(async (tx) => {
      await tx`lock table videos, transcripts in exclusive mode`;
      workers = startWorkers(deps, { roles: ['poller'], connection: h.redis });
      await new Promise((r) => setTimeout(r, HOLD_MS));
      released = Date.now();
    });
    await holding;

    const settled = await waitFor(
      async () => {
        const [r] = await sql<{ open: number; unsettled: number }[]>`
        select (select count(*)::int from batches where source_id = ${s.id} and status in ('submitted', 'queued', 'active')) as open,
          (select count(*)::int from batch_items i join batches b using (job_id)
            where b.source_id = ${s.id} and i.state not in ('sunk', 'failed')) as unsettled`;
        return r!.open === 0 && r!.unsettled === 0 ? Date.now() : undefined;
      },
      30_000,
      'both batches to complete and land',
    );
    // read again at once: a poll after the delay would begin at least MIN_DELAY_MS after the
    // slow one ended, which was after the release (4.3 s measured with the re-read turned off)
    expect(settled - released).toBeLessThan(MIN_DELAY_MS);
    const polls = await sql<{ polls: number; total: number; items: number }[]>`
      select b.polls, b.total, (select count(*)::int from batch_items i where i.job_id = b.job_id) as items
      from batches b where b.source_id = ${s.id} order by b.kind`;
    // the slow poll and the one right after it; every item of the answer recorded
    expect(polls.map((p) => p.polls)).toEqual([2, 2]);
    expect(polls.every((p) => p.items === p.total && p.total === VIDEOS)).toBe(true);
  });
});
