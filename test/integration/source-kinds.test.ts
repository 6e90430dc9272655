/**
 * The source kinds beyond a plain channel or playlist, against the simulator over real HTTP,
 * with real Postgres and Redis: a saved search (pages followed, only new videos bought on the
 * next sync), a channel with `--include shorts,live`, a channel whose listing shrank (a video it
 * listed before is still retried), and the CLI's refusals. Sources are registered through the
 * real CLI where the command line is what is tested. Each describe block works on its own
 * sources and checks what it bought against what was bought before it, so the blocks do not
 * depend on each other's order.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SearchQuery } from '../../src/api/schemas.ts';
import type { BatchKind } from '../../src/domain/batches.ts';
import { runBackfill, type BackfillReport } from '../../src/pipeline/commands/backfill.ts';
import { registerSource } from '../../src/pipeline/commands/sources.ts';
import { expectCleanError, expectExit } from '../helpers/cli.ts';
import { postsPerVideo } from '../helpers/posts.ts';
import { createPipelineHarness, runCli, type CliResult, type PipelineHarness } from '../helpers/pipeline.ts';

let h: PipelineHarness;
let dir: string;

/** The simulator's page size of a search without `limit`. */
const SEARCH_PAGE = 20;
const SEARCH_ENDPOINT = 'GET /videosite/search';

beforeAll(async () => {
  // 4 channels of 40 and 30 regular videos, each with the catalog's default 6 shorts and 2 live streams
  h = await createPipelineHarness('source-kinds', { catalog: { channels: 4, channelSizes: [40, 30, 30, 30] } });
  h.startWorkers(['poller', 'sink']);
  dir = await mkdtemp(join(tmpdir(), 'vsi-kinds-'));
});

afterAll(async () => {
  await h?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const cli = (args: string[]): Promise<CliResult> => runCli(args, h.env, 60_000);

async function usedCredits(): Promise<number> {
  return (await h.api.me()).usedCredits;
}

async function sourceCount(): Promise<number> {
  const [r] = await h.database.sql<{ n: number }[]>`select count(*)::int as n from sources`;
  return r!.n;
}

function addedSourceId(r: CliResult, kind: string): number {
  expectExit(r, 0);
  const m = new RegExp(`^source (\\d+) added: ${kind} `, 'm').exec(r.stdout);
  expect(m, r.stdout).not.toBeNull();
  return Number(m![1]);
}

function backfill(sourceIds: number[]): Promise<BackfillReport> {
  return runBackfill(h.deps, { sourceIds, wait: true, timeoutMs: 30_000, checkIntervalMs: 100 });
}

function requestsTo(endpoint: string): number {
  return h.sim.stats().byEndpoint[endpoint]?.total ?? 0;
}

/** Every video ID named by the `videoIds` of the given batches of `kind`, with repeats. */
async function namedBy(jobIds: readonly string[], kind: BatchKind): Promise<string[]> {
  const rows = await h.database.sql<{ id: string }[]>`
    select jsonb_array_elements_text(request->'videoIds') as id from batches
    where job_id = any(${[...jobIds]}::text[]) and kind = ${kind}`;
  return rows.map((r) => r.id);
}

/** Every video ID named by any batch of the source of `kind`, with repeats. */
async function namedBySource(sourceId: number, kind: BatchKind): Promise<string[]> {
  const rows = await h.database.sql<{ job_id: string }[]>`select job_id from batches where source_id = ${sourceId}`;
  return namedBy(
    rows.map((r) => r.job_id),
    kind,
  );
}

async function remembered(sourceId: number): Promise<string[]> {
  const rows = await h.database.sql<
    { video_id: string }[]
  >`select video_id from source_videos where source_id = ${sourceId}`;
  return rows.map((r) => r.video_id).sort();
}

async function storedVideos(ids: readonly string[]): Promise<string[]> {
  const rows = await h.database.sql<
    { id: string }[]
  >`select id from videos where id = any(${[...ids]}::text[]) order by id`;
  return rows.map((r) => r.id);
}

const sorted = (ids: Iterable<string>): string[] => [...ids].sort();
const without = (ids: readonly string[], known: ReadonlyMap<string, number> | ReadonlySet<string>): string[] =>
  ids.filter((id) => !known.has(id));

/**
 * The first `n` distinct video results of a search, paged as a person would read them, and how
 * many pages that took: the expectation a search source's sync is held to. Costs 1 credit a page.
 */
async function firstResults(
  query: Pick<SearchQuery, 'query' | 'sortBy'>,
  n: number,
): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let pages = 0;
  let nextPageToken: string | undefined;
  do {
    const page = await h.api.search({
      ...query,
      type: 'video',
      ...(nextPageToken !== undefined ? { nextPageToken } : {}),
    });
    pages += 1;
    for (const r of page.results) if (r.type === 'video' && !ids.includes(r.id) && ids.length < n) ids.push(r.id);
    nextPageToken = page.nextPageToken;
  } while (ids.length < n && nextPageToken !== undefined);
  expect(ids, 'the search has enough results for the test').toHaveLength(n);
  return { ids, pages };
}

describe('a channel with --include shorts,live', () => {
  let withInclude: number;
  let plain: number;
  const ch = () => h.sim.catalog.channels()[1]!;
  const other = () => h.sim.catalog.channels()[2]!;

  it('buys the listed shorts and live streams as videoIds, and they land; a channel without --include buys none', async () => {
    const [a, b] = await Promise.all([
      cli(['sources', 'add', 'channel', ch().handle, '--include', 'shorts,live']),
      cli(['sources', 'add', 'channel', other().handle]),
    ]);
    withInclude = addedSourceId(a!, 'channel');
    plain = addedSourceId(b!, 'channel');
    const [src] = await h.database.sql<{ include: string[] }[]>`select include from sources where id = ${withInclude}`;
    expect(src!.include).toEqual(['shorts', 'live']);

    const boughtBefore = { video: postsPerVideo(h.sim, 'video'), transcript: postsPerVideo(h.sim, 'transcript') };
    const report = await backfill([withInclude, plain]);
    expect(report.syncs.map((s) => s.outcome)).toEqual(['submitted', 'submitted']);
    expect(report.exitCode).toBe(0);

    const regular = h.sim.catalog.videoIds(ch().id)!;
    const shorts = h.sim.catalog.videoIds(ch().id, 'short')!;
    const lives = h.sim.catalog.videoIds(ch().id, 'live')!;
    // the premise: the catalog gives the channel some of each
    expect(shorts.length).toBeGreaterThan(0);
    expect(lives.length).toBeGreaterThan(0);
    expect(report.syncs[0]!.listed).toBe(regular.length + shorts.length + lives.length);
    for (const kind of ['video', 'transcript'] as const) {
      const named = await namedBySource(withInclude, kind);
      expect(named.length).toBe(new Set(named).size);
      // every listed video, the shorts and live streams too, bar one another source already bought
      expect(sorted(named)).toEqual(sorted(without([...regular, ...shorts, ...lives], boughtBefore[kind])));
      expect(named.filter((id) => shorts.includes(id)).length).toBeGreaterThan(0);
      expect(named.filter((id) => lives.includes(id)).length).toBeGreaterThan(0);
    }
    const extras = [...shorts, ...lives];
    expect(await storedVideos(extras)).toEqual(
      sorted(extras.filter((id) => h.sim.catalog.videoInfo(id)!.fate === 'public')),
    );
    expect((await storedVideos(extras)).length).toBeGreaterThan(0);
    const [shortRow] = await h.database.sql<
      { channel_id: string }[]
    >`select channel_id from videos where id = ${(await storedVideos(shorts))[0]!}`;
    expect(shortRow!.channel_id).toBe(ch().id);

    // the other channel: its regular videos only
    const otherRegular = h.sim.catalog.videoIds(other().id)!;
    const otherExtras = new Set([
      ...h.sim.catalog.videoIds(other().id, 'short')!,
      ...h.sim.catalog.videoIds(other().id, 'live')!,
    ]);
    expect(report.syncs[1]!.listed).toBe(otherRegular.length);
    for (const kind of ['video', 'transcript'] as const) {
      const named = await namedBySource(plain, kind);
      expect(named.filter((id) => otherExtras.has(id))).toEqual([]);
      expect(sorted(named)).toEqual(sorted(without(otherRegular, boughtBefore[kind])));
    }
    expect((await remembered(plain)).filter((id) => otherExtras.has(id))).toEqual([]);
  });
});

describe('a channel whose listing shrank', () => {
  let sourceId: number;
  const ch = () => h.sim.catalog.channels()[3]!;
  let retryable: Record<BatchKind, string[]>;
  let listedNow: string[];

  it('leaves some videos retryable after its first sync (item errors upstream)', async () => {
    const s = await registerSource(h.deps, { kind: 'channel', ref: ch().id, langs: [], textOnly: false, cron: null });
    sourceId = s.id;
    h.sim.setJobSettings({ itemErrorRate: 0.4 });
    try {
      const report = await backfill([sourceId]);
      expect(report.syncs[0]!.outcome).toBe('submitted');
      expect(report.syncs[0]!.listed).toBe(30);
    } finally {
      h.sim.setJobSettings({ itemErrorRate: 0 });
    }
    const rows = await h.database.sql<{ kind: BatchKind; video_id: string }[]>`
      select b.kind, i.video_id from batch_items i join batches b using (job_id)
      where b.source_id = ${sourceId} and i.state = 'retryable' and i.resubmitted_in is null`;
    retryable = { video: [], transcript: [], page: [], media: [] };
    for (const r of rows) retryable[r.kind].push(r.video_id);
    expect(await remembered(sourceId)).toEqual(sorted(h.sim.catalog.videoIds(ch().id)!));
  });

  it('re-submits a remembered retryable video that fell out of the listing, and keeps every remembered row', async () => {
    const LIMIT = 5;
    listedNow = h.sim.catalog.videoIds(ch().id)!.slice(0, LIMIT);
    const fellOut = without(retryable.video, new Set(listedNow));
    // the premise: some retryable videos are no longer in the (shrunk) listing
    expect(fellOut.length).toBeGreaterThan(0);
    await h.database.sql`update sources set max_videos = ${LIMIT} where id = ${sourceId}`;

    const [clock] = await h.database.sql<{ now: Date }[]>`select now()`;
    const syncStart = clock!.now;
    const before = await usedCredits();
    const report = await backfill([sourceId]);
    const sync = report.syncs[0]!;
    expect(sync.outcome).toBe('submitted');
    expect(sync.listed).toBe(LIMIT);
    for (const kind of ['video', 'transcript'] as const) {
      // exactly the retryable ones, listed now or not; nothing that already ended
      expect(sorted(await namedBy(sync.jobIds, kind))).toEqual(sorted(retryable[kind]));
    }
    const kinds = (['video', 'transcript'] as const).filter((k) => retryable[k].length > 0);
    expect((await usedCredits()) - before).toBe(1 + kinds.reduce((n, k) => n + 1 + retryable[k].length, 0));

    // they landed: the fell-out videos are rows now (bar a title Postgres cannot hold, set aside)
    const setAside = await h.database.sql<{ video_id: string }[]>`
      select i.video_id from batch_items i join batches b using (job_id)
      where b.job_id = any(${sync.jobIds}::text[]) and b.kind = 'video' and i.state = 'quarantined'`;
    expect(await storedVideos(fellOut)).toEqual(sorted(without(fellOut, new Set(setAside.map((q) => q.video_id)))));

    // the source still remembers all 30; only the 5 listed now were listed by this sync
    const rows = await h.database.sql<{ video_id: string; relisted: boolean }[]>`
      select video_id, last_listed_at >= ${syncStart} as relisted from source_videos where source_id = ${sourceId}`;
    expect(sorted(rows.map((r) => r.video_id))).toEqual(sorted(h.sim.catalog.videoIds(ch().id)!));
    expect(sorted(rows.filter((r) => r.relisted).map((r) => r.video_id))).toEqual(sorted(listedNow));
  });

  it('once nothing is due, a sync spends only its listing', async () => {
    const before = await usedCredits();
    const report = await backfill([sourceId]);
    expect(report.syncs.map((s) => s.outcome)).toEqual(['up-to-date']);
    expect((await usedCredits()) - before).toBe(1);
  });
});

describe('a saved search', () => {
  const QUERY = 'rust async';
  const FIRST_LIMIT = 50;
  const SECOND_LIMIT = 70;
  let sourceId: number;
  let first: { ids: string[]; pages: number };
  let second: { ids: string[]; pages: number };
  /** POSTs per video before this search bought anything, per kind */
  let postsBeforeSearch: Record<'video' | 'transcript', Map<string, number>>;

  it('sources add search keeps the query and its filters, without an API call', async () => {
    const requests = h.sim.stats().total;
    const r = await cli(['sources', 'add', 'search', QUERY, '--limit', String(FIRST_LIMIT), '--sort-by', 'date']);
    sourceId = addedSourceId(r, 'search');
    expect(h.sim.stats().total).toBe(requests);
    const [src] = await h.database.sql<{ kind: string; max_videos: number; search: unknown }[]>`
      select kind, max_videos, search from sources where id = ${sourceId}`;
    expect(src).toEqual({
      kind: 'search',
      max_videos: FIRST_LIMIT,
      search: { query: QUERY, sortBy: 'date', type: 'video' },
    });
  });

  it('the first sync follows nextPageToken up to --limit results and buys the ones not yet bought', async () => {
    first = await firstResults({ query: QUERY, sortBy: 'date' }, FIRST_LIMIT);
    second = await firstResults({ query: QUERY, sortBy: 'date' }, SECOND_LIMIT);
    // the premise: --limit takes more than one page
    expect(first.pages).toBeGreaterThanOrEqual(Math.ceil(FIRST_LIMIT / SEARCH_PAGE));

    const boughtBefore = { video: postsPerVideo(h.sim, 'video'), transcript: postsPerVideo(h.sim, 'transcript') };
    postsBeforeSearch = boughtBefore;
    const searches = requestsTo(SEARCH_ENDPOINT);
    const before = await usedCredits();
    const report = await backfill([sourceId]);
    expect(report.exitCode).toBe(0);
    const sync = report.syncs[0]!;
    expect(sync.outcome).toBe('submitted');

    // every page read, each paid for and recorded as the listing's cost
    expect(requestsTo(SEARCH_ENDPOINT) - searches).toBe(first.pages);
    expect(sync.listingCredits).toBe(first.pages);
    const [run] = await h.database.sql<{ listing_credits: number; videos_listed: number }[]>`
      select listing_credits, videos_listed from sync_runs where source_id = ${sourceId} order by id desc limit 1`;
    expect(run).toEqual({ listing_credits: first.pages, videos_listed: FIRST_LIMIT });
    expect(await remembered(sourceId)).toEqual(sorted(first.ids));

    for (const kind of ['video', 'transcript'] as const) {
      expect(sorted(await namedBy(sync.jobIds, kind))).toEqual(sorted(without(first.ids, boughtBefore[kind])));
    }
    const [batches] = await h.database.sql<{ credits: number }[]>`
      select sum(credits_estimated)::int as credits from batches where job_id = any(${sync.jobIds}::text[])`;
    expect((await usedCredits()) - before).toBe(first.pages + batches!.credits);
    expect(await storedVideos(first.ids)).toEqual(
      sorted(first.ids.filter((id) => h.sim.catalog.videoInfo(id)!.fate === 'public')),
    );
  });

  it('a later sync with more results buys only the videos not yet known, none twice', async () => {
    const newOnes = without(second.ids, new Set(first.ids));
    expect(newOnes.length).toBeGreaterThanOrEqual(3);
    // two of the new results are bought by another source first, beside one the search already bought
    const elsewhere = await registerSource(h.deps, {
      kind: 'videos',
      refs: [newOnes[0]!, newOnes[1]!, first.ids[0]!].map((value, i) => ({ value, where: `argument ${i + 1}` })),
      langs: [],
      textOnly: false,
      cron: null,
    });
    const other = await backfill([elsewhere.id]);
    expect(other.exitCode).toBe(0);
    expect(sorted(await namedBy(other.syncs[0]!.jobIds, 'video'))).toEqual(sorted([newOnes[0]!, newOnes[1]!]));

    await h.database.sql`update sources set max_videos = ${SECOND_LIMIT} where id = ${sourceId}`;
    const boughtBefore = { video: postsPerVideo(h.sim, 'video'), transcript: postsPerVideo(h.sim, 'transcript') };
    const searches = requestsTo(SEARCH_ENDPOINT);
    const report = await backfill([sourceId]);
    expect(report.exitCode).toBe(0);
    const sync = report.syncs[0]!;
    expect(sync.outcome).toBe('submitted');
    expect(sync.listed).toBe(SECOND_LIMIT);
    expect(sync.listingCredits).toBe(second.pages);
    expect(requestsTo(SEARCH_ENDPOINT) - searches).toBe(second.pages);

    for (const kind of ['video', 'transcript'] as const) {
      // exactly the results nobody bought yet: not the first 50 again, not the other source's two
      const named = await namedBy(sync.jobIds, kind);
      expect(sorted(named)).toEqual(sorted(without(second.ids, boughtBefore[kind])));
      expect(named.length).toBeGreaterThan(0);
      expect(named.filter((id) => first.ids.includes(id) || id === newOnes[0] || id === newOnes[1])).toEqual([]);
      // over both syncs and the other source: each result bought once for this kind, or not
      // again if another source had bought it before the search was synced
      const posts = postsPerVideo(h.sim, kind);
      for (const id of second.ids) {
        const earlier = postsBeforeSearch[kind].get(id);
        expect(posts.get(id), `${kind} POSTs naming ${id}`).toBe(earlier ?? 1);
      }
    }
    expect(await remembered(sourceId)).toEqual(sorted(second.ids));
    expect(await storedVideos(second.ids)).toEqual(
      sorted(second.ids.filter((id) => h.sim.catalog.videoInfo(id)!.fate === 'public')),
    );
  });
});

describe('search filters', () => {
  it('sources add search keeps features as a list in the interface spelling and order; a sync sends them as the simulator takes them', async () => {
    const r = await cli([
      'sources',
      'add',
      'search',
      'filtered cooking',
      '--limit',
      '5',
      '--features',
      '4k,creative_commons',
      '--features',
      'hd',
      '--features',
      'hd',
      '--upload-date',
      'week',
      '--duration',
      'medium',
    ]);
    const id = addedSourceId(r, 'search');
    const [src] = await h.database.sql<
      { external_id: string; search: unknown }[]
    >`select external_id, search from sources where id = ${id}`;
    expect(src!.search).toEqual({
      query: 'filtered cooking',
      features: ['hd', 'creative-commons', '4k'],
      uploadDate: 'week',
      duration: 'medium',
      type: 'video',
    });
    expect(src!.external_id).toBe(
      'filtered cooking?uploadDate=week&type=video&duration=medium&features=hd,creative-commons,4k',
    );
    // the simulator answers 400 to a feature it does not list or to one comma-joined value
    const searches = requestsTo(SEARCH_ENDPOINT);
    const report = await backfill([id]);
    expect(report.syncErrors).toEqual([]);
    expect(report.syncs[0]!.outcome).toBe('submitted');
    expect(requestsTo(SEARCH_ENDPOINT) - searches).toBe(1);
  });

  it('a search source of an older release, one feature kept as a string in the old spelling, still syncs', async () => {
    const [row] = await h.database.sql<{ id: number }[]>`
      insert into sources (kind, ref, external_id, title, max_videos, langs, search)
      values ('search', 'legacy search', 'legacy search?type=video&features=creative_commons', 'legacy search', 3, '{}',
        ${h.database.sql.json({ query: 'legacy search', type: 'video', features: 'creative_commons' })})
      returning id`;
    const report = await backfill([row!.id]);
    expect(report.syncErrors).toEqual([]);
    expect(report.syncs[0]!.outcome).toBe('submitted');
  });

  it('a value the interface does not list is refused (exit 2) naming the flag, the field, the value and the valid values', async () => {
    const sources = await sourceCount();
    const requests = h.sim.stats().total;
    const [uploadDate, type, duration, features, channelType] = await Promise.all([
      cli(['sources', 'add', 'search', 'q', '--upload-date', 'yesterday']),
      cli(['sources', 'add', 'search', 'q', '--type', 'short']),
      cli(['sources', 'add', 'search', 'q', '--duration', 'forever']),
      cli(['sources', 'add', 'search', 'q', '--features', 'hd,creative-comons']),
      cli(['sources', 'add', 'search', 'q', '--type', 'channel']),
    ]);
    expectCleanError(
      uploadDate!,
      2,
      '--upload-date "yesterday" is not a valid uploadDate',
      'all, hour, today, week, month, year',
    );
    expectCleanError(type!, 2, '--type "short" is not a valid type', 'all, video, channel, playlist, movie');
    expectCleanError(duration!, 2, '--duration "forever" is not a valid duration', 'all, short, medium, long');
    expectCleanError(
      features!,
      2,
      '--features "creative-comons" is not a valid features',
      'hd, subtitles, creative-commons, 3d, live, 4k, 360, location, hdr, vr180',
    );
    // a value the interface takes, but not what a search source keeps
    expectCleanError(channelType!, 2, '--type "channel": a search source keeps videos');
    expect(await sourceCount()).toBe(sources);
    expect(h.sim.stats().total).toBe(requests);
  });
});

describe('sources add refuses what it cannot register', () => {
  it('exits 2 with a message naming the problem; nothing registered, no API call', async () => {
    const empty = join(dir, 'only-comments.txt');
    await writeFile(empty, '# nothing here yet\n\n   \n');
    const sources = await sourceCount();
    const requests = h.sim.stats().total;
    const handle = h.sim.catalog.channels()[0]!.handle;
    const [noIds, emptyFile, includeOnSearch, badSortBy, badInclude] = await Promise.all([
      cli(['sources', 'add', 'videos']),
      cli(['sources', 'add', 'videos', '--file', empty]),
      cli(['sources', 'add', 'search', 'rust async', '--include', 'shorts']),
      cli(['sources', 'add', 'search', 'rust async', '--sort-by', 'nope']),
      cli(['sources', 'add', 'channel', handle, '--include', 'music']),
    ]);
    expectCleanError(noIds!, 2, 'a videos source needs at least one video ID or URL');
    expectCleanError(emptyFile!, 2, 'a videos source needs at least one video ID or URL');
    expectCleanError(includeOnSearch!, 2, "unknown option '--include'");
    expectCleanError(badSortBy!, 2, '--sort-by "nope"', 'relevance, rating, date, views');
    expectCleanError(badInclude!, 2, '"music"', 'shorts, live');
    expect(await sourceCount()).toBe(sources);
    expect(h.sim.stats().total).toBe(requests);
  });
});
