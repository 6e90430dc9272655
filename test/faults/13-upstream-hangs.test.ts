/**
 * Scenario 13: the upstream hangs: once without ever sending headers, once sending headers and
 * part of the body and then nothing. The client's headers and body timeouts fire within their
 * setting + 1 s (measured at the proxy: request sent → connection dropped by the client), the
 * poll is retried (a GET is safe to repeat) and succeeds, and the poll job keeps its lock all
 * along (the lock is shorter than the hang, so only renewal keeps it): no stall, no lost lock,
 * no attempt burned.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { settle } from '../helpers/fault-checks.ts';
import { figures, publicVideoIds, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { waitUntil } from '../helpers/proc.ts';

const TIMEOUT_MS = 3_000;
const LOCK_MS = 2_000;

let rig: FaultRig;
beforeAll(async () => {
  rig = await startFaultRig('13-hangs', { sim: { catalog: { channels: 1, channelSizes: [100] } } });
});
afterAll(async () => {
  await rig?.close();
});

it('13 upstream hangs: timeouts fire within their setting + 1 s, the job keeps its lock', async () => {
  const ch = rig.sim.catalog.channels()[0]!;
  const source = await rig.addSource({ ref: ch.id });
  rig.sim.setJobSettings({ itemsPerSecond: 20 });
  const daemon = rig.cli(
    ['daemon'],
    {
      API_HEADERS_TIMEOUT_MS: String(TIMEOUT_MS),
      API_BODY_TIMEOUT_MS: String(TIMEOUT_MS),
      JOB_LOCK_DURATION_MS: String(LOCK_MS),
      JOB_STALLED_CHECK_MS: '1000',
    },
    'daemon',
  );
  await daemon.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
  const submit = await rig.run(['backfill', '--source', String(source.id), '--no-wait']);
  expect(submit.code, submit.stderr).toBe(0);
  await waitUntil(
    () => (rig.sim.stats().byEndpoint['GET /videosite/batch/{jobId}'] ? true : undefined),
    30_000,
    'the first poll',
  );

  const [video] = await rig.db().sql<{ job_id: string }[]>`select job_id from batches where kind = 'video'`;
  const path = `/videosite/batch/${video!.job_id}`;
  // the next two polls of the video batch: no headers at all, then headers, a little body, silence
  const watchFrom = rig.apiProxy.events().length;
  rig.apiProxy.watch(new RegExp(`^GET /v1${path} `));
  rig.sim.script([
    { match: `GET ${path}`, hang: true },
    { match: `GET ${path}`, status: 200, body: '{"status":"active","results":[{"videoId":"x"', stallBody: true },
  ]);
  // each hung request, from sent (at the proxy) to dropped by the client that gave up
  const timed = await waitUntil(
    () => {
      const ev = rig.apiProxy.events().slice(watchFrom);
      const out: number[] = [];
      for (const r of ev.filter((e) => e.kind === 'request').slice(0, 2)) {
        const next = ev.find(
          (e) => e.conn === r.conn && e.at >= r.at && e !== r && (e.kind === 'client-closed' || e.kind === 'request'),
        );
        if (!next) return undefined;
        if (next.kind !== 'client-closed') throw new Error(`a scripted hang was answered on connection ${r.conn}`);
        out.push(next.at - r.at);
      }
      return out.length === 2 ? out : undefined;
    },
    60_000,
    'both hung requests to time out',
  ).catch((e: unknown) => {
    throw new Error(`${String(e)}\n${JSON.stringify(rig.sim.stats().byEndpoint)}\n${daemon.stderr().slice(-4000)}`);
  });

  const s = await settle(rig, [source.id], 90_000);
  const logs = daemon.logs();
  const stalls = logs.filter((l) => l.event === 'job.stalled').length;
  const lockErrors = logs.filter(
    (l) =>
      l.event === 'worker.error' || /lock/i.test(String((l.err as { message?: string } | undefined)?.message ?? '')),
  ).length;
  // the hang is retried inside the poll (a GET); the stall breaks the answer mid-stream, after
  // the poll began landing it: the poll keeps what landed, says why, and comes back later,
  // without failing the job's attempt
  const failed = logs.filter((l) => l.event === 'job.failed');
  const incomplete = logs.filter((l) => l.event === 'poll.incomplete');
  const failedAttempts = failed.length;
  const timeouts = logs.filter((l) => l.event === 'upstream.retry' && l.code === 'timeout').length;
  figures('13 upstream-hangs', {
    setting_s: TIMEOUT_MS / 1000,
    headers_timeout_s: timed[0]! / 1000,
    body_timeout_s: timed[1]! / 1000,
    lock_s: LOCK_MS / 1000,
    lock_lost: stalls + lockErrors,
    attempts_burned: failedAttempts,
  });
  for (const ms of timed) {
    expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 100);
    expect(ms).toBeLessThanOrEqual(TIMEOUT_MS + 1_000);
  }
  expect(timeouts).toBe(1);
  expect(failed).toEqual([]);
  expect(incomplete).toHaveLength(1);
  expect(String(incomplete[0]!.reason)).toMatch(/broke off/);
  expect(stalls).toBe(0);
  expect(lockErrors).toBe(0);
  expect(s.videos).toBe(publicVideoIds(rig.sim, ch.id).length);
  daemon.kill('SIGTERM');
  expect((await daemon.exited).code).toBe(0);
});
