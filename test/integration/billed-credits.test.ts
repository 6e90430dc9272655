/**
 * Billed credits, exact: every paid request records what its answer's `x-billable-requests` says
 * it cost (`credit_charges`), and the sum equals what `/me` says the account used, and what
 * `backfill --dry-run` estimated at the published prices, to the credit. The CLI runs as a real
 * process against the simulator over real HTTP (which sends the header with the published
 * prices), so the CLI is the only client of the account while a step runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient, type RequestEvent } from '../../src/api/client.ts';
import { chargeOf } from '../../src/domain/charges.ts';
import { crawlCredits } from '../../src/domain/prices.ts';
import { expectExit } from '../helpers/cli.ts';
import { createPipelineHarness, runCli, waitFor, type CliResult, type PipelineHarness } from '../helpers/pipeline.ts';

let h: PipelineHarness;

const cli = (args: string[], env: Record<string, string> = h.env): Promise<CliResult> => runCli(args, env, 120_000);

async function used(): Promise<number> {
  return (await h.api.me()).usedCredits;
}

interface ChargeRow {
  endpoint: string;
  status: number | null;
  credits: number;
  estimated: number | null;
  basis: string;
  source_id: number | null;
  sync_run_id: number | null;
}

async function charges(): Promise<ChargeRow[]> {
  return h.database.sql<ChargeRow[]>`
    select endpoint, status, credits, estimated, basis, source_id, sync_run_id::float8 as sync_run_id from credit_charges order by id`;
}

const sum = (rows: ChargeRow[]) => rows.reduce((n, r) => n + r.credits, 0);

/** The source ID `sources add` printed. */
function addedId(r: CliResult): number {
  expectExit(r, 0);
  const m = /source (\d+)/i.exec(r.stdout);
  expect(m, r.stdout).not.toBeNull();
  return Number(m![1]);
}

beforeAll(async () => {
  h = await createPipelineHarness('billed_credits', {
    catalog: { channels: 3, channelSizes: [24, 16, 12], noTranscriptShare: 0.3, privateShare: 0, goneShare: 0 },
    jobs: { queuedMs: 100, itemsPerSecond: 2000, transcriptJobMs: 200 },
  });
});

afterAll(async () => {
  await h?.close();
});

describe('credits billed = /me = the dry-run estimate', () => {
  const sourceIds: number[] = [];
  let withoutCaptions: string[] = [];

  it('sources added through the CLI record what resolving them was billed', async () => {
    const [c0, c1, c2] = h.sim.catalog.channels();
    const before = await used();
    sourceIds.push(addedId(await cli(['sources', 'add', 'channel', c0!.handle, '--lang', 'en'])));
    sourceIds.push(addedId(await cli(['sources', 'add', 'playlist', c1!.playlistIds[0]!, '--lang', 'en'])));
    sourceIds.push(
      addedId(await cli(['sources', 'add', 'search', 'billing exactness', '--limit', '30', '--lang', 'en'])),
    );
    sourceIds.push(
      addedId(await cli(['sources', 'add', 'videos', ...h.sim.catalog.videoIds(c2!.id)!.slice(0, 5), '--lang', 'en'])),
    );
    const rows = await charges();
    expect(sum(rows)).toBe((await used()) - before);
    for (const r of rows) expect(r.basis).toBe('header');
  });

  it('a first backfill: the sum of the answers headers equals /me, per source and per run', async () => {
    const before = await used();
    const chargedBefore = (await charges()).length;
    const r = await cli(['backfill', '--all']);
    expectExit(r, 0);
    const rows = (await charges()).slice(chargedBefore);
    const delta = (await used()) - before;
    expect(delta).toBeGreaterThan(0);
    expect(sum(rows)).toBe(delta);
    expect(r.stdout).toContain(`credits: ${delta} billed (x-billable-requests of every answer), as /me says`);
    for (const row of rows) expect(row.basis).toBe('header');
    // every batch POST billed what was estimated: 1 + 1 per video
    const posts = rows.filter((x) => x.endpoint.startsWith('POST '));
    expect(posts.length).toBeGreaterThanOrEqual(8);
    for (const p of posts) expect(p.credits).toBe(p.estimated);
    // the search paged: one charge a page, 1 credit each
    expect(rows.filter((x) => x.endpoint === 'GET /videosite/search').length).toBeGreaterThanOrEqual(2);
    // each run's billed total is the sum of its charges, and every charge of the backfill has a run
    const runs = await h.database.sql<{ id: number; source_id: number; credits_billed: number | null }[]>`
      select id::float8 as id, source_id, credits_billed from sync_runs where finished_at is not null order by id`;
    expect(runs).toHaveLength(4);
    for (const run of runs) {
      expect(run.credits_billed).toBe(sum(rows.filter((x) => x.sync_run_id === run.id)));
      expect(rows.filter((x) => x.sync_run_id === run.id).every((x) => x.source_id === run.source_id)).toBe(true);
    }
    expect(rows.every((x) => x.sync_run_id !== null)).toBe(true);
    withoutCaptions = h.sim.catalog
      .videoIds(h.sim.catalog.channels()[0]!.id)!
      .filter((id) => h.sim.catalog.videoInfo(id)!.transcriptLanguages.length === 0)
      .slice(0, 2);
    expect(withoutCaptions).toHaveLength(2);
  });

  it('backfill --refresh of each source, a generated transcript among them: billed = /me = the dry-run estimate, to the credit', async () => {
    // a list of videos known (from the channel's batch) to have no captions, generated from their audio
    sourceIds.push(
      addedId(await cli(['sources', 'add', 'videos', ...withoutCaptions, '--lang', 'en', '--generate-missing'])),
    );
    // one source at a time: syncs run side by side may split shared videos into other batches
    // than the plan's (the dry run says so), which changes the per-batch credits
    let generated = 0;
    for (const id of sourceIds) {
      const plan = await cli(['backfill', '--source', String(id), '--refresh', '--dry-run']);
      expectExit(plan, 0);
      const m = /^total: .*: (\d+) credits?$/m.exec(plan.stdout);
      expect(m, plan.stdout).not.toBeNull();
      const estimate = Number(m![1]);

      const before = await used();
      const chargedBefore = (await charges()).length;
      const r = await cli(['backfill', '--source', String(id), '--refresh']);
      expectExit(r, 0);
      const rows = (await charges()).slice(chargedBefore);
      const delta = (await used()) - before;
      generated += rows.filter((x) => x.endpoint === 'GET /transcript' && x.credits >= 2).length;
      expect(delta, `source ${id}`).toBeGreaterThan(0);
      expect(sum(rows), `source ${id}`).toBe(delta);
      expect(delta, `source ${id}: estimate\n${plan.stdout}`).toBe(estimate);
    }
    expect(generated).toBe(withoutCaptions.length);
  });

  it('status shows what was billed today, per day and per source', async () => {
    const r = await cli(['status', '--json']);
    expectExit(r, 0);
    const report = JSON.parse(r.stdout) as {
      credits: {
        billedByDay: { credits: number }[];
        billedTodayBySource: { sourceId: number | null; credits: number }[];
      };
    };
    const all = sum(await charges());
    expect(report.credits.billedByDay[0]!.credits).toBe(all);
    expect(report.credits.billedTodayBySource.reduce((n, s) => n + s.credits, 0)).toBe(all);
    const text = await cli(['status']);
    expect(text.stdout).toContain('billed per UTC day');
  });
});

describe('an answer without x-billable-requests', () => {
  it('is recorded at the published price (here the same sum as /me)', async () => {
    h.sim.setFaults({ dropBillingHeader: true });
    try {
      const [, , c2] = h.sim.catalog.channels();
      const id = addedId(
        await cli(['sources', 'add', 'videos', ...h.sim.catalog.videoIds(c2!.id)!.slice(5, 8), '--lang', 'en']),
      );
      const chargedBefore = (await charges()).length;
      const before = await used();
      const r = await cli(['backfill', '--source', String(id)]);
      expectExit(r, 0);
      const rows = (await charges()).slice(chargedBefore);
      expect(rows.length).toBeGreaterThan(0);
      for (const row of rows) expect(row.basis).toBe('price');
      // the published prices are exact here: the same sum as /me
      expect(sum(rows)).toBe((await used()) - before);
    } finally {
      h.sim.setFaults({ dropBillingHeader: false });
    }
  });
});

describe('an answer whose header disagrees with /me', () => {
  it('is recorded as the header says, and backfill reports the difference to /me', async () => {
    const [, , c2] = h.sim.catalog.channels();
    const id = addedId(
      await cli(['sources', 'add', 'videos', ...h.sim.catalog.videoIds(c2!.id)!.slice(8, 11), '--lang', 'en']),
    );
    const before = await used();
    h.sim.script([{ match: 'POST /videosite/video/batch', process: true, headers: { 'x-billable-requests': '0' } }]);
    try {
      const r = await cli(['backfill', '--source', String(id)]);
      expectExit(r, 0);
      const delta = (await used()) - before;
      // what the metadata batch cost (1 + 1 per video), which its header did not say
      const [meta] = await h.database.sql<{ credits: number }[]>`
        select credits_estimated as credits from batches where source_id = ${id} and kind = 'video'`;
      expect(meta!.credits).toBeGreaterThanOrEqual(2);
      expect(r.stdout).toContain(
        `credits: ${delta - meta!.credits} billed (x-billable-requests of every answer); /me says ${delta} used meanwhile (a difference of ${meta!.credits}:`,
      );
    } finally {
      h.sim.clearScript();
    }
  });
});

describe('a request the client gave up on', () => {
  it('is charged by the API when it completed, and recorded as possibly charged', async () => {
    const events: RequestEvent[] = [];
    const client = createApiClient({
      baseUrl: h.sim.baseUrl,
      apiKey: h.sim.apiKey,
      platform: h.sim.platform,
      headersTimeoutMs: 500,
      retry: { maxAttempts: 1 },
      onRequest: (e) => events.push(e),
    });
    // the API does the work (and charges it), then no answer comes: the client stops waiting
    h.sim.script([{ match: 'GET /videosite/channel', process: true, hang: true }]);
    const before = await used();
    try {
      await expect(
        client.getChannel({ id: h.sim.catalog.channels()[1]!.id }, { expectedCredits: 1 }),
      ).rejects.toMatchObject({ code: 'timeout' });
    } finally {
      h.sim.clearScript();
      await client.close();
    }
    expect(events).toHaveLength(1);
    expect(chargeOf(events[0]!)).toEqual({ credits: 1, basis: 'unanswered', estimated: 1 });
    // the server went on and completed it: charged all the same
    await waitFor(
      async () => ((await used()) === before + 1 ? true : undefined),
      10_000,
      'the timed-out request charged',
    );
  });
});

describe('a crawl', () => {
  it('bills 1 for the request in its answer, and 1 per page crawled after it: /me = crawlCredits(pages)', async () => {
    const events: RequestEvent[] = [];
    const client = createApiClient({
      baseUrl: h.sim.baseUrl,
      apiKey: h.sim.apiKey,
      platform: h.sim.platform,
      onRequest: (e) => events.push(e),
    });
    try {
      const before = await used();
      const { jobId } = await client.startCrawl({ url: 'https://docs.example.com/guide', limit: 12 });
      expect(events.at(-1)).toMatchObject({ endpoint: 'POST /web/crawl', billedCredits: 1 });
      await waitFor(
        async () => ((await client.getCrawl(jobId)).status === 'completed' ? true : undefined),
        30_000,
        'the crawl completed',
      );
      let pages = 0;
      for await (const _ of client.crawlPages(jobId)) pages++;
      expect(pages).toBeGreaterThan(0);
      // polls are free: no answer after the POST billed anything
      expect(events.filter((e) => e.endpoint !== 'POST /web/crawl').every((e) => e.billedCredits === 0)).toBe(true);
      expect((await used()) - before).toBe(crawlCredits(pages));
    } finally {
      await client.close();
    }
  });
});
