/**
 * Scenario 10: upstream errors around the two kinds of request.
 *
 * - A poll answered 500, 500, then 200: a GET is safe to repeat, so the client retries it with
 *   backoff and the poll succeeds within the retry budget; the job burns no attempt.
 * - A batch POST whose answer is lost (the proxy resets the connection once the request went
 *   through): the POST is never repeated blindly. The next scheduled sync reads the account's
 *   credits: they moved, so the batch was probably created: not re-submitted (0 duplicate batches
 *   upstream), and `status` and the logs say so; `replay --lost --yes` re-submits with consent.
 * - A batch POST swallowed before it reached the upstream (headers timeout): the next scheduled
 *   sync sees the credits unchanged, so nothing was created, and submits it again, once.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { settle } from '../helpers/fault-checks.ts';
import { countOf, figures, publicVideoIds, requestsTo, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { waitUntil, type CliProcess } from '../helpers/proc.ts';

const EVERY_2S = '*/2 * * * * *';
const VIDEO_POST = 'POST /videosite/video/batch';

// Each scenario gets a rig and a daemon of its own (about 1.5 s to start): the judges are the
// simulator's request counts, the daemon's whole log and the account's credits, which another
// scenario's syncs would move (and 10c stops its daemon); so the three pass in any order.
let rig: FaultRig;
let daemon: CliProcess;
beforeEach(async () => {
  rig = await startFaultRig('10-upstream', {
    sim: { catalog: { channels: 3, channelSizes: [60, 60, 60] }, jobs: { queuedMs: 100, itemsPerSecond: 200 } },
  });
  await rig.migrate();
  daemon = rig.cli(['daemon'], { API_HEADERS_TIMEOUT_MS: '3000' }, 'daemon');
  await daemon.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
});
afterEach(async () => {
  await rig?.close();
});

const syncRuns = (sourceId: number) =>
  countOf(
    rig.db().sql`select count(*)::int as n from sync_runs where source_id = ${sourceId} and finished_at is not null`,
  );

it('10a a poll answered 500, 500, then 200 succeeds within the retry budget', async () => {
  const ch = rig.sim.catalog.channels()[0]!;
  const source = await rig.addSource({ ref: ch.id });
  rig.sim.script([
    {
      match: 'GET /videosite/batch/*',
      status: 500,
      body: { error: 'internal-error', message: 'boom', details: 'scripted' },
    },
    {
      match: 'GET /videosite/batch/*',
      status: 500,
      body: { error: 'internal-error', message: 'boom', details: 'scripted' },
    },
  ]);
  const r = await rig.run(['backfill', '--source', String(source.id), '--no-wait']);
  expect(r.code, r.stderr).toBe(0);
  await settle(rig, [source.id], 60_000);
  const batchStats = rig.sim.stats().byEndpoint['GET /videosite/batch/{jobId}']!;
  const retries = daemon.logs().filter((l) => l.event === 'upstream.retry' && l.status === 500).length;
  const failedJobs = daemon.logs().filter((l) => l.event === 'job.failed').length;
  const [v] = await rig.db().sql<{ n: number }[]>`select count(*)::int as n from videos`;
  figures('10a poll-500-500-200', {
    http_500s: batchStats.byStatus['500'] ?? 0,
    retries,
    job_attempts_burned: failedJobs,
    budget: 5,
  });
  expect(batchStats.byStatus['500']).toBe(2);
  expect(retries).toBe(2);
  expect(failedJobs).toBe(0);
  expect(v!.n).toBe(publicVideoIds(rig.sim, ch.id).length);
});

it('10b a batch POST whose answer is lost: 0 duplicate batches upstream; re-submitted only with consent', async () => {
  const ch = rig.sim.catalog.channels()[1]!;
  rig.apiProxy.loseAnswer({ request: /^POST \/v1\/videosite\/video\/batch /m });
  const postsBefore = requestsTo(rig.sim, VIDEO_POST);
  const source = await rig.addSource({ ref: ch.id, cron: EVERY_2S });

  await waitUntil(
    () => (rig.apiProxy.events().some((e) => e.kind === 'answer-lost') ? true : undefined),
    60_000,
    'the lost answer',
  );
  // the next scheduled syncs look, and must not submit the video batch again
  const runsAfterLoss = await syncRuns(source.id);
  await waitUntil(
    async () => ((await syncRuns(source.id)) >= runsAfterLoss + 3 ? true : undefined),
    60_000,
    'three more scheduled syncs',
  );
  const postsUpstream = requestsTo(rig.sim, VIDEO_POST) - postsBefore;
  const [src] = await rig.db().sql<{ last_error_code: string | null; last_error: string | null }[]>`
    select last_error_code, last_error from sources where id = ${source.id}`;
  const status = await rig.run(['status', '--json']);
  const report = JSON.parse(status.stdout) as { lostSubmissions: { sourceId: number; kind: string }[] };
  const logged = daemon.logs().some((l) => l.event === 'submission.lost');
  const text = await rig.run(['status']);

  // a person agrees to pay again
  const replay = await rig.run(['replay', '--lost', '--yes']);
  await waitUntil(
    async () => {
      const [n] = await rig.db().sql<{ n: number }[]>`
      select count(*)::int as n from videos v join source_videos sv on sv.video_id = v.id where sv.source_id = ${source.id}`;
      return n!.n === publicVideoIds(rig.sim, ch.id).length ? true : undefined;
    },
    60_000,
    'the re-submitted batch to land',
  );
  const postsAfterConsent = requestsTo(rig.sim, VIDEO_POST) - postsBefore;
  figures('10b post-answer-lost', {
    posts_upstream: postsUpstream,
    duplicate_batches: postsUpstream - 1,
    syncs_after_loss: 3,
    posts_after_replay_lost: postsAfterConsent,
  });
  expect(postsUpstream).toBe(1);
  expect(src!.last_error_code).toBe('answer-lost');
  expect(src!.last_error).toMatch(/replay --lost/);
  expect(report.lostSubmissions).toEqual([expect.objectContaining({ sourceId: source.id, kind: 'video' })]);
  expect(text.stdout).toMatch(/LOST ANSWER: source \d+ video/);
  expect(logged).toBe(true);
  expect(replay.code, replay.stderr).toBe(0);
  expect(postsAfterConsent).toBe(2);
});

it('10c a batch POST swallowed before the upstream: the next scheduled sync submits it once', async () => {
  const ch = rig.sim.catalog.channels()[2]!;
  // only this source's charges between the POST and the next sync's reading: the rig is this
  // scenario's alone, no other source syncs
  rig.apiProxy.dropRequest({ request: /^POST \/v1\/videosite\/video\/batch /m });
  const postsBefore = requestsTo(rig.sim, VIDEO_POST);
  const source = await rig.addSource({ ref: ch.id, cron: EVERY_2S });
  await waitUntil(
    () => (rig.apiProxy.events().some((e) => e.kind === 'request-dropped') ? true : undefined),
    60_000,
    'the swallowed POST',
  );
  await waitUntil(
    async () => {
      const [n] = await rig.db().sql<{ n: number }[]>`
      select count(*)::int as n from videos v join source_videos sv on sv.video_id = v.id where sv.source_id = ${source.id}`;
      return n!.n === publicVideoIds(rig.sim, ch.id).length ? true : undefined;
    },
    90_000,
    'the batch to be submitted again and land',
  );
  const runsNow = await syncRuns(source.id);
  await waitUntil(
    async () => ((await syncRuns(source.id)) >= runsNow + 2 ? true : undefined),
    60_000,
    'two more scheduled syncs',
  );
  const posts = requestsTo(rig.sim, VIDEO_POST) - postsBefore;
  const [sub] = await rig.db().sql<{ n: number }[]>`
    select count(*)::int as n from batch_submissions where source_id = ${source.id} and state = 'not-created'`;
  figures('10c post-swallowed', {
    posts_upstream: posts,
    duplicate_batches: posts - 1,
    resubmitted_by_next_sync: sub!.n,
  });
  expect(posts).toBe(1);
  expect(sub!.n).toBe(1);
  daemon.kill('SIGTERM');
  expect((await daemon.exited).code).toBe(0);
});
