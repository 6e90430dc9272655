/**
 * Web pages through the CLI against the simulator: a website source crawled, re-crawled unchanged
 * (no events) and after the site changed (3 pages revised, 1 removed, 1 added: exactly 3
 * `page.changed`, 1 `page.gone`, 1 `page.added`), each crawl billed exactly its estimate
 * corrected to 1 + pages; a `pages` source scraped; search finding a phrase of a page with its
 * section through the page's passages (page_sections keeps no row); `export --kind page` equal to
 * the table.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics, registerStateMetrics } from '../../src/admin/metrics.ts';
import { searchPages } from '../../src/db/search.ts';
import { pageSections } from '../../src/domain/pages.ts';
import { silentLogger } from '../../src/log.ts';
import { parseMetrics, value } from '../helpers/admin.ts';
import { expectCleanError, expectExit } from '../helpers/cli.ts';
import { insertNoisePassages, withPlan } from '../helpers/db.ts';
import { createPipelineHarness, runCli, type CliResult, type PipelineHarness } from '../helpers/pipeline.ts';
import { once } from '../helpers/once.ts';

let h: PipelineHarness;
let dir: string;
const ORIGIN = 'https://docs.example.test';
const SITE_PAGES = 40;

const cli = (args: string[]): Promise<CliResult> => runCli(args, h.env, 90_000);

beforeAll(async () => {
  h = await createPipelineHarness('web-pages', { jobs: { crawlPageMs: 1 } });
  h.sim.web.editSite(ORIGIN, { size: SITE_PAGES });
  dir = mkdtempSync(join(tmpdir(), 'vsi-web-pages-'));
});
afterAll(async () => {
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function usedCredits(): Promise<number> {
  return (await h.api.me()).usedCredits;
}

async function pageEvents(afterId: number): Promise<Record<string, string[]>> {
  const rows = await h.database.sql<{ type: string; url: string }[]>`
    select type, data->>'url' as url from events where id > ${afterId} and type like 'page.%' order by id`;
  const out: Record<string, string[]> = {};
  for (const r of rows) (out[r.type] ??= []).push(r.url);
  return out;
}

async function lastEventId(): Promise<number> {
  const [r] = await h.database.sql<{ id: number }[]>`select coalesce(max(id), 0)::float8 as id from events`;
  return r!.id;
}

/** The latest crawl of the source: its estimate and what its sync run was billed. */
async function latestCrawl(sourceId: number) {
  const [b] = await h.database.sql<
    { jobId: string; status: string; estimated: number; total: number; billed: number }[]
  >`
    select b.job_id as "jobId", b.status, b.credits_estimated as estimated, b.total,
      (select r.credits_billed from sync_runs r where b.job_id = any(r.job_ids))::float8 as billed
    from batches b where b.source_id = ${sourceId} and b.mode = 'crawl' order by b.submitted_at desc limit 1`;
  return b!;
}

describe('a website source', () => {
  let sourceId: number;
  const added = once(async () => {
    const r = await cli(['sources', 'add', 'website', `${ORIGIN}/`, '--limit', '100']);
    expectExit(r, 0);
    sourceId = Number(/source (\d+) added/.exec(r.stdout)![1]);
    return r;
  });

  /** One backfill of the source: the credits it spent upstream and the page events it made. */
  async function crawl(): Promise<{ spent: number; events: Record<string, string[]> }> {
    await added();
    const before = await usedCredits();
    const fromEvent = await lastEventId();
    const r = await cli(['backfill', '--source', String(sourceId)]);
    expectExit(r, 0);
    return { spent: (await usedCredits()) - before, events: await pageEvents(fromEvent) };
  }

  const first = once(crawl);

  it('refuses a URL that is not one, naming it, before anything is registered', async () => {
    const r = await cli(['sources', 'add', 'website', 'ftp://example.com/x']);
    expectCleanError(r, 2, 'ftp://example.com/x', 'http');
    const bad = await cli(['sources', 'add', 'website', `${ORIGIN}/`, '--limit', '5001']);
    expectExit(bad, 2);
    expect(bad.stderr).toContain('--limit');
    const lang = await cli(['sources', 'add', 'website', `${ORIGIN}/x`, '--lang', 'en']);
    expectCleanError(lang, 2, '--lang applies to video sources');
    await added();
    const edit = await cli(['sources', 'edit', String(sourceId), '--lang', 'de']);
    expectCleanError(edit, 2, '--lang does not apply to a website source');
  });

  it('the first crawl stores every page, one page.added each, billed 1 + pages exactly', async () => {
    const { spent, events } = await first();
    const pages = await h.database.sql<{ url: string; contentSha256: string; content: string }[]>`
      select url, content_sha256 as "contentSha256", content from pages order by url`;
    expect(pages).toHaveLength(SITE_PAGES);
    expect(events['page.added']?.sort()).toEqual(pages.map((p) => p.url));
    const c = await latestCrawl(sourceId);
    expect(c).toMatchObject({
      status: 'completed',
      total: SITE_PAGES,
      estimated: 1 + SITE_PAGES,
      billed: 1 + SITE_PAGES,
    });
    expect(spent).toBe(1 + SITE_PAGES);
    const [v] = await h.database.sql<{ n: number }[]>`select count(*)::int as n from page_versions`;
    expect(v!.n).toBe(SITE_PAGES);
  });

  it('status shows each web source pages and the pages stored', async () => {
    await first();
    const text = await cli(['status']);
    expectExit(text, 0);
    expect(text.stdout).toMatch(/^id\s+kind\s+title\s+videos\s+transcripts\s+pages\s/m);
    expect(text.stdout).toMatch(new RegExp(`^${sourceId}\\s+website\\s+.*\\s${SITE_PAGES}\\s`, 'm'));
    const json = await cli(['status', '--json', '--all-sources']);
    expectExit(json, 0);
    const r = JSON.parse(json.stdout) as { pages: { stored: number }; sources: { id: number; pages: number }[] };
    const [stored] = await h.database.sql<{ n: number }[]>`select count(*)::int as n from pages`;
    expect(r.pages.stored).toBe(stored!.n);
    expect(r.sources.find((x) => x.id === sourceId)?.pages).toBeGreaterThanOrEqual(SITE_PAGES);
    expect(text.stdout).toContain(`Web pages: ${stored!.n} stored`);
  });

  it('/metrics counts the pages current and gone, and their versions', async () => {
    await first();
    const metrics = createMetrics({ processMetrics: false });
    registerStateMetrics(metrics, { sql: h.database.sql, redis: h.redis, queues: h.queues, log: silentLogger() });
    const m = parseMetrics(await metrics.registry.metrics());
    const [t] = await h.database.sql<{ current: number; gone: number; versions: number }[]>`
      select (select count(*)::int from pages where gone_at is null) as current,
        (select count(*)::int from pages where gone_at is not null) as gone,
        (select count(*)::int from page_versions) as versions`;
    expect(value(m, 'vsi_pages', { state: 'current' })).toBe(t!.current);
    expect(value(m, 'vsi_pages', { state: 'gone' })).toBe(t!.gone);
    expect(value(m, 'vsi_page_versions')).toBe(t!.versions);
    expect(t!.current).toBeGreaterThan(0);
  });

  it('backfill --dry-run estimates the crawl at 1 + its limit, spending nothing', async () => {
    await added();
    const before = await usedCredits();
    const r = await cli(['backfill', '--source', String(sourceId), '--dry-run']);
    expectExit(r, 0);
    expect(r.stdout).toMatch(new RegExp(`^${sourceId}\\s+page\\s+-\\s+100\\s+101$`, 'm'));
    expect(r.stdout).toContain('billed 1 + the pages it finds');
    expect(await usedCredits()).toBe(before);
  });

  it('replay --batch of a crawl stores its pages again from raw: free, no event', async () => {
    await first();
    const { jobId, total } = await latestCrawl(sourceId);
    const before = await usedCredits();
    const fromEvent = await lastEventId();
    const r = await cli(['replay', '--batch', jobId]);
    expectExit(r, 0);
    expect(r.stdout).toContain(
      `${total} stored item(s) re-sunk from raw: 0 row(s) inserted, 0 updated, ${total} unchanged`,
    );
    expect(await pageEvents(fromEvent)).toEqual({});
    expect(await usedCredits()).toBe(before);
  });

  it('a crawl of an unchanged site makes no event and is billed the same', async () => {
    await first();
    const again = await crawl();
    expect(again.events).toEqual({});
    expect(again.spent).toBe(1 + SITE_PAGES);
    expect((await latestCrawl(sourceId)).billed).toBe(1 + SITE_PAGES);
  });

  it('after 3 pages changed, 1 disappeared and 1 appeared: exactly those events, billed 1 + pages', async () => {
    await first();
    const urls = h.sim.web.siteUrls(ORIGIN);
    const changed = urls.slice(1, 4);
    const removed = urls[5]!;
    const after = h.sim.web.editSite(ORIGIN, { change: changed, remove: [removed], add: 1 });
    const live = 'urls' in after ? after.urls : [];
    const appeared = live.filter((u) => !urls.includes(u));
    expect(appeared).toHaveLength(1);

    const { spent, events } = await crawl();
    expect(events['page.changed']?.sort()).toEqual([...changed].sort());
    expect(events['page.gone']).toEqual([removed]);
    expect(events['page.added']).toEqual(appeared);
    expect(Object.keys(events).sort()).toEqual(['page.added', 'page.changed', 'page.gone']);
    expect(spent).toBe(1 + SITE_PAGES);
    expect((await latestCrawl(sourceId)).billed).toBe(1 + SITE_PAGES);

    const [gone] = await h.database.sql<
      { goneAt: Date | null }[]
    >`select gone_at as "goneAt" from pages where url = ${removed}`;
    expect(gone!.goneAt).not.toBeNull();
    const [versions] = await h.database.sql<{ n: number }[]>`
      select count(*)::int as n from page_versions where url = any(${changed}::text[])`;
    expect(versions!.n).toBe(6);

    // it comes back: page.returned
    h.sim.web.editSite(ORIGIN, { restore: [removed] });
    const back = await crawl();
    expect(back.events).toEqual({ 'page.returned': [removed] });
  });
});

describe('search and export of pages', () => {
  const crawled = once(async () => {
    const r = await cli(['sources', 'add', 'website', `${ORIGIN}/`]);
    // registered by the block above when it ran first
    if (r.code !== 0) expect(r.stderr).toContain('already');
    const id = /source (\d+) added/.exec(r.stdout)?.[1];
    if (id !== undefined) expectExit(await cli(['backfill', '--source', id]), 0);
  });

  /** A section under two headings of a stored page (cut from its content as the indexer cuts it), and a phrase of it. */
  async function sectionPhrase() {
    const stored = await h.database.sql<{ url: string; content: string }[]>`
      select url, content from pages where gone_at is null order by url`;
    const [s] = stored.flatMap((p) =>
      pageSections(p.content)
        .filter((x) => x.headings.length >= 2)
        .map((x) => ({ url: p.url, ...x })),
    );
    const body = s!.text.split('\n').slice(1).join(' ');
    const phrase = body
      .split(/\s+/)
      .filter((w) => /^[a-z]+$/i.test(w))
      .slice(0, 4)
      .join(' ');
    return { ...s!, phrase };
  }

  async function searchPagesCli(phrase: string) {
    const r = await cli(['search', `"${phrase}"`, '--kind', 'page', '--json', '--limit', '50']);
    const hits =
      r.code === 0
        ? r.stdout
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l) as { kind: string; url: string; section: string; link: string; snippet: string })
        : [];
    return { r, hits };
  }

  it('search finds a phrase of a page with its section and a link to it', async () => {
    await crawled();
    const s = await sectionPhrase();
    const { r, hits } = await searchPagesCli(s.phrase);
    expectExit(r, 0);
    const hit = hits.find((x) => x.url === s.url && x.section === s.headings.join(' › '));
    expect(hit, `hits: ${r.stdout}`).toBeDefined();
    expect(hit!.link).toBe(`${s.url}#${s.anchor}`);
    expect(hit!.snippet).toContain('«');
  });

  it("search reads a page's passages (issue #34); page_sections keeps no row, not even an older build's", async () => {
    await crawled();
    const { sql } = h.database;
    const s = await sectionPhrase();
    const count = async (table: string) =>
      (await sql<{ n: number }[]>`select count(*)::int as n from ${sql(table)}`)[0]!.n;
    const pagePassages = async () =>
      (await sql<{ n: number }[]>`select count(*)::int as n from passages where kind = 'page' and doc = ${s.url}`)[0]!
        .n;
    // the crawl landed, its pages are cut into passages, and the sections are not stored again
    expect(await pagePassages()).toBeGreaterThan(0);
    expect(await count('page_sections')).toBe(0);
    const found = async () => (await searchPagesCli(s.phrase)).hits.some((x) => x.url === s.url);
    expect(await found()).toBe(true);

    // without its passages the page is not found; queued again, search cuts them and finds it
    await sql`delete from passages where kind = 'page' and doc = ${s.url}`;
    expect(await found()).toBe(false);
    await sql`insert into search_index_queue (kind, video_id, lang) values ('page', ${s.url}, '')`;
    expect(await found()).toBe(true);
    expect(await pagePassages()).toBeGreaterThan(0);

    // an older build's landing still writes its sections: the statement succeeds, no row is kept
    await sql`
      insert into page_sections (url, n, headings, anchor, text, tsv)
      values (${s.url}, 0, ${s.headings}::text[], ${s.anchor}, ${s.text}, to_tsvector('simple', ${s.text}))`;
    expect(await count('page_sections')).toBe(0);
  });

  it("reads the pages' passages only, not the transcripts' that hold the same words (issue #34)", async () => {
    await crawled();
    const { sql } = h.database;
    const s = await sectionPhrase();
    // transcript passages holding the phrase (in the `simple` configuration, as a page's), among
    // many that do not: an index shared with transcripts returns them all, and their rows were
    // read only to be dropped by their kind
    const noisy = 3_000;
    const noise = { count: 10 * noisy, lang: '' };
    await insertNoisePassages(sql, {
      ...noise,
      kinds: ['transcript'],
      doc: 'vidPageNoise',
      holding: noisy,
      words: s.phrase,
    });
    // and pages enough that reading every page passage is not the cheaper plan
    await insertNoisePassages(sql, { ...noise, kinds: ['page'], doc: 'https://page-noise.example/' });
    try {
      await sql`analyze passages`;
      // its plan, as Postgres ran it: the rows it read and dropped
      const {
        result: hits,
        plan,
        rowsDropped,
      } = await withPlan(h.database.url, 'from passages p', (tx) => searchPages(tx, { query: s.phrase, limit: 20 }));
      expect(hits.some((x) => x.url === s.url)).toBe(true);
      expect(rowsDropped, plan).toBeLessThan(noisy / 10);
    } finally {
      await sql`delete from passages where doc like 'vidPageNoise%' or doc like 'https://page-noise.example/%'`;
    }
  });
});

/** The pages table as the export contract spells it (timestamps as ISO with microseconds, UTC). */
async function pagesTable(): Promise<Record<string, unknown>[]> {
  return h.database.sql<Record<string, unknown>[]>`
    select url, name, description, og_url, content, count_characters::float8 as count_characters, content_sha256,
      job_id as batch,
      to_char(first_seen_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as first_seen_at,
      to_char(last_seen_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as last_seen_at,
      to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as updated_at,
      to_char(gone_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as gone_at
    from pages order by url`;
}

describe('export --kind page', () => {
  const crawled = once(async () => {
    const r = await cli(['sources', 'add', 'website', `${ORIGIN}/blog`, '--limit', '200']);
    expectExit(r, 0);
    const id = Number(/source (\d+) added/.exec(r.stdout)![1]);
    expectExit(await cli(['backfill', '--source', String(id)]), 0);
    return id;
  });

  it('a crawl of a path stays under it (the child-path rule)', async () => {
    const id = await crawled();
    const urls = await h.database.sql<{ url: string }[]>`select url from source_pages where source_id = ${id}`;
    expect(urls.length).toBeGreaterThan(0);
    for (const { url } of urls) expect(url.startsWith(`${ORIGIN}/blog/`), url).toBe(true);
  });

  it('JSONL, CSV and Parquet, read back independently, equal the table', async () => {
    await crawled();
    const table = await pagesTable();
    expect(table.length).toBeGreaterThan(0);

    const jsonl = join(dir, 'pages.jsonl');
    expectExit(await cli(['export', '--format', 'jsonl', '--kind', 'page', '--out', jsonl]), 0);
    const fromJsonl = readFileSync(jsonl, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(fromJsonl).toEqual(table.map((r) => ({ kind: 'page', ...r })));

    const csv = join(dir, 'pages.csv');
    expectExit(await cli(['export', '--format', 'csv', '--kind', 'page', '--csv-raw-formulas', '--out', csv]), 0);
    const rows = parseCsv(readFileSync(csv, 'utf8'), {
      columns: true,
      cast: (v, c) => (v === '' && !c.quoting ? null : v),
    }) as Record<string, unknown>[];
    expect(rows).toEqual(
      table.map((r) => ({ ...r, count_characters: r.count_characters === null ? null : String(r.count_characters) })),
    );

    const parquet = join(dir, 'pages.parquet');
    expectExit(await cli(['export', '--format', 'parquet', '--kind', 'page', '--out', parquet]), 0);
    const db = await DuckDBInstance.create(':memory:');
    const c = await db.connect();
    try {
      const read = (
        await c.runAndReadAll(`
          select url, name, description, og_url, content, count_characters::double as count_characters, content_sha256, batch,
            strftime(first_seen_at, '%Y-%m-%dT%H:%M:%S.%fZ') as first_seen_at,
            strftime(last_seen_at, '%Y-%m-%dT%H:%M:%S.%fZ') as last_seen_at,
            strftime(updated_at, '%Y-%m-%dT%H:%M:%S.%fZ') as updated_at,
            strftime(gone_at, '%Y-%m-%dT%H:%M:%S.%fZ') as gone_at
          from read_parquet('${parquet}') order by url`)
      ).getRowObjectsJson();
      expect(read).toEqual(table);
    } finally {
      c.closeSync();
    }
  });

  it('JSONL by default holds the videos, then the pages; CSV holds one kind and says what it left out', async () => {
    await crawled();
    const table = await pagesTable();
    const both = await cli(['export', '--format', 'jsonl', '--out', '-']);
    expectExit(both, 0);
    const kinds = both.stdout
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => (JSON.parse(l) as { kind?: string }).kind ?? 'video');
    expect(kinds.filter((k) => k === 'page')).toHaveLength(table.length);
    const csv = await cli(['export', '--format', 'csv', '--out', '-']);
    expectExit(csv, 0);
    expect(csv.stderr).toContain(`${table.length} stored web page(s) are not in the export`);
    const mixed = await cli(['export', '--format', 'csv', '--kind', 'page', '--lang', 'en', '--out', '-']);
    expectCleanError(mixed, 2, '--lang');
  });
});

describe('a pages source', () => {
  it('scrapes each page once a sync (1 credit each), keeps it current and marks a vanished one gone', async () => {
    const site = 'https://help.example.test';
    h.sim.web.editSite(site, { size: 12 });
    const urls = h.sim.web.siteUrls(site).slice(1, 4);
    const r = await cli(['sources', 'add', 'pages', ...urls, '--refresh', '1h']);
    expectExit(r, 0);
    const id = /source (\d+) added/.exec(r.stdout)![1]!;
    let before = await usedCredits();
    let from = await lastEventId();
    expectExit(await cli(['backfill', '--source', id]), 0);
    expect((await usedCredits()) - before).toBe(3);
    expect((await pageEvents(from))['page.added']?.sort()).toEqual([...urls].sort());

    // within --refresh: nothing read, nothing spent
    before = await usedCredits();
    expectExit(await cli(['backfill', '--source', id]), 0);
    expect((await usedCredits()) - before).toBe(0);

    // --refresh on the backfill reads them all again: one changed, one gone
    h.sim.web.editSite(site, { change: [urls[0]!], remove: [urls[1]!] });
    before = await usedCredits();
    from = await lastEventId();
    expectExit(await cli(['backfill', '--source', id, '--refresh']), 0);
    expect((await usedCredits()) - before).toBe(2);
    expect(await pageEvents(from)).toEqual({ 'page.changed': [urls[0]], 'page.gone': [urls[1]] });
  });
});

describe('a hostile crawl answer', () => {
  it('stores the good pages and keeps the bad ones raw, quarantined with the reason; unknown fields kept', async () => {
    const origin = 'https://odd.example.test';
    h.sim.web.editSite(origin, { size: 5 });
    const r = await cli(['sources', 'add', 'website', `${origin}/`]);
    expectExit(r, 0);
    const id = /source (\d+) added/.exec(r.stdout)![1]!;
    const good = { url: `${origin}/a`, content: '# A\n\nfine', countCharacters: 9, futureField: { x: 1 } };
    h.sim.script([
      {
        match: 'GET /web/crawl/*',
        status: 200,
        body: {
          status: 'completed',
          pages: [
            good,
            { url: `${origin}/nul`, content: 'bad \u0000 byte', countCharacters: 10 },
            { url: `${origin}/no-content`, countCharacters: 0 },
          ],
        },
      },
    ]);
    const b = await cli(['backfill', '--source', id]);
    // quarantined items are kept raw with their reason: backfill says what did not land
    expect([0, 1]).toContain(b.code);
    const pages = await h.database.sql<{ url: string }[]>`select url from pages where url like ${`${origin}/%`}`;
    expect(pages.map((p) => p.url)).toEqual([good.url]);
    const items = await h.database.sql<{ url: string; state: string; reasonCode: string; raw: unknown }[]>`
      select i.video_id as url, i.state, i.reason_code as "reasonCode", coalesce(i.payload, to_jsonb(i.payload_raw)) as raw
      from batch_items i join batches b using (job_id) where b.source_id = ${Number(id)} order by i.video_id`;
    expect(items.map((i) => [i.url, i.state, i.reasonCode])).toEqual([
      [good.url, 'sunk', null],
      [`${origin}/no-content`, 'quarantined', 'schema'],
      [`${origin}/nul`, 'quarantined', 'unstorable'],
    ]);
    expect(items[0]!.raw).toEqual(good);
  });
});
