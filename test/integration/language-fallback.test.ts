/**
 * A transcript asked in a language the video has none in comes back in its first available
 * language, charged the same. Such a video is not bought again for that language at every sync;
 * it is bought again, once, when what arrives later shows the language has appeared (here: a
 * transcript of another language whose `availableLangs` now lists it). The CLI as processes
 * (`sources add`, `backfill`, `status --json`) against the simulator over real HTTP, with the
 * simulator's catalog edited under it as a platform changes; what is checked is what a user pays
 * for: POSTs per video and what Postgres holds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSyncFacts } from '../../src/db/video-sync.ts';
import { expectExit } from '../helpers/cli.ts';
import { postsPerVideo } from '../helpers/posts.ts';
import { createPipelineHarness, runCli, type CliResult, type PipelineHarness } from '../helpers/pipeline.ts';

let h: PipelineHarness;

beforeAll(async () => {
  h = await createPipelineHarness('language-fallback', {
    catalog: { channels: 2, channelSizes: [16, 16], noTranscriptShare: 0, privateShare: 0, goneShare: 0 },
  });
  h.startWorkers(['poller', 'sink']);
});

afterAll(async () => {
  await h?.close();
});

const cli = (args: string[]): Promise<CliResult> => runCli(args, h.env, 60_000);

const TRANSCRIPT_POST = 'POST /videosite/transcript/batch';

async function sourceId(ref: string): Promise<number> {
  const [row] = await h.database.sql<
    { id: number }[]
  >`select id from sources where ref = ${ref} order by id desc limit 1`;
  return row!.id;
}

async function ok(args: string[]): Promise<CliResult> {
  const r = await cli(args);
  expectExit(r, 0);
  return r;
}

async function backfill(id: number): Promise<void> {
  await ok(['backfill', '--source', String(id), '--timeout', '60s']);
}

async function deliveredLangs(lang: string): Promise<Map<string, string | null>> {
  const rows = await h.database.sql<{ video_id: string; delivered_lang: string | null }[]>`
    select video_id, delivered_lang from video_sync where kind = 'transcript' and lang = ${lang}`;
  return new Map(rows.map((r) => [r.video_id, r.delivered_lang]));
}

describe('a transcript that fell back to another language', () => {
  it('is not bought again until its language appears, then once, and coverage says so', async () => {
    const ch = h.sim.catalog.channels()[0]!;
    const ids = h.sim.catalog.videoIds(ch.id)!;
    const langsOf = (id: string) => h.sim.catalog.videoInfo(id)!.transcriptLanguages;
    // a language some of the channel's videos have and others do not: those fall back
    const counts = new Map<string, number>();
    for (const id of ids) for (const l of langsOf(id)) counts.set(l, (counts.get(l) ?? 0) + 1);
    const candidates = ['de', 'fr', 'es', 'ja', 'pt', 'it', 'ko', 'ru', 'en'];
    const asked = candidates.find((l) => (counts.get(l) ?? 0) < ids.length) ?? 'xx';
    const fallsBack = ids.filter((id) => !langsOf(id).includes(asked));
    expect(fallsBack.length).toBeGreaterThan(0);

    await ok(['sources', 'add', 'channel', ch.handle, '--limit', String(ids.length), '--lang', asked]);
    const askedSource = await sourceId(ch.handle);
    await backfill(askedSource);

    const first = await deliveredLangs(asked);
    for (const id of ids) expect(first.get(id), id).toBe(langsOf(id).includes(asked) ? asked : langsOf(id)[0]);
    const status = JSON.parse((await ok(['status', '--json'])).stdout) as { languageCoverage?: unknown };
    expect(status.languageCoverage).toContainEqual(
      expect.objectContaining({ lang: asked, asked: ids.length - fallsBack.length, none: 0, pending: 0 }),
    );

    // nothing new: the next sync buys no transcript (a fallback is not re-bought blindly)
    h.sim.resetStats();
    await backfill(askedSource);
    expect(h.sim.stats().byEndpoint[TRANSCRIPT_POST]?.total ?? 0).toBe(0);

    // the language appears on one video; a transcript of another language brings the news: the
    // source now asks for that one too (its sync plans both languages before anything lands)
    const appeared = fallsBack[0]!;
    const edited = h.sim.catalog.editVideo(appeared, { transcriptLanguages: [...langsOf(appeared), asked] });
    expect(edited?.transcriptLanguages).toContain(asked);
    const other = langsOf(appeared)[0]!;
    expect(other).not.toBe(asked);
    await ok(['sources', 'edit', String(askedSource), '--lang', `${asked},${other}`]);
    h.sim.resetStats();
    await backfill(askedSource);
    expect(postsPerVideo(h.sim, `transcript:${asked}`).size).toBe(0);
    expect(postsPerVideo(h.sim, `transcript:${other}`).size).toBe(ids.length);

    // bought again for the asked language: that video only, once, and now in that language
    h.sim.resetStats();
    await backfill(askedSource);
    const posts = postsPerVideo(h.sim, `transcript:${asked}`);
    expect(Object.fromEntries(posts)).toEqual({ [appeared]: 1 });
    expect((await deliveredLangs(asked)).get(appeared)).toBe(asked);
    const [stored] = await h.database.sql<{ n: number }[]>`
      select count(*)::int as n from transcripts where video_id = ${appeared} and lang = ${asked}`;
    expect(stored!.n).toBe(1);

    // and not again
    h.sim.resetStats();
    await backfill(askedSource);
    expect(h.sim.stats().byEndpoint[TRANSCRIPT_POST]?.total ?? 0).toBe(0);
  });
});

describe('what counts as news that the language appeared', () => {
  it('only what was written after the fallback: older metadata listing the language does not re-buy at every sync', async () => {
    const { sql } = h.database;
    const id = 'fallback-probe';
    await sql`
      insert into video_sync (video_id, kind, lang, last_job_id, last_state, attempts, delivered_lang, updated_at)
      values (${id}, 'transcript', 'de', 'job-probe', 'sunk', 1, 'en', now())`;
    // metadata that listed de before the transcript fell back (an upstream that contradicted itself)
    await sql`insert into videos (id, title, transcript_languages, updated_at) values (${id}, 't', '{en,de}', now() - interval '1 hour')`;
    await sql`insert into transcripts (video_id, lang, text, content_sha256, available_langs, updated_at) values (${id}, 'en', 'x', 'h', '{en}', now() - interval '1 hour')`;
    const appeared = async (lang: string) =>
      (await readSyncFacts(sql, 'transcript', lang, [id])).rows[0]!.facts?.askedLangAppeared;
    expect(await appeared('de')).toBe(false);
    // a transcript of another language delivered since, whose availableLangs lists de: news
    await sql`update transcripts set available_langs = '{en,de}', updated_at = now() + interval '1 second' where video_id = ${id}`;
    expect(await appeared('de')).toBe(true);
    // asked in the language it came in: nothing fell back
    expect(await appeared('en')).toBeFalsy();
  });
});
