/**
 * The admin server's drill-down pages in process, against a real pipeline (simulator over HTTP,
 * Postgres, Redis, BullMQ workers) after a backfill of a channel (60 videos) and a playlist (40):
 * what an operator reads on a source's page, a batch's page and an item's page, compared with
 * Postgres; paging (clamped past the end, 400 on a bad value); 404 pages; escaping of payloads
 * and IDs that hold markup; truncation and pruned payloads; the token; the hold banner on every
 * page; a section Postgres cancels left out and logged.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BATCH_ITEMS_PER_PAGE } from '../../src/admin/batch-page.ts';
import { BATCHES_PER_PAGE } from '../../src/admin/batches-page.ts';
import { ITEM_VIEW_MAX_BYTES } from '../../src/admin/item-page.ts';
import { createMetrics } from '../../src/admin/metrics.ts';
import { startAdminServer, type AdminServer } from '../../src/admin/server.ts';
import { SOURCE_BATCHES_PER_PAGE, SOURCE_ERROR_VIDEOS_SHOWN } from '../../src/admin/source-page.ts';
import { escapeHtml } from '../../src/admin/html.ts';
import { planCron } from '../../src/domain/cron.ts';
import { createLogger, silentLogger } from '../../src/log.ts';
import { runBackfill } from '../../src/pipeline/commands/backfill.ts';
import { registerSource } from '../../src/pipeline/commands/sources.ts';
import type { WorkerSet } from '../../src/pipeline/services/workers.ts';
import { bearer } from '../helpers/admin.ts';
import { catalogCoverage, catalogErrorCode } from '../helpers/catalog-outcomes.ts';
import { createPipelineHarness, type PipelineHarness } from '../helpers/pipeline.ts';
import { parseLogLines } from '../helpers/proc.ts';

const TOKEN = 'admin-pages-token-0123456789abcdef';

let h: PipelineHarness;
let workers: WorkerSet;
let admin: AdminServer;
let channelId: number;
let playlistId: number;

async function get(
  path: string,
  headers: Record<string, string> = bearer(TOKEN),
): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(`${admin.url}${path}`, { headers });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

/** The `href`s of the page that start with `prefix`, decoded from their HTML escaping. */
function links(text: string, prefix: string): string[] {
  return [...text.matchAll(/href="([^"]*)"/g)]
    .map((m) => m[1]!.replace(/&amp;/g, '&'))
    .filter((href) => href.startsWith(prefix));
}

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };
const unescapeHtml = (s: string) => s.replace(/&(amp|lt|gt|quot|#39);/g, (e) => ENTITIES[e]!);

const attr = (text: string, name: string) =>
  [...text.matchAll(new RegExp(`<tr ${name}="([^"]*)">`, 'g'))].map((m) => m[1]!);

beforeAll(async () => {
  h = await createPipelineHarness('admin-pages', { catalog: { channels: 2, channelSizes: [60, 40] } });
  workers = h.startWorkers(['poller', 'sink']);
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
  const [first, second] = h.sim.catalog.channels();
  const ch = await registerSource(h.deps, {
    kind: 'channel',
    ref: first!.handle,
    limit: 60,
    langs: ['en'],
    textOnly: false,
    cron: null,
  });
  const pl = await registerSource(h.deps, {
    kind: 'playlist',
    ref: second!.playlistIds[0]!,
    limit: 40,
    langs: ['en'],
    textOnly: true,
    cron: null,
  });
  channelId = ch.id;
  playlistId = pl.id;
  const report = await runBackfill(h.deps, {
    sourceIds: [ch.id, pl.id],
    wait: true,
    timeoutMs: 30_000,
    checkIntervalMs: 100,
  });
  expect(report.exitCode, JSON.stringify(report.problems)).toBe(0);
});

afterAll(async () => {
  await workers?.close(2_000);
  await admin?.close();
  await h?.close();
});

describe('a source page', () => {
  it('every source on the overview links to its page, which shows its settings, next fires, counts, batches, errors and runs', async () => {
    const { sql } = h.database;
    await sql`update sources set cron = '0 3 * * *', max_credits_per_day = 700 where id = ${channelId}`;
    try {
      const overview = await get('/');
      expect(overview.status).toBe(200);
      for (const id of [channelId, playlistId]) {
        const row = new RegExp(`<tr data-source-id="${id}">[\\s\\S]*?</tr>`).exec(overview.text)?.[0];
        expect(links(row!, '/sources/'), `source ${id}`).toEqual([`/sources/${id}`]);
      }

      const page = await get(`/sources/${channelId}`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
      const [s] = await sql<{ title: string; ref: string; videos: number; transcripts: number; now: Date }[]>`
        select s.title, s.ref, st.videos, st.transcripts, now() as now from sources s join source_stats st on st.source_id = s.id where s.id = ${channelId}`;
      expect(page.text).toContain(escapeHtml(s!.title));
      expect(page.text).toContain(`<code>${escapeHtml(s!.ref)}</code>`);
      expect(page.text).toContain('<code>0 3 * * *</code> (UTC)');
      expect(page.text).toContain('at most 700 credits per UTC day');
      expect(page.text).toContain('at most 60 videos per sync');
      const fires = [...page.text.matchAll(/<li><time datetime="([^"]+)">/g)].map((m) => m[1]);
      expect(fires).toEqual(planCron('0 3 * * *', s!.now).next.map((d) => d.toISOString()));
      expect(page.text).toContain(`<div class="v" id="videos">${s!.videos}</div>`);
      expect(page.text).toContain(`<div class="v" id="transcripts">${s!.transcripts}</div>`);
      expect(s!.videos).toBeGreaterThan(0);

      // its batches, the latest first, each linked to its page
      const jobIds = (
        await sql<
          { job_id: string }[]
        >`select job_id from batches where source_id = ${channelId} order by submitted_at desc, job_id desc`
      ).map((r) => r.job_id);
      expect(jobIds.length).toBeGreaterThan(0);
      expect(attr(page.text, 'data-job-id')).toEqual(jobIds);
      for (const j of jobIds) expect(page.text).toContain(`href="/batches/${encodeURIComponent(j)}"`);

      // its latest error codes: per kind, language and code the videos the catalog says fail
      // that way, each shown video one of them and linked to its latest item
      const ids = h.sim.catalog.videoIds(h.sim.catalog.channels()[0]!.id)!;
      const expected = new Map<string, string[]>();
      for (const [kind, lang] of [
        ['video', ''],
        ['transcript', 'en'],
      ] as const) {
        for (const id of ids) {
          const code = catalogErrorCode(h.sim, id, kind);
          if (code !== null)
            expected.set(`${kind} ${lang} ${code}`, [...(expected.get(`${kind} ${lang} ${code}`) ?? []), id]);
        }
      }
      expect(expected.size).toBeGreaterThan(0);
      expect(
        [...page.text.matchAll(/<tr data-error-code="([^"]+)" data-kind="([^"]+)" data-lang="([^"]*)">/g)]
          .map((m) => `${m[2]} ${m[3]} ${m[1]}`)
          .sort(),
      ).toEqual([...expected.keys()].sort());
      for (const [key, videos] of expected) {
        const [kind, lang, code] = key.split(' ');
        const row = new RegExp(
          `<tr data-error-code="${code}" data-kind="${kind}" data-lang="${lang}">[\\s\\S]*?</tr>`,
        ).exec(page.text)?.[0];
        expect(row, key).toContain(`<td class="num">${videos.length}</td>`);
        const shown = links(row!, '/batches/').map((href) => decodeURIComponent(href.split('/items/')[1]!));
        expect(shown.length).toBe(Math.min(SOURCE_ERROR_VIDEOS_SHOWN, videos.length));
        expect(new Set(shown).size).toBe(shown.length);
        for (const v of shown) expect(videos).toContain(v);
      }

      // what its videos got in the language asked: as the catalog says
      const want = catalogCoverage(h.sim, ids, 'en');
      const cov = /<tr data-coverage-lang="en">([\s\S]*?)<\/tr>/.exec(page.text)?.[1];
      expect([...cov!.matchAll(/<td class="num">(\d+)<\/td>/g)].map((m) => Number(m[1]))).toEqual([
        want.asked,
        want.none,
        want.pending,
      ]);

      // its sync runs
      const runs = await sql<
        { id: number }[]
      >`select id::int from sync_runs where source_id = ${channelId} order by started_at desc, id desc`;
      expect(attr(page.text, 'data-run-id')).toEqual(runs.map((r) => String(r.id)));
    } finally {
      await sql`update sources set cron = null, max_credits_per_day = null where id = ${channelId}`;
    }
  });

  it('pages its batches 50 at a time, the latest first; a page past the last shows the last; a bad page is 400', async () => {
    const { sql } = h.database;
    const added = await sql<{ job_id: string }[]>`
      insert into batches (job_id, source_id, kind, status, credits_estimated, request, submitted_at, total)
      select 'paged-' || lpad(i::text, 3, '0'), ${playlistId}, 'video', 'completed', 2, '{}', now() - interval '1 day' - i * interval '1 minute', 1
      from generate_series(1, 120) i returning job_id`;
    try {
      const all = (
        await sql<
          { job_id: string }[]
        >`select job_id from batches where source_id = ${playlistId} order by submitted_at desc, job_id desc`
      ).map((r) => r.job_id);
      const pages = Math.ceil(all.length / SOURCE_BATCHES_PER_PAGE);
      const seen: string[] = [];
      for (let n = 1; n <= pages; n++) {
        const r = await get(`/sources/${playlistId}?page=${n}`);
        expect(r.status).toBe(200);
        const rows = attr(r.text, 'data-job-id');
        expect(rows.length).toBe(
          n < pages ? SOURCE_BATCHES_PER_PAGE : all.length - (pages - 1) * SOURCE_BATCHES_PER_PAGE,
        );
        seen.push(...rows);
        if (n < pages) expect(links(r.text, `/sources/${playlistId}?page=${n + 1}`)).not.toHaveLength(0);
      }
      expect(seen).toEqual(all);
      expect(attr((await get(`/sources/${playlistId}?page=${pages + 7}`)).text, 'data-job-id')).toEqual(
        all.slice((pages - 1) * SOURCE_BATCHES_PER_PAGE),
      );
      for (const [q, name, value] of [
        ['page=0', 'page', '0'],
        ['page=x', 'page', 'x'],
        ['runs=-1', 'runs', '-1'],
      ] as const) {
        const bad = await get(`/sources/${playlistId}?${q}`);
        expect(bad.status, q).toBe(400);
        expect(bad.text).toBe(`${name}: invalid value "${value}": expected a whole number from 1\n`);
      }
    } finally {
      await sql`delete from batches where job_id = any(${added.map((r) => r.job_id)}::text[])`;
    }
  });
});

describe('a batch page and an item page', () => {
  /** the channel's video batch: 60 items */
  async function channelVideoBatch(): Promise<string> {
    const [b] = await h.database.sql<
      { job_id: string }[]
    >`select job_id from batches where source_id = ${channelId} and kind = 'video'`;
    return b!.job_id;
  }

  it('shows the batch and pages its items by video ID, each linked to its raw item', async () => {
    const jobId = await channelVideoBatch();
    const items = (
      await h.database.sql<
        { video_id: string }[]
      >`select video_id from batch_items where job_id = ${jobId} order by video_id`
    ).map((r) => r.video_id);
    expect(items).toHaveLength(60);
    const first = await get(`/batches/${encodeURIComponent(jobId)}`);
    expect(first.status).toBe(200);
    expect(first.text).toContain(`<a href="/sources/${channelId}">`);
    expect(first.text).toMatch(/<dt>credits estimated<\/dt><dd>\d+<\/dd>/);
    expect(attr(first.text, 'data-video-id')).toEqual(items.slice(0, BATCH_ITEMS_PER_PAGE));
    const second = await get(`/batches/${encodeURIComponent(jobId)}?page=2`);
    expect(attr(second.text, 'data-video-id')).toEqual(items.slice(BATCH_ITEMS_PER_PAGE));
    expect((await get(`/batches/${encodeURIComponent(jobId)}?page=abc`)).status).toBe(400);

    // the first item's link leads to its payload, pretty-printed as Postgres stores it
    const href = links(first.text, `/batches/${encodeURIComponent(jobId)}/items/`)[0]!;
    const item = await get(href);
    expect(item.status).toBe(200);
    const [stored] = await h.database.sql<
      { pretty: string }[]
    >`select jsonb_pretty(payload) as pretty from batch_items where job_id = ${jobId} and video_id = ${items[0]!}`;
    expect(item.text).toContain(`<pre class="payload" id="payload">${escapeHtml(stored!.pretty)}</pre>`);
  });

  it('a payload holding markup is shown as text; one past the limit is cut; a pruned one shows its sha256 and size', async () => {
    const { sql } = h.database;
    const jobId = await channelVideoBatch();
    const [a, b, c] = (
      await sql<
        { video_id: string }[]
      >`select video_id from batch_items where job_id = ${jobId} and state = 'sunk' order by video_id limit 3`
    ).map((r) => r.video_id);
    const saved = await sql<
      { video_id: string; payload: string }[]
    >`select video_id, payload::text as payload from batch_items where job_id = ${jobId} and video_id = any(${[a!, b!, c!]}::text[])`;
    const itemPath = (v: string) => `/batches/${encodeURIComponent(jobId)}/items/${encodeURIComponent(v)}`;
    try {
      await sql`update batch_items set payload = jsonb_set(payload, '{video,title}', to_jsonb(${'<script>alert(1)</script><img src=x onerror=alert(2)>'}::text)) where job_id = ${jobId} and video_id = ${a!}`;
      const marked = await get(itemPath(a!));
      expect(marked.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;');
      expect(marked.text).not.toContain('<script');
      expect(marked.text).not.toContain('<img');

      await sql`update batch_items set payload = jsonb_set(payload, '{video,description}', to_jsonb(repeat('ü', 200000))) where job_id = ${jobId} and video_id = ${b!}`;
      const big = await get(itemPath(b!));
      expect(big.status).toBe(200);
      expect(big.text).toContain('id="truncated"');
      const shown = unescapeHtml(/<pre class="payload" id="payload">([\s\S]*?)<\/pre>/.exec(big.text)![1]!);
      expect(Buffer.byteLength(shown)).toBeLessThanOrEqual(ITEM_VIEW_MAX_BYTES);
      expect(Buffer.byteLength(shown)).toBeGreaterThan(ITEM_VIEW_MAX_BYTES - 4);
      expect(big.text.length).toBeLessThan(ITEM_VIEW_MAX_BYTES + 20_000);

      await sql`update batch_items set payload_sha256 = encode(sha256(convert_to(payload::text, 'UTF8')), 'hex'), payload_bytes = octet_length(payload::text),
        payload = null, payload_pruned_at = now() - interval '2 days' where job_id = ${jobId} and video_id = ${c!}`;
      const [p] = await sql<
        { sha: string; bytes: number }[]
      >`select payload_sha256 as sha, payload_bytes as bytes from batch_items where job_id = ${jobId} and video_id = ${c!}`;
      const pruned = await get(itemPath(c!));
      expect(pruned.text).toMatch(
        /<p id="pruned">Pruned by retention <time [^>]+>[^<]+<\/time> <span class="muted small">\(2 d ago\)<\/span>/,
      );
      expect(pruned.text).toContain(`<code>${p!.sha}</code>`);
      expect(pruned.text).toContain(`${p!.bytes} bytes`);
      expect(pruned.text).not.toContain('<pre');
    } finally {
      for (const s of saved) {
        await sql`update batch_items set payload = ${s.payload}::jsonb, payload_pruned_at = null, payload_sha256 = null, payload_bytes = null
          where job_id = ${jobId} and video_id = ${s.video_id}`;
      }
    }
  });

  it('an item whose ID holds markup and slashes is linked, found and escaped; a raw text payload is shown as received', async () => {
    const { sql } = h.database;
    const jobId = await channelVideoBatch();
    const odd = 'zz/"<b>odd</b>#7';
    await sql`insert into batch_items (job_id, video_id, state, payload_raw, reason, reason_code)
      values (${jobId}, ${odd}, 'quarantined', ${'{"videoId": "zz", "x": "<i>\\u0000</i>"}'}, 'a value Postgres cannot store <here>', 'unstorable')`;
    try {
      // the page the item falls on, by video ID as Postgres orders them
      const [before] = await sql<
        { n: number }[]
      >`select count(*)::int as n from batch_items where job_id = ${jobId} and video_id < ${odd}`;
      const batch = await get(
        `/batches/${encodeURIComponent(jobId)}?page=${Math.floor(before!.n / BATCH_ITEMS_PER_PAGE) + 1}`,
      );
      const href = `/batches/${encodeURIComponent(jobId)}/items/${encodeURIComponent(odd)}`;
      expect(links(batch.text, href)).toEqual([href]);
      expect(batch.text).toContain(`<code>${escapeHtml(odd)}</code>`);
      const item = await get(href);
      expect(item.status).toBe(200);
      expect(item.text).toContain(
        '<pre class="payload" id="payload">{&quot;videoId&quot;: &quot;zz&quot;, &quot;x&quot;: &quot;&lt;i&gt;\\u0000&lt;/i&gt;&quot;}</pre>',
      );
      expect(item.text).toContain('kept as text (payload_raw)');
      expect(item.text).toContain('a value Postgres cannot store &lt;here&gt;');
    } finally {
      await sql`delete from batch_items where job_id = ${jobId} and video_id = ${odd}`;
    }
  });
});

describe('every batch, 404s, the token, the hold banner, a cancelled section', () => {
  it('/batches pages every batch, the latest first, and filters by status', async () => {
    const { sql } = h.database;
    const all = (
      await sql<{ job_id: string }[]>`select job_id from batches order by submitted_at desc, job_id desc`
    ).map((r) => r.job_id);
    const r = await get('/batches');
    expect(r.status).toBe(200);
    expect(attr(r.text, 'data-job-id')).toEqual(all.slice(0, BATCHES_PER_PAGE));
    expect(r.text).toContain(`<span class="current" aria-current="page">all (${all.length})</span>`);
    const [failedOne] = all;
    await sql`update batches set status = 'failed' where job_id = ${failedOne!}`;
    try {
      const failed = await get('/batches?status=failed');
      expect(attr(failed.text, 'data-job-id')).toEqual([failedOne]);
      const bad = await get('/batches?status=done');
      expect(bad.status).toBe(400);
      expect(bad.text).toBe(
        'status: invalid value "done": expected one of submitted, queued, active, completed, failed, expired\n',
      );
    } finally {
      await sql`update batches set status = 'completed' where job_id = ${failedOne!}`;
    }
    // the overview's recent batches lead here
    expect(links((await get('/')).text, '/batches')).toContain('/batches');
  });

  it('an unknown source, batch or item is a 404 page; every page needs the token', async () => {
    const [b] = await h.database.sql<{ job_id: string }[]>`select job_id from batches limit 1`;
    const job = encodeURIComponent(b!.job_id);
    for (const [path, says] of [
      ['/sources/999999', 'Source &quot;999999&quot; does not exist.'],
      ['/sources/abc', 'Source &quot;abc&quot; does not exist.'],
      ['/sources/99999999999999999999', 'does not exist.'],
      ['/batches/no-such-job', 'Batch &quot;no-such-job&quot; does not exist.'],
      ['/batches/a%00b', 'does not exist.'],
      [`/batches/${job}/items/no-such-video`, 'Item &quot;no-such-video&quot; of batch'],
    ] as const) {
      const r = await get(path);
      expect(r.status, path).toBe(404);
      expect(r.headers.get('content-type')).toMatch(/^text\/html/);
      expect(r.text).toContain(says);
    }
    for (const path of [`/sources/${channelId}`, '/batches', `/batches/${job}`, `/batches/${job}/items/x`]) {
      expect((await get(path, {})).status, path).toBe(401);
      expect((await get(path, bearer('not-the-token-0123456789'))).status, path).toBe(401);
    }
  });

  it('while an upstream hold applies, every page shows it', async () => {
    const { sql } = h.database;
    const [b] = await sql<{ job_id: string; video_id: string }[]>`select job_id, video_id from batch_items limit 1`;
    const job = encodeURIComponent(b!.job_id);
    const pages = [
      '/',
      `/sources/${channelId}`,
      '/batches',
      `/batches/${job}`,
      `/batches/${job}/items/${encodeURIComponent(b!.video_id)}`,
      '/sources/424242',
    ];
    for (const p of pages) expect((await get(p)).text, p).not.toContain('data-hold=');
    await sql`insert into upstream_holds (code, scope, reason) values ('upgrade-required', 'submit', ${'the plan has no batches <upgrade>'})`;
    try {
      for (const p of pages) {
        const r = await get(p);
        expect(r.text, p).toMatch(
          /<div class="banner" role="alert" data-hold="upgrade-required"><strong>On hold \(upgrade-required\)<\/strong> <span class="small">set (just now|\d+ s ago)<\/span>: [^<]*the plan has no batches &lt;upgrade&gt;/,
        );
      }
    } finally {
      await sql`delete from upstream_holds where code = 'upgrade-required'`;
    }
  });

  it('a section Postgres cancels is left out and logged; the rest of the page is shown', async () => {
    const lines: string[] = [];
    const own = await startAdminServer({
      port: 0,
      token: TOKEN,
      sql: h.database.sql,
      redis: h.redis,
      queues: h.queues,
      metrics: createMetrics({ processMetrics: false }),
      log: createLogger({ level: 'warn', destination: { write: (line: string) => lines.push(line) } }),
      queryTimeoutMs: 300,
    });
    const locker = await h.database.sql.reserve();
    try {
      await locker`begin`;
      await locker`lock table sync_runs in access exclusive mode`;
      const res = await fetch(`${own.url}/sources/${channelId}`, { headers: bearer(TOKEN) });
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain('Not shown: runs (the database did not answer in time; see the daemon log).');
      expect(text).toContain('Sync runs not shown');
      expect(text).toMatch(/<tr data-job-id=/);
      expect(
        parseLogLines(lines.join(''))
          .filter((l) => l.event === 'admin.section_failed')
          .map((l) => [l.page, l.section, l.cancelled]),
      ).toEqual([['source', 'runs', true]]);
    } finally {
      await locker`rollback`;
      locker.release();
      await own.close();
    }
  });
});
