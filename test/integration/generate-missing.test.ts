/**
 * Generated transcripts for the videos of a source that have no captions (`--generate-missing`),
 * against the simulator over real HTTP, with real Postgres, Redis and workers: one generation per
 * video within the source's minute budget, priced at 2 credits per started minute of the video,
 * polled to completion through the poll queue, sunk as transcripts of origin `generated`, and
 * never requested twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertSubmittedBatch } from '../../src/db/batch-records.ts';
import { landItems } from '../../src/db/items.ts';
import { getSource } from '../../src/db/sources.ts';
import { runBackfill } from '../../src/pipeline/commands/backfill.ts';
import { submitGenerations } from '../../src/pipeline/ingest/generate.ts';
import { pollBatch } from '../../src/pipeline/ingest/poll-batch.ts';
import { registerSource } from '../../src/pipeline/commands/sources.ts';
import { createPipelineHarness, waitFor, type PipelineHarness } from '../helpers/pipeline.ts';

let h: PipelineHarness;
let sourceId: number;
let channelId: string;

async function used(): Promise<number> {
  return (await h.api.me()).usedCredits;
}

/** Answered (2xx) requests of one endpoint, per the simulator. */
function answered(endpoint: string): number {
  const e = h.sim.stats().byEndpoint[endpoint];
  if (!e) return 0;
  return Object.entries(e.byStatus).reduce((n, [status, count]) => (status.startsWith('2') ? n + count : n), 0);
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

/** The generate batches of the source, in the order they were requested. */
async function generateBatches() {
  return h.database.sql<
    {
      job_id: string;
      video_id: string;
      status: string;
      polls: number;
      credits_estimated: number;
      last_polled_at: Date | null;
    }[]
  >`
    select job_id, request->>'videoId' as video_id, status, polls, credits_estimated, last_polled_at
    from batches where source_id = ${sourceId} and mode = 'generate'
    order by submitted_at, job_id`;
}

beforeAll(async () => {
  h = await createPipelineHarness('generate_missing', {
    catalog: { channels: 1, channelSizes: [60], noTranscriptShare: 0.3, privateShare: 0.05, goneShare: 0.05 },
    jobs: { queuedMs: 100, itemsPerSecond: 2000, transcriptJobMs: 300 },
  });
  h.startWorkers(['poller', 'sink']);
  channelId = h.sim.catalog.channels()[0]!.id;
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

describe('--generate-missing', () => {
  /** Videos without captions, newest upload first (then by ID), with their started minutes. */
  let candidates: { id: string; minutes: number }[] = [];
  let budget = 0;
  /** what fits the budget, taken in that order, a video that would pass it skipped */
  const fitting: { id: string; minutes: number }[] = [];
  let creditsAtStart = 0;
  let creditsBefore = 0;
  /** paid reads of the first sync (the channel's listing and metadata) */
  let paidReads = 0;
  let generatedJobIds: string[] = [];

  it('a first sync records which videos have no captions (and spends only batches and listings)', async () => {
    creditsAtStart = await used();
    const paidReadsBefore = answered('GET /videosite/channel/videos') + answered('GET /videosite/channel');
    const report = await backfill();
    expect(report.exitCode).toBe(0);
    const [batches] = await h.database.sql<{ credits: number }[]>`
      select coalesce(sum(credits_estimated), 0)::int as credits from batches where source_id = ${sourceId} and mode = 'batch'`;
    paidReads = answered('GET /videosite/channel/videos') + answered('GET /videosite/channel') - paidReadsBefore;
    expect(paidReads).toBeGreaterThanOrEqual(1);
    expect((await used()) - creditsAtStart).toBe(batches!.credits + paidReads);

    // the simulator's own facts, cross-checked with what the pipeline recorded
    const noCaptions = h.sim.catalog
      .videoIds(channelId)!
      .map((id) => h.sim.catalog.videoInfo(id)!)
      .filter((v) => v.fate === 'public' && v.transcriptLanguages.length === 0);
    const rows = await h.database.sql<{ id: string; duration_s: number; last_error_code: string | null }[]>`
      select v.id, v.duration_s, s.last_error_code
      from videos v join video_sync s on s.video_id = v.id and s.kind = 'transcript' and s.lang = 'en'
      where v.id = any(${noCaptions.map((v) => v.id)}::text[])
      order by v.upload_date desc nulls last, v.id`;
    expect(rows.map((r) => r.id).sort()).toEqual(noCaptions.map((v) => v.id).sort());
    for (const r of rows) expect(r.last_error_code).toBe('transcript-unavailable');
    candidates = rows.map((r) => ({ id: r.id, minutes: Math.ceil(r.duration_s / 60) }));
    expect(candidates.length).toBeGreaterThanOrEqual(4);
    expect(
      await h.database.sql`select 1 from transcripts where video_id = any(${candidates.map((c) => c.id)}::text[])`,
    ).toHaveLength(0);

    // a budget that only some fit: about half of all their minutes
    budget = Math.floor(candidates.reduce((n, c) => n + c.minutes, 0) / 2);
    let left = budget;
    for (const c of candidates) {
      if (c.minutes > left) continue;
      fitting.push(c);
      left -= c.minutes;
    }
    expect(fitting.length).toBeGreaterThan(0);
    expect(fitting.length).toBeLessThan(candidates.length);
  });

  it('generates transcripts for exactly the videos that fit the minute budget, at 2 credits per started minute, polled through the poll queue', async () => {
    await h.database
      .sql`update sources set generate_missing = true, max_generate_minutes = ${budget} where id = ${sourceId}`;
    creditsBefore = await used();
    const jobPollsBefore = answered('GET /transcript/{jobId}');
    const result = await submitGenerations(h.deps, await getSource(h.deps.sql, sourceId), {});
    expect(result.refused).toBeUndefined();
    generatedJobIds = result.jobIds;
    expect(result.videos).toBe(fitting.length);
    expect(result.minutes).toBe(fitting.reduce((n, c) => n + c.minutes, 0));
    expect(result.minutes).toBeLessThanOrEqual(budget);

    // the poll queue polls each job to completion and the sink stores it
    await waitFor(
      async () => {
        const [row] = await h.database.sql<{ n: number }[]>`
        select count(*)::int as n from batch_items i join batches b using (job_id)
        where b.source_id = ${sourceId} and b.mode = 'generate' and b.status = 'completed' and i.state = 'sunk'`;
        return row!.n === fitting.length ? true : undefined;
      },
      30_000,
      'generated transcripts sunk',
    );

    const batches = await generateBatches();
    expect(batches.map((b) => b.video_id)).toEqual(fitting.map((c) => c.id));
    expect(batches.map((b) => b.job_id)).toEqual(generatedJobIds);
    for (const b of batches) {
      expect(b.status).toBe('completed');
      // polled by the poll queue (GET /transcript/{jobId}), not landed by a shortcut
      expect(b.polls).toBeGreaterThanOrEqual(1);
      expect(b.last_polled_at).not.toBeNull();
    }
    expect(answered('GET /transcript/{jobId}') - jobPollsBefore).toBeGreaterThanOrEqual(fitting.length);

    // the landed item is the job's result as received
    const items = await h.database.sql<{ video_id: string; status: string; lang: string }[]>`
      select i.video_id, i.payload->>'status' as status, i.payload->>'lang' as lang
      from batch_items i join batches b using (job_id) where b.source_id = ${sourceId} and b.mode = 'generate'`;
    expect(items.every((i) => i.status === 'completed' && i.lang === 'en')).toBe(true);

    // transcripts of origin `generated` exist for exactly the videos that fit, with chunks
    const generated = await h.database.sql<{ video_id: string; lang: string; has_chunks: boolean; text: string }[]>`
      select video_id, lang, chunks is not null as has_chunks, text from transcripts where origin = 'generated'`;
    expect(generated.map((t) => t.video_id).sort()).toEqual(fitting.map((c) => c.id).sort());
    for (const t of generated) {
      expect(t.lang).toBe('en');
      expect(t.has_chunks).toBe(true);
      expect(t.text.length).toBeGreaterThan(0);
    }
    // and the videos' transcript outcome says so
    const synced = await h.database.sql<{ last_state: string }[]>`
      select last_state from video_sync where kind = 'transcript' and lang = 'en' and video_id = any(${fitting.map((c) => c.id)}::text[])`;
    expect(synced.map((s) => s.last_state)).toEqual(fitting.map(() => 'sunk'));
  });

  it('charges exactly 2 credits per started minute of each generated video, as estimated', async () => {
    // the expected price from the videos' durations (not from the pipeline's own helper)
    const durations = await h.database.sql<{ id: string; duration_s: number }[]>`
      select id, duration_s from videos where id = any(${fitting.map((c) => c.id)}::text[])`;
    const expected = durations.reduce((n, v) => n + 2 * Math.ceil(v.duration_s / 60), 0);
    expect(expected).toBeGreaterThan(fitting.length); // a price of 1 per video could not pass
    // polls and /me are free: the generation phase spent exactly the generated minutes
    expect((await used()) - creditsBefore).toBe(expected);
    const batches = await generateBatches();
    expect(batches.reduce((n, b) => n + b.credits_estimated, 0)).toBe(expected);
    // in all: every batch's credits (the generated ones as priced) and the first sync's reads
    const [all] = await h.database.sql<{ credits: number }[]>`
      select coalesce(sum(credits_estimated), 0)::int as credits from batches where source_id = ${sourceId}`;
    expect((await used()) - creditsAtStart).toBe(all!.credits + paidReads);
  });

  it('a second sync requests no generation again (never twice), and spends nothing on one', async () => {
    const requestsBefore = answered('GET /transcript');
    const batchesBefore = (await generateBatches()).length;
    const report = await backfill();
    expect(report.syncErrors).toEqual([]);
    const again = await submitGenerations(h.deps, await getSource(h.deps.sql, sourceId), {});
    expect(again.jobIds).toEqual([]);
    expect(again.credits).toBe(0);
    expect((await generateBatches()).length).toBe(batchesBefore);
    expect(answered('GET /transcript')).toBe(requestsBefore);
    // lifting the budget lets the rest through, each still once
    await h.database.sql`update sources set max_generate_minutes = null where id = ${sourceId}`;
    const rest = await submitGenerations(h.deps, await getSource(h.deps.sql, sourceId), {});
    expect(rest.videos).toBe(candidates.length - fitting.length);
    await waitFor(
      async () => {
        const [row] = await h.database.sql<{ n: number }[]>`
        select count(*)::int as n from batches where mode = 'generate' and status = 'completed'`;
        return row!.n === candidates.length ? true : undefined;
      },
      30_000,
      'every generation completed',
    );
    const once = await h.database.sql<{ video_id: string; n: number }[]>`
      select request->>'videoId' as video_id, count(*)::int as n from batches where source_id = ${sourceId} and mode = 'generate' group by 1`;
    expect(once.map((r) => r.video_id).sort()).toEqual(candidates.map((c) => c.id).sort());
    expect(once.every((r) => r.n === 1)).toBe(true);
  });
});

describe('a transcript job answered otherwise', () => {
  /** A generate batch of one video, as submitGenerations records it, under a job ID the test scripts. */
  async function jobFor(jobId: string, videoId: string): Promise<void> {
    await h.database.sql.begin(async (tx) => {
      await insertSubmittedBatch(tx, {
        jobId,
        sourceId: null,
        kind: 'transcript',
        lang: 'en',
        mode: 'generate',
        creditsEstimated: 2,
        request: {
          url: `https://www.videosite.com/watch?v=${videoId}`,
          mode: 'generate',
          lang: 'en',
          videoId,
          durationS: 30,
        },
        textOnly: false,
        replayOf: null,
        firstPollDelayMs: 0,
      });
      await landItems(tx, jobId, [{ videoId, state: 'processing', errorCode: null, payload: undefined }]);
    });
  }
  async function row(jobId: string) {
    const [b] = await h.database.sql<
      {
        status: string;
        upstream_status: string | null;
        error_code: string | null;
        reason: string | null;
        state: string;
        item_code: string | null;
      }[]
    >`
      select b.status, b.upstream_status, b.error_code, b.reason, i.state, i.error_code as item_code
      from batches b join batch_items i using (job_id) where b.job_id = ${jobId}`;
    return b!;
  }

  it('a status this interface does not list keeps it in flight; failed records the item by its code', async () => {
    await jobFor('tj_scripted_failed', 'scriptedAAA');
    h.sim.script([
      { match: 'GET /transcript/tj_scripted_failed', status: 200, body: { status: 'transcribing', error: null } },
      {
        match: 'GET /transcript/tj_scripted_failed',
        status: 200,
        body: { status: 'failed', error: { error: 'internal-error', message: 'boom', details: 'x' } },
      },
    ]);
    const first = await pollBatch(h.deps, 'tj_scripted_failed');
    expect(first.terminal).toBe(false);
    expect(await row('tj_scripted_failed')).toMatchObject({
      status: 'submitted',
      upstream_status: 'transcribing',
      state: 'processing',
    });
    expect((await row('tj_scripted_failed')).reason).toContain('transcribing');
    const second = await pollBatch(h.deps, 'tj_scripted_failed');
    expect(second).toMatchObject({ terminal: true, status: 'failed' });
    expect(await row('tj_scripted_failed')).toMatchObject({
      status: 'failed',
      error_code: 'internal-error',
      state: 'retryable',
      item_code: 'internal-error',
    });

    await jobFor('tj_scripted_gone', 'scriptedBBB');
    h.sim.script([
      {
        match: 'GET /transcript/tj_scripted_gone',
        status: 200,
        body: { status: 'failed', error: { error: 'not-found', message: 'gone', details: 'x' } },
      },
    ]);
    expect(await pollBatch(h.deps, 'tj_scripted_gone')).toMatchObject({ terminal: true, status: 'failed' });
    expect(await row('tj_scripted_gone')).toMatchObject({ state: 'failed', item_code: 'not-found' });
  });

  it('a transcript answered at once is landed at once; a refusal of the video is its one attempt', async () => {
    // two more videos of the source without captions, as a sync would have recorded them
    for (const [id, duration] of [
      ['instantAAAA', 61],
      ['refusedAAAA', 30],
    ] as const) {
      await h.database.sql`insert into videos (id, duration_s, upload_date) values (${id}, ${duration}, '2030-01-01')`;
      await h.database.sql`insert into source_videos (source_id, video_id) values (${sourceId}, ${id})`;
      await h.database.sql`
        insert into video_sync (video_id, kind, lang, last_state, last_error_code, attempts)
        values (${id}, 'transcript', 'en', 'failed', 'transcript-unavailable', 1)`;
    }
    const requests = () => h.sim.stats().byEndpoint['GET /transcript']?.total ?? 0;
    const before = requests();
    const transcript = {
      content: [{ text: 'spoken words', offset: 0, duration: 1500 }],
      lang: 'en',
      availableLangs: [],
    };
    h.sim.script([
      { match: 'GET /transcript', status: 200, body: transcript },
      {
        match: 'GET /transcript',
        status: 404,
        body: { error: 'not-found', message: 'Video not found.', details: 'gone' },
      },
    ]);
    const r = await submitGenerations(h.deps, await getSource(h.deps.sql, sourceId), {});
    expect(requests() - before).toBe(2);
    expect(r.videos).toBe(1);
    expect(r.jobIds).toHaveLength(1);
    expect(r.jobIds[0]).toMatch(/^gen-sync:instantAAAA:en:/);
    const stored = await waitFor(
      async () => {
        const [t] = await h.database.sql<
          { origin: string; text: string }[]
        >`select origin, text from transcripts where video_id = 'instantAAAA'`;
        return t;
      },
      10_000,
      'the instant transcript sunk',
    );
    expect(stored).toEqual({ origin: 'generated', text: 'spoken words' });
    const [refused] = await h.database.sql<{ state: string }[]>`
      select state from batch_submissions where request->>'videoId' = 'refusedAAAA'`;
    expect(refused?.state).toBe('failed');
    // neither is asked again
    expect((await submitGenerations(h.deps, await getSource(h.deps.sql, sourceId), {})).jobIds).toEqual([]);
    expect(requests() - before).toBe(2);
  });

  it('a job the API no longer knows expires once confirmed: its result expired, its item failed (paid, not bought again)', async () => {
    await jobFor('tj_scripted_unknown', 'scriptedCCC');
    const deps = { ...h.deps, settings: { ...h.deps.settings, batchNotFoundConfirmMs: 0 } };
    // no job of that ID upstream: the simulator answers a JSON not-found
    expect(await pollBatch(deps, 'tj_scripted_unknown')).toMatchObject({ terminal: true, status: 'expired' });
    expect(await row('tj_scripted_unknown')).toMatchObject({
      status: 'expired',
      error_code: 'result-expired',
      state: 'failed',
      item_code: 'result-unavailable',
    });
  });
});
