/**
 * `--generate-missing` as a user runs it: `sources add channel ... --generate-missing
 * --max-generate-minutes N`, then one `backfill`, both through the real CLI, against the
 * simulator over real HTTP with real Postgres, Redis and workers. The backfill waits for the
 * captions batches, then generates the videos without captions that fit the budget and waits for
 * those too: it ends with them stored, and the account charged exactly the batches, the listing
 * and 2 credits per started minute of each generated video.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectExit } from '../helpers/cli.ts';
import { createPipelineHarness, runCli, type PipelineHarness } from '../helpers/pipeline.ts';

let h: PipelineHarness;

beforeAll(async () => {
  h = await createPipelineHarness('generate_missing_cli', {
    catalog: { channels: 1, channelSizes: [50], noTranscriptShare: 0.3, privateShare: 0, goneShare: 0 },
    jobs: { queuedMs: 100, itemsPerSecond: 2000, transcriptJobMs: 300 },
  });
  h.startWorkers(['poller', 'sink']);
});

afterAll(async () => {
  await h?.close();
});

const usedCredits = async () => (await h.api.me()).usedCredits;

describe('sources add --generate-missing, then one backfill', () => {
  it('stores generated transcripts for the captionless videos that fit the minute budget, priced per started minute', async () => {
    const channel = h.sim.catalog.channels()[0]!;
    // the simulator's own facts: which videos have no captions, and how long they are
    const captionless = h.sim.catalog
      .videoIds(channel.id)!
      .map((id) => h.sim.catalog.videoInfo(id)!)
      .filter((v) => v.fate === 'public' && v.transcriptLanguages.length === 0 && v.durationS > 0);
    expect(captionless.length).toBeGreaterThanOrEqual(4);
    const minutesOf = new Map(captionless.map((v) => [v.id, Math.ceil(v.durationS / 60)]));
    const allMinutes = [...minutesOf.values()].reduce((n, m) => n + m, 0);
    const budget = Math.floor(allMinutes / 2);

    const add = await runCli(
      [
        'sources',
        'add',
        'channel',
        channel.id,
        '--lang',
        'en',
        '--generate-missing',
        '--max-generate-minutes',
        String(budget),
      ],
      h.env,
      60_000,
    );
    expectExit(add, 0);
    expect(add.stdout).toContain(`generating missing transcripts (at most ${budget} min)`);
    const sourceId = Number(/^source (\d+) added/.exec(add.stdout)![1]);

    const before = await usedCredits();
    const run = await runCli(['backfill', '--source', String(sourceId), '--timeout', '90s'], h.env, 120_000);
    expectExit(run, 0);
    const spent = (await usedCredits()) - before;

    const generated = await h.database.sql<{ video_id: string; origin: string; text: string }[]>`
      select video_id, origin, text from transcripts where origin = 'generated' order by video_id`;
    const ids = generated.map((g) => g.video_id);
    // only videos without captions, within the budget, and the budget used as far as it goes:
    // every captionless video left out would have passed it
    for (const id of ids) expect(minutesOf.has(id), id).toBe(true);
    const usedMinutes = ids.reduce((n, id) => n + minutesOf.get(id)!, 0);
    expect(usedMinutes).toBeGreaterThan(0);
    expect(usedMinutes).toBeLessThanOrEqual(budget);
    for (const v of captionless) {
      if (!ids.includes(v.id)) expect(minutesOf.get(v.id)!, v.id).toBeGreaterThan(budget - usedMinutes);
    }
    expect(ids.length).toBeLessThan(captionless.length);
    for (const g of generated) expect(g.text.length).toBeGreaterThan(0);

    // exactly as priced: every captions batch (1 + videos), the listing, and 2 credits per
    // started minute of each generated video (from the simulator's durations, not our helper)
    const [batches] = await h.database.sql<{ credits: number }[]>`
      select coalesce(sum(credits_estimated), 0)::int as credits from batches where source_id = ${sourceId} and mode = 'batch'`;
    const [listing] = await h.database.sql<{ credits: number }[]>`
      select coalesce(sum(listing_credits), 0)::int as credits from sync_runs where source_id = ${sourceId}`;
    expect(spent).toBe(batches!.credits + listing!.credits + 2 * usedMinutes);

    // the generations were transcript jobs polled to completion, one per video
    const jobs = await h.database.sql<{ video_id: string; status: string; polls: number }[]>`
      select request->>'videoId' as video_id, status, polls from batches where source_id = ${sourceId} and mode = 'generate'`;
    expect(jobs.map((j) => j.video_id).sort()).toEqual(ids);
    for (const j of jobs) {
      expect(j.status).toBe('completed');
      expect(j.polls).toBeGreaterThanOrEqual(1);
    }

    // a second backfill generates nothing more: the budget is spent, and none is asked twice
    const again = await runCli(['backfill', '--source', String(sourceId), '--timeout', '60s'], h.env, 120_000);
    expectExit(again, 0);
    const [count] = await h.database.sql<{ n: number }[]>`
      select count(*)::int as n from batches where source_id = ${sourceId} and mode = 'generate'`;
    expect(count!.n).toBe(ids.length);
  });
});
