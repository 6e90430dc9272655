/**
 * The admin server's pure parts: who counts as local, how credentials are read, HTML escaping,
 * freshness against a cron schedule, the credit chart's scale, sizes in bytes, and the overview
 * page with sections left out and with thousands of sources.
 */
import { describe, expect, it } from 'vitest';
import { assertSafeExposure, credentialOf, isLoopbackHost, tokenMatches } from '../../src/admin/auth.ts';
import { compactBytes, creditChartSvg, niceTop } from '../../src/admin/chart.ts';
import { html, raw } from '../../src/admin/html.ts';
import { OVERVIEW_SOURCES_PER_PAGE, renderOverview, type OverviewData, type OverviewSource } from '../../src/admin/overview.ts';
import { freshnessOf } from '../../src/pipeline/status.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';

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
    expect(() => loadConfig({ ADMIN_TOKEN: 'short' })).toThrow(/^ADMIN_TOKEN: invalid value \(value hidden\): expected at least 16 characters$/);
    expect(() => loadConfig({ ADMIN_TOKEN: 'has a blank in it, sixteen+' })).toThrow(/^ADMIN_TOKEN: invalid value \(value hidden\): expected printable ASCII/);
  });
});

describe('html', () => {
  it('escapes every interpolated value, but not markup built with html or raw', () => {
    const title = `<script>alert("x")</script> & 'more'`;
    expect(html`<td>${title}</td>`.value).toBe('<td>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;more&#39;</td>');
    expect(html`<tr>${[html`<td>${'a<'}</td>`, raw('<td>b</td>')]}</tr>`.value).toBe('<tr><td>a&lt;</td><td>b</td></tr>');
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
    expect(freshnessOf({ ...hourly, lastSyncedAt: '2026-03-10T11:00:05Z' }, new Date('2026-03-10T12:05:00Z')).label).toBe('fresh');
    expect(freshnessOf({ ...hourly, lastSyncedAt: null }, now).label).toBe('never synced');
    expect(freshnessOf({ ...hourly, paused: true, lastSyncedAt: null }, now).label).toBe('paused');
    expect(freshnessOf({ paused: false, cron: null, lastSyncedAt: '2026-01-01T00:00:00Z' }, now).label).toBe('backfill only');
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
    id, kind: 'channel', ref: `@channel${id}`, externalId: `UC${id}`, title: `Channel ${id}`, paused: false, cron: '0 * * * *',
    maxVideos: 5000, langs: ['en'], lastSyncedAt: '2026-03-10T12:00:05Z', videos: 500, transcripts: 400,
    lastError: null, lastErrorCode: null, lastErrorAt: null, freshness: { label: 'fresh', tone: 'ok' },
  });

  it('with 2 000 sources shows one page of them, a summary and links to the others', () => {
    const d: OverviewData = {
      now,
      unavailable: [],
      sources: {
        total: 2000, paused: 40, withError: 12, overdue: 3, neverSynced: 5, attention: 20, page: 2, pages: 40,
        rows: Array.from({ length: OVERVIEW_SOURCES_PER_PAGE }, (_, i) => source(100 + i)), errorsBySource: [],
      },
    };
    const page = renderOverview(d);
    expect([...page.matchAll(/<tr data-source-id=/g)]).toHaveLength(OVERVIEW_SOURCES_PER_PAGE);
    expect(page).toContain('2000 sources: <span class="bad-text">20 need attention</span> (12 with an error, 3 overdue, 5 never synced), listed first');
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
