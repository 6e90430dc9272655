/**
 * A generated transcript's job (202) whose result is read after its hour, against the simulator
 * over real HTTP with real Postgres and Redis: the interface keeps a transcript job's result 1
 * hour after the job ends, then answers 404. The pipeline records that as the result's expiry on
 * the batch and its item, and nothing (the next sync, another generation run, replay) buys the
 * transcript again on its own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getSource } from '../../src/db/sources.ts';
import { runBackfill } from '../../src/pipeline/commands/backfill.ts';
import { submitGenerations } from '../../src/pipeline/ingest/generate.ts';
import { pollBatch } from '../../src/pipeline/ingest/poll-batch.ts';
import { planResubmission } from '../../src/pipeline/commands/replay.ts';
import { registerSource } from '../../src/pipeline/commands/sources.ts';
import type { WorkerSet } from '../../src/pipeline/services/workers.ts';
import { createPipelineHarness, type PipelineHarness } from '../helpers/pipeline.ts';

/** The interface keeps a transcript job's result this long after the job ends (UPSTREAM.md). */
const RESULT_KEPT_MS = 3_600_000;
const QUEUED_MS = 100;
/** long enough that the jobs are still running when first polled (the clock runs in real time) */
const TRANSCRIPT_JOB_MS = 60_000;

let h: PipelineHarness;
let workers: WorkerSet | undefined;
let sourceId: number;

/** Requests the simulator saw on one endpoint. */
function requests(endpoint: string): number {
  return h.sim.stats().byEndpoint[endpoint]?.total ?? 0;
}

async function backfill() {
  const report = await runBackfill(h.deps, {
    sourceIds: [sourceId],
    wait: true,
    timeoutMs: 60_000,
    checkIntervalMs: 100,
  });
  expect(report.syncErrors).toEqual([]);
  return report;
}

async function generateRows() {
  return h.database.sql<
    {
      job_id: string;
      video_id: string;
      status: string;
      error_code: string | null;
      reason: string | null;
      state: string;
      item_code: string | null;
    }[]
  >`
    select b.job_id, b.request->>'videoId' as video_id, b.status, b.error_code, b.reason, i.state, i.error_code as item_code
    from batches b join batch_items i using (job_id)
    where b.source_id = ${sourceId} and b.mode = 'generate' order by b.job_id`;
}

beforeAll(async () => {
  h = await createPipelineHarness('transcript_job_expiry', {
    catalog: { channels: 1, channelSizes: [30], noTranscriptShare: 0.3, privateShare: 0, goneShare: 0 },
    jobs: { queuedMs: QUEUED_MS, itemsPerSecond: 2000, transcriptJobMs: TRANSCRIPT_JOB_MS },
  });
  workers = h.startWorkers(['poller', 'sink']);
  const channelId = h.sim.catalog.channels()[0]!.id;
  const s = await registerSource(h.deps, {
    kind: 'channel',
    ref: channelId,
    limit: 5000,
    langs: ['en'],
    textOnly: false,
    cron: null,
  });
  sourceId = s.id;
});

afterAll(async () => {
  await h?.close();
});

describe('a transcript job read after its hour', () => {
  it('is recorded as its result expired (batch and item), and is never bought again by a sync', async () => {
    // a first sync records which videos have no captions
    expect((await backfill()).exitCode).toBe(0);
    // no poller from here on: the jobs are polled by hand, the way a daemon down for an hour would
    await workers!.close(2_000);
    workers = undefined;
    await h.database.sql`update sources set generate_missing = true where id = ${sourceId}`;
    const generated = await submitGenerations(h.deps, await getSource(h.deps.sql, sourceId), {});
    expect(generated.jobIds.length).toBeGreaterThanOrEqual(2);
    const jobs = await generateRows();
    expect(jobs.map((j) => j.job_id).sort()).toEqual([...generated.jobIds].sort());

    // each job seen upstream once (queued or active), so it was known there
    for (const j of jobs) expect((await pollBatch(h.deps, j.job_id)).terminal).toBe(false);
    expect((await generateRows()).every((r) => r.status !== 'expired' && r.state === 'processing')).toBe(true);

    // the jobs end, then their hour passes: the simulator answers 404 for each
    h.sim.clock.advance(QUEUED_MS + TRANSCRIPT_JOB_MS + RESULT_KEPT_MS + 1_000);
    const jobPolls = requests('GET /transcript/{jobId}');
    // with the default confirmation window, one 404 ends nothing
    const first = await pollBatch(h.deps, jobs[0]!.job_id);
    expect(first.terminal).toBe(false);
    expect((await generateRows())[0]).toMatchObject({
      status: expect.stringMatching(/^(queued|active)$/),
      state: 'processing',
    });

    const confirmed = { ...h.deps, settings: { ...h.deps.settings, batchNotFoundConfirmMs: 0 } };
    for (const j of jobs)
      expect(await pollBatch(confirmed, j.job_id)).toMatchObject({ terminal: true, status: 'expired' });
    expect(h.sim.stats().byEndpoint['GET /transcript/{jobId}']?.byStatus['404']).toBe(jobs.length + 1);
    expect(requests('GET /transcript/{jobId}') - jobPolls).toBe(jobs.length + 1);

    // what the operator sees: the batch expired with the result's expiry, why, and its item failed
    for (const r of await generateRows()) {
      expect(r).toMatchObject({
        status: 'expired',
        error_code: 'result-expired',
        state: 'failed',
        item_code: 'result-unavailable',
      });
      expect(r.reason).toContain('1 hour');
    }
    const events = await h.database.sql<{ type: string; error_code: string }[]>`
      select type, data->>'errorCode' as error_code from events where data->>'jobId' = any(${jobs.map((j) => j.job_id)}::text[])`;
    expect(events.filter((e) => e.type === 'batch.expired').map((e) => e.error_code)).toEqual(
      jobs.map(() => 'result-expired'),
    );
    expect(
      await h.database.sql`select 1 from transcripts where video_id = any(${jobs.map((j) => j.video_id)}::text[])`,
    ).toHaveLength(0);

    // nothing buys them again on its own: not the next sync, not another generation run, not a replay plan
    workers = h.startWorkers(['poller', 'sink']);
    const paidTranscripts = requests('GET /transcript');
    const generateBatches = (await generateRows()).length;
    await backfill();
    expect((await submitGenerations(h.deps, await getSource(h.deps.sql, sourceId), {})).jobIds).toEqual([]);
    expect(requests('GET /transcript')).toBe(paidTranscripts);
    expect((await generateRows()).length).toBe(generateBatches);
    for (const expiredOnly of [true, false]) {
      const planned = (await planResubmission(h.deps, { expiredOnly })).flatMap((g) => g.videoIds);
      for (const j of jobs) expect(planned).not.toContain(j.video_id);
    }
  });
});
