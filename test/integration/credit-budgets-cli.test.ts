/**
 * Daily credit budgets and `backfill --dry-run`, through the real CLI against the simulator over
 * HTTP: what a team sets (`--max-credits-per-day`, CREDIT_BUDGET_PER_DAY), what a person reads
 * (the printed lines, the exit code), and what the account spent (the simulator's `/me`), with
 * the rows Postgres keeps. Each describe block has a harness (database, simulator) of its own:
 * a budget counts everything spent today in its database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectExit } from '../helpers/cli.ts';
import { createPipelineHarness, runCli, type CliResult, type PipelineHarness } from '../helpers/pipeline.ts';
import { parseLogLines } from '../helpers/proc.ts';

let h: PipelineHarness;

function ownHarness(label: string): void {
  beforeAll(async () => {
    h = await createPipelineHarness(`credit-budgets-${label}`, {
      catalog: { channels: 3, channelSizes: [20, 20, 20] },
    });
  });
  afterAll(async () => {
    await h?.close();
  });
}

const cli = (args: string[], env: Record<string, string> = {}): Promise<CliResult> =>
  runCli(args, { ...h.env, ...env }, 90_000);
const used = async () => (await h.api.me()).usedCredits;
const channel = (i: number) => h.sim.catalog.channels()[i]!;

/** `sources add` through the CLI; the new source's ID from its confirmation line. */
async function addSource(args: string[]): Promise<{ id: number; r: CliResult }> {
  const r = await cli(['sources', 'add', ...args]);
  expectExit(r, 0);
  return { id: Number(/^source (\d+) added/.exec(r.stdout)?.[1]), r };
}

describe('--max-credits-per-day', () => {
  ownHarness('source');

  it('is taken by every kind, stored, shown by sources add and sources list; a bad value is a usage error naming it', async () => {
    const a = await addSource(['channel', channel(0).id, '--lang', 'en', '--max-credits-per-day', '30']);
    expect(a.r.stdout).toContain('at most 30 credits a day');
    const v = await addSource([
      'videos',
      ...h.sim.catalog.videoIds(channel(1).id)!.slice(0, 2),
      '--max-credits-per-day',
      '500',
    ]);
    const s = await addSource(['search', 'budget words', '--max-credits-per-day', '7']);
    const ids = [a.id, v.id, s.id];
    const rows = await h.database.sql<{ id: number; max_credits_per_day: number | null }[]>`
      select id, max_credits_per_day from sources where id = any(${ids}::int[]) order by id`;
    expect(rows).toEqual([
      { id: a.id, max_credits_per_day: 30 },
      { id: v.id, max_credits_per_day: 500 },
      { id: s.id, max_credits_per_day: 7 },
    ]);
    const list = await cli(['sources', 'list']);
    expectExit(list, 0);
    const lines = list.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/\slangs\s+transcripts\s+translate\s+credits\/day\s+refresh\s+cron\s/);
    expect(lines.find((l) => l.startsWith(`${a.id} `))).toMatch(
      new RegExp(`^${a.id}\\s+channel\\s.*\\sen\\s+native\\s+none\\s+30\\s+never\\s+-\\s+no\\s`),
    );
    const json = JSON.parse((await cli(['sources', 'list', '--json'])).stdout) as {
      id: number;
      maxCreditsPerDay: number | null;
    }[];
    expect(json.filter((x) => ids.includes(x.id)).map((x) => x.maxCreditsPerDay)).toEqual([30, 500, 7]);

    const before = (await h.database.sql`select 1 from sources`).length;
    for (const bad of ['0', '1.5', 'lots']) {
      const r = await cli(['sources', 'add', 'channel', channel(2).id, '--max-credits-per-day', bad]);
      expectExit(r, 2);
      expect(r.stderr).toContain(`option '--max-credits-per-day <n>' argument '${bad}' is invalid`);
    }
    expect(await h.database.sql`select 1 from sources`).toHaveLength(before);
    await h.database.sql`delete from sources where id = any(${ids}::int[])`;
  });

  it("a sync past the source's budget is refused before its batches, recorded, exits 3, and is no account hold", async () => {
    const src = { id: (await addSource(['channel', channel(1).id, '--lang', 'en', '--max-credits-per-day', '30'])).id };
    const before = await used();
    // the listing (1 credit) fits the 30; its two batches, 2 x (1 + 20), do not
    const r = await cli(['backfill', '--source', String(src.id)]);
    expectExit(r, 3);
    expect(r.stdout).toContain(`source ${src.id}: refused-credits, 20 listed (listing: 1 credit)`);
    expect(r.stdout).toContain(
      `daily credit budget spent: this submission needs 42, 29 are left of --max-credits-per-day 30 of source ${src.id} (1 spent or reserved since 00:00 UTC`,
    );
    expect((await used()) - before).toBe(1);
    const runs = await h.database.sql<
      { outcome: string; detail: string; listing_credits: number; credits_estimated: number }[]
    >`
      select outcome, detail, listing_credits, credits_estimated from sync_runs where source_id = ${src.id}`;
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ outcome: 'refused-credits', listing_credits: 1, credits_estimated: 42 });
    expect(runs[0]!.detail).toMatch(/^daily credit budget spent/);
    const [s] = await h.database.sql<
      { last_error_code: string }[]
    >`select last_error_code from sources where id = ${src.id}`;
    expect(s!.last_error_code).toBe('budget');
    expect(await h.database.sql`select 1 from upstream_holds`).toHaveLength(0);
    expect(await h.database.sql`select 1 from batches where source_id = ${src.id}`).toHaveLength(0);
    expect(await h.database.sql`select 1 from credit_reservations where released_at is null`).toHaveLength(0);
    const refusal = parseLogLines(r.stderr).find((l) => l.event === 'sync.refused_budget');
    expect(refusal).toMatchObject({
      sourceId: src.id,
      limit: 'source-budget',
      needed: 42,
      available: 29,
      budget: 30,
      spent: 1,
    });

    // 29 left: the next sync's listing still fits; 28 after it, still short of 42
    const again = await cli(['backfill', '--source', String(src.id)]);
    expectExit(again, 3);
    expect(again.stdout).toContain('needs 42, 28 are left');
    expect((await used()) - before).toBe(2);
  });
});

describe('CREDIT_BUDGET_PER_DAY', () => {
  ownHarness('installation');

  it("keeps a backfill of several sources within the day's budget: what does not fit is refused and recorded", async () => {
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) ids.push((await addSource(['channel', channel(i).id, '--lang', 'en'])).id);
    const before = await used();
    // room for the three listings and one source's two batches (2 x 21); for a second source's,
    // 1 short even if its check came before the third listing
    const budget = 3 + 42 + 40;
    const r = await cli(['backfill', '--all'], { CREDIT_BUDGET_PER_DAY: String(budget), LOG_LEVEL: 'warn' });
    expectExit(r, 3);
    const spent = (await used()) - before;
    const runs = await h.database.sql<
      { outcome: string; detail: string | null }[]
    >`select outcome, detail from sync_runs order by source_id`;
    expect(runs.map((x) => x.outcome).sort()).toEqual(['refused-credits', 'refused-credits', 'submitted']);
    for (const x of runs.filter((y) => y.outcome === 'refused-credits')) {
      expect(x.detail).toMatch(/^daily credit budget spent: .* of CREDIT_BUDGET_PER_DAY=85 /);
    }
    expect(spent).toBe(3 + 42);
    expect(spent).toBeLessThanOrEqual(budget);
    const [b] = await h.database.sql<
      { n: number }[]
    >`select coalesce(sum(credits_estimated), 0)::int as n from batches`;
    expect(b!.n).toBe(42);
    expect(await h.database.sql`select 1 from upstream_holds`).toHaveLength(0);
    const refusals = parseLogLines(r.stderr).filter((l) => l.event === 'sync.refused_budget');
    expect(refusals.map((l) => l.limit)).toEqual(['installation-budget', 'installation-budget']);
  });
});

describe('backfill --dry-run', () => {
  ownHarness('dry-run');

  it('prints every batch and listing with the exact credits, spends nothing, writes nothing, and a real run then spends exactly that', async () => {
    const ch = channel(0);
    const listed = h.sim.catalog.videoIds(ch.id)!;
    const chan = await addSource(['channel', ch.id, '--lang', 'en', '--limit', '10']);
    expectExit(await cli(['backfill', '--source', String(chan.id)]), 0);
    // two lists of IDs: the first overlaps what the channel bought (8, 9) and adds two (10, 11);
    // the second repeats those two and adds one (12)
    const a = await addSource(['videos', ...listed.slice(8, 12), '--lang', 'en']);
    const b = await addSource(['videos', ...listed.slice(10, 13), '--lang', 'en']);
    const ids = [chan.id, a.id, b.id];

    const rows = async () =>
      (
        await h.database.sql<{ n: string }[]>`
        select (select count(*) from batches) || '/' || (select count(*) from batch_submissions) || '/' ||
          (select count(*) from sync_runs) || '/' || (select count(*) from credit_reservations) || '/' ||
          (select count(*) from credit_snapshots) || '/' || (select count(*) from video_sync) as n`
      )[0]!.n;
    const rowsBefore = await rows();
    const usedBefore = await used();
    const calls = structuredClone(h.sim.stats().byEndpoint);
    const r = await cli(['backfill', '--dry-run', '--source', ids.join(',')], { CREDIT_BUDGET_PER_DAY: '100000' });
    expectExit(r, 0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toBe(
      'dry run: nothing is submitted and no paid request is made (the one request is GET /me, which is free)',
    );
    const table = lines
      .slice(
        1,
        lines.findIndex((l) => l.startsWith('total:')),
      )
      .map((l) => l.split(/\s+/));
    expect(table).toEqual([
      ['source', 'kind', 'lang', 'videos', 'credits'],
      [String(chan.id), 'listing', '-', '-', '1'],
      [String(a.id), 'video', '-', '2', '3'],
      [String(a.id), 'transcript', 'en', '2', '3'],
      [String(b.id), 'video', '-', '1', '2'],
      [String(b.id), 'transcript', 'en', '1', '2'],
    ]);
    expect(r.stdout).toContain('total: 4 batches and 1 listing: 11 credits\n');
    expect(r.stdout).toContain(`source ${chan.id} (channel `);
    expect(r.stdout).toContain('nothing due among the 10 videos Postgres knows it lists');
    expect(r.stdout).toContain('not known without a paid listing (not in the total):\n');
    expect(r.stdout).toContain(
      `  - source ${chan.id}: videos the listing finds that Postgres has not seen: 1 credit each for metadata, transcript en, and 1 per batch more (the listing returns at most 10)\n`,
    );
    expect(r.stdout).toContain(
      `  - source ${b.id}: 4 of its due videos (per kind and language) are planned under an earlier source of this plan`,
    );
    expect(r.stdout).toMatch(
      /^account: \d+ credits left above the reserve, 0 reserved by syncs in progress: the plan fits$/m,
    );
    expect(r.stdout).toMatch(
      /^budget: CREDIT_BUDGET_PER_DAY 100000, \d+ spent or reserved today \(UTC\), \d+ left: the plan fits$/m,
    );

    // nothing spent, nothing written, no call but /me
    expect(await used()).toBe(usedBefore);
    expect(await rows()).toBe(rowsBefore);
    const after = h.sim.stats().byEndpoint;
    const paid = Object.keys(after).filter((e) => !e.endsWith(' /me') && after[e]!.total !== (calls[e]?.total ?? 0));
    expect(paid).toEqual([]);

    // the same syncs for real, one after the other (the plan's order): exactly the 11 credits
    for (const id of ids) {
      const run = await cli(['backfill', '--source', String(id)]);
      expectExit(run, 0);
    }
    expect((await used()) - usedBefore).toBe(11);
  });

  it('a channel with new videos: the plan says it cannot know them; a source with its batches in flight plans no listing', async () => {
    const ch = channel(1);
    const s = await addSource(['channel', ch.id]);
    // never listed: Postgres knows none of its videos
    const r = await cli(['backfill', '--dry-run', '--source', String(s.id)]);
    expectExit(r, 0);
    expect(r.stdout).toContain('total: 0 batches and 1 listing: 1 credit\n');
    expect(r.stdout).toContain('nothing due among the 0 videos Postgres knows it lists');
    expect(r.stdout).toContain(`  - source ${s.id}: videos the listing finds that Postgres has not seen`);

    // its batches in flight (submitted, nothing polls them here): no listing, nothing submitted
    h.sim.setJobSettings({ itemsPerSecond: 0.01 });
    try {
      expectExit(await cli(['backfill', '--no-wait', '--source', String(s.id)]), 0);
      const busy = await cli(['backfill', '--dry-run', '--source', String(s.id)]);
      expectExit(busy, 0);
      expect(busy.stdout).toContain('total: 0 batches and 0 listings: 0 credits\n');
      expect(busy.stdout).toContain(
        `metadata, transcript (default language) still in flight: not submitted again until it ends`,
      );
    } finally {
      h.sim.setJobSettings({ itemsPerSecond: 2000 });
    }
  });

  it('an unknown source is a usage error (exit 2), as without --dry-run', async () => {
    const r = await cli(['backfill', '--dry-run', '--source', '999999']);
    expectExit(r, 2);
    expect(r.stderr).toContain('--source: no source with ID 999999');
    expect(r.stdout).toBe('');
  });
});
