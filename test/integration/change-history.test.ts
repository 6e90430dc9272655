/**
 * History and change events of videos and transcripts (issue #14, first "Done when" point), as a
 * user checks them: the CLI as processes (`sources add`, `backfill --refresh`, `replay --batch`,
 * `events --json`) against the simulator over real HTTP, its catalog edited under it over the
 * admin API as a platform changes (a title edited, a transcript re-uploaded, a video taken down
 * and brought back, a new upload), and what Postgres holds: one event of the right type and data
 * per change, both versions in `video_changes` / `transcript_versions`, and nothing at all for a
 * rerun that finds nothing new or a replay of a batch already stored.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCleanError, expectExit } from '../helpers/cli.ts';
import { postsPerVideo } from '../helpers/posts.ts';
import { createPipelineHarness, runCli, type CliResult, type PipelineHarness } from '../helpers/pipeline.ts';
import { admin } from '../helpers/sim-http.ts';

let h: PipelineHarness;

beforeAll(async () => {
  // regular videos only, every one public with captions: each test decides what changes
  h = await createPipelineHarness('change-history', {
    catalog: {
      channels: 3,
      channelSizes: [8, 8, 8],
      shortsPerChannel: 0,
      livesPerChannel: 0,
      noTranscriptShare: 0,
      privateShare: 0,
      goneShare: 0,
    },
  });
  h.startWorkers(['poller', 'sink']);
});

afterAll(async () => {
  await h?.close();
});

const cli = (args: string[]): Promise<CliResult> => runCli(args, h.env, 60_000);

async function ok(args: string[]): Promise<CliResult> {
  const r = await cli(args);
  expectExit(r, 0);
  return r;
}

const backfill = (id: number, ...more: string[]) =>
  ok(['backfill', '--source', String(id), '--timeout', '45s', ...more]);

interface Ev {
  id: number;
  type: string;
  data: Record<string, unknown>;
  source_id: number | null;
  video_id: string | null;
}

async function lastEventId(): Promise<number> {
  const [r] = await h.database.sql<{ id: number }[]>`select coalesce(max(id), 0)::float8 as id from events`;
  return r!.id;
}

/** The video.* and transcript.* events after `since` (batch.* and source.* are not about videos). */
async function itemEventsSince(since: number): Promise<Ev[]> {
  return h.database.sql<Ev[]>`
    select id::float8 as id, type, data, source_id, video_id from events
    where id > ${since} and (type like 'video.%' or type like 'transcript.%') order by id`;
}

/** [type, videoId] of each event, sorted, for an exact comparison that names what is extra or missing. */
const kinds = (evs: Ev[]) =>
  evs.map((e) => [e.type, e.video_id ?? '']).sort((a, b) => `${a[0]} ${a[1]}`.localeCompare(`${b[0]} ${b[1]}`));

/**
 * A channel of the catalog as a source asking one language, every video of it having that
 * language (a fallback delivery is another test's subject); returns the source, its language
 * and its video IDs.
 */
async function channelSource(index: number): Promise<{ sourceId: number; lang: string; ids: string[] }> {
  const ch = h.sim.catalog.channels()[index]!;
  const ids = h.sim.catalog.videoIds(ch.id)!;
  const lang = h.sim.catalog.videoInfo(ids[0]!)!.transcriptLanguages[0]!;
  for (const id of ids) {
    const langs = h.sim.catalog.videoInfo(id)!.transcriptLanguages;
    if (!langs.includes(lang)) h.sim.catalog.editVideo(id, { transcriptLanguages: [lang, ...langs] });
  }
  // a limit above the channel's size: a new upload does not push an old video out of the listing
  await ok(['sources', 'add', 'channel', ch.handle, '--limit', '50', '--lang', lang]);
  const [row] = await h.database.sql<
    { id: number }[]
  >`select id from sources where ref = ${ch.handle} order by id desc limit 1`;
  return { sourceId: row!.id, lang, ids };
}

async function batchesOf(sourceId: number, kind: 'video' | 'transcript'): Promise<string[]> {
  const rows = await h.database.sql<{ job_id: string }[]>`
    select job_id from batches where source_id = ${sourceId} and kind = ${kind} order by submitted_at, job_id`;
  return rows.map((r) => r.job_id);
}

interface VersionRow {
  video_id: string;
  lang: string;
  content_sha256: string;
  text: string;
  job_id: string | null;
  last_seen_at: Date;
}
const versionsOf = (ids: string[]) => h.database.sql<VersionRow[]>`
  select video_id, lang, content_sha256, text, job_id, last_seen_at from transcript_versions
  where video_id in ${h.database.sql(ids)} order by video_id, lang, id`;

interface ChangeRow {
  video_id: string;
  field: string;
  old_value: unknown;
  new_value: unknown;
  job_id: string | null;
}
const changesOf = (ids: string[]) => h.database.sql<ChangeRow[]>`
  select video_id, field, old_value, new_value, job_id from video_changes where video_id in ${h.database.sql(ids)} order by id`;

/** In video order: the two changes of one sync are written by whichever batch lands first. */
const byVideo = (rows: ChangeRow[]) => [...rows].sort((a, b) => a.video_id.localeCompare(b.video_id));

const transcriptsOf = (ids: string[]) => h.database.sql<
  { video_id: string; lang: string; content_sha256: string; text: string }[]
>`
  select video_id, lang, content_sha256, text from transcripts where video_id in ${h.database.sql(ids)} order by video_id, lang`;

describe('change history and events', () => {
  it('a first backfill makes one added event per stored row; an unchanged refresh and a replay make none', async () => {
    const { sql } = h.database;
    const { sourceId, lang, ids } = await channelSource(0);
    const before = await lastEventId();
    await backfill(sourceId);

    const videos = (await sql<{ id: string }[]>`select id from videos where id in ${sql(ids)} order by id`).map(
      (r) => r.id,
    );
    expect(videos).toEqual([...ids].sort());
    const transcripts = await transcriptsOf(ids);
    expect(transcripts.map((t) => [t.video_id, t.lang])).toEqual([...ids].sort().map((id) => [id, lang]));

    const videoJobs = await batchesOf(sourceId, 'video');
    const transcriptJobs = await batchesOf(sourceId, 'transcript');
    const evs = await itemEventsSince(before);
    expect(kinds(evs)).toEqual(
      kinds([
        ...videos.map((v) => ({ type: 'video.added', video_id: v }) as Ev),
        ...transcripts.map((t) => ({ type: 'transcript.added', video_id: t.video_id }) as Ev),
      ]),
    );
    for (const e of evs) {
      expect(e.source_id, `${e.type} ${e.video_id}`).toBe(sourceId);
      if (e.type === 'video.added') {
        expect(e.data).toMatchObject({ videoId: e.video_id, sourceId, jobId: expect.any(String) });
        expect(videoJobs).toContain(e.data.jobId);
      } else {
        const t = transcripts.find((x) => x.video_id === e.video_id)!;
        expect(e.data).toMatchObject({
          videoId: t.video_id,
          sourceId,
          lang,
          sha256: t.content_sha256,
          jobId: expect.any(String),
        });
        expect(transcriptJobs).toContain(e.data.jobId);
      }
    }
    // the first version of each transcript is history already; no field has changed yet
    const versions = await versionsOf(ids);
    expect(versions.map((v) => [v.video_id, v.lang, v.content_sha256, v.text])).toEqual(
      transcripts.map((t) => [t.video_id, t.lang, t.content_sha256, t.text]),
    );
    for (const v of versions) expect(transcriptJobs).toContain(v.job_id);
    expect(await changesOf(ids)).toEqual([]);

    // refreshed with nothing changed upstream: every video is bought again, and nothing is news
    h.sim.resetStats();
    const beforeRefresh = await lastEventId();
    await backfill(sourceId, '--refresh');
    expect(Object.fromEntries(postsPerVideo(h.sim, 'video'))).toEqual(Object.fromEntries(ids.map((id) => [id, 1])));
    expect(Object.fromEntries(postsPerVideo(h.sim, `transcript:${lang}`))).toEqual(
      Object.fromEntries(ids.map((id) => [id, 1])),
    );
    expect(await itemEventsSince(beforeRefresh)).toEqual([]);
    expect(await changesOf(ids)).toEqual([]);
    const seenAgain = await versionsOf(ids);
    expect(seenAgain.map((v) => [v.video_id, v.lang, v.content_sha256, v.job_id])).toEqual(
      versions.map((v) => [v.video_id, v.lang, v.content_sha256, v.job_id]),
    );
    // the same content delivered again is seen again, not a new version
    for (const [i, v] of seenAgain.entries())
      expect(v.last_seen_at.getTime(), v.video_id).toBeGreaterThan(versions[i]!.last_seen_at.getTime());

    // the first batches re-sunk from their raw items: rows rewritten, no event
    const beforeReplay = await lastEventId();
    await ok(['replay', '--batch', videoJobs[0]!]);
    await ok(['replay', '--batch', transcriptJobs[0]!]);
    expect(await itemEventsSince(beforeReplay)).toEqual([]);
    expect(await changesOf(ids)).toEqual([]);
    expect((await versionsOf(ids)).length).toBe(ids.length);
  });

  it('a title edit, a re-uploaded transcript, a video gone and back and a new upload: one event each, both versions kept', async () => {
    const { sql } = h.database;
    const { sourceId, lang, ids } = await channelSource(1);
    await backfill(sourceId);
    const firstVideoJobs = await batchesOf(sourceId, 'video');
    const firstTranscriptJobs = await batchesOf(sourceId, 'transcript');
    const [edited, reuploaded, gone] = ids as [string, string, string];
    const titleOf = async (id: string) =>
      (await sql<{ title: string }[]>`select title from videos where id = ${id}`)[0]!.title;
    const shaOf = async (id: string) =>
      (
        await sql<
          { s: string }[]
        >`select content_sha256 as s from transcripts where video_id = ${id} and lang = ${lang}`
      )[0]!.s;
    const oldTitle = await titleOf(edited);
    const oldSha = await shaOf(reuploaded);
    const newTitle = `${oldTitle} (edited)`;

    // the platform changes under the source
    const channelId = h.sim.catalog.channels()[1]!.id;
    for (const [path, body] of [
      [`/videos/${edited}`, { title: newTitle }],
      [`/videos/${reuploaded}`, { transcriptRevisions: { [lang]: 1 } }],
      [`/videos/${gone}`, { fate: 'gone' }],
    ] as const) {
      expect((await admin(h.sim, 'POST', path, body)).status, path).toBe(200);
    }
    const added = await admin(h.sim, 'POST', `/catalog/${channelId}/videos`, { count: 1 });
    expect(added.status).toBe(200);
    const fresh = (added.json as { videoIds: string[] }).videoIds[0]!;
    const freshLangs = h.sim.catalog.videoInfo(fresh)!.transcriptLanguages;
    if (!freshLangs.includes(lang)) h.sim.catalog.editVideo(fresh, { transcriptLanguages: [lang, ...freshLangs] });

    const before = await lastEventId();
    await backfill(sourceId, '--refresh');
    const newVideoJobs = (await batchesOf(sourceId, 'video')).filter((j) => !firstVideoJobs.includes(j));
    const newTranscriptJobs = (await batchesOf(sourceId, 'transcript')).filter((j) => !firstTranscriptJobs.includes(j));
    const evs = await itemEventsSince(before);
    expect(kinds(evs)).toEqual(
      kinds([
        { type: 'video.changed', video_id: edited },
        { type: 'transcript.changed', video_id: reuploaded },
        { type: 'video.gone', video_id: gone },
        { type: 'video.added', video_id: fresh },
        { type: 'transcript.added', video_id: fresh },
      ] as Ev[]),
    );
    const ev = (type: string) => evs.find((e) => e.type === type)!;
    for (const e of evs) expect(e.source_id, e.type).toBe(sourceId);

    // the title: event, history row and the row of now agree on old and new
    expect(ev('video.changed').data).toMatchObject({
      videoId: edited,
      sourceId,
      jobId: expect.any(String),
      fields: { title: { old: oldTitle, new: newTitle } },
    });
    // the title only: nothing else of the video changed upstream
    expect(ev('video.changed').data.fields).toEqual({ title: { old: oldTitle, new: newTitle } });
    expect(newVideoJobs).toContain(ev('video.changed').data.jobId);
    expect(await titleOf(edited)).toBe(newTitle);

    // the transcript: both versions kept, the row of now is the newer one
    const newSha = await shaOf(reuploaded);
    expect(newSha).not.toBe(oldSha);
    expect(ev('transcript.changed').data).toMatchObject({
      videoId: reuploaded,
      sourceId,
      lang,
      sha256: newSha,
      previousSha256: oldSha,
      jobId: expect.any(String),
    });
    expect(newTranscriptJobs).toContain(ev('transcript.changed').data.jobId);
    const versions = await versionsOf([reuploaded]);
    expect(versions.map((v) => v.content_sha256)).toEqual([oldSha, newSha]);
    expect(versions[1]!.job_id).toBe(ev('transcript.changed').data.jobId);
    const [now] = await transcriptsOf([reuploaded]);
    expect(now!.text).toBe(versions[1]!.text);
    expect(now!.text).not.toBe(versions[0]!.text);

    // gone: the row stays, marked
    expect(ev('video.gone').data).toMatchObject({
      videoId: gone,
      sourceId,
      jobId: expect.any(String),
      reason: 'not-found',
    });
    const goneRow = async () =>
      (
        await sql<{ title: string | null; gone_at: Date | null; gone_reason: string | null }[]>`
        select title, gone_at, gone_reason from videos where id = ${gone}`
      )[0];
    expect(await goneRow()).toMatchObject({
      title: expect.any(String),
      gone_at: expect.any(Date),
      gone_reason: 'not-found',
    });
    // what status says of it: counted by reason, in --json and in the text
    const status = await ok(['status', '--json']);
    expect(JSON.parse(status.stdout).gone).toEqual({ total: 1, byReason: { 'not-found': 1 } });
    expect((await ok(['status'])).stdout).toContain(
      'Videos gone upstream (rows kept; a refresh sees them come back): 1 (not-found 1)',
    );
    expect((await transcriptsOf([gone])).length).toBe(1);

    // the new upload
    expect(ev('video.added').data).toMatchObject({ videoId: fresh, sourceId, jobId: expect.any(String) });
    expect(newVideoJobs).toContain(ev('video.added').data.jobId);
    const [freshTranscript] = await transcriptsOf([fresh]);
    expect(ev('transcript.added').data).toMatchObject({
      videoId: fresh,
      sourceId,
      lang,
      sha256: freshTranscript!.content_sha256,
      jobId: expect.any(String),
    });
    expect((await versionsOf([fresh])).map((v) => v.content_sha256)).toEqual([freshTranscript!.content_sha256]);

    const all = [...ids, fresh];
    expect(byVideo(await changesOf(all))).toEqual(
      byVideo([
        {
          video_id: edited,
          field: 'title',
          old_value: oldTitle,
          new_value: newTitle,
          job_id: ev('video.changed').data.jobId as string,
        },
        {
          video_id: gone,
          field: 'gone',
          old_value: null,
          new_value: 'not-found',
          job_id: ev('video.gone').data.jobId as string,
        },
      ]),
    );

    // an older batch re-sunk does not write the older title, text or presence back
    const beforeReplay = await lastEventId();
    await ok(['replay', '--batch', firstVideoJobs[0]!]);
    await ok(['replay', '--batch', firstTranscriptJobs[0]!]);
    expect(await itemEventsSince(beforeReplay)).toEqual([]);
    expect(await titleOf(edited)).toBe(newTitle);
    expect(await shaOf(reuploaded)).toBe(newSha);
    expect(await goneRow()).toMatchObject({ gone_at: expect.any(Date), gone_reason: 'not-found' });
    expect((await changesOf(all)).length).toBe(2);
    expect((await versionsOf([reuploaded])).length).toBe(2);

    // back on the platform
    expect((await admin(h.sim, 'POST', `/videos/${gone}`, { fate: 'public' })).status).toBe(200);
    const beforeReturn = await lastEventId();
    await backfill(sourceId, '--refresh');
    const back = await itemEventsSince(beforeReturn);
    expect(kinds(back)).toEqual([['video.returned', gone]]);
    expect(back[0]!.data).toMatchObject({ videoId: gone, sourceId, jobId: expect.any(String) });
    expect(await goneRow()).toMatchObject({ gone_at: null, gone_reason: null });
    expect(JSON.parse((await ok(['status', '--json'])).stdout).gone).toEqual({ total: 0, byReason: {} });
    expect((await changesOf([gone])).map((c) => [c.field, c.old_value, c.new_value])).toEqual([
      ['gone', null, 'not-found'],
      ['gone', 'not-found', null],
    ]);
    expect((await changesOf([gone]))[1]!.job_id).toBe(back[0]!.data.jobId);

    // what a user reads: the one title change, as a JSON line
    const r = await ok(['events', '--json', '--type', 'video.changed', '--source', String(sourceId)]);
    const lines = r.stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { id: number; type: string; data: unknown });
    expect(lines.map((l) => [l.id, l.type, l.data])).toEqual([
      [ev('video.changed').id, 'video.changed', ev('video.changed').data],
    ]);
  }, 90_000);
  it('a source asking for a refresh buys again, at its syncs, only the videos last fetched longer ago than that', async () => {
    const { sql } = h.database;
    const { sourceId, lang, ids } = await channelSource(2);
    await backfill(sourceId);
    const edit = await ok(['sources', 'edit', String(sourceId), '--refresh', '2h']);
    expect(edit.stdout).toContain('refresh never -> 2h');

    // one video last fetched three hours ago, and edited upstream since
    const stale = [...ids].sort()[0]!;
    await sql`update video_sync set updated_at = now() - interval '3 hours' where video_id = ${stale}`;
    h.sim.catalog.editVideo(stale, { title: 'Retitled while nobody looked' });
    const plan = await ok(['backfill', '--source', String(sourceId), '--dry-run']);
    // one video per kind, 1 credit for it and 1 for its batch
    expect(plan.stdout).toMatch(new RegExp(`\\bvideo\\s+-\\s+1\\s+2\\b`));
    expect(plan.stdout).toMatch(new RegExp(`\\btranscript\\s+${lang}\\s+1\\s+2\\b`));

    h.sim.resetStats();
    const before = await lastEventId();
    await backfill(sourceId);
    expect(Object.fromEntries(postsPerVideo(h.sim, 'video'))).toEqual({ [stale]: 1 });
    expect(Object.fromEntries(postsPerVideo(h.sim, `transcript:${lang}`))).toEqual({ [stale]: 1 });
    expect(kinds(await itemEventsSince(before))).toEqual([['video.changed', stale]]);

    // fetched just now: not due again at the next sync
    h.sim.resetStats();
    await backfill(sourceId);
    expect(Object.fromEntries(postsPerVideo(h.sim, 'video'))).toEqual({});

    expect((await ok(['sources', 'edit', String(sourceId), '--no-refresh'])).stdout).toContain('refresh 2h -> never');
    expectCleanError(await cli(['sources', 'edit', String(sourceId), '--refresh', '10m']), 2, '--refresh', '10m', '1h');
  }, 90_000);
});
