/**
 * The admin pages of web pages (#29) in process against a real pipeline: a website source built
 * through the CLI against the simulator (5 pages crawled; then 1 page revised and 1 removed,
 * crawled again), then what a person reads with the admin token: the source's page (its page
 * count, its pages by URL, the removed one gone, no video sections), a page's page (its fields
 * as stored, its sources, both versions newest first, its sections, its events, its batch item),
 * the overview's counts, search's page hits, 400 and 404; and a page whose stored name, description
 * and section text hold markup (written into the row: the simulator serves no hostile page) shown
 * escaped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/admin/metrics.ts';
import { startAdminServer, type AdminServer } from '../../src/admin/server.ts';
import { webPageHref } from '../../src/admin/web-page.ts';
import { pageSections } from '../../src/domain/pages.ts';
import { silentLogger } from '../../src/log.ts';
import { bearer } from '../helpers/admin.ts';
import { expectExit } from '../helpers/cli.ts';
import { createPipelineHarness, runCli, type PipelineHarness } from '../helpers/pipeline.ts';

const TOKEN = 'admin-web-pages-token-0123456789';
const ORIGIN = 'https://site.example.test';
const SITE_PAGES = 5;
const HOSTILE = '<script>alert("page")</script>';

let h: PipelineHarness;
let admin: AdminServer;
let sourceId: number;
let urls: string[];
let changed: string;
let removed: string;

async function get(path: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${admin.url}${path}`, { headers: bearer(TOKEN) });
  return { status: res.status, text: await res.text() };
}

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };
const unescapeHtml = (s: string) => s.replace(/&(amp|lt|gt|quot|#39);/g, (e) => ENTITIES[e]!);
const attrs = (text: string, name: string) =>
  [...text.matchAll(new RegExp(`<tr ${name}="([^"]*)"`, 'g'))].map((m) => unescapeHtml(m[1]!));
const section = (text: string, id: string) =>
  new RegExp(`<section id="${id}">[\\s\\S]*?</section>`).exec(text)?.[0] ?? '';

beforeAll(async () => {
  h = await createPipelineHarness('admin-web-pages', { jobs: { crawlPageMs: 1 } });
  h.sim.web.editSite(ORIGIN, { size: SITE_PAGES });
  admin = await startAdminServer({
    port: 0,
    token: TOKEN,
    sql: h.database.sql,
    redis: h.redis,
    queues: h.queues,
    metrics: createMetrics({ processMetrics: false }),
    secrets: [h.sim.apiKey],
    log: silentLogger(),
  });
  const cli = (args: string[]) => runCli(args, h.env, 90_000);
  const added = await cli(['sources', 'add', 'website', `${ORIGIN}/`, '--limit', '100']);
  expectExit(added, 0);
  sourceId = Number(/source (\d+) added/.exec(added.stdout)![1]);
  expectExit(await cli(['backfill', '--source', String(sourceId)]), 0);
  urls = h.sim.web.siteUrls(ORIGIN);
  changed = urls[1]!;
  removed = urls[2]!;
  h.sim.web.editSite(ORIGIN, { change: [changed], remove: [removed] });
  expectExit(await cli(['backfill', '--source', String(sourceId)]), 0);
}, 180_000);

afterAll(async () => {
  await admin?.close();
  await h?.close();
});

describe('web pages on the admin pages', () => {
  it("a website source's page shows its page count and every page by URL, the removed one gone; no video sections", async () => {
    const page = await get(`/sources/${sourceId}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`<div class="v" id="pages-count">${SITE_PAGES - 1}</div>`);
    expect(page.text).not.toContain('id="coverage"');
    expect(page.text).not.toContain('id="errors"');
    expect(page.text).not.toContain('id="videos"');
    const listed = attrs(section(page.text, 'pages'), 'data-page-url');
    expect(listed).toEqual([...urls].sort());
    const rowOf = (url: string) =>
      new RegExp(`<tr data-page-url="${url.replace(/[.?+*()[\]\\/]/g, '\\$&')}">[\\s\\S]*?</tr>`).exec(page.text)![0];
    expect(rowOf(removed)).toContain('pill muted">gone');
    expect(rowOf(changed)).not.toContain('>gone<');
    expect(rowOf(changed)).toContain(`href="${webPageHref(changed).replace(/&/g, '&amp;')}"`);
    expect(await get(`/sources/${sourceId}?pages=x`)).toMatchObject({
      status: 400,
      text: expect.stringMatching(/^pages:/),
    });
  });

  it("a changed page's page shows its stored fields, its source, both versions newest first, its sections and events, and links its batch item", async () => {
    const { sql } = h.database;
    const [p] = await sql<{ name: string; contentSha256: string; jobId: string; countCharacters: number | null }[]>`
      select name, content_sha256 as "contentSha256", job_id as "jobId", count_characters::float8 as "countCharacters"
      from pages where url = ${changed}`;
    const versions = await sql<{ sha: string }[]>`
      select content_sha256 as sha from page_versions where url = ${changed} order by stored_at desc`;
    expect(versions).toHaveLength(2);
    const [stored] = await sql<{ content: string }[]>`select content from pages where url = ${changed}`;
    const sections = pageSections(stored!.content).length;
    expect(sections).toBeGreaterThan(0);

    const page = await get(webPageHref(changed));
    expect(page.status).toBe(200);
    expect(page.text).toContain(`<code id="page-sha256">${p!.contentSha256}</code>`);
    expect(unescapeHtml(page.text)).toContain(`<dd id="page-name">${p!.name}</dd>`);
    expect(page.text).toContain('<dd id="page-gone">no</dd>');
    expect(attrs(page.text, 'data-version-sha256')).toEqual(versions.map((v) => v.sha));
    expect(attrs(page.text, 'data-source-id')).toEqual([String(sourceId)]);
    expect(attrs(page.text, 'data-section')).toHaveLength(Math.min(sections, 100));
    expect(attrs(page.text, 'data-event-type')).toEqual(['page.changed', 'page.added']);
    const item = `/batches/${encodeURIComponent(p!.jobId)}/items/${encodeURIComponent(changed)}`;
    expect(page.text).toContain(`href="${item}"`);
    expect((await get(item)).status).toBe(200);

    const gone = await get(webPageHref(removed));
    expect(gone.status).toBe(200);
    expect(section(gone.text, 'page')).toMatch(/<dd id="page-gone"><span class="pill bad">gone/);
    expect(attrs(gone.text, 'data-event-type')).toEqual(['page.gone', 'page.added']);
  });

  it('the overview counts pages stored and gone', async () => {
    const page = await get('/');
    expect(page.status).toBe(200);
    expect(page.text).toContain(`<div class="v" id="pages-stored">${SITE_PAGES}</div>`);
    expect(page.text).toContain('<span id="pages-gone">1</span> gone');
  });

  it("search shows a page's section as a hit, linked to the page and to the section", async () => {
    // a passage of a section under a heading: page search reads the passages
    const [s] = await h.database.sql<{ url: string; anchor: string; text: string }[]>`
      select s.doc as url, s.anchor, s.text from passages s join pages p on p.url = s.doc
      where s.kind = 'page' and s.anchor is not null and p.gone_at is null order by s.doc, s.n limit 1`;
    const words = s!.text
      .split(/\s+/)
      .filter((w) => /^[a-z]{4,}$/i.test(w))
      .slice(0, 3)
      .join(' ');
    const page = await get(`/search?q=${encodeURIComponent(words)}`);
    expect(page.status).toBe(200);
    const hits = section(page.text, 'page-results');
    expect(attrs(hits, 'data-page-url')).toContain(s!.url);
    expect(hits).toContain(`href="${webPageHref(s!.url).replace(/&/g, '&amp;')}"`);
    expect(unescapeHtml(hits)).toContain(`#${s!.anchor}"`);
  });

  it('a page whose stored name, description and section text hold markup shows it escaped; never as markup', async () => {
    const url = urls[3]!;
    const { sql } = h.database;
    await sql`update pages set name = ${`Name ${HOSTILE}`}, description = ${`<img src=x onerror=alert(1)>`},
      og_url = 'javascript:alert(1)' where url = ${url}`;
    // the sections shown are cut from the stored content
    await sql`update pages set content = ${`Text ${HOSTILE}`} where url = ${url}`;
    for (const path of [webPageHref(url), `/sources/${sourceId}`]) {
      const page = await get(path);
      expect(page.status).toBe(200);
      expect(page.text).not.toContain(HOSTILE);
      expect(page.text).not.toContain('<img src=x');
      expect(page.text).not.toContain('href="javascript:');
      expect(page.text).toContain('Name &lt;script&gt;alert(&quot;page&quot;)&lt;/script&gt;');
    }
    const page = await get(webPageHref(url));
    expect(page.text).toContain('Text &lt;script&gt;');
    expect(page.text).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });

  it('an unknown URL is a 404 page saying so; a missing url parameter is 400 naming it', async () => {
    const unknown = await get(webPageHref(`${ORIGIN}/no-such-page`));
    expect(unknown.status).toBe(404);
    expect(unescapeHtml(unknown.text)).toContain(`Page "${ORIGIN}/no-such-page" does not exist`);
    expect(await get('/pages')).toMatchObject({ status: 400, text: expect.stringMatching(/^url: missing/) });
    expect(await get('/pages?url=')).toMatchObject({ status: 400, text: expect.stringMatching(/^url:/) });
    expect((await fetch(`${admin.url}${webPageHref(changed)}`)).status).toBe(401);
  });
});
