/**
 * Scenario 9: a poll is answered 429 with `Retry-After: 120`. Every process's API calls pause for
 * the whole window (the shared limiter's pause in Redis) and the poll queue is rate-limited; the
 * job goes back to wait without burning an attempt. No test sits through two minutes: it watches
 * the first seconds of the window (0 API calls), checks that both pauses in Redis cover the rest
 * of the 120 s, then moves those clocks forward (the pause's end time and the queue limiter's
 * TTL) and watches the work resume and finish with the job's attempts untouched.
 */
import { Queue } from 'bullmq';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pollJobId, QUEUE_POLL } from '../../src/queues/names.ts';
import { settle } from '../helpers/fault-checks.ts';
import { figures, publicVideoIds, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { waitUntil, within } from '../helpers/proc.ts';

const RETRY_AFTER_S = 120;
/** The part of the window watched in real time. */
const WATCH_MS = 8_000;

let rig: FaultRig;
let pollQueue: Queue;
beforeAll(async () => {
  rig = await startFaultRig('09-429', { sim: { catalog: { channels: 1, channelSizes: [200] } } });
  pollQueue = new Queue(QUEUE_POLL, { connection: rig.redis(), prefix: rig.prefix });
});
afterAll(async () => {
  await within(pollQueue?.close(), 3_000);
  await rig?.close();
});

it('09 429 with Retry-After 120: 0 API calls in the window, 0 attempts burned', async () => {
  const ch = rig.sim.catalog.channels()[0]!;
  const source = await rig.addSource({ ref: ch.id, langs: ['en'] });
  rig.sim.setJobSettings({ itemsPerSecond: 10 });
  const daemon = rig.cli(['daemon'], {}, 'daemon');
  await daemon.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
  const submit = await rig.run(['backfill', '--source', String(source.id), '--no-wait']);
  expect(submit.code, submit.stderr).toBe(0);
  const { sql } = rig.db();
  const jobIds = (await sql<{ job_id: string }[]>`select job_id from batches order by job_id`).map((r) => r.job_id);

  rig.sim.script([
    {
      match: 'GET /videosite/batch/*',
      status: 429,
      headers: { 'retry-after': String(RETRY_AFTER_S) },
      body: { error: 'limit-exceeded', message: 'Rate limit exceeded.', details: `retry after ${RETRY_AFTER_S} s` },
    },
  ]);
  const limited = await waitUntil(
    () => (rig.sim.stats().byEndpoint['GET /videosite/batch/{jobId}']?.byStatus['429'] ? Date.now() : undefined),
    30_000,
    'the 429',
    20,
  );
  await daemon.waitForLog((l) => l.event === 'rate_limit.paused', 10_000, 'the pause');
  const callsAtPause = rig.sim.stats().total;
  await new Promise((r) => setTimeout(r, WATCH_MS));
  const callsInWindow = rig.sim.stats().total - callsAtPause;

  // both pauses cover the rest of the window
  const redis = rig.redis();
  const pausedKey = `${rig.prefix}:api:paused-until`;
  const [untilMs, [sec, usec]] = await Promise.all([redis.get(pausedKey), redis.time()]);
  const pauseLeftS = (Number(untilMs) - (Number(sec) * 1000 + Math.floor(Number(usec) / 1000))) / 1000;
  const queueLimitLeftS = (await redis.pttl(`${rig.prefix}:${QUEUE_POLL}:limiter`)) / 1000;
  const jobs = await Promise.all(jobIds.map((id) => pollQueue.getJob(pollJobId(id))));
  const attempts = jobs.reduce((n, j) => n + (j?.attemptsMade ?? 0), 0);
  const states = await Promise.all(jobs.map((j) => j?.getState()));

  // move the pipeline's clocks to the end of the window
  await redis.set(pausedKey, '0', 'PX', 1);
  await redis.pexpire(`${rig.prefix}:${QUEUE_POLL}:limiter`, 1);
  const s = await settle(rig, [source.id], 90_000);
  const failedLines = daemon.logs().filter((l) => l.event === 'job.failed');
  figures('09 rate-limit-429', {
    retry_after_s: RETRY_AFTER_S,
    calls_in_window: callsInWindow,
    watched_s: WATCH_MS / 1000,
    pause_left_s: Math.round(pauseLeftS),
    attempts_burned: attempts + failedLines.length,
  });
  expect(limited).toBeGreaterThan(0);
  expect(callsInWindow).toBe(0);
  expect(pauseLeftS).toBeGreaterThan(RETRY_AFTER_S - WATCH_MS / 1000 - 10);
  expect(queueLimitLeftS).toBeGreaterThan(RETRY_AFTER_S - WATCH_MS / 1000 - 10);
  expect(attempts).toBe(0);
  expect(
    states.every((st) => st === 'waiting' || st === 'delayed' || st === 'prioritized' || st === 'active'),
    String(states),
  ).toBe(true);
  expect(failedLines).toHaveLength(0);
  expect(s.videos).toBe(publicVideoIds(rig.sim, ch.id).length);
  daemon.kill('SIGTERM');
  expect((await daemon.exited).code).toBe(0);
});
