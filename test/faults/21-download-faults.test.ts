/**
 * Scenario 21: a batch answer that downloads badly. Polls keep what they read: each landed chunk
 * commits as it arrives, so what arrived whole before a fault stays, and the next poll skips it.
 *
 * - (a) The body trickles: half of it at once, then one byte a second. With POLL_MAX_DURATION_MS
 *   at 3 s the poll ends at its deadline (its connection closed, not held), keeps the items that
 *   arrived whole, and the next poll (answered normally) lands the rest.
 * - (b) The connection breaks after 90% of the body's bytes, with LAND_CHUNK_ITEMS at 20 (90%
 *   spans several chunks). First at once (the whole 90% is still in the client's buffers when the
 *   break arrives: what that poll keeps is a figure, `kept_by_instant_cut`; it may only be whole
 *   items), then after the transfer stalled for a second (the reader has caught up, as it has on
 *   a big answer): the items before the break are committed right after that poll (read before
 *   the next poll is answered), the next poll does not land them again (`landed_at` unchanged)
 *   and lands the rest.
 *
 * Both: no item lost, every video stored, and three more syncs buy nothing: POSTs per video = 1.
 *
 * The video batch is scripted (its POST answers a job ID, its polls answer a body written here),
 * so the test knows the exact bytes and which items are whole before the fault; the transcript
 * batch of each source is the simulator's own.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { figures, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { moreSyncs, postsPerVideo, postsPerVideoMax } from '../helpers/posts.ts';
import type { LogLine } from '../helpers/proc.ts';

let rig: FaultRig;
beforeAll(async () => {
  rig = await startFaultRig('21-download', {
    sim: {
      catalog: {
        channels: 2,
        channelSizes: [40, 100],
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

/** A `completed` answer for `ids`, as JSON text, with the byte offset where each item ends. */
function completedAnswer(ids: string[]): { body: string; bytes: number; itemEnds: number[] } {
  const items = ids.map((id) => JSON.stringify({ videoId: id, video: rig.sim.catalog.video(id)!, errorCode: null }));
  const head = '{"status":"completed","results":[';
  const itemEnds: number[] = [];
  let at = Buffer.byteLength(head);
  items.forEach((item, i) => {
    at += (i > 0 ? 1 : 0) + Buffer.byteLength(item);
    itemEnds.push(at);
  });
  const body = `${head}${items.join(',')}],"stats":{"total":${ids.length},"succeeded":${ids.length},"failed":0},"completedAt":"2026-01-01T00:00:00.000Z"}`;
  return { body, bytes: Buffer.byteLength(body), itemEnds };
}

async function itemRows(jobId: string): Promise<Map<string, { state: string; landedAt: string | null }>> {
  const rows = await rig.db().sql<{ video_id: string; state: string; landed_at: string | null }[]>`
    select video_id, state, landed_at::text from batch_items where job_id = ${jobId}`;
  return new Map(rows.map((r) => [r.video_id, { state: r.state, landedAt: r.landed_at }]));
}

async function batchRow(jobId: string): Promise<{ status: string; polls: number }> {
  const [b] = await rig.db().sql<
    { status: string; polls: number }[]
  >`select status, polls from batches where job_id = ${jobId}`;
  return b!;
}

/** Items whose `landed_at` differs between two readings (landed again) or that vanished. */
function relanded(
  before: Map<string, { landedAt: string | null }>,
  after: Map<string, { landedAt: string | null }>,
): string[] {
  return [...before].filter(([id, r]) => after.get(id)?.landedAt !== r.landedAt).map(([id]) => id);
}

async function storedOf(ids: string[]): Promise<number> {
  const [r] = await rig.db().sql<{ n: number }[]>`select count(*)::int as n from videos where id = any(${ids}::text[])`;
  return r!.n;
}

it('21a a body trickling one byte a second: the poll ends at POLL_MAX_DURATION_MS, keeps whole items, the next lands the rest', async () => {
  const ch = rig.sim.catalog.channels()[0]!;
  const ids = rig.sim.catalog.videoIds(ch.id)!;
  const JOB = 'batch_scripted_trickle';
  const POLL_MAX_DURATION_MS = 3_000;
  const { body, bytes, itemEnds } = completedAnswer(ids);
  // half the items arrive at once; the cut sits a few bytes into the next one (a few trickled
  // bytes cannot complete an item of ~1 KB), so exactly `whole` items are whole before the deadline
  const whole = Math.floor(ids.length / 2);
  const afterFraction = (itemEnds[whole - 1]! + 5) / bytes;
  rig.sim.script([
    { match: 'POST /videosite/video/batch', status: 200, body: { jobId: JOB } },
    { match: `GET /videosite/batch/${JOB}`, status: 200, body, trickle: { afterFraction, byteEveryMs: 1_000 } },
    // answered normally, after a moment in which the test reads what the first poll kept
    { match: `GET /videosite/batch/${JOB}`, status: 200, body, delayMs: 1_500 },
  ]);
  rig.apiProxy.watch(new RegExp(`^GET /v1/videosite/batch/${JOB} `));

  const source = await rig.addSource({ ref: ch.id });
  const started = Date.now();
  const p = rig.cli(
    ['backfill', '--source', String(source.id), '--timeout', '60s'],
    { POLL_MAX_DURATION_MS: String(POLL_MAX_DURATION_MS) },
    'backfill-21a',
  );
  const incomplete = await p.waitForLog(
    (l: LogLine) => l.event === 'poll.incomplete' && l.jobId === JOB,
    30_000,
    'the trickled poll to end',
  );
  const afterFirst = await itemRows(JOB);
  const batchAfterFirst = await batchRow(JOB);
  const r = await p.exited;
  const runMs = Date.now() - started;
  const final = await itemRows(JOB);
  const batch = await batchRow(JOB);

  // the trickled connection: asked at `asked`, closed by the client at `closed`
  const events = rig.apiProxy.events();
  const ask = events.find((e) => e.kind === 'request' && e.line?.includes(JOB));
  const closed = ask
    ? events.find((e) => e.conn === ask.conn && e.kind === 'client-closed' && e.at >= ask.at)
    : undefined;
  const closedAfterMs = ask && closed ? closed.at - ask.at : -1;
  const moved = relanded(afterFirst, final);
  const lost = ids.filter((id) => !final.has(id)).length;
  const stored = await storedOf(ids);
  const codes = await moreSyncs(rig, [source.id], 3, {
    RETRY_BACKOFF_BASE_MS: '0',
    POLL_MAX_DURATION_MS: String(POLL_MAX_DURATION_MS),
  });
  const posts = postsPerVideo(rig.sim, 'video');
  const postsMax = Math.max(...ids.map((id) => posts.get(id) ?? 0));

  figures('21a body-trickle', {
    items: ids.length,
    body_bytes: bytes,
    whole_before_deadline: whole,
    kept_by_first_poll: afterFirst.size,
    conn_closed_after_ms: closedAfterMs,
    relanded: moved.length,
    lost,
    stored,
    run_s: runMs / 1000,
    more_sync_codes: codes.join('/'),
    posts_per_video_max: postsMax,
  });

  expect(r.code, p.stdout() + p.stderr()).toBe(0);
  // the poll ended at its deadline, said why, and let go of the connection
  expect(String(incomplete.reason)).toMatch(/POLL_MAX_DURATION_MS/);
  expect(closedAfterMs).toBeGreaterThan(POLL_MAX_DURATION_MS - 1_000);
  expect(closedAfterMs).toBeLessThan(POLL_MAX_DURATION_MS + 1_500);
  // it kept exactly the items that arrived whole, committed before the next poll
  expect(batchAfterFirst.polls).toBe(1);
  expect(batchAfterFirst.status).not.toBe('completed');
  expect(incomplete.landed).toBe(whole);
  expect(afterFirst.size).toBe(whole);
  expect([...afterFirst.keys()].sort()).toEqual(ids.slice(0, whole).sort());
  // the next poll landed the rest, without landing the kept ones again
  expect(batch.status).toBe('completed');
  expect(moved).toEqual([]);
  expect(lost).toBe(0);
  expect([...final.values()].filter((x) => x.state !== 'sunk')).toEqual([]);
  expect(stored).toBe(ids.length);
  // the source is not blocked: later syncs run normally (and find nothing to buy)
  expect(codes).toEqual([0, 0, 0]);
  expect(postsMax).toBe(1);
  expect(postsPerVideoMax(rig.sim)).toBe(1);
});

it('21b a download broken at 90%: the chunks before the break are committed, the next poll skips them and lands the rest', async () => {
  const ch = rig.sim.catalog.channels()[1]!;
  const ids = rig.sim.catalog.videoIds(ch.id)!;
  const JOB = 'batch_scripted_broken';
  const LAND_CHUNK_ITEMS = 20;
  const CUT = 0.9;
  const { body, bytes, itemEnds } = completedAnswer(ids);
  // the simulator cuts at floor(bytes x 0.9), as computed here
  const cutAt = Math.floor(bytes * CUT);
  const whole = itemEnds.filter((end) => end <= cutAt).length;
  rig.sim.script([
    { match: 'POST /videosite/video/batch', status: 200, body: { jobId: JOB } },
    // cut at once: the client may still hold the bytes unread when the break arrives
    { match: `GET /videosite/batch/${JOB}`, status: 200, body, truncateAt: CUT },
    // cut after the transfer stalled for a second (1 s late, so the test reads the first poll's rows first)
    { match: `GET /videosite/batch/${JOB}`, status: 200, body, truncateAt: CUT, cutAfterMs: 1_000, delayMs: 1_000 },
    // answered normally, 3 s late: the test reads what the broken poll committed meanwhile
    { match: `GET /videosite/batch/${JOB}`, status: 200, body, delayMs: 3_000 },
  ]);

  const source = await rig.addSource({ ref: ch.id });
  const started = Date.now();
  const p = rig.cli(
    ['backfill', '--source', String(source.id), '--timeout', '60s'],
    { LAND_CHUNK_ITEMS: String(LAND_CHUNK_ITEMS) },
    'backfill-21b',
  );
  const instant = await p.waitForLog(
    (l: LogLine) => l.event === 'poll.incomplete' && l.jobId === JOB && l.polls === 1,
    30_000,
    'the first broken poll to end',
  );
  const afterInstant = await itemRows(JOB);
  const broken = await p.waitForLog(
    (l: LogLine) => l.event === 'poll.incomplete' && l.jobId === JOB && l.polls === 2,
    30_000,
    'the second broken poll to end',
  );
  const afterBreak = await itemRows(JOB);
  const batchAfterBreak = await batchRow(JOB);
  const r = await p.exited;
  const runMs = Date.now() - started;
  const final = await itemRows(JOB);
  const batch = await batchRow(JOB);
  const moved = relanded(afterBreak, final);
  const lost = ids.filter((id) => !final.has(id)).length;
  const stored = await storedOf(ids);
  const codes = await moreSyncs(rig, [source.id], 3, {
    RETRY_BACKOFF_BASE_MS: '0',
    LAND_CHUNK_ITEMS: String(LAND_CHUNK_ITEMS),
  });
  const posts = postsPerVideo(rig.sim, 'video');
  const postsMax = Math.max(...ids.map((id) => posts.get(id) ?? 0));

  figures('21b download-broken-90', {
    items: ids.length,
    body_bytes: bytes,
    whole_before_break: whole,
    kept_by_instant_cut: afterInstant.size,
    kept_by_broken_polls: afterBreak.size,
    land_chunks_before_break: Math.floor(whole / LAND_CHUNK_ITEMS),
    relanded: moved.length,
    lost,
    stored,
    run_s: runMs / 1000,
    more_sync_codes: codes.join('/'),
    posts_per_video_max: postsMax,
  });

  expect(r.code, p.stdout() + p.stderr()).toBe(0);
  // 90% of the bytes spans several land chunks: the test would not tell chunked from atomic otherwise
  expect(whole).toBeGreaterThanOrEqual(4 * LAND_CHUNK_ITEMS);
  expect(whole).toBeLessThan(ids.length);
  // the instant cut kept only whole items, if any
  expect(String(instant.reason)).toMatch(/broke off/);
  expect([...afterInstant.keys()].filter((id) => !ids.slice(0, whole).includes(id))).toEqual([]);
  expect(instant.landed).toBe(afterInstant.size);
  // the broken polls said so and committed every item that arrived whole, before the next poll
  expect(String(broken.reason)).toMatch(/broke off/);
  expect(batchAfterBreak.polls).toBe(2);
  expect(batchAfterBreak.status).not.toBe('completed');
  expect(broken.landed).toBe(whole - afterInstant.size);
  expect(relanded(afterInstant, afterBreak)).toEqual([]);
  expect(afterBreak.size).toBe(whole);
  expect([...afterBreak.keys()].sort()).toEqual(ids.slice(0, whole).sort());
  // the next poll skipped them (landed_at unchanged) and landed the rest
  expect(batch.status).toBe('completed');
  expect(moved).toEqual([]);
  expect(lost).toBe(0);
  expect([...final.values()].filter((x) => x.state !== 'sunk')).toEqual([]);
  expect(stored).toBe(ids.length);
  expect(codes).toEqual([0, 0, 0]);
  // nothing re-bought over three more syncs
  expect(postsMax).toBe(1);
  expect(postsPerVideoMax(rig.sim)).toBe(1);
});
