/**
 * Counts that describe now, and language coverage (issue 13, points 4 and 5), as an operator reads
 * them: `status` and `status --json` (CLI processes), `/metrics`, the overview and a source's
 * page, against the simulator over real HTTP, Postgres and Redis. Items the simulator answers
 * `internal-error` show as retryable with their code; once `replay --failed` re-submitted them and
 * they were stored, nothing retryable is left in the counts of now while the history still counts
 * every item received. What a source asking for a language got equals what the simulator's
 * catalog says of its videos (asked language, the first available one, or none).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/admin/metrics.ts';
import { startAdminServer, type AdminServer } from '../../src/admin/server.ts';
import { describeCoverage, type LanguageCoverage } from '../../src/domain/coverage.ts';
import { silentLogger } from '../../src/log.ts';
import type { StatusReport } from '../../src/pipeline/read/status.ts';
import { bearer, parseMetrics, sum, value, type Sample } from '../helpers/admin.ts';
import { catalogCoverage, catalogErrorCode, partlyCoveredLang } from '../helpers/catalog-outcomes.ts';
import { expectExit } from '../helpers/cli.ts';
import { createPipelineHarness, runCli, type CliResult, type PipelineHarness } from '../helpers/pipeline.ts';

const TOKEN = 'latest-outcomes-token-0123456789abcdef';
const CODE = 'internal-error';

let h: PipelineHarness;
let admin: AdminServer;

beforeAll(async () => {
  // private, gone and transcript-less videos in both channels, so every outcome shows
  h = await createPipelineHarness('latest-outcomes', {
    catalog: { channels: 2, channelSizes: [40, 20], privateShare: 0.08, goneShare: 0.08, noTranscriptShare: 0.15 },
  });
  h.startWorkers(['poller', 'sink']);
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
});

afterAll(async () => {
  await admin?.close();
  await h?.close();
});

const cli = (args: string[]): Promise<CliResult> => runCli(args, h.env, 90_000);

async function ok(args: string[]): Promise<CliResult> {
  const r = await cli(args);
  expectExit(r, 0);
  return r;
}

const statusJson = async (): Promise<StatusReport> =>
  JSON.parse((await ok(['status', '--json'])).stdout) as StatusReport;

async function get(path: string): Promise<string> {
  const res = await fetch(`${admin.url}${path}`, { headers: bearer(TOKEN) });
  expect(res.status, path).toBe(200);
  return res.text();
}

const scrape = async (): Promise<Sample[]> => parseMetrics(await get('/metrics'));

/** The `status` text from a heading to the next line that starts another section (a capital letter). */
function section(text: string, heading: string): string {
  const start = text.indexOf(heading);
  expect(start, `"${heading}" in:\n${text}`).toBeGreaterThanOrEqual(0);
  const rest = text.slice(start);
  const end = rest.slice(heading.length).search(/\n[A-Z\n]/);
  return end < 0 ? rest : rest.slice(0, heading.length + end + 1);
}

/** Items of every batch that carry `code`, per kind and language ('' for none), as Postgres has them. */
async function itemsWithCode(code: string): Promise<Map<string, number>> {
  const rows = await h.database.sql<{ kind: string; lang: string; n: number }[]>`
    select b.kind, coalesce(b.lang, '') as lang, count(*)::int as n
    from batch_items i join batches b on b.job_id = i.job_id where i.error_code = ${code} group by 1, 2`;
  return new Map(rows.map((r) => [`${r.kind} ${r.lang}`, r.n]));
}

const withCode = (r: StatusReport, code: string) => r.itemErrors.filter((e) => e.errorCode === code);

describe('counts of now and language coverage', () => {
  let askedSource: number;
  let otherSource: number;
  let lang: string;
  let askedIds: string[];
  let otherIds: string[];
  /** internal-error items per "kind lang" */
  let retried: Map<string, number>;
  let retriedTotal: number;

  it('items the simulator answers internal-error show retryable with their code: status, /metrics, the overview', async () => {
    const [asked, other] = h.sim.catalog.channels();
    askedIds = h.sim.catalog.videoIds(asked!.id)!;
    otherIds = h.sim.catalog.videoIds(other!.id)!;
    lang = partlyCoveredLang(h.sim, askedIds);
    await ok(['sources', 'add', 'channel', asked!.handle, '--limit', String(askedIds.length), '--lang', lang]);
    await ok(['sources', 'add', 'channel', other!.handle, '--limit', String(otherIds.length)]);
    const ids = await h.database.sql<{ id: number; ref: string }[]>`select id, ref from sources order by id`;
    askedSource = ids.find((s) => s.ref === asked!.handle)!.id;
    otherSource = ids.find((s) => s.ref === other!.handle)!.id;

    h.sim.setJobSettings({ itemErrorRate: 0.3 });
    try {
      const backfill = await cli(['backfill', '--all', '--timeout', '60s']);
      // retryable items left: not everything landed
      expect([0, 1], backfill.stderr).toContain(backfill.code);
    } finally {
      h.sim.setJobSettings({ itemErrorRate: 0 });
    }
    retried = await itemsWithCode(CODE);
    retriedTotal = [...retried.values()].reduce((n, k) => n + k, 0);
    expect(retriedTotal).toBeGreaterThan(0);
    expect(retried.get(`transcript ${lang}`) ?? 0).toBeGreaterThan(0);

    const report = await statusJson();
    // one batch each so far: each item with the code is one video's latest outcome
    expect(report.items.retryable).toBe(retriedTotal);
    expect(report.items.retryablePending).toBe(retriedTotal);
    expect(
      Object.fromEntries(
        withCode(report, CODE).map((e) => [`${e.kind} ${e.lang}`, { state: e.state, items: e.items }]),
      ),
    ).toEqual(Object.fromEntries([...retried].map(([k, n]) => [k, { state: 'retryable', items: n }])));
    expect(report.history.itemErrors.find((e) => e.errorCode === CODE && e.state === 'retryable')?.items).toBe(
      retriedTotal,
    );
    // the per kind and language table sums to the totals
    expect(report.outcomes.reduce((n, o) => n + o.retryable, 0)).toBe(retriedTotal);

    // the asked language: the transcripts left retryable are pending, every video counted once
    const cov = report.sources.find((s) => s.id === askedSource)!.coverage!;
    expect(cov.map((c) => c.lang)).toEqual([lang]);
    const c = cov[0]!;
    expect(c.pending).toBe(retried.get(`transcript ${lang}`));
    expect(c.asked + Object.values(c.fellBack).reduce((n, k) => n + k, 0) + c.none + c.pending).toBe(askedIds.length);
    expect(report.sources.find((s) => s.id === otherSource)!.coverage).toEqual([]);

    const text = (await ok(['status'])).stdout;
    const errors = section(text, 'Latest error codes:');
    for (const [k, n] of retried) {
      const [kind, l] = k.split(' ');
      expect(errors).toMatch(new RegExp(`^${kind} +${l || '-'} +${CODE} +retryable +${n}$`, 'm'));
    }
    expect(text).toContain('re-submit retryable items: videosite-ingest replay --failed --dry-run');
    // the batches that left them need attention, with their items still to re-submit
    const withRetryable = report.recent.filter((b) => b.retryable > 0);
    expect(withRetryable.length).toBeGreaterThan(0);
    for (const b of withRetryable) expect(b.retryablePending, b.jobId).toBe(b.retryable);
    expect(section(text, 'Batches of the last 24 h that need attention:')).toContain(withRetryable[0]!.jobId);

    const m = await scrape();
    for (const kind of ['video', 'transcript']) {
      const n = [...retried].filter(([k]) => k.startsWith(`${kind} `)).reduce((t, [, k]) => t + k, 0);
      expect(value(m, 'vsi_videos_by_latest_error_code', { kind, error_code: CODE, state: 'retryable' }), kind).toBe(n);
    }
    expect(value(m, 'vsi_batch_items_by_error_code', { error_code: CODE, state: 'retryable' })).toBe(retriedTotal);
    expect(sum(m, 'vsi_videos_by_latest_outcome', { state: 'retryable' })).toBe(retriedTotal);
    expect(value(m, 'vsi_transcript_language_coverage', { lang, delivered: 'pending' })).toBe(c.pending);

    const overview = await get('/');
    expect(/<section id="errors">[\s\S]*?<\/section>/.exec(overview)?.[0]).toContain(`<th class="num">${CODE}</th>`);
  });

  it('once re-submitted and stored, nothing retryable is left now; the history keeps them', async () => {
    const replay = await cli(['replay', '--failed', '--yes', '--timeout', '60s']);
    expectExit(replay, 0);
    expect(await itemsWithCode(CODE)).toEqual(retried);

    const report = await statusJson();
    expect(report.items.retryable).toBe(0);
    expect(report.items.retryablePending).toBe(0);
    expect(report.items.processing + report.items.landed).toBe(0);
    expect(withCode(report, CODE)).toEqual([]);
    expect(report.history.itemErrors.find((e) => e.errorCode === CODE && e.state === 'retryable')?.items).toBe(
      retriedTotal,
    );
    expect(report.history.items.retryable).toBeGreaterThanOrEqual(retriedTotal);

    // every latest error code is what the catalog says of the videos: none left to chance
    const expected = new Map<string, number>();
    const add = (kind: string, l: string, code: string | null) => {
      if (code !== null)
        expected.set(`${kind} ${l} ${code} failed`, (expected.get(`${kind} ${l} ${code} failed`) ?? 0) + 1);
    };
    for (const id of [...askedIds, ...otherIds]) add('video', '', catalogErrorCode(h.sim, id, 'video'));
    for (const id of askedIds) add('transcript', lang, catalogErrorCode(h.sim, id, 'transcript'));
    for (const id of otherIds) add('transcript', '', catalogErrorCode(h.sim, id, 'transcript'));
    expect(new Map(report.itemErrors.map((e) => [`${e.kind} ${e.lang} ${e.errorCode} ${e.state}`, e.items]))).toEqual(
      expected,
    );

    // what the asked language came to equals the catalog: in it, the first available one, or none
    const want: LanguageCoverage = catalogCoverage(h.sim, askedIds, lang);
    expect(Object.keys(want.fellBack).length).toBeGreaterThan(0);
    expect(want.asked).toBeGreaterThan(0);
    expect(want.none).toBeGreaterThan(0);
    expect(report.sources.find((s) => s.id === askedSource)!.coverage).toEqual([want]);
    expect(report.languageCoverage).toEqual([want]);

    const text = (await ok(['status'])).stdout;
    expect(text).toContain(`  source ${askedSource} ${describeCoverage(want)}\n`);
    expect(section(text, 'Transcript languages (asked')).toContain(`  ${describeCoverage(want)}\n`);
    expect(section(text, 'Latest error codes:')).not.toContain(CODE);
    expect(text).not.toContain('re-submit retryable items');
    // the batches whose items were re-submitted need nothing more
    for (const b of report.recent) expect(b.retryablePending, b.jobId).toBe(0);
    expect(text).not.toContain('Batches of the last 24 h that need attention:');
    expect(text).toMatch(
      /Videos by latest outcome \(per kind and language, as things stand\): \d+ stored, 0 landed \(not yet stored\), 0 in flight, \d+ failed, 0 retryable, 0 quarantined/,
    );

    const m = await scrape();
    // the code's series stay, at 0: an alert on them sees it clear rather than vanish
    for (const kind of ['video', 'transcript'])
      expect(value(m, 'vsi_videos_by_latest_error_code', { kind, error_code: CODE, state: 'retryable' })).toBe(0);
    expect(value(m, 'vsi_batch_items_by_error_code', { error_code: CODE, state: 'retryable' })).toBe(retriedTotal);
    expect(sum(m, 'vsi_videos_by_latest_outcome', { state: 'retryable' })).toBe(0);
    expect(value(m, 'vsi_videos_by_latest_outcome', { kind: 'transcript', lang, state: 'failed' })).toBe(want.none);
    expect(value(m, 'vsi_transcript_language_coverage', { lang, delivered: lang })).toBe(want.asked);
    for (const [l, n] of Object.entries(want.fellBack))
      expect(value(m, 'vsi_transcript_language_coverage', { lang, delivered: l })).toBe(n);
    expect(value(m, 'vsi_transcript_language_coverage', { lang, delivered: 'none' })).toBe(want.none);
    expect(value(m, 'vsi_transcript_language_coverage', { lang, delivered: 'pending' })).toBe(0);

    const overview = await get('/');
    const row = new RegExp(`<tr data-source-id="${askedSource}">[\\s\\S]*?</tr>`).exec(overview)?.[0];
    expect(row).toContain(`data-coverage-lang="${lang}">${describeCoverage(want)}</div>`);
    expect(/<section id="errors">[\s\S]*?<\/section>/.exec(overview)?.[0]).not.toContain(CODE);

    const page = await get(`/sources/${askedSource}`);
    const cells = /<tr data-coverage-lang="([^"]+)">([\s\S]*?)<\/tr>/.exec(page);
    expect(cells?.[1]).toBe(lang);
    const nums = [...cells![2]!.matchAll(/<td class="num">(\d+)<\/td>/g)].map((x) => Number(x[1]));
    expect(nums).toEqual([want.asked, want.none, 0]);
    for (const [l, n] of Object.entries(want.fellBack)) expect(cells![2]).toContain(`<code>${l}</code> ${n}`);
    expect(page).not.toContain(`data-error-code="${CODE}"`);
    const transcriptCodes = [...expected].filter(([k]) => k.startsWith(`transcript ${lang} `));
    for (const [k, n] of transcriptCodes) {
      const code = k.split(' ')[2]!;
      const r = new RegExp(
        `<tr data-error-code="${code}" data-kind="transcript" data-lang="${lang}">[\\s\\S]*?</tr>`,
      ).exec(page)?.[0];
      expect(r, code).toContain(`<td class="num">${n}</td>`);
    }
  });
});
