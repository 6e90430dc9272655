/**
 * Scenario 8: a batch answer with bad items: a videoId repeated (with a different payload), a
 * `\u0000` in a text field (Postgres text cannot hold it), a null where the interface says
 * required, and an errorCode the interface does not list. Good items land and are stored; bad
 * ones are kept raw with the reason; nothing is dropped: items in = landed + quarantined.
 *
 * The simulator serves the batch: the POST answers a scripted job ID, and the poll of that job
 * answers the scripted body (the real endpoints, scripted per request).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { figures, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';

let rig: FaultRig;
beforeAll(async () => {
  rig = await startFaultRig('08-bad-items', { sim: { catalog: { channels: 1, channelSizes: [30], privateShare: 0, goneShare: 0 } } });
});
afterAll(async () => {
  await rig?.close();
});

it('08 bad items: good ones land, bad ones are kept raw with the reason; items in = landed + quarantined', async () => {
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
    JSON.stringify({ videoId: c, video: video(c), errorCode: null }).replace(/"title":"/, '"title":"nul \\u0000 inside '),
    JSON.stringify({ videoId: d, video: { ...video(d), title: null }, errorCode: null }),
    JSON.stringify({ videoId: e, video: null, errorCode: 'brand-new-code' }),
    JSON.stringify({ videoId: f, video: video(f), errorCode: null }),
  ];
  const body =
    `{"status":"completed","results":[${items.join(',')}],` +
    `"stats":{"total":${items.length},"succeeded":5,"failed":2},"completedAt":"2026-01-01T00:00:00.000Z"}`;
  rig.sim.script([
    { match: 'POST /videosite/video/batch', status: 200, body: { jobId: JOB } },
    { match: `GET /videosite/batch/${JOB}`, status: 200, body },
  ]);

  const source = await rig.addSource({ ref: ch.id, limit: 6, langs: ['en'] });
  const r = await rig.run(['backfill', '--source', String(source.id), '--timeout', '60s']);
  // something did not land (quarantined items): exit 1 with the reason in the summary
  expect(r.code, r.stderr).toBe(1);
  expect(r.stdout).toMatch(/4 item\(s\) quarantined/);

  const { sql } = rig.db();
  const rows = await sql<{ video_id: string; state: string; reason: string | null; payload: unknown; payload_raw: string | null }[]>`
    select video_id, state, reason, payload, payload_raw from batch_items where job_id = ${JOB} order by video_id`;
  const landed = rows.filter((x) => x.state === 'sunk' || x.state === 'landed');
  const quarantined = rows.filter((x) => x.state === 'quarantined');
  const lost = items.length - landed.length - quarantined.length;
  const titles = await sql<{ id: string; title: string }[]>`select id, title from videos order by id`;
  figures('08 bad-items', { items_in: items.length, landed: landed.length, quarantined: quarantined.length, lost });

  expect(landed.map((x) => x.video_id).sort()).toEqual([a, b, f].sort());
  expect(quarantined).toHaveLength(4);
  expect(lost).toBe(0);
  for (const q of quarantined) {
    expect(q.reason, q.video_id).toBeTruthy();
    expect(q.payload !== null || q.payload_raw !== null, q.video_id).toBe(true);
  }
  const byId = (id: string) => quarantined.find((x) => x.video_id === id || x.video_id.startsWith(`${id}#`));
  expect(byId(c)!.payload_raw).toContain('nul \\u0000 inside');
  expect(byId(d)!.reason).toMatch(/title/);
  expect(byId(e)!.reason).toMatch(/errorCode/);
  expect(quarantined.find((x) => x.video_id.startsWith(`${a}#`))?.reason).toMatch(/repeat/);
  // the stored rows are the good items, the first copy of the repeated one
  expect(titles.map((t) => t.id).sort()).toEqual([a, b, f].sort());
  expect(titles.find((t) => t.id === a)!.title).toBe(video(a).title);
  // the status a person reads says so too
  const status = await rig.run(['status', '--json']);
  expect(status.code).toBe(0);
  expect(JSON.parse(status.stdout).items.quarantined).toBe(4);
});
