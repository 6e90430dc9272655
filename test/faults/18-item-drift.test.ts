/**
 * Scenario 18: the upstream drifts under us, item by item. One scripted metadata batch answers:
 *
 * - an errorCode the interface does not list (`quota-shifted`): recorded exactly as received,
 *   retryable, re-submitted automatically within RETRY_ATTEMPTS_MAX (3) submissions in all, and
 *   shown by `status --json`;
 * - the same code for an item that first shows `processing` and then the code on the next poll:
 *   it ends retryable with the code, not stuck `processing`;
 * - a `null` where the interface requires a string (`title`): quarantined, raw kept, the reason
 *   names the field, never re-submitted;
 * - extra fields the interface does not name, at item level and inside `video`: landed and
 *   stored normally, the raw item kept exactly as received;
 * - a lone surrogate in a title (`\ud800`, legal JSON, not storable as text): quarantined with
 *   the received text in payload_raw, never re-submitted; its neighbours land.
 *
 * The re-submissions are scripted too (the unknown code again), so the cap is what stops them;
 * four more syncs run (RETRY_BACKOFF_BASE_MS=0: each is due at the next sync), and the
 * simulator's POSTs per video judge.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { figures, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { moreSyncs, postsPerVideo, postsPerVideoMax } from '../helpers/posts.ts';

const NO_SPACING = { RETRY_BACKOFF_BASE_MS: '0' };
const UNKNOWN_CODE = 'quota-shifted';
const JOB = 'batch_scripted_item_drift';
const RETRY_JOBS = ['batch_scripted_item_drift_r2', 'batch_scripted_item_drift_r3'];

let rig: FaultRig;
beforeAll(async () => {
  rig = await startFaultRig('18-item-drift', {
    sim: {
      catalog: {
        channels: 1,
        channelSizes: [8],
        privateShare: 0,
        goneShare: 0,
        noTranscriptShare: 0,
        transcriptChunks: { min: 2, max: 4 },
      },
    },
  });
});
afterAll(async () => {
  await rig?.close();
});

it('18 item drift: unknown code retried within the cap, null field and lone surrogate quarantined once, extra fields land raw-exact', async () => {
  const ch = rig.sim.catalog.channels()[0]!;
  // the channel's listing, newest first: what a source with --limit 6 submits
  const [a, b, c, d, e, f] = rig.sim.catalog.videoIds(ch.id)!.slice(0, 6) as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const video = (id: string) => rig.sim.catalog.video(id)!;

  // JSON text written by hand where it matters: the escapes reach the client as sent
  const unknownCode = (id: string) => `{"videoId":${JSON.stringify(id)},"video":null,"errorCode":"${UNKNOWN_CODE}"}`;
  const itemA = unknownCode(a);
  const itemB = JSON.stringify({ videoId: b, video: { ...video(b), title: null }, errorCode: null });
  const itemC =
    `{"videoId":${JSON.stringify(c)},"video":${JSON.stringify({ ...video(c), chapters: [{ at: 0, name: 'intro' }], ratingV2: { stars: 4.5, votes: 12 } })},` +
    `"errorCode":null,"servedBy":"edge-7","trace":{"id":"t-1","hops":[1,2]}}`;
  const itemD = JSON.stringify({ videoId: d, video: video(d), errorCode: null }).replace(
    '"title":"',
    '"title":"bad \\ud800 x ',
  );
  const itemEFirst = `{"videoId":${JSON.stringify(e)},"video":null,"errorCode":"processing"}`;
  const itemELater = unknownCode(e);
  const itemF = JSON.stringify({ videoId: f, video: video(f), errorCode: null });
  expect(itemD).toContain('"title":"bad \\ud800 x ');
  const answer = (status: string, items: string[], stats: string) =>
    `{"status":"${status}","results":[${items.join(',')}],"stats":${stats}` +
    (status === 'completed' ? ',"completedAt":"2026-01-01T00:00:00.000Z"' : '') +
    '}';
  rig.sim.script([
    { match: 'POST /videosite/video/batch', status: 200, body: { jobId: JOB } },
    {
      match: `GET /videosite/batch/${JOB}`,
      status: 200,
      body: answer('active', [itemA, itemB, itemC, itemD, itemEFirst, itemF], '{"total":6,"succeeded":4,"failed":1}'),
    },
    {
      match: `GET /videosite/batch/${JOB}`,
      status: 200,
      body: answer(
        'completed',
        [itemA, itemB, itemC, itemD, itemELater, itemF],
        '{"total":6,"succeeded":4,"failed":2}',
      ),
    },
    // the re-submissions meet the same unknown code: only the cap stops them
    ...RETRY_JOBS.flatMap((job) => [
      { match: 'POST /videosite/video/batch', status: 200, body: { jobId: job } },
      {
        match: `GET /videosite/batch/${job}`,
        status: 200,
        body: answer('completed', [unknownCode(a), unknownCode(e)], '{"total":2,"succeeded":0,"failed":2}'),
      },
    ]),
  ]);

  const source = await rig.addSource({ ref: ch.id, limit: 6, langs: [] });
  const first = await rig.run(['backfill', '--source', String(source.id), '--timeout', '60s'], NO_SPACING);
  // items are left retryable and quarantined: not everything landed
  expect(first.code, first.stdout + first.stderr).toBe(1);

  const { sql } = rig.db();
  type Row = {
    video_id: string;
    state: string;
    error_code: string | null;
    reason: string | null;
    reason_code: string | null;
    payload: unknown;
    payload_raw: string | null;
  };
  const rows = await sql<Row[]>`
    select video_id, state, error_code, reason, reason_code, payload, payload_raw from batch_items where job_id = ${JOB}`;
  const row = (id: string) => rows.find((r) => r.video_id === id);
  const [batch] = await sql<{ status: string }[]>`select status from batches where job_id = ${JOB}`;
  const [sync] = await sql<{ last_state: string; last_error_code: string | null }[]>`
    select last_state, last_error_code from video_sync where video_id = ${e} and kind = 'video'`;
  const stored = await sql<{ id: string; title: string }[]>`select id, title from videos order by id`;
  const status = await rig.run(['status', '--json']);
  expect(status.code, status.stderr).toBe(0);
  const report = JSON.parse(status.stdout) as { itemErrors: { errorCode: string; state: string; items: number }[] };
  const shown = report.itemErrors.find((x) => x.errorCode === UNKNOWN_CODE && x.state === 'retryable');

  const codes = await moreSyncs(rig, [source.id], 4, NO_SPACING);
  const videoPosts = postsPerVideo(rig.sim, 'video');
  const transcriptPosts = postsPerVideo(rig.sim, 'transcript');
  const retryBatches = await sql<{ job_id: string; status: string; ids: string[] }[]>`
    select job_id, status, array(select jsonb_array_elements_text(request->'videoIds')) as ids
    from batches where kind = 'video' and job_id <> ${JOB} order by submitted_at`;
  const [retryItems] = await sql<{ n: number; unknown_code: number }[]>`
    select count(*)::int as n, count(*) filter (where state = 'retryable' and error_code = ${UNKNOWN_CODE})::int as unknown_code
    from batch_items where job_id = any(${RETRY_JOBS}::text[])`;
  const unsettled = rows.filter((r) => r.state === 'processing' || r.state === 'landed').length;
  const lost = 6 - rows.filter((r) => ['sunk', 'failed', 'retryable', 'quarantined'].includes(r.state)).length;
  const stepsLeft = rig.sim.script([]);

  figures('18 item-drift', {
    items_in: 6,
    landed: rows.filter((r) => r.state === 'sunk').length,
    retryable_unknown_code: rows.filter((r) => r.state === 'retryable' && r.error_code === UNKNOWN_CODE).length,
    quarantined: rows.filter((r) => r.state === 'quarantined').length,
    lost,
    unknown_code_posts: videoPosts.get(a) ?? 0,
    processing_then_unknown_posts: videoPosts.get(e) ?? 0,
    quarantined_posts_max: Math.max(videoPosts.get(b) ?? 0, videoPosts.get(d) ?? 0),
    cap: 3,
    more_syncs: codes.length,
    posts_per_video_max: postsPerVideoMax(rig.sim),
  });

  // 0 items lost, none left unsettled; the batch completed (no item blocked it)
  expect(rows).toHaveLength(6);
  expect(lost).toBe(0);
  expect(unsettled).toBe(0);
  expect(batch!.status).toBe('completed');
  // the unknown code: exactly as received, retryable, shown to a person
  expect(row(a)).toMatchObject({ state: 'retryable', error_code: UNKNOWN_CODE });
  expect(shown?.items).toBe(2);
  // processing, then the unknown code on the next poll: retryable with the code, not stuck
  expect(row(e)).toMatchObject({ state: 'retryable', error_code: UNKNOWN_CODE });
  expect(sync).toMatchObject({ last_state: 'retryable', last_error_code: UNKNOWN_CODE });
  // a null required field: quarantined as a schema mismatch naming the field, raw kept
  expect(row(b)).toMatchObject({ state: 'quarantined', reason_code: 'schema' });
  expect(row(b)!.reason).toMatch(/title/);
  expect(row(b)!.payload ?? JSON.parse(row(b)!.payload_raw!)).toEqual(JSON.parse(itemB));
  // unknown fields: landed and stored; the raw item is the item as sent, nothing dropped
  expect(row(c)!.state).toBe('sunk');
  expect(row(c)!.payload ?? JSON.parse(row(c)!.payload_raw!)).toEqual(JSON.parse(itemC));
  expect(stored.find((v) => v.id === c)?.title).toBe(video(c).title);
  // a lone surrogate: quarantined, the received text kept byte for byte
  expect(row(d)).toMatchObject({ state: 'quarantined', reason_code: 'unstorable' });
  expect(row(d)!.payload_raw).toBe(itemD);
  expect(stored.some((v) => v.id === d)).toBe(false);
  // neighbours land
  expect(row(f)!.state).toBe('sunk');
  expect(stored.map((v) => v.id).sort()).toEqual([c, f].sort());

  // re-submissions: the two retryable videos, twice more (3 submissions in all), then never
  expect(
    codes.every((code) => code === 0 || code === 1),
    String(codes),
  ).toBe(true);
  expect(retryBatches.map((r) => r.job_id)).toEqual(RETRY_JOBS);
  for (const r of retryBatches) {
    expect([...r.ids].sort()).toEqual([a, e].sort());
    expect(r.status).toBe('completed');
  }
  expect(retryItems).toEqual({ n: 4, unknown_code: 4 });
  expect(stepsLeft).toBe(0);
  expect(videoPosts.get(a)).toBe(3);
  expect(videoPosts.get(e)).toBe(3);
  for (const id of [b, c, d, f]) expect(videoPosts.get(id), id).toBe(1);
  for (const id of [a, b, c, d, e, f]) expect(transcriptPosts.get(id), id).toBe(1);
  expect(postsPerVideoMax(rig.sim)).toBe(3);
});
