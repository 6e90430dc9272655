/**
 * The admin server's pure parts: who counts as local, how credentials are read, HTML escaping,
 * freshness against a cron schedule, the credit chart's scale, sizes in bytes, the overview
 * page with sections left out and with thousands of sources, and the drill-down pages (a source,
 * a batch, an item, every batch): what they show, their links, escaping, truncation, 404s, paging
 * parameters and the hold banner.
 */
import { describe, expect, it } from 'vitest';
import { assertSafeExposure, credentialOf, isLoopbackHost, tokenMatches } from '../../src/admin/auth.ts';
import { compactBytes, creditChartSvg, niceTop } from '../../src/admin/chart.ts';
import { html, raw } from '../../src/admin/html.ts';
import {
  OVERVIEW_SOURCES_PER_PAGE,
  renderOverview,
  type OverviewData,
  type OverviewSource,
} from '../../src/admin/overview.ts';
import { freshnessOf, type HoldsStatus } from '../../src/pipeline/read/status.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { renderBatchPage, type BatchPageData, type BatchView } from '../../src/admin/batch-page.ts';
import { readStatusParam, renderBatchesPage, type BatchesPageData } from '../../src/admin/batches-page.ts';
import { renderItemPage, utf8Prefix } from '../../src/admin/item-page.ts';
import { readSearchParams, renderSearchPage } from '../../src/admin/search-page.ts';
import { readPageUrlParam, renderWebPage, webPageHref, type WebPageData } from '../../src/admin/web-page.ts';
import { shellQuote } from '../../src/shell-quote.ts';
import { placePage, readPageParam } from '../../src/admin/paging.ts';
import { renderSourcePage, type SourcePageData } from '../../src/admin/source-page.ts';
import type { BatchItemRow, BatchItemView, SourceDetail } from '../../src/db/admin-pages.ts';
import type { BatchProgress } from '../../src/db/batch-progress.ts';

const TOKEN = 'a-token-of-sixteen-plus';

describe('exposure', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.1.2.3', true],
    ['localhost', true],
    ['::1', true],
    ['[::1]', true],
    ['0.0.0.0', false],
    ['::', false],
    ['192.168.1.10', false],
    ['example.com', false],
  ])('%s is loopback: %s', (host, loopback) => {
    expect(isLoopbackHost(host)).toBe(loopback);
  });

  it('beyond loopback without a token is a configuration error; with one it is fine', () => {
    expect(() => assertSafeExposure('0.0.0.0', undefined)).toThrow(ConfigError);
    expect(() => assertSafeExposure('0.0.0.0', TOKEN)).not.toThrow();
    expect(() => assertSafeExposure('127.0.0.1', undefined)).not.toThrow();
  });
});

describe('credentials', () => {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  it('reads a bearer token and the password of basic auth (any user, colons allowed in it)', () => {
    expect(credentialOf(`Bearer ${TOKEN}`)).toBe(TOKEN);
    expect(credentialOf(`bearer ${TOKEN}`)).toBe(TOKEN);
    expect(credentialOf(`Basic ${b64(`ops:${TOKEN}`)}`)).toBe(TOKEN);
    expect(credentialOf(`Basic ${b64(':pa:ss')}`)).toBe('pa:ss');
    expect(credentialOf(`Basic ${b64('no-colon')}`)).toBeUndefined();
    expect(credentialOf('Digest abc')).toBeUndefined();
    expect(credentialOf(undefined)).toBeUndefined();
  });

  it('matches only the exact token', () => {
    expect(tokenMatches(`Bearer ${TOKEN}`, TOKEN)).toBe(true);
    expect(tokenMatches(`Bearer ${TOKEN}x`, TOKEN)).toBe(false);
    expect(tokenMatches(`Bearer ${TOKEN.slice(1)}`, TOKEN)).toBe(false);
    expect(tokenMatches(undefined, TOKEN)).toBe(false);
  });

  it('ADMIN_TOKEN is validated and never echoed', () => {
    expect(loadConfig({ ADMIN_TOKEN: TOKEN }).admin.token).toBe(TOKEN);
    expect(loadConfig({}).admin.token).toBeUndefined();
    expect(() => loadConfig({ ADMIN_TOKEN: 'short' })).toThrow(
      /^ADMIN_TOKEN: invalid value \(value hidden\): expected at least 16 characters$/,
    );
    expect(() => loadConfig({ ADMIN_TOKEN: 'has a blank in it, sixteen+' })).toThrow(
      /^ADMIN_TOKEN: invalid value \(value hidden\): expected printable ASCII/,
    );
  });
});

describe('html', () => {
  it('escapes every interpolated value, but not markup built with html or raw', () => {
    const title = `<script>alert("x")</script> & 'more'`;
    expect(html`<td>${title}</td>`.value).toBe(
      '<td>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;more&#39;</td>',
    );
    expect(html`<tr>${[html`<td>${'a<'}</td>`, raw('<td>b</td>')]}</tr>`.value).toBe(
      '<tr><td>a&lt;</td><td>b</td></tr>',
    );
    expect(html`${null}${undefined}${false}${0}`.value).toBe('0');
  });
});

describe('freshness', () => {
  const now = new Date('2026-03-10T12:30:00Z');
  it('follows the cron schedule', () => {
    const hourly = { paused: false, cron: '0 * * * *' };
    expect(freshnessOf({ ...hourly, lastSyncedAt: '2026-03-10T12:00:05Z' }, now).label).toBe('fresh');
    expect(freshnessOf({ ...hourly, lastSyncedAt: '2026-03-10T11:00:05Z' }, now).label).toBe('overdue');
    // the run that is due just now still has its grace period
    expect(
      freshnessOf({ ...hourly, lastSyncedAt: '2026-03-10T11:00:05Z' }, new Date('2026-03-10T12:05:00Z')).label,
    ).toBe('fresh');
    expect(freshnessOf({ ...hourly, lastSyncedAt: null }, now).label).toBe('never synced');
    expect(freshnessOf({ ...hourly, paused: true, lastSyncedAt: null }, now).label).toBe('paused');
    expect(freshnessOf({ paused: false, cron: null, lastSyncedAt: '2026-01-01T00:00:00Z' }, now).label).toBe(
      'backfill only',
    );
  });
});

describe('credit chart', () => {
  it('picks a round axis with whole steps', () => {
    expect(niceTop(220)).toBe(240);
    expect(niceTop(3)).toBe(4);
    expect(niceTop(1_000_000)).toBe(1_000_000);
  });

  it('scales to the usage, and shows the allowance only when it is within sight', () => {
    const at = (m: number) => new Date(Date.UTC(2026, 0, 1, 0, m));
    const small = creditChartSvg([
      { at: at(0), used: 10, max: 1_000_000 },
      { at: at(30), used: 200, max: 1_000_000 },
    ]).value;
    expect(small).toContain('plan allowance 1M: above this scale');
    expect(small).not.toContain('class="max"');
    expect(small).toContain('>240<');

    const near = creditChartSvg([
      { at: at(0), used: 700, max: 1_000 },
      { at: at(30), used: 900, max: 1_000 },
    ]).value;
    expect(near).toContain('class="max"');
    expect(near).not.toContain('above this scale');
    expect(creditChartSvg([]).value).toContain('No credit snapshots yet');
  });
});

describe('sizes', () => {
  it('reads like pg_size_pretty: powers of 1024', () => {
    expect(compactBytes(0)).toBe('0 bytes');
    expect(compactBytes(1023)).toBe('1023 bytes');
    expect(compactBytes(2048)).toBe('2.0 kB');
    expect(compactBytes(5 * 1024 * 1024)).toBe('5.0 MB');
    expect(compactBytes(7.7 * 1024 ** 3)).toBe('7.7 GB');
    expect(compactBytes(300 * 1024 ** 3)).toBe('300 GB');
  });
});

describe('overview page', () => {
  const now = new Date('2026-03-10T12:30:00Z');
  const source = (id: number): OverviewSource => ({
    id,
    kind: 'channel',
    ref: `@channel${id}`,
    externalId: `UC${id}`,
    title: `Channel ${id}`,
    paused: false,
    cron: '0 * * * *',
    maxVideos: 5000,
    langs: ['en'],
    lastSyncedAt: '2026-03-10T12:00:05Z',
    videos: 500,
    transcripts: 400,
    pages: 0,
    media: 0,
    lastError: null,
    lastErrorCode: null,
    lastErrorAt: null,
    freshness: { label: 'fresh', tone: 'ok' },
  });

  it('with 2 000 sources shows one page of them, a summary and links to the others', () => {
    const d: OverviewData = {
      now,
      unavailable: [],
      sources: {
        total: 2000,
        paused: 40,
        withError: 12,
        overdue: 3,
        neverSynced: 5,
        attention: 20,
        page: 2,
        pages: 40,
        rows: Array.from({ length: OVERVIEW_SOURCES_PER_PAGE }, (_, i) => source(100 + i)),
        errorsBySource: [],
        coverageBySource: [],
      },
    };
    const page = renderOverview(d);
    expect([...page.matchAll(/<tr data-source-id=/g)]).toHaveLength(OVERVIEW_SOURCES_PER_PAGE);
    expect(page).toContain(
      '2000 sources: <span class="bad-text">20 need attention</span> (12 with an error, 3 overdue, 5 never synced), listed first',
    );
    expect(page).toContain('page 2 of 40 (sources 51–100)');
    for (const n of [1, 3, 40]) expect(page).toContain(`href="?page=${n}#sources"`);
    // (it was 1.4 MB with every source on it)
    expect(page.length).toBeLessThan(100_000);
  });

  it('a section Postgres did not answer for is named and left out; the rest renders', () => {
    const page = renderOverview({ now, unavailable: ['sources', 'storage'], items: undefined, lastPrune: null });
    expect(page).toContain('Not shown: sources, storage (the database did not answer in time; see the daemon log).');
    expect(page).toContain('Sources not shown: the query did not answer in time');
    expect(page).toContain('Storage per table not shown');
    expect(page).toContain('never pruned');
  });
});

// ---------------------------------------------------------------------------------------------
// The drill-down pages: a source, a batch, an item, every batch

const NOW = new Date('2026-03-10T12:30:00Z');

function progressOf(jobId: string, over: Partial<BatchProgress> = {}): BatchProgress {
  return {
    jobId,
    sourceId: 7,
    kind: 'video',
    lang: null,
    status: 'completed',
    errorCode: null,
    upstreamStatus: 'completed',
    reason: null,
    total: 60,
    polls: 4,
    creditsEstimated: 61,
    processing: 0,
    landed: 0,
    sunk: 55,
    failed: 3,
    retryable: 2,
    quarantined: 0,
    finished: 60,
    submittedAt: '2026-03-10T11:00:00.000Z',
    completedAt: '2026-03-10T11:05:00.000Z',
    errors: { 'not-found': 3 },
    ...over,
  };
}

const HOLDS: HoldsStatus = {
  upstreamHolds: [
    {
      code: 'unauthorized',
      scope: 'all',
      reason: 'key <refused>',
      since: '2026-03-10T12:00:00.000Z',
      message: 'upstream refused (unauthorized): key <refused>',
      keyFingerprint: null,
    },
  ],
  holdEvents: [],
  lostSubmissions: [],
};

const SOURCE: SourceDetail = {
  id: 7,
  kind: 'channel',
  ref: '@chan<7>',
  externalId: 'UC7',
  title: 'Channel <seven>',
  cron: '0 3 * * *',
  langs: ['en', 'de'],
  maxVideos: 500,
  textOnly: false,
  include: [],
  paused: false,
  maxCreditsPerDay: 900,
  generateMissing: false,
  maxGenerateMinutes: null,
  translateLangs: [],
  maxTranslateMinutes: null,
  lastSyncedAt: new Date('2026-03-10T03:00:20Z'),
  lastError: null,
  lastErrorCode: null,
  lastErrorAt: null,
  createdAt: new Date('2026-03-01T00:00:00Z'),
  updatedAt: new Date('2026-03-02T00:00:00Z'),
  videos: 480,
  transcripts: 900,
  pages: 0,
};

describe('paging parameters', () => {
  it('a whole number from 1 (absent: 1); anything else is refused naming the parameter', () => {
    expect(readPageParam('page', undefined)).toBe(1);
    expect(readPageParam('page', '3')).toBe(3);
    for (const bad of ['0', '-1', 'abc', '1.5', '', '1e3', '1234567890']) {
      expect(readPageParam('runs', bad)).toEqual({
        error: `runs: invalid value ${JSON.stringify(bad)}: expected a whole number from 1\n`,
      });
    }
  });

  it('a page past the last is the last; an empty list has one page', () => {
    expect(placePage(120, 50, 9)).toEqual({ page: 3, pages: 3, limit: 50, offset: 100 });
    expect(placePage(0, 50, 4)).toEqual({ page: 1, pages: 1, limit: 50, offset: 0 });
    expect(placePage(100, 50, 2)).toEqual({ page: 2, pages: 2, limit: 50, offset: 50 });
  });

  it('a batch status is one of the statuses, or none', () => {
    expect(readStatusParam(undefined)).toBeNull();
    expect(readStatusParam('failed')).toBe('failed');
    expect(readStatusParam('FAILED')).toEqual({
      error: 'status: invalid value "FAILED": expected one of submitted, queued, active, completed, failed, expired\n',
    });
  });
});

describe('source page', () => {
  const data = (over: Partial<SourcePageData> = {}): SourcePageData => ({
    now: NOW,
    unavailable: [],
    holds: { upstreamHolds: [], holdEvents: [], lostSubmissions: [] },
    source: SOURCE,
    batches: {
      page: 2,
      pages: 3,
      limit: 50,
      offset: 50,
      total: 120,
      rows: [progressOf('job-b'), progressOf('job-a', { status: 'active', completedAt: null })],
    },
    errors: [
      {
        kind: 'transcript',
        lang: 'de',
        errorCode: 'not-found',
        state: 'failed',
        videos: 45,
        shown: [
          { videoId: 'v<1>#2', jobId: 'job a' },
          { videoId: 'v2', jobId: 'job-b' },
        ],
      },
    ],
    coverage: [
      { lang: 'de', asked: 12, fellBack: { en: 2, 'f<r': 1 }, none: 1, pending: 4 },
      { lang: 'en', asked: 20, fellBack: {}, none: 0, pending: 0 },
    ],
    runs: {
      page: 1,
      pages: 1,
      limit: 20,
      offset: 0,
      total: 1,
      rows: [
        {
          id: 11,
          startedAt: new Date('2026-03-10T03:00:00Z'),
          finishedAt: new Date('2026-03-10T03:00:20Z'),
          outcome: 'submitted',
          detail: null,
          videosListed: 500,
          videosSubmitted: 60,
          creditsEstimated: 62,
          listingCredits: 1,
          jobIds: ['job-b'],
        },
      ],
    },
    ...over,
  });

  it('shows the settings with the next three fires, the counts, the error codes with their videos, the batches and the runs', () => {
    const { status, html: page } = renderSourcePage(data(), { asked: '7' });
    expect(status).toBe(200);
    expect(page).toContain('Channel &lt;seven&gt;');
    expect(page).toContain('<code>@chan&lt;7&gt;</code>');
    expect(page).toContain('<code>0 3 * * *</code> (UTC)');
    const fires = [...page.matchAll(/<li><time datetime="([^"]+)">/g)].map((m) => m[1]);
    expect(fires).toEqual(['2026-03-11T03:00:00.000Z', '2026-03-12T03:00:00.000Z', '2026-03-13T03:00:00.000Z']);
    expect(page).toContain('en, de');
    expect(page).toContain('at most 500 videos per sync');
    expect(page).toContain('at most 900 credits per UTC day');
    expect(page).toMatch(/<div class="v" id="videos">480<\/div>/);
    expect(page).toMatch(/<div class="v" id="transcripts">900<\/div>/);
    // each video of an error code links to its item, its IDs encoded in the address and escaped in the text
    expect(page).toContain('<a href="/batches/job%20a/items/v%3C1%3E%232"><code>v&lt;1&gt;#2</code></a>');
    expect(page).toContain('2 shown of 45 videos');
    expect(page).toMatch(
      /<tr data-error-code="not-found" data-kind="transcript" data-lang="de">[\s\S]*?<td class="num">45<\/td>/,
    );
    // language coverage: per language asked, in it, fell back (which, escaped), none, pending
    const de = /<tr data-coverage-lang="de">([\s\S]*?)<\/tr>/.exec(page)?.[1]?.replace(/\s+/g, ' ');
    expect(de).toBe(
      ' <td><code>de</code></td><td class="num">12</td> <td>3 (<code>en</code> 2, <code>f&lt;r</code> 1)</td> <td class="num">1</td><td class="num">4</td> ',
    );
    expect(page).toMatch(
      /<tr data-coverage-lang="en">[\s\S]*?<td class="num">20<\/td>\s*<td><span class="muted">0<\/span><\/td>/,
    );
    // batches newest first as given, each linked; the pages keep the runs' page
    expect([...page.matchAll(/<tr data-job-id="([^"]+)">/g)].map((m) => m[1])).toEqual(['job-b', 'job-a']);
    expect(page).toContain('<a href="/batches/job-b"><code>job-b</code></a>');
    expect(page).toContain('href="/sources/7?page=3#batches"');
    expect(page).toContain('href="/sources/7#batches"');
    expect(page).toContain('120 batches, the latest first · page 2 of 3 (51–52)');
    expect(page).toMatch(/<tr data-run-id="11">[\s\S]*?20\.0 s[\s\S]*?<span class="pill ok">submitted<\/span>/);
    expect(page).not.toContain('class="banner"');
  });

  it('a paused source without a schedule says so; a bad stored cron is named, not thrown', () => {
    const paused = renderSourcePage(data({ source: { ...SOURCE, paused: true, cron: null } }), { asked: '7' }).html;
    expect(paused).toContain('none: synced only by <code>backfill</code>');
    expect(paused).toContain('<span class="pill muted">paused</span>');
    const bad = renderSourcePage(data({ source: { ...SOURCE, cron: '61 * * * *' } }), { asked: '7' }).html;
    expect(bad).toMatch(/cannot be read: /);
  });

  it('an unknown source is a 404 page that still shows the hold', () => {
    const { status, html: page } = renderSourcePage(
      { now: NOW, unavailable: [], holds: HOLDS, source: null },
      { asked: '99<' },
    );
    expect(status).toBe(404);
    expect(page).toContain('Source &quot;99&lt;&quot; does not exist.');
    expect(page).toContain(
      '<div class="banner" role="alert" data-hold="unauthorized"><strong>On hold (unauthorized)</strong> <span class="small">set 30 min ago</span>: upstream refused (unauthorized): key &lt;refused&gt;</div>',
    );
  });

  it('a section Postgres did not answer for is named and left out', () => {
    const { status, html: page } = renderSourcePage(data({ errors: undefined, unavailable: ['errors'] }), {
      asked: '7',
    });
    expect(status).toBe(200);
    expect(page).toContain('Not shown: errors (the database did not answer in time; see the daemon log).');
    expect(page).toContain('Latest error codes not shown');
    expect(renderSourcePage({ now: NOW, unavailable: ['source'], source: undefined }, { asked: '7' }).status).toBe(503);
  });
});

describe('batch page', () => {
  const batch: BatchView = {
    ...progressOf('job/1', {
      kind: 'transcript',
      lang: 'de',
      status: 'expired',
      errorCode: 'job-expired',
      upstreamStatus: 'weird',
      reason: 'the API no longer knows it',
    }),
    mode: 'batch',
    textOnly: true,
    replayOf: 'job/0',
    lastPolledAt: new Date('2026-03-10T11:04:00Z'),
    nextPollAt: null,
    terminalAt: new Date('2026-03-10T11:05:00Z'),
    pollFailures: 0,
    updatedAt: new Date('2026-03-10T11:05:00Z'),
  };
  const row = (videoId: string, over: Partial<BatchItemRow> = {}): BatchItemRow => ({
    videoId,
    state: 'sunk',
    errorCode: null,
    reason: null,
    reasonCode: null,
    landedAt: new Date('2026-03-10T11:01:00Z'),
    sunkAt: new Date('2026-03-10T11:01:01Z'),
    resubmittedIn: null,
    payloadPrunedAt: null,
    ...over,
  });

  it('shows what the batch is, how it went, and a page of its items, each linked to its raw item', () => {
    const d: BatchPageData = {
      now: NOW,
      unavailable: [],
      holds: HOLDS,
      batch,
      sourceName: 'Channel <seven>',
      items: {
        page: 2,
        pages: 2,
        limit: 50,
        offset: 50,
        total: 60,
        rows: [
          row('vid-1'),
          row('vid"2', { state: 'failed', errorCode: 'not-found' }),
          row('vid-3', { state: 'quarantined', reasonCode: 'schema', reason: 'item does not match <b>' }),
        ],
      },
    };
    const { status, html: page } = renderBatchPage(d, { jobId: 'job/1' });
    expect(status).toBe(200);
    expect(page).toContain('<span class="pill bad">expired (job-expired)</span>');
    expect(page).toContain('the upstream last said <code>weird</code>');
    expect(page).toContain('<a href="/sources/7"><span class="nowrap">#7</span> Channel &lt;seven&gt;</a>');
    expect(page).toContain('<dt>credits estimated</dt><dd>61</dd>');
    expect(page).toContain('<a href="/batches/job%2F0"><code>job/0</code></a>');
    expect(page).toContain('aria-valuenow="60"');
    expect([...page.matchAll(/<tr data-video-id="([^"]+)">/g)].map((m) => m[1])).toEqual([
      'vid-1',
      'vid&quot;2',
      'vid-3',
    ]);
    expect(page).toContain('<a href="/batches/job%2F1/items/vid%222"><code>vid&quot;2</code></a>');
    expect(page).toContain('<code>schema</code> item does not match &lt;b&gt;');
    expect(page).toContain('60 items recorded, by video ID · page 2 of 2 (51–53)');
    expect(page).toContain('href="/batches/job%2F1?page=1#items"');
    expect(page).toContain('data-hold="unauthorized"');
  });

  it("a failed batch's page gives its code and reason (escaped) and the commands that store or re-submit its items", () => {
    const failed: BatchView = {
      ...batch,
      jobId: 'job/2',
      status: 'failed',
      errorCode: 'internal-error',
      reason: 'upstream <b>failed</b> the batch',
      landed: 2,
      submittedAt: '2026-03-10T11:00:00.000Z',
    };
    const { html: page } = renderBatchPage({ now: NOW, unavailable: [], batch: failed }, { jobId: 'job/2' });
    expect(page).toContain(
      '<dd data-batch-error><code>internal-error</code> upstream &lt;b&gt;failed&lt;/b&gt; the batch</dd>',
    );
    const next = /<dd data-next-step>[\s\S]*?<\/dd>/.exec(page)?.[0] ?? '';
    expect(next).toContain('<code>videosite-ingest replay --batch job/2</code>');
    expect(next).toContain('<code>videosite-ingest replay --failed --since 2026-03-10T11:00:00.000Z --dry-run</code>');
    // a batch that completed with everything stored needs no step
    const done: BatchView = { ...batch, status: 'completed', errorCode: null, reason: null, landed: 0, retryable: 0 };
    expect(renderBatchPage({ now: NOW, unavailable: [], batch: done }, { jobId: 'job/1' }).html).not.toContain(
      'data-next-step',
    );
  });

  it('an unknown batch is a 404 page', () => {
    const { status, html: page } = renderBatchPage({ now: NOW, unavailable: [], batch: null }, { jobId: 'nope' });
    expect(status).toBe(404);
    expect(page).toContain('Batch &quot;nope&quot; does not exist.');
  });
});

describe('item page', () => {
  const item = (over: Partial<BatchItemView> = {}): BatchItemView => ({
    jobId: 'job-1',
    videoId: 'vid-1',
    state: 'sunk',
    errorCode: null,
    reason: null,
    reasonCode: null,
    landedAt: new Date('2026-03-10T11:01:00Z'),
    sunkAt: new Date('2026-03-10T11:01:01Z'),
    updatedAt: new Date('2026-03-10T11:01:01Z'),
    resubmittedIn: null,
    payloadPrunedAt: null,
    payloadSha256: null,
    payloadBytes: null,
    form: 'json',
    text: '{}',
    textBytes: 2,
    ...over,
  });
  const render = (i: BatchItemView | null, maxBytes?: number) =>
    renderItemPage(
      { now: NOW, unavailable: [], holds: HOLDS, item: i },
      { jobId: 'job-1', videoId: 'vid-1', maxBytes },
    );

  it('shows the stored payload escaped: markup in it is text, never markup', () => {
    const text =
      '{\n    "videoId": "vid-1",\n    "video": {\n        "title": "<script>alert(1)</script><img src=x onerror=alert(2)>"\n    }\n}';
    const { status, html: page } = render(item({ text, textBytes: Buffer.byteLength(text) }));
    expect(status).toBe(200);
    expect(page).toContain(
      '&quot;title&quot;: &quot;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;&quot;',
    );
    expect(page).not.toContain('<script');
    expect(page).not.toContain('<img');
    expect(page).not.toContain('id="truncated"');
    expect(page).toContain('data-hold="unauthorized"');
  });

  it('cuts a payload past the limit between characters and says how to read the whole', () => {
    // 'é' is two bytes: a cut at an odd byte count must not split one
    const text = 'é'.repeat(100);
    const page = render(item({ form: 'text', text, textBytes: 200 }), 51).html;
    expect(page).toContain(`<pre class="payload" id="payload">${'é'.repeat(25)}</pre>`);
    expect(page).toContain('Truncated: the first 50 bytes of 200 bytes shown.');
    // the whole SQL quoted for a shell: an upstream job ID cannot run anything
    const sqlText = "select payload_raw from batch_items where job_id = 'job-1' and video_id = 'vid-1'";
    expect(page).toContain(`psql -c ${shellQuote(sqlText).replaceAll("'", '&#39;')}`);
    // what Postgres cut (by characters) is said to be cut too
    expect(render(item({ text: '{}', textBytes: 300_000 })).html).toContain('id="truncated"');
  });

  it('a pruned item says when, with the sha256 and size kept', () => {
    const page = render(
      item({
        form: null,
        text: null,
        textBytes: null,
        payloadPrunedAt: new Date('2026-03-09T12:30:00Z'),
        payloadSha256: 'ab'.repeat(32),
        payloadBytes: 4096,
      }),
    ).html;
    expect(page).toMatch(
      /<p id="pruned">Pruned by retention <time datetime="2026-03-09T12:30:00.000Z">2026-03-09 12:30:00Z<\/time> <span class="muted small">\(24 h ago\)<\/span>/,
    );
    expect(page).toContain(`<code>${'ab'.repeat(32)}</code>`);
    expect(page).toContain('4096 bytes (4.0 kB)');
    expect(page).not.toContain('<pre');
  });

  it('an unknown item is a 404 page', () => {
    const { status, html: page } = render(null);
    expect(status).toBe(404);
    expect(page).toContain('Item &quot;vid-1&quot; of batch &quot;job-1&quot; does not exist.');
  });

  it('utf8Prefix keeps whole characters within the bytes', () => {
    expect(utf8Prefix('abc', 10)).toBe('abc');
    expect(utf8Prefix('a😀b', 4)).toBe('a');
    expect(utf8Prefix('a😀b', 5)).toBe('a😀');
  });
});

describe('batches page and the overview links', () => {
  it('lists every batch with status filters and pages that keep the filter', () => {
    const d: BatchesPageData = {
      now: NOW,
      status: 'failed',
      unavailable: [],
      holds: HOLDS,
      byStatus: { completed: 400, failed: 120 },
      list: {
        page: 1,
        pages: 3,
        limit: 50,
        offset: 0,
        total: 120,
        rows: [progressOf('job-9', { status: 'failed', sourceId: null })],
      },
      sourceNames: {},
    };
    const page = renderBatchesPage(d);
    expect(page).toContain('<a href="/batches">all (520)</a>');
    expect(page).toContain('<span class="current" aria-current="page">failed (120)</span>');
    expect(page).toContain('<a href="/batches?status=expired">expired (0)</a>');
    expect(page).toContain('href="/batches?status=failed&amp;page=2"');
    expect(page).toContain('<span class="muted">(removed source)</span>');
    expect(page).toContain('data-hold="unauthorized"');
  });

  it('the overview links each source, each batch and the list of every batch, and shows the hold', () => {
    const d: OverviewData = {
      now: NOW,
      unavailable: [],
      holds: HOLDS,
      sources: {
        total: 1,
        paused: 0,
        withError: 0,
        overdue: 0,
        neverSynced: 0,
        attention: 0,
        page: 1,
        pages: 1,
        rows: [{ ...SOURCE_ROW, langs: ['de'] }],
        errorsBySource: [
          { sourceId: 7, kind: 'video', lang: '', errorCode: 'not-found', state: 'failed', videos: 2 },
          { sourceId: 7, kind: 'transcript', lang: 'de', errorCode: 'not-found', state: 'failed', videos: 3 },
          { sourceId: 7, kind: 'transcript', lang: 'de', errorCode: 'internal-error', state: 'retryable', videos: 1 },
        ],
        coverageBySource: [{ sourceId: 7, lang: 'de', asked: 12, fellBack: { en: 2, 'f<r': 1 }, none: 1, pending: 4 }],
      },
      recent: [{ ...progressOf('job-r'), retryablePending: 0 }],
      inFlight: { total: 1, shown: [progressOf('job-f', { status: 'active', completedAt: null })] },
    };
    const page = renderOverview(d);
    expect(page).toContain('<a href="/sources/7"><strong>Channel 7</strong></a>');
    expect(page).toContain('<a href="/batches/job-r"><code>job-r</code></a>');
    expect(page).toContain('<a href="/batches/job-f"><code>job-f</code></a>');
    expect(page).toContain('<a href="/batches" id="more-batches">');
    expect(page).toContain('data-hold="unauthorized"');
    // what the source's videos got in the language asked, escaped; its latest error codes summed over kinds
    expect(page).toContain(
      '<div class="small nowrap" data-coverage-lang="de">de: 12 in de, 3 fell back (en 2, f&lt;r 1), 1 none, 4 pending</div>',
    );
    const errors = /<section id="errors">[\s\S]*?<\/section>/.exec(page)?.[0] ?? '';
    expect([...errors.matchAll(/<th class="num">([^<]+)<\/th>/g)].map((m) => m[1])).toEqual([
      'internal-error',
      'not-found',
    ]);
    expect([...errors.matchAll(/<td class="num">(\d+)<\/td>/g)].map((m) => m[1])).toEqual(['1', '5']);
  });

  it('the overview lists recent changes (escaped, linked to their source) and the webhook endpoints without their path', () => {
    const d: OverviewData = {
      now: NOW,
      unavailable: [],
      changes: [
        {
          id: 42,
          type: 'source.failed',
          occurredAt: new Date(NOW.getTime() - 60_000),
          data: { detail: '<script>x</script>' },
          sourceId: 7,
          videoId: null,
        },
        {
          id: 41,
          type: 'batch.completed',
          occurredAt: new Date(NOW.getTime() - 120_000),
          data: { jobId: 'job-1' },
          sourceId: null,
          videoId: null,
        },
      ],
      webhooks: [
        {
          id: 3,
          url: 'https://hooks.example.com/services/T0/B0/s3cr3tToken',
          eventTypes: null,
          state: 'disabled',
          pending: 12,
          lastDeliveredAt: null,
          failingSince: null,
          nextAttemptAt: null,
          disabledAt: NOW.toISOString(),
          disabledReason: 'every delivery failed',
        },
        {
          id: 4,
          url: 'http://127.0.0.1:9000/hook',
          eventTypes: ['batch.completed'],
          state: 'ok',
          pending: 0,
          lastDeliveredAt: NOW.toISOString(),
          failingSince: null,
          nextAttemptAt: null,
          disabledAt: null,
          disabledReason: null,
        },
      ],
    };
    const page = renderOverview(d);
    const changes = /<section id="changes">[\s\S]*?<\/section>/.exec(page)?.[0] ?? '';
    expect([...changes.matchAll(/data-event-id="(\d+)"/g)].map((m) => m[1])).toEqual(['42', '41']);
    expect(changes).toContain('&lt;script&gt;');
    expect(changes).not.toContain('<script>');
    expect(changes).toContain('<a href="/sources/7">');
    expect(changes).toContain('videosite-ingest events --since 40 --json');
    const hooks = /<section id="webhooks">[\s\S]*?<\/section>/.exec(page)?.[0] ?? '';
    expect(hooks).toContain('<code>https://hooks.example.com</code>');
    expect(page).not.toContain('s3cr3tToken');
    expect(hooks).toContain('webhooks enable 3');
    expect(hooks).toContain('>disabled</span>');
  });
});

const SOURCE_ROW: OverviewSource = {
  id: 7,
  kind: 'channel',
  ref: '@channel7',
  externalId: 'UC7',
  title: 'Channel 7',
  paused: false,
  cron: '0 * * * *',
  maxVideos: 5000,
  langs: ['en'],
  lastSyncedAt: '2026-03-10T12:00:05Z',
  videos: 500,
  transcripts: 400,
  pages: 0,
  media: 0,
  lastError: null,
  lastErrorCode: null,
  lastErrorAt: null,
  freshness: { label: 'fresh', tone: 'ok' },
};

describe('hostile values on admin pages', () => {
  it("the item page's psql line keeps an upstream job ID inside one shell word", () => {
    const jobId = `x'$(touch /tmp/pwned)'`;
    const page = renderItemPage(
      {
        now: NOW,
        unavailable: [],
        holds: HOLDS,
        item: {
          jobId,
          videoId: 'v',
          state: 'sunk',
          errorCode: null,
          reason: null,
          reasonCode: null,
          landedAt: NOW,
          sunkAt: NOW,
          updatedAt: NOW,
          resubmittedIn: null,
          payloadPrunedAt: null,
          payloadSha256: null,
          payloadBytes: null,
          form: 'text',
          text: 'x'.repeat(100),
          textBytes: 100,
        },
      },
      { jobId, videoId: 'v', maxBytes: 10 },
    ).html;
    const sqlText = `select payload_raw from batch_items where job_id = 'x''$(touch /tmp/pwned)''' and video_id = 'v'`;
    expect(page).toContain(`psql -c ${shellQuote(sqlText).replaceAll("'", '&#39;')}</code>`);
    // every $( sits inside single quotes: the quoted word closes only around escaped quotes
    expect(shellQuote(sqlText).startsWith("'")).toBe(true);
  });

  it('the search page refuses a query holding a control character (a NUL would fail in Postgres)', () => {
    expect(readSearchParams({ q: 'a\u0000b' })).toEqual({ error: expect.stringMatching(/^q: .*control character/) });
    expect(readSearchParams({ q: 'rust async' })).toMatchObject({ query: 'rust async' });
  });
});

describe('web pages on the admin pages', () => {
  const HOSTILE = '<script>alert(1)</script>';
  const URL1 = 'https://docs.example.test/guide?a=1&b=2';
  const holds = { upstreamHolds: [], holdEvents: [], lostSubmissions: [] };
  const webSource = (over: Partial<SourceDetail> = {}): SourceDetail => ({
    ...SOURCE,
    kind: 'website',
    ref: 'https://docs.example.test/',
    externalId: 'https://docs.example.test/',
    title: 'docs',
    langs: [],
    pages: 2,
    ...over,
  });

  it("a web source's page shows its page count and its pages, linked, with the gone one marked; no video sections", () => {
    const d: SourcePageData = {
      now: NOW,
      unavailable: [],
      holds,
      source: webSource(),
      batches: { page: 1, pages: 2, limit: 50, offset: 0, total: 60, rows: [progressOf('crawl-1')] },
      runs: { page: 1, pages: 1, limit: 20, offset: 0, total: 0, rows: [] },
      pages: {
        page: 2,
        pages: 3,
        limit: 50,
        offset: 50,
        total: 103,
        rows: [
          { url: URL1, name: `Guide ${HOSTILE}`, lastSeenAt: new Date('2026-03-10T12:00:00Z'), goneAt: null },
          {
            url: 'https://docs.example.test/old',
            name: 'Old',
            lastSeenAt: new Date('2026-03-09T12:00:00Z'),
            goneAt: new Date('2026-03-10T12:00:00Z'),
          },
          { url: 'javascript:alert(1)', name: null, lastSeenAt: null, goneAt: null },
        ],
      },
    };
    const { status, html: page } = renderSourcePage(d, { asked: '7' });
    expect(status).toBe(200);
    expect(page).toContain('<div class="v" id="pages-count">2</div>');
    expect(page).not.toContain('id="videos"');
    expect(page).not.toContain('id="coverage"');
    expect(page).not.toContain('id="errors"');
    expect(page).toContain('<dd id="crawl-limit">at most 500 pages per crawl</dd>');
    expect(page).not.toContain('videos per sync');
    expect(page).toContain('103 pages found by this source');
    expect(page).toContain('page 2 of 3 (51–53)');
    expect(page).toContain(`href="${webPageHref(URL1).replace(/&/g, '&amp;')}"`);
    expect(page).toContain('Guide &lt;script&gt;');
    expect(page).not.toContain(HOSTILE);
    const old = /<tr data-page-url="https:\/\/docs.example.test\/old">[\s\S]*?<\/tr>/.exec(page)![0];
    expect(old).toContain('gone');
    expect(page).toContain('href="/sources/7?pages=3#pages"');
    // paging the batches keeps the pages' page
    expect(page).toContain('href="/sources/7?page=2&amp;pages=2#batches"');
    // not stored yet: no link to its page, and never an href to a javascript: URL
    expect(page).not.toContain('href="javascript:');
    expect(page).toContain('not stored yet');
  });

  it("a video source's page is unchanged: no pages section", () => {
    const { html: page } = renderSourcePage(
      { now: NOW, unavailable: [], holds, source: SOURCE, errors: [], coverage: [] },
      { asked: '7' },
    );
    expect(page).toContain('id="videos"');
    expect(page).toContain('id="coverage"');
    expect(page).not.toContain('id="pages"');
  });

  const PAGE: NonNullable<WebPageData['page']> = {
    url: URL1,
    name: `Guide ${HOSTILE}`,
    description: `<img src=x onerror=alert(1)>`,
    ogUrl: 'javascript:alert(2)',
    countCharacters: 1234,
    contentSha256: 'b'.repeat(64),
    contentChars: 1300,
    firstSeenAt: new Date('2026-03-01T00:00:00Z'),
    lastSeenAt: new Date('2026-03-10T12:00:00Z'),
    updatedAt: new Date('2026-03-05T00:00:00Z'),
    goneAt: null,
    jobId: 'crawl-1',
    sourceId: 7,
  };
  const pageData = (over: Partial<WebPageData> = {}): WebPageData => ({
    now: NOW,
    unavailable: [],
    holds,
    page: PAGE,
    sources: [
      {
        sourceId: 7,
        kind: 'website',
        title: 'docs',
        externalId: 'https://docs.example.test/',
        firstSeenAt: new Date('2026-03-01T00:00:00Z'),
        lastSeenAt: new Date('2026-03-10T12:00:00Z'),
        goneAt: null,
      },
    ],
    versions: {
      total: 2,
      rows: [
        {
          contentSha256: 'b'.repeat(64),
          name: 'Guide',
          countCharacters: 1234,
          storedAt: new Date('2026-03-05T00:00:00Z'),
          jobId: 'crawl-1',
        },
        {
          contentSha256: 'a'.repeat(64),
          name: 'Guide',
          countCharacters: 1000,
          storedAt: new Date('2026-03-01T00:00:00Z'),
          jobId: 'crawl-0',
        },
      ],
    },
    sections: {
      total: 1,
      rows: [{ n: 0, headings: ['Intro', `Setup ${HOSTILE}`], anchor: 'setup', text: `Run ${HOSTILE}`, chars: 500 }],
    },
    events: [
      {
        id: 9,
        type: 'page.changed',
        occurredAt: new Date('2026-03-05T00:00:00Z'),
        sourceId: 7,
        jobId: 'crawl-1',
        sha256: 'b'.repeat(64),
        previousSha256: 'a'.repeat(64),
      },
    ],
    ...over,
  });

  it("a web page's page shows its fields, sources, versions newest first, sections, events, and its batch item; all escaped", () => {
    const { status, html: page } = renderWebPage(pageData(), { url: URL1 });
    expect(status).toBe(200);
    expect(page).not.toContain(HOSTILE);
    expect(page).not.toContain('<img src=x');
    expect(page).not.toContain('href="javascript:');
    expect(page).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(page).toContain('<code id="page-sha256">' + 'b'.repeat(64) + '</code>');
    expect(page).toContain('1234');
    expect(page).toContain('<dd id="page-gone">no</dd>');
    const shas = [...page.matchAll(/data-version-sha256="([^"]*)"/g)].map((m) => m[1]);
    expect(shas).toEqual(['b'.repeat(64), 'a'.repeat(64)]);
    expect(page).toContain('2 versions kept, the newest first');
    expect(page).toContain('Intro › Setup &lt;script&gt;');
    expect(page).toContain('href="https://docs.example.test/guide?a=1&amp;b=2#setup"');
    expect(page).toContain('Run &lt;script&gt;alert(1)&lt;/script&gt;…');
    expect(page).toContain('<code>page.changed</code>');
    expect(page).toContain(`href="/batches/crawl-1/items/${encodeURIComponent(URL1)}"`);
    expect(page).toContain('href="/sources/7"');
  });

  it('a gone page says so; an unknown URL is a 404 naming it; a missing or bad url parameter is refused naming it', () => {
    const gone = renderWebPage(pageData({ page: { ...PAGE, goneAt: new Date('2026-03-10T00:00:00Z') } }), {
      url: URL1,
    });
    expect(/<dd id="page-gone">[\s\S]*?gone/.test(gone.html)).toBe(true);
    const missing = renderWebPage(
      { now: NOW, unavailable: [], holds, page: null },
      { url: `https://x.test/${HOSTILE}` },
    );
    expect(missing.status).toBe(404);
    expect(missing.html).toContain('does not exist');
    expect(missing.html).toContain('https://x.test/&lt;script&gt;');
    expect(missing.html).not.toContain(HOSTILE);
    expect(readPageUrlParam(undefined)).toEqual({ error: expect.stringMatching(/^url: missing/) });
    expect(readPageUrlParam('  ')).toEqual({ error: expect.stringMatching(/^url: /) });
    expect(readPageUrlParam('https://a.test/\u0000')).toEqual({ error: expect.stringMatching(/^url: invalid value/) });
    expect(readPageUrlParam(URL1)).toBe(URL1);
  });

  it('the overview shows pages stored and gone when there are any, and nothing when there are none', () => {
    const base = { now: NOW, unavailable: [] };
    const page = renderOverview({ ...base, pages: { stored: 41, gone: 3 } });
    expect(page).toContain('<div class="v" id="pages-stored">41</div>');
    expect(page).toContain('<span id="pages-gone">3</span> gone');
    expect(renderOverview({ ...base, pages: { stored: 0, gone: 0 } })).not.toContain('pages-tile');
  });

  it('search shows page hits with the section link and the page linked, escaped; none asked with a language filter', () => {
    const d = {
      now: NOW,
      unavailable: [],
      hits: [],
      pageHits: [
        {
          url: URL1,
          name: `Guide ${HOSTILE}`,
          headings: ['Intro', 'Setup'],
          anchor: 'setup',
          section: 1,
          snippet: `run the \uE000installer\uE001 ${HOSTILE}`,
          rank: 0.5,
        },
      ],
    };
    const filter = { query: 'installer', limit: 20 };
    const page = renderSearchPage(d, { filter, queuesPath: '/q' });
    expect(page).toContain('id="page-results"');
    expect(page).toContain('Intro › Setup');
    expect(page).toContain('<mark>installer</mark>');
    expect(page).toContain('href="https://docs.example.test/guide?a=1&amp;b=2#setup"');
    expect(page).toContain(`href="${webPageHref(URL1).replace(/&/g, '&amp;')}"`);
    expect(page).not.toContain(HOSTILE);
    const withLang = renderSearchPage(
      { ...d, pageHits: undefined },
      { filter: { ...filter, lang: 'en' }, queuesPath: '/q' },
    );
    expect(withLang).toContain('Pages are not searched with a language or channel filter');
  });
});
