/**
 * Scenario 12: a batch stays `processing`, then expires (`job-expired`); what finished just
 * before shows `result-unavailable`. Every item is accounted for: landed before the expiry (kept
 * and stored), failed for good, or retryable (unfinished, or finished but never seen). `replay
 * --expired --yes` re-submits the retryable ones exactly once: a second replay and a later sync
 * find nothing to submit.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { figures, publicVideoIds, requestsTo, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';

let rig: FaultRig;
beforeAll(async () => {
  rig = await startFaultRig('12-expiry', {
    sim: {
      catalog: { channels: 1, channelSizes: [120] },
      jobs: { queuedMs: 500, itemsPerSecond: 15, lifetimeMs: 5_000 },
    },
  });
});
afterAll(async () => {
  await rig?.close();
});

const posts = () =>
  requestsTo(rig.sim, 'POST /videosite/video/batch') + requestsTo(rig.sim, 'POST /videosite/transcript/batch');

it('12 processing, then expired, then result-unavailable: every item accounted for; replay --expired re-submits once', async () => {
  const ch = rig.sim.catalog.channels()[0]!;
  const source = await rig.addSource({ ref: ch.id, langs: ['en'] });
  const first = await rig.run(['backfill', '--source', String(source.id), '--timeout', '90s']);
  // the batches expired: not everything landed
  expect(first.code, first.stdout + first.stderr).toBe(1);
  expect(first.stdout).toMatch(/expired/);

  const { sql } = rig.db();
  const expired = await sql<{ job_id: string; polls: number; total: number }[]>`
    select job_id, polls, total from batches where status = 'expired' order by job_id`;
  expect(expired).toHaveLength(2);
  const items = await sql<{ state: string; error_code: string | null; n: number }[]>`
    select state, error_code, count(*)::int as n from batch_items group by state, error_code`;
  const count = (state: string, code?: string | null) =>
    items
      .filter((i) => i.state === state && (code === undefined || i.error_code === code))
      .reduce((n, i) => n + i.n, 0);
  const total = items.reduce((n, i) => n + i.n, 0);
  const stored = count('sunk');
  const retryable = count('retryable');
  const unavailable = count('retryable', 'result-unavailable');
  const unfinished = count('retryable', 'processing');
  const failed = count('failed');
  // every item of both batches has a final state: nothing left processing or landed
  expect(total).toBe(expired.reduce((n, b) => n + b.total, 0));
  expect(stored + retryable + failed).toBe(total);
  expect(stored).toBeGreaterThan(0);
  expect(unfinished).toBeGreaterThan(0);
  expect(expired.every((b) => b.polls >= 2)).toBe(true);

  // results are kept again for the re-submission, which finishes quickly
  rig.sim.setJobSettings({ itemsPerSecond: 2000, lifetimeMs: 3_600_000 });
  const postsBefore = posts();
  const replay = await rig.run(['replay', '--expired', '--yes', '--timeout', '60s']);
  expect(replay.code, replay.stdout + replay.stderr).toBe(0);
  const postsAfterReplay = posts() - postsBefore;
  const again = await rig.run(['replay', '--expired', '--yes']);
  expect(again.code).toBe(0);
  expect(again.stdout).toMatch(/nothing to re-submit/);
  const later = await rig.run(['backfill', '--source', String(source.id), '--timeout', '60s']);
  const postsAfterAll = posts() - postsBefore;

  const [resub] = await sql<{ n: number; distinct_n: number }[]>`
    select count(*)::int as n, count(distinct (i.video_id, b.kind))::int as distinct_n
    from batch_items i join batches b using (job_id) where b.replay_of is not null`;
  const [marked] = await sql<{ n: number }[]>`
    select count(*)::int as n from batch_items where state = 'retryable' and resubmitted_in is not null`;
  const [videos] = await sql<{ n: number }[]>`select count(*)::int as n from videos`;
  figures('12 expiry-replay', {
    items: total,
    landed_before_expiry: stored,
    result_unavailable: unavailable,
    unfinished_at_expiry: unfinished,
    failed,
    resubmitted: resub!.n,
    resubmitted_twice: resub!.n - resub!.distinct_n,
    replay_posts: postsAfterReplay,
    posts_after_second_replay_and_sync: postsAfterAll - postsAfterReplay,
  });
  expect(postsAfterReplay).toBe(2);
  expect(resub!.n).toBe(retryable);
  expect(resub!.distinct_n).toBe(resub!.n);
  expect(marked!.n).toBe(retryable);
  expect(postsAfterAll).toBe(postsAfterReplay);
  expect(later.code, later.stdout).toBe(0);
  expect(videos!.n).toBe(publicVideoIds(rig.sim, ch.id).length);
});
