/**
 * Scenario 20: poison numbers and dates: JSON that JavaScript accepts but Postgres rejects, in a
 * 12-video batch answer (`completed`) and a 12-item transcript answer, among good items.
 *
 * - `"viewCount": 1e200000`: JavaScript reads Infinity (zod rejects it: `schema` at landing);
 *   jsonb's numeric overflows, so landing it as jsonb would fail the whole chunk.
 * - `"viewCount": 1e-200000`: JavaScript reads 0, jsonb's numeric overflows; the value is not a
 *   whole number a bigint holds, so it must not be stored as 0.
 * - `"viewCount": <400 digits>`: JavaScript reads Infinity (zod rejects it); jsonb holds it.
 * - `"likeCount": 99999999999999999999`: a finite number past bigint (the sink's range check).
 * - `"uploadDate": "0000-01-01T00:00:00Z"`: a valid ISO date for zod; timestamptz has no year 0.
 * - transcript chunks with `"offset": 1e200000` and `"offset": 1e-200000`.
 * (`"99999-01-01T00:00:00Z"` is not used: the interface's DateTime schema rejects it already.)
 *
 * Judged: every good item lands and is stored, every poison item is quarantined with the reason
 * (`unstorable`, or `schema` where zod rejects first) and its raw text kept, both batches end
 * `completed`, no sink job fails (BullMQ's failed sets are empty, nothing is left landed), and
 * three more syncs (the first with two new videos in the channel: the source is not blocked)
 * re-submit nothing: POSTs per video = 1.
 *
 * The JSON text is written by hand, so the numbers reach the client as written.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { rowsVsRaw } from '../helpers/fault-checks.ts';
import { figures, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { moreSyncs, postsPerVideoMax, videosPaidTwice } from '../helpers/posts.ts';

let rig: FaultRig;
beforeAll(async () => {
  rig = await startFaultRig('20-poison', {
    sim: {
      catalog: {
        channels: 1,
        channelSizes: [12],
        shortsPerChannel: 0,
        livesPerChannel: 0,
        privateShare: 0,
        goneShare: 0,
      },
    },
  });
});
afterAll(async () => {
  await rig?.close();
});

const HUGE = '1e200000';
const TINY = '1e-200000';
const DIGITS_400 = `1${'0'.repeat(399)}`;
const PAST_BIGINT = '99999999999999999999';
const YEAR_ZERO = '"0000-01-01T00:00:00Z"';

/** `json` with the value of its one `"field":` replaced by `literal` (JSON text, as sent). */
function withValue(json: string, field: string, literal: string): string {
  const re = new RegExp(`"${field}":(-?[0-9.eE+-]+|null|true|false|"(?:[^"\\\\]|\\\\.)*")`);
  if (!re.test(json)) throw new Error(`no "${field}" in ${json.slice(0, 80)}`);
  const out = json.replace(re, `"${field}":${literal}`);
  JSON.parse(out); // still JSON that JavaScript accepts
  return out;
}

function answer(items: string[]): string {
  return (
    `{"status":"completed","results":[${items.join(',')}],` +
    `"stats":{"total":${items.length},"succeeded":${items.length},"failed":0},"completedAt":"2026-01-01T00:00:00.000Z"}`
  );
}

it('20 poison numbers and dates: good items stored, poison quarantined raw, batches complete, nothing re-bought', async () => {
  const ch = rig.sim.catalog.channels()[0]!;
  const ids = rig.sim.catalog.videoIds(ch.id)!;
  expect(ids).toHaveLength(12);
  const video = (id: string) => rig.sim.catalog.video(id)!;
  const VJOB = 'batch_scripted_poison_videos';
  const TJOB = 'batch_scripted_poison_transcripts';

  // which video carries which poison (the literal kept raw must contain `needle`)
  const poisonV: Record<string, { field: string; literal: string; needle: string }> = {
    [ids[1]!]: { field: 'viewCount', literal: HUGE, needle: HUGE },
    [ids[4]!]: { field: 'viewCount', literal: TINY, needle: TINY },
    [ids[6]!]: { field: 'viewCount', literal: DIGITS_400, needle: DIGITS_400 },
    [ids[8]!]: { field: 'likeCount', literal: PAST_BIGINT, needle: PAST_BIGINT },
    [ids[10]!]: { field: 'uploadDate', literal: YEAR_ZERO, needle: '0000-01-01T00:00:00Z' },
  };
  const videoItems = ids.map((id) => {
    const json = JSON.stringify({ videoId: id, video: video(id), errorCode: null });
    const p = poisonV[id];
    return p ? withValue(json, p.field, p.literal) : json;
  });
  // hand-made transcripts: the offsets are JSON text, not numbers JavaScript wrote
  const poisonT: Record<string, string> = { [ids[3]!]: HUGE, [ids[9]!]: TINY };
  const transcriptItems = ids.map(
    (id) =>
      `{"videoId":${JSON.stringify(id)},"transcript":{"content":[` +
      `{"text":"hello from ${id}","offset":${poisonT[id] ?? '0'},"duration":1500},` +
      `{"text":"and goodbye","offset":1500,"duration":2000}],"lang":"en","availableLangs":["en"]},"errorCode":null}`,
  );
  rig.sim.script([
    { match: 'POST /videosite/video/batch', status: 200, body: { jobId: VJOB } },
    { match: 'POST /videosite/transcript/batch', status: 200, body: { jobId: TJOB } },
    { match: `GET /videosite/batch/${VJOB}`, status: 200, body: answer(videoItems) },
    { match: `GET /videosite/batch/${TJOB}`, status: 200, body: answer(transcriptItems) },
  ]);

  const source = await rig.addSource({ ref: ch.id, limit: 12, langs: ['en'] });
  const started = Date.now();
  const first = await rig.run(['backfill', '--source', String(source.id), '--timeout', '60s']);
  const firstMs = Date.now() - started;
  // quarantined items: not everything landed, exit 1 (a hang or a crash would be a timeout or 2)
  expect(first.code, first.stdout + first.stderr).toBe(1);

  const { sql } = rig.db();
  const batches = await sql<{ job_id: string; status: string; reason: string | null }[]>`
    select job_id, status, reason from batches where job_id in (${VJOB}, ${TJOB}) order by job_id`;
  const rows = await sql<
    {
      job_id: string;
      video_id: string;
      state: string;
      reason: string | null;
      reason_code: string | null;
      raw: string | null;
    }[]
  >`
    select job_id, video_id, state, reason, reason_code, coalesce(payload::text, '') || coalesce(payload_raw, '') as raw
    from batch_items where job_id in (${VJOB}, ${TJOB})`;
  const of = (job: string, id: string) => rows.find((r) => r.job_id === job && r.video_id === id);
  const stored = new Set((await sql<{ id: string }[]>`select id from videos`).map((r) => r.id));
  const storedT = new Set(
    (await sql<{ video_id: string }[]>`select video_id from transcripts where lang = 'en'`).map((r) => r.video_id),
  );
  const goodV = ids.filter((id) => !poisonV[id]);
  const goodT = ids.filter((id) => !poisonT[id]);
  const quarantined = rows.filter((r) => r.state === 'quarantined');
  const lost = 2 * ids.length - rows.length;
  // the sink never failed a job for good, and nothing is left landed-but-unsunk
  const redis = rig.redis();
  const failedSink = await redis.zcard(`${rig.prefix}:sink:failed`);
  const failedPoll = await redis.zcard(`${rig.prefix}:poll:failed`);
  const status = await rig.run(['status', '--json']);
  expect(status.code, status.stderr).toBe(0);
  const report = JSON.parse(status.stdout) as {
    items: { landed: number; quarantined: number };
    quarantined: { byReason: Record<string, number> };
  };
  const check = await rowsVsRaw(rig);
  // what was stored for the poison items, if anything (the evidence when one slipped through)
  const storedPoison = await sql<{ k: string; v: string }[]>`
    select 'v:' || id as k, concat_ws(' ', 'view_count=' || view_count, 'like_count=' || like_count, 'upload_date=' || upload_date) as v
    from videos where id = any(${Object.keys(poisonV)}::text[])
    union all
    select 't:' || video_id, 'chunks=' || chunks::text from transcripts where video_id = any(${Object.keys(poisonT)}::text[])`;

  // the source is not blocked: two new videos, then three more syncs
  const added = rig.sim.catalog.addVideos(ch.id, 2)!;
  const codes = await moreSyncs(rig, [source.id], 3, { RETRY_BACKOFF_BASE_MS: '0' });
  const storedAfter = new Set((await sql<{ id: string }[]>`select id from videos`).map((r) => r.id));
  const postsMax = postsPerVideoMax(rig.sim);
  const twice = videosPaidTwice(rig.sim);
  const codeOf = (job: string, id: string) => of(job, id)?.reason_code ?? of(job, id)?.state ?? 'missing';

  figures('20 poison-values', {
    items_in: 2 * ids.length,
    videos_stored: goodV.filter((id) => stored.has(id)).length,
    transcripts_stored: goodT.filter((id) => storedT.has(id)).length,
    quarantined: quarantined.length,
    huge_exp: codeOf(VJOB, ids[1]!),
    tiny_exp: codeOf(VJOB, ids[4]!),
    digits_400: codeOf(VJOB, ids[6]!),
    past_bigint: codeOf(VJOB, ids[8]!),
    year_zero: codeOf(VJOB, ids[10]!),
    offset_huge: codeOf(TJOB, ids[3]!),
    offset_tiny: codeOf(TJOB, ids[9]!),
    lost,
    failed_sink_jobs: failedSink,
    left_landed: report.items.landed,
    first_sync_s: firstMs / 1000,
    more_sync_codes: codes.join('/'),
    posts_per_video_max: postsMax,
  });

  // both batches end completed (not stuck queued behind one value)
  expect(batches.map((b) => [b.job_id, b.status])).toEqual([
    [TJOB, 'completed'],
    [VJOB, 'completed'],
  ]);
  // every item is accounted for
  expect(lost).toBe(0);
  // every good item lands and is stored, as delivered
  expect(goodV.filter((id) => of(VJOB, id)?.state !== 'sunk')).toEqual([]);
  expect(goodV.filter((id) => !stored.has(id))).toEqual([]);
  expect(goodT.filter((id) => of(TJOB, id)?.state !== 'sunk')).toEqual([]);
  expect(goodT.filter((id) => !storedT.has(id))).toEqual([]);
  expect(
    check.mismatched.filter((k) => goodV.some((id) => k === `v:${id}`) || goodT.some((id) => k === `t:${id}:en`)),
  ).toEqual([]);
  // every poison item is quarantined with the reason, its raw text kept, and not stored
  const poisons = [
    ...Object.entries(poisonV).map(([id, p]) => ({ job: VJOB, id, needle: p.needle, path: p.field })),
    ...Object.entries(poisonT).map(([id, lit]) => ({
      job: TJOB,
      id,
      needle: `"offset":${lit}`,
      path: 'transcript\\.content|offset',
    })),
  ];
  // (soft: one poison that slips through must not hide how the others fared)
  const storedAs = (key: string) => storedPoison.find((x) => x.k === key)?.v ?? 'not stored';
  for (const p of poisons) {
    const r = of(p.job, p.id);
    const key = p.job === VJOB ? `v:${p.id}` : `t:${p.id}`;
    const what = `${p.job} ${p.id} (${p.needle.slice(0, 20)}), stored as: ${storedAs(key)}`;
    expect.soft(r?.state, what).toBe('quarantined');
    expect.soft(['unstorable', 'schema'], `${what}: ${r?.reason}`).toContain(r?.reason_code);
    // Postgres's words or our own range check's, naming the value
    expect.soft(r?.reason ?? '', what).toMatch(new RegExp(`${p.path}|overflow|out of range|range`, 'i'));
    expect.soft(r?.raw, what).toContain(p.needle);
    expect.soft(storedAs(key), what).toBe('not stored');
  }
  // an exponent past numeric's range is caught by the range check at landing (`unstorable`);
  // 400 digits fit numeric but JavaScript reads them as Infinity, which zod rejects (`schema`)
  expect.soft(of(VJOB, ids[1]!)?.reason_code).toBe('unstorable');
  expect.soft(of(VJOB, ids[6]!)?.reason_code).toBe('schema');
  expect.soft(of(TJOB, ids[3]!)?.reason_code).toBe('unstorable');
  expect.soft(of(VJOB, ids[8]!)?.reason_code).toBe('unstorable');
  expect.soft(of(VJOB, ids[10]!)?.reason_code).toBe('unstorable');
  expect.soft(quarantined).toHaveLength(poisons.length);
  expect.soft(report.items.quarantined).toBe(poisons.length);
  // the sink did not fail on a chunk: no failed job, nothing left landed
  expect(failedSink).toBe(0);
  expect(failedPoll).toBe(0);
  expect(report.items.landed).toBe(0);
  // the source still syncs: the new videos are bought and stored; nothing is bought twice
  expect(codes).toEqual([0, 0, 0]);
  expect(added.filter((id) => !storedAfter.has(id))).toEqual([]);
  expect(twice).toEqual([]);
  expect(postsMax).toBe(1);
});
