/**
 * Scenario 33: a media item's transcript job whose result is gone after its hour.
 *
 * The interface keeps a transcript job's result 1 hour after the job ends, then answers 404. Here
 * the simulator keeps it 0 ms, so every job of a `media` source is gone by the time it is read
 * after its end: the job is recorded `expired` (`result-expired`, saying why) and the item's
 * transcript `expired` with that reason; the next sync buys it again (and `backfill --dry-run`
 * counts it), and only while the item's
 * purchases stay within RETRY_ATTEMPTS_MAX (here 2): the third sync buys nothing. Past the cap,
 * `replay --failed --yes` releases each for one purchase by the next sync, and only one.
 *
 * How it fails when the property breaks: a result recorded as stored, or an item left `pending`
 * (`states`); a re-purchase past the cap shows as more `GET /transcript` requests than
 * items × cap (`bought`); a purchase billed but not recorded shows as a difference between the
 * simulator's credits and the charges in Postgres (`billed`); a dry run that leaves out the re-buys
 * the next sync makes (or counts one past the cap) shows as its media row (`dry`).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { countOf, figures, requestsTo, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';

const RETRY_CAP = 2;
/** Every run confirms a 404 at once, and buys at most RETRY_CAP transcripts per item. */
const ENV = { BATCH_NOT_FOUND_CONFIRM_MS: '0', RETRY_ATTEMPTS_MAX: String(RETRY_CAP) };

let rig: FaultRig;
beforeAll(async () => {
  rig = await startFaultRig('33-media-jobs', {
    sim: { jobs: { queuedMs: 100, itemsPerSecond: 2000, transcriptJobMs: 1000, transcriptResultMs: 0 } },
  });
});
afterAll(async () => {
  await rig?.close();
});

/** TikTok videos with speech, by the simulator's own facts. */
function videosWithSpeech(n: number): string[] {
  const urls: string[] = [];
  for (let i = 5000; urls.length < n; i++) {
    const url = `https://www.tiktok.com/@fault/video/${i}`;
    if (rig.sim.media.metadata(url)!.type === 'video' && rig.sim.media.hasSpeech(url)) urls.push(url);
  }
  return urls;
}

async function mediaRows(sourceId: number) {
  return rig.db().sql<{ url: string; state: string; attempts: number; reason: string | null }[]>`
    select m.url, m.transcript_state as state, m.transcript_attempts as attempts, m.transcript_reason as reason
    from media m join source_media sm using (url) where sm.source_id = ${sourceId} order by m.url`;
}

it('33: a transcript job whose result is gone: recorded expired with its reason, bought again only within the retry cap', async () => {
  const urls = videosWithSpeech(2);
  const s = await rig.addSource({
    kind: 'media',
    ref: urls[0]!,
    refs: urls.map((value, i) => ({ value, where: `argument ${i + 1}` })),
    limit: undefined,
  });
  const before = rig.sim.stats().creditsCharged;
  const boughtBefore = requestsTo(rig.sim, 'GET /transcript');

  const runs: (number | null)[] = [];
  for (let i = 0; i < RETRY_CAP + 1; i++) {
    const r = await rig.run(['backfill', '--source', String(s.id), '--timeout', '60s'], ENV, 120_000);
    // an expired job is something that did not land: the backfill says so (1), never a usage error or a crash
    expect([0, 1], r.stderr).toContain(r.code);
    runs.push(r.code);
    const rows = await mediaRows(s.id);
    expect(rows.map((x) => x.state)).toEqual(urls.map(() => 'expired'));
    expect(rows.map((x) => x.attempts)).toEqual(urls.map(() => Math.min(i + 1, RETRY_CAP)));
    for (const x of rows) expect(x.reason).toContain('1 hour');
    // the dry run counts the re-buys the next sync would make: each item while under the cap, then none
    const dry = await rig.run(['backfill', '--source', String(s.id), '--dry-run'], ENV, 120_000);
    expect(dry.code, dry.stderr).toBe(0);
    const media = dry.stdout
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .find((cells) => cells[0] === String(s.id) && cells[1] === 'media');
    if (i + 1 < RETRY_CAP)
      expect(media, dry.stdout).toEqual([String(s.id), 'media', '-', String(urls.length), String(urls.length)]);
    else expect(media, dry.stdout).toBeUndefined();
  }

  const bought = requestsTo(rig.sim, 'GET /transcript') - boughtBefore;
  expect(bought).toBe(urls.length * RETRY_CAP);
  const jobs = await rig.db().sql<{ status: string; errorCode: string | null; reason: string | null }[]>`
    select status, error_code as "errorCode", reason from batches
    where source_id = ${s.id} and kind = 'media' and mode = 'generate'`;
  expect(jobs).toHaveLength(urls.length * RETRY_CAP);
  for (const j of jobs) {
    expect(j).toMatchObject({ status: 'expired', errorCode: 'result-expired' });
    expect(j.reason).toContain('1 hour');
  }
  // each metadata read once, each transcript bought twice at 1 credit (native), every charge recorded
  const spent = rig.sim.stats().creditsCharged - before;
  expect(spent).toBe(urls.length * (1 + RETRY_CAP));
  const billed = await countOf(rig.db().sql`
    select coalesce(sum(credits), 0)::int as n from credit_charges where source_id = ${s.id}`);
  expect(billed).toBe(spent);
  figures('33 media-result-expired', {
    items: urls.length,
    bought,
    cap: RETRY_CAP,
    spent,
    billed,
    exit_codes: runs.join('/'),
  });

  // past the cap only a person buys them again: replay --failed lists them with the price, asks
  // for --yes, and releases each for one purchase by the next sync (which does not buy it twice)
  const plan = await rig.run(['replay', '--failed', '--dry-run'], ENV, 60_000);
  expect(plan.code, plan.stderr).toBe(0);
  for (const url of urls)
    expect(plan.stdout).toMatch(
      new RegExp(`${url.replace(/[.?]/g, '\\$&')}\\s+tiktok\\s+expired\\s+2\\s+${s.id}\\s+1\\b`),
    );
  expect(plan.stdout).toContain(`buying each once more costs about ${urls.length} credit(s)`);
  const refused = await rig.run(['replay', '--failed'], ENV, 60_000);
  expect(refused.code).toBe(2);
  expect(refused.stderr).toContain('add --yes');
  const released = await rig.run(['replay', '--failed', '--yes'], ENV, 60_000);
  expect(released.code, released.stderr).toBe(0);
  expect(released.stdout).toContain(`released ${urls.length} media transcript(s) for one purchase each`);
  expect(requestsTo(rig.sim, 'GET /transcript') - boughtBefore).toBe(urls.length * RETRY_CAP);
  for (let i = 0; i < 2; i++) {
    const r = await rig.run(['backfill', '--source', String(s.id), '--timeout', '60s'], ENV, 120_000);
    expect([0, 1], r.stderr).toContain(r.code);
  }
  expect(requestsTo(rig.sim, 'GET /transcript') - boughtBefore).toBe(urls.length * (RETRY_CAP + 1));
  expect((await mediaRows(s.id)).map((x) => x.attempts)).toEqual(urls.map(() => RETRY_CAP));
});
