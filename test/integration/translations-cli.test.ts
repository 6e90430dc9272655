/**
 * `--translate` as a user runs it, through the real CLI against the simulator over real HTTP,
 * with real Postgres, Redis and workers: a source's stored transcripts in other languages are
 * translated once each, estimated before (`backfill --dry-run`: 30 credits per started minute of
 * each video's duration) and billed exactly after (each answer's `x-billable-requests`: 30 per
 * started minute of the transcript, which in the simulator covers only the video's beginning, so
 * the estimate is an upper bound); a native transcript in the target language is never replaced
 * nor translated; a second source asking for the same translations buys none; `search` and
 * `export` return them with their origin.
 *
 * The simulator's translations take their time (`translateMs`), as the real ones do.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/admin/metrics.ts';
import { startAdminServer } from '../../src/admin/server.ts';
import { transcriptRowFromApi, upsertTranscripts } from '../../src/db/transcripts.ts';
import { silentLogger } from '../../src/log.ts';
import { bearer, parseMetrics, value } from '../helpers/admin.ts';
import { expectCleanError, expectExit } from '../helpers/cli.ts';
import { createPipelineHarness, runCli, type PipelineHarness } from '../helpers/pipeline.ts';

const TRANSLATE = 'GET /videosite/transcript/translate';
const TRANSLATE_MS = 150;
const ADMIN_TOKEN = 'translations-admin-token-0123456789';

let h: PipelineHarness;
let dir: string;

beforeAll(async () => {
  h = await createPipelineHarness('translations_cli', {
    catalog: { channels: 1, channelSizes: [20], privateShare: 0, goneShare: 0 },
    jobs: { queuedMs: 100, itemsPerSecond: 2000, translateMs: TRANSLATE_MS },
  });
  h.startWorkers(['poller', 'sink']);
  dir = mkdtempSync(join(tmpdir(), 'vsi-translations-'));
});

afterAll(async () => {
  await h?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const usedCredits = async () => (await h.api.me()).usedCredits;
const translateRequests = () => h.sim.stats().byEndpoint[TRANSLATE]?.total ?? 0;
const sourceIdOf = (stdout: string) => Number(/^source (\d+) added/.exec(stdout)![1]);
/** The dry run's table row of translations into de, as its cells; undefined when it plans none. */
const translateRow = (stdout: string) =>
  stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .find((cells) => cells[1] === 'translate' && cells[2] === 'de');

/** Started minutes of a stored transcript: to the end of its last chunk (offsets and durations in ms). */
async function storedTranscriptMinutes(videoId: string, lang: string): Promise<number> {
  const [row] = await h.database.sql<{ end_ms: number }[]>`
    select max((c->>'offset')::float8 + (c->>'duration')::float8) as end_ms
    from transcripts t cross join jsonb_array_elements(t.chunks) c
    where t.video_id = ${videoId} and t.lang = ${lang}`;
  return Math.max(1, Math.ceil(row!.end_ms / 1000 / 60));
}

describe('--translate de on a source with transcripts', () => {
  // the videos, as the simulator is told to have them
  let english: string[];
  let nativeDe: string;
  let deAvailable: string;
  let silent: string;
  let all: string[];

  beforeAll(() => {
    const channel = h.sim.catalog.channels()[0]!;
    const ids = h.sim.catalog.videoIds(channel.id)!.slice(0, 6);
    // ten minutes each: the estimate (the video's duration) is known exactly
    for (const id of ids) h.sim.catalog.editVideo(id, { durationS: 600 });
    english = ids.slice(0, 3);
    for (const id of english) h.sim.catalog.editVideo(id, { transcriptLanguages: ['en'] });
    nativeDe = ids[3]!;
    h.sim.catalog.editVideo(nativeDe, { transcriptLanguages: ['de'] });
    deAvailable = ids[4]!;
    h.sim.catalog.editVideo(deAvailable, { transcriptLanguages: ['en', 'de'] });
    silent = ids[5]!;
    h.sim.catalog.editVideo(silent, { transcriptLanguages: [] });
    all = ids;
  });

  it('refuses --translate without --max-translate-minutes, naming the flag, before anything runs', async () => {
    const r = await runCli(['sources', 'add', 'videos', ...all, '--translate', 'de'], h.env);
    expectCleanError(r, 2, '--max-translate-minutes');
    const [n] = await h.database.sql<{ n: number }[]>`select count(*)::int as n from sources`;
    expect(n!.n).toBe(0);
  });

  it('estimates before, buys each translation once, billed exactly; never replaces nor translates a native de', async () => {
    const add = await runCli(['sources', 'add', 'videos', ...all], h.env, 60_000);
    expectExit(add, 0);
    const a = sourceIdOf(add.stdout);
    expectExit(await runCli(['backfill', '--source', String(a), '--timeout', '90s'], h.env, 120_000), 0);

    const edit = await runCli(
      ['sources', 'edit', String(a), '--translate', 'de', '--max-translate-minutes', '1000'],
      h.env,
    );
    expectExit(edit, 0);
    expect(edit.stdout).toContain('translate none -> de');
    expect(edit.stdout).toContain('buys translations into de');

    // before: the dry run's figure, 30 credits per started minute of each video that needs one
    const plan = await runCli(['backfill', '--source', String(a), '--dry-run'], h.env, 60_000);
    expectExit(plan, 0);
    const row = translateRow(plan.stdout);
    expect(row, plan.stdout).toBeDefined();
    const estimate = english.length * 30 * 10;
    expect(row).toEqual([String(a), 'translate', 'de', String(english.length), String(estimate)]);

    const before = await usedCredits();
    const requestsBefore = translateRequests();
    const run = await runCli(['backfill', '--source', String(a), '--timeout', '90s'], h.env, 120_000);
    expectExit(run, 0);
    expect(run.stdout).toContain(`${english.length} translations stored`);
    const spent = (await usedCredits()) - before;

    // one request per video that needed one: not the native de, not the one with de available, not the silent one
    expect(translateRequests() - requestsBefore).toBe(english.length);
    const rows = await h.database.sql<
      { video_id: string; lang: string; origin: string; translated_from: string | null; text: string }[]
    >`select video_id, lang, origin, translated_from, text from transcripts where lang = 'de' order by video_id`;
    const translated = rows.filter((r) => r.origin === 'translation');
    expect(translated.map((r) => r.video_id).sort()).toEqual([...english].sort());
    for (const t of translated) {
      expect(t.translated_from).toBe('en');
      expect(t.text.length).toBeGreaterThan(0);
    }
    // the native de transcript stays what the captions said
    expect(rows.find((r) => r.video_id === nativeDe)).toMatchObject({ origin: 'captions', translated_from: null });
    expect(rows.some((r) => r.video_id === deAvailable || r.video_id === silent)).toBe(false);

    // billed exactly: the simulator's charge (30 per started minute of the transcript translated),
    // what /me says was used, and the credit_charges rows of the answers' headers all agree
    let expected = 0;
    for (const id of english) expected += 30 * (await storedTranscriptMinutes(id, 'en'));
    expect(spent).toBe(expected);
    const [charged] = await h.database.sql<{ credits: number; n: number; estimated: number }[]>`
      select coalesce(sum(credits), 0)::int as credits, count(*)::int as n, coalesce(sum(estimated), 0)::int as estimated
      from credit_charges where endpoint = ${TRANSLATE} and source_id = ${a} and basis = 'header'`;
    expect(charged).toEqual({ credits: expected, n: english.length, estimated: estimate });
    expect(expected).toBeLessThanOrEqual(estimate);

    // announced like any transcript, by the source that bought them, with the language translated from
    const events = await h.database.sql<{ video_id: string; source_id: number; from: string; job: string }[]>`
      select video_id, source_id, data->>'translatedFrom' as from, data->>'jobId' as job from events
      where type = 'transcript.added' and data->>'origin' = 'translation' order by video_id`;
    expect(events.map((e) => e.video_id).sort()).toEqual([...english].sort());
    for (const e of events) {
      expect(e).toMatchObject({ source_id: a, from: 'en' });
      expect(e.job).toMatch(/^translation:\d+$/);
    }

    // a second backfill buys nothing more
    const again = await runCli(['backfill', '--source', String(a), '--timeout', '60s'], h.env, 120_000);
    expectExit(again, 0);
    expect(translateRequests() - requestsBefore).toBe(english.length);

    // status shows them
    const status = await runCli(['status'], h.env, 60_000);
    expectExit(status, 0);
    expect(status.stdout).toContain(`source ${a} into de: ${english.length} stored, 0 due, 0 refused by the budget`);
  });

  it('is not bought twice by a second source asking for the same translations', async () => {
    const before = await usedCredits();
    const requestsBefore = translateRequests();
    const add = await runCli(
      ['sources', 'add', 'videos', ...english, '--translate', 'de', '--max-translate-minutes', '1000'],
      h.env,
      60_000,
    );
    expectExit(add, 0);
    expect(add.stdout).toContain('translating into de (at most 1000 min)');
    const b = sourceIdOf(add.stdout);
    const plan = await runCli(['backfill', '--source', String(b), '--dry-run'], h.env, 60_000);
    expect(translateRow(plan.stdout), plan.stdout).toBeUndefined();
    expectExit(await runCli(['backfill', '--source', String(b), '--timeout', '60s'], h.env, 120_000), 0);
    expect(translateRequests()).toBe(requestsBefore);
    expect((await usedCredits()) - before).toBe(0);
    const [n] = await h.database.sql<{ n: number }[]>`
      select count(*)::int as n from translations where state <> 'refused-budget'`;
    expect(n!.n).toBe(english.length);

    const off = await runCli(['sources', 'edit', String(b), '--no-translate'], h.env);
    expectExit(off, 0);
    expect(off.stdout).toContain('translate de -> none');
  });

  it('search and export return translations with their origin', async () => {
    const [t] = await h.database.sql<{ video_id: string; text: string }[]>`
      select video_id, text from transcripts where origin = 'translation' order by video_id limit 1`;
    const word = t!.text.split(/\s+/).find((w) => /^\p{L}{4,}$/u.test(w))!;
    const found = await runCli(['search', word, '--lang', 'de', '--json'], h.env, 60_000);
    expectExit(found, 0);
    const hits = found.stdout
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const hit = hits.find((x) => x.video_id === t!.video_id);
    expect(hit, found.stdout).toMatchObject({ lang: 'de', origin: 'translation', translated_from: 'en' });

    const out = join(dir, 'corpus.jsonl');
    expectExit(await runCli(['export', '--format', 'jsonl', '--out', out], h.env, 60_000), 0);
    const records = readFileSync(out, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const de = records.filter((r) => r.lang === 'de');
    expect(de.filter((r) => r.origin === 'translation').map((r) => r.video_id)).toEqual(
      expect.arrayContaining([t!.video_id]),
    );
    for (const r of de) {
      if (r.origin === 'translation') expect(r.translated_from).toBe('en');
      else expect(r.translated_from).toBeNull();
    }
    expect(records.filter((r) => r.lang !== 'de').every((r) => r.origin === 'captions')).toBe(true);
  });

  it('is bought again only when its source transcript changed and the source asks for refresh', async () => {
    const { sql } = h.database;
    const [a] = await sql<{ id: number }[]>`select id from sources where translate_langs = '{de}' order by id limit 1`;
    const changed = english[0]!;
    // the video's English captions re-uploaded upstream
    h.sim.catalog.editVideo(changed, { transcriptRevisions: { en: 1 } });
    const requestsBefore = translateRequests();

    // without refresh the stored transcripts are not read again: nothing is translated again
    expectExit(await runCli(['backfill', '--source', String(a!.id), '--timeout', '60s'], h.env, 120_000), 0);
    expect(translateRequests()).toBe(requestsBefore);

    // with it, the changed one (only) is translated again, as a new version of its de transcript
    const [at] = await sql<{ since: string }[]>`select now()::text as since`;
    const since = at!.since;
    const run = await runCli(['backfill', '--source', String(a!.id), '--refresh', '--timeout', '90s'], h.env, 120_000);
    expectExit(run, 0);
    expect(translateRequests() - requestsBefore).toBe(1);
    const [en] = await sql<{ content_sha256: string }[]>`
      select content_sha256 from transcripts where video_id = ${changed} and lang = 'en'`;
    const [de] = await sql<{ origin: string; translated_from_sha256: string }[]>`
      select origin, translated_from_sha256 from transcripts where video_id = ${changed} and lang = 'de'`;
    expect(de).toEqual({ origin: 'translation', translated_from_sha256: en!.content_sha256 });
    const [versions] = await sql<{ n: number }[]>`
      select count(*)::int as n from transcript_versions where video_id = ${changed} and lang = 'de'`;
    expect(versions!.n).toBe(2);
    const [bought] = await sql<{ n: number }[]>`
      select count(*)::int as n from translations where video_id = ${changed} and lang = 'de' and state = 'stored'`;
    expect(bought!.n).toBe(2);
    // billed as the header said: 30 per started minute of the new transcript
    const [charged] = await sql<{ credits: number; n: number }[]>`
      select coalesce(sum(credits), 0)::int as credits, count(*)::int as n from credit_charges
      where charged_at >= ${since}::timestamptz and endpoint = ${TRANSLATE} and source_id = ${a!.id}`;
    expect(charged).toEqual({ credits: 30 * (await storedTranscriptMinutes(changed, 'en')), n: 1 });
  });

  it('a stored translation never replaces a native transcript; a native one arriving later replaces the translation', async () => {
    const { sql } = h.database;
    const [native] = await sql<{ video_id: string; content_sha256: string }[]>`
      select video_id, content_sha256 from transcripts where lang = 'de' and origin = 'captions' limit 1`;
    const translation = transcriptRowFromApi(
      native!.video_id,
      { content: 'übersetzt', lang: 'de' },
      'translation:0',
      'translation',
      undefined,
      {
        lang: 'en',
        sha256: 'x',
      },
    );
    expect(await upsertTranscripts(sql, [translation])).toEqual({ inserted: 0, updated: 0, unchanged: 1 });
    const [kept] = await sql<{ content_sha256: string; origin: string }[]>`
      select content_sha256, origin from transcripts where video_id = ${native!.video_id} and lang = 'de'`;
    expect(kept).toEqual({ content_sha256: native!.content_sha256, origin: 'captions' });

    const [tr] = await sql<{ video_id: string }[]>`
      select video_id from transcripts where origin = 'translation' order by video_id limit 1`;
    const captions = transcriptRowFromApi(
      tr!.video_id,
      { content: [{ text: 'gesagt', offset: 0, duration: 1000 }], lang: 'de', availableLangs: ['en', 'de'] },
      'captions-later',
    );
    expect(await upsertTranscripts(sql, [captions])).toMatchObject({ updated: 1 });
    const [now] = await sql<{ origin: string; translated_from: string | null; text: string }[]>`
      select origin, translated_from, text from transcripts where video_id = ${tr!.video_id} and lang = 'de'`;
    expect(now).toEqual({ origin: 'captions', translated_from: null, text: 'gesagt' });
  });
  it('one left sending by a dead process is shown unknown, never bought again by a sync; replay --lost --yes releases it for one purchase', async () => {
    const { sql } = h.database;
    const [a] = await sql<{ id: number }[]>`select id from sources where translate_langs = '{de}' order by id limit 1`;
    const source = String(a!.id);
    const [tr] = await sql<{ video_id: string }[]>`
      select video_id from transcripts where origin = 'translation' and lang = 'de' order by video_id desc limit 1`;
    const video = tr!.video_id;
    // what a process that died during the request leaves: its claim sending, nothing stored; an
    // hour ago, well past TRANSLATION_SENDING_STALE_MS
    await sql`delete from transcripts where video_id = ${video} and lang = 'de'`;
    await sql`
      update translations set state = 'sending', updated_at = now() - interval '1 hour'
      where id = (select max(id) from translations where video_id = ${video} and lang = 'de' and state = 'stored')`;
    const requestsBefore = translateRequests();
    const before = await usedCredits();

    const status = await runCli(['status'], h.env, 60_000);
    expectExit(status, 0);
    expect(status.stdout).toMatch(
      new RegExp(`source ${source} into de: .*, 1 unknown \\(answer lost or process died while sending`),
    );
    // a sync does not buy it again (it may have been billed)
    expectExit(await runCli(['backfill', '--source', source, '--timeout', '60s'], h.env, 120_000), 0);
    expect(translateRequests()).toBe(requestsBefore);

    // /metrics and the overview show it unknown
    const admin = await startAdminServer({
      port: 0,
      token: ADMIN_TOKEN,
      sql,
      redis: h.redis,
      queues: h.queues,
      metrics: createMetrics({ processMetrics: false }),
      secrets: [h.sim.apiKey],
      log: silentLogger(),
    });
    try {
      const get = async (path: string) => (await fetch(`${admin.url}${path}`, { headers: bearer(ADMIN_TOKEN) })).text();
      const m = parseMetrics(await get('/metrics'));
      const byState = await sql<{ state: string; n: number }[]>`
        select state, count(*)::int as n from translations group by state`;
      const count = (state: string) => byState.find((r) => r.state === state)?.n ?? 0;
      expect(value(m, 'vsi_translations', { state: 'unknown' })).toBe(count('unknown') + 1);
      expect(value(m, 'vsi_translations', { state: 'sending' })).toBe(count('sending') - 1);
      expect(value(m, 'vsi_translations', { state: 'stored' })).toBe(count('stored'));
      expect(value(m, 'vsi_translations', { state: 'refused-budget' })).toBe(count('refused-budget'));
      expect(count('stored')).toBeGreaterThan(0);
      const page = await get('/');
      expect(page).toContain(`<div class="v" id="translations-stored">${count('stored')}</div>`);
      expect(page).toMatch(new RegExp(`<span id="translations-unknown"[^>]*>${count('unknown') + 1}</span> unknown`));
    } finally {
      await admin.close();
    }

    // the operator sees it with its price, and releases it only with --yes
    const dry = await runCli(['replay', '--lost', '--dry-run'], h.env, 60_000);
    expectExit(dry, 0);
    expect(dry.stdout).toMatch(new RegExp(`\\s${source}\\s+${video}\\s+de\\s+sending \\(its process died\\)`));
    const refused = await runCli(['replay', '--lost'], h.env, 60_000);
    expectExit(refused, 2);
    expect(refused.stderr).toContain('add --yes to proceed');
    expect(translateRequests()).toBe(requestsBefore);

    const replay = await runCli(['replay', '--lost', '--yes'], h.env, 120_000);
    expectExit(replay, 0);
    expect(replay.stdout).toContain('released 1 translation(s) for one new purchase');
    // bought once more, stored, billed as its answer said; the released claim kept
    expect(translateRequests() - requestsBefore).toBe(1);
    const [de] = await sql<{ origin: string }[]>`
      select origin from transcripts where video_id = ${video} and lang = 'de'`;
    expect(de).toEqual({ origin: 'translation' });
    const rows = await sql<{ state: string }[]>`
      select state from translations where video_id = ${video} and lang = 'de' order by id`;
    expect(rows.map((r) => r.state).slice(-2)).toEqual(['released', 'stored']);
    expect((await usedCredits()) - before).toBe(30 * (await storedTranscriptMinutes(video, 'en')));

    // nothing left to release: a second replay buys nothing
    const again = await runCli(['replay', '--lost', '--yes'], h.env, 60_000);
    expectExit(again, 0);
    expect(again.stdout).toContain('nothing to re-submit');
    expect(translateRequests() - requestsBefore).toBe(1);
  });
});
