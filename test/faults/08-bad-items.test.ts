/**
 * Scenario 8: a batch answer with bad items: a videoId repeated (with a different payload), a
 * `\u0000` in a text field (Postgres text cannot hold it), a null where the interface says
 * required, and an errorCode the interface does not list. Good items land and are stored; the
 * repeated copy, the `\u0000` and the null are quarantined raw with the reason; the unknown
 * errorCode is recorded as received and the item is retryable: nothing is dropped (items in =
 * landed + quarantined + retryable). Then four more syncs of the source, with no spacing between
 * retries (RETRY_BACKOFF_BASE_MS=0): a quarantined video is never bought again, the unknown-code
 * video is re-submitted until RETRY_ATTEMPTS_MAX submissions in all (its re-submissions fail the
 * same way), then never again.
 *
 * How it fails when the property breaks: the simulator counts, per video, every batch POST that
 * named it (scripted answers included, so the first POST counts too): a quarantined item that
 * the next sync treats as never delivered is posted again (`posts` of it > 1); an unknown-code
 * item left `processing` for good is never re-submitted (its posts stay 1); one re-submitted
 * without a cap is posted on every sync (posts > RETRY_ATTEMPTS_MAX); a stored video bought
 * again shows as posts > 1 (`posts_per_video_max`).
 *
 * The simulator serves the bad batch: the POST answers a scripted job ID, and the poll of that
 * job answers the scripted body (the real endpoints, scripted per request). Scripted steps are
 * consumed one per matching request, so the scripted job IDs go to the first three video-batch
 * POSTs (the first sync and the unknown-code video's two re-submissions); any POST after them
 * gets the simulator's real answer. Transcript batches are never scripted.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { figures, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { postsPerVideo, postsPerVideoMax, videosPaidTwice } from '../helpers/posts.ts';

/** The default cap of automatic submissions per video, kind and language. */
const RETRY_ATTEMPTS_MAX = 3;
/** The syncs after the first: enough to reach the cap and go past it. */
const MORE_SYNCS = 4;
/** Retries due at the next sync: spacing must not hide a re-submission. */
const SYNC_ENV = { RETRY_BACKOFF_BASE_MS: '0', RETRY_ATTEMPTS_MAX: String(RETRY_ATTEMPTS_MAX) };

let rig: FaultRig;
beforeAll(async () => {
  rig = await startFaultRig('08-bad-items', {
    sim: { catalog: { channels: 1, channelSizes: [30], privateShare: 0, goneShare: 0 } },
  });
});
afterAll(async () => {
  await rig?.close();
});

const batchBody = (items: string[], succeeded: number) =>
  `{"status":"completed","results":[${items.join(',')}],` +
  `"stats":{"total":${items.length},"succeeded":${succeeded},"failed":${items.length - succeeded}},"completedAt":"2026-01-01T00:00:00.000Z"}`;

it('08 bad items: good ones land, bad ones are kept raw; no quarantined video bought again, the unknown code retried up to the cap', async () => {
  const ch = rig.sim.catalog.channels()[0]!;
  const ids = rig.sim.catalog.videoIds(ch.id)!;
  const [a, b, c, d, e, f] = ids as [string, string, string, string, string, string];
  const video = (id: string) => rig.sim.catalog.video(id)!;
  const JOB = 'batch_scripted_bad_items';

  // JSON text written by hand where it matters: the \u0000 escape reaches the client as sent
  const items = [
    JSON.stringify({ videoId: a, video: video(a), errorCode: null }),
    JSON.stringify({ videoId: b, video: video(b), errorCode: null }),
    JSON.stringify({ videoId: a, video: { ...video(a), title: 'a second, different copy' }, errorCode: null }),
    JSON.stringify({ videoId: c, video: video(c), errorCode: null }).replace(
      /"title":"/,
      '"title":"nul \\u0000 inside ',
    ),
    JSON.stringify({ videoId: d, video: { ...video(d), title: null }, errorCode: null }),
    JSON.stringify({ videoId: e, video: null, errorCode: 'brand-new-code' }),
    JSON.stringify({ videoId: f, video: video(f), errorCode: null }),
  ];
  // the unknown-code video's re-submissions end the same way, so the cap is reached
  const again = [1, 2].map((n) => ({
    job: `${JOB}_again_${n}`,
    body: batchBody([JSON.stringify({ videoId: e, video: null, errorCode: 'brand-new-code' })], 0),
  }));
  rig.sim.script([
    { match: 'POST /videosite/video/batch', status: 200, body: { jobId: JOB } },
    { match: `GET /videosite/batch/${JOB}`, status: 200, body: batchBody(items, 5) },
    ...again.flatMap((x) => [
      { match: 'POST /videosite/video/batch', status: 200, body: { jobId: x.job } },
      { match: `GET /videosite/batch/${x.job}`, status: 200, body: x.body },
    ]),
  ]);

  const source = await rig.addSource({ ref: ch.id, limit: 6, langs: ['en'] });
  const r = await rig.run(['backfill', '--source', String(source.id), '--timeout', '60s'], SYNC_ENV);
  // something did not land (quarantined and retryable items): exit 1 with the reason in the summary
  expect(r.code, r.stderr).toBe(1);
  expect(r.stdout).toMatch(/3 item\(s\) quarantined/);

  const { sql } = rig.db();
  const rows = await sql<
    {
      video_id: string;
      state: string;
      error_code: string | null;
      reason: string | null;
      reason_code: string | null;
      payload: unknown;
      payload_raw: string | null;
    }[]
  >`
    select video_id, state, error_code, reason, reason_code, payload, payload_raw from batch_items where job_id = ${JOB} order by video_id`;
  const landed = rows.filter((x) => x.state === 'sunk' || x.state === 'landed');
  const quarantined = rows.filter((x) => x.state === 'quarantined');
  const retryable = rows.filter((x) => x.state === 'retryable');
  const titles = await sql<{ id: string; title: string }[]>`select id, title from videos order by id`;

  expect(landed.map((x) => x.video_id).sort()).toEqual([a, b, f].sort());
  expect(quarantined).toHaveLength(3);
  expect(items.length - landed.length - quarantined.length - retryable.length).toBe(0);
  for (const q of quarantined) {
    expect(q.reason, q.video_id).toBeTruthy();
    expect(q.payload !== null || q.payload_raw !== null, q.video_id).toBe(true);
  }
  const byId = (id: string) => quarantined.find((x) => x.video_id === id || x.video_id.startsWith(`${id}#`));
  expect(byId(c)!.payload_raw).toContain('nul \\u0000 inside');
  expect(byId(c)!.reason_code).toBe('unstorable');
  expect(byId(d)!.reason).toMatch(/title/);
  expect(byId(d)!.reason_code).toBe('schema');
  const repeated = quarantined.find((x) => x.video_id.startsWith(`${a}#`));
  expect(repeated?.reason).toMatch(/repeat/);
  expect(repeated?.reason_code).toBe('duplicate');
  // the unknown errorCode is recorded exactly as received, and the item is retryable
  expect(retryable.map((x) => [x.video_id, x.error_code])).toEqual([[e, 'brand-new-code']]);
  // the stored rows are the good items, the first copy of the repeated one
  expect(titles.map((t) => t.id).sort()).toEqual([a, b, f].sort());
  expect(titles.find((t) => t.id === a)!.title).toBe(video(a).title);
  // the status a person reads says so too
  const status = await rig.run(['status', '--json']);
  expect(status.code).toBe(0);
  const report = JSON.parse(status.stdout) as { items: { quarantined: number }; quarantined: { total: number } };
  // three items kept raw; two videos whose latest outcome is quarantined (the repeated copy is not a video)
  expect(report.quarantined.total).toBe(3);
  expect(report.items.quarantined).toBe(2);

  // more syncs: nothing quarantined is bought again; the unknown code is retried up to the cap
  const listingsBefore = rig.sim.stats().byEndpoint['GET /videosite/channel/videos']?.total ?? 0;
  const codes: (number | null)[] = [];
  for (let i = 0; i < MORE_SYNCS; i++) {
    const more = await rig.run(['backfill', '--source', String(source.id), '--timeout', '60s'], SYNC_ENV);
    codes.push(more.code);
    // 0, or 1 while an item is left retryable; never a usage, configuration or refusal error
    expect([0, 1], more.stdout + more.stderr).toContain(more.code);
  }
  const listings = (rig.sim.stats().byEndpoint['GET /videosite/channel/videos']?.total ?? 0) - listingsBefore;
  const metadataPosts = postsPerVideo(rig.sim, 'video');
  const postsOf = (id: string) => metadataPosts.get(id) ?? 0;
  const postsMax = postsPerVideoMax(rig.sim);
  const [sync] = await sql<{ attempts: number; last_state: string; last_error_code: string | null }[]>`
    select attempts, last_state, last_error_code from video_sync where video_id = ${e} and kind = 'video'`;
  const [stillQuarantined] = await sql<
    { n: number }[]
  >`select count(*)::int as n from batch_items where state = 'quarantined'`;
  const metadataPostsOther = Math.max(0, ...[a, b, f].map(postsOf));
  figures('08 bad-items', {
    items_in: items.length,
    landed: landed.length,
    quarantined: quarantined.length,
    retryable: retryable.length,
    lost: items.length - landed.length - quarantined.length - retryable.length,
    syncs: 1 + MORE_SYNCS,
    posts_quarantined_max: Math.max(postsOf(c), postsOf(d)),
    posts_unknown_code: postsOf(e),
    posts_per_video_max: postsMax,
  });
  // every sync looked at the source (a listing each), so each had the chance to buy again
  expect(listings).toBe(MORE_SYNCS);
  // quarantined: bought once, never again
  expect([postsOf(c), postsOf(d)]).toEqual([1, 1]);
  // stored: bought once
  expect(metadataPostsOther).toBe(1);
  // the unknown code: re-submitted (it is retryable, not stuck), RETRY_ATTEMPTS_MAX times in all, then no more
  expect(postsOf(e)).toBe(RETRY_ATTEMPTS_MAX);
  expect(sync).toMatchObject({
    attempts: RETRY_ATTEMPTS_MAX,
    last_state: 'retryable',
    last_error_code: 'brand-new-code',
  });
  // transcripts: each video's bought once per language; the cap is the most any video was posted
  expect(videosPaidTwice(rig.sim).filter((x) => x.what !== 'video')).toEqual([]);
  expect(postsMax).toBe(RETRY_ATTEMPTS_MAX);
  expect(stillQuarantined!.n).toBe(3);
  expect(codes).toHaveLength(MORE_SYNCS);
});
