/**
 * Scenario 11: the upstream refuses the account: a revoked key (401), a plan without batches
 * (402), credits used up. Retrying cannot fix any of them: the refused request is not repeated,
 * scheduled syncs pause (a hold in Postgres, shared by every daemon), `status` and the logs say
 * why and how to resume, and no API call is made until a person clears the condition and runs a
 * backfill; then the schedule resumes by itself.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { settle } from '../helpers/fault-checks.ts';
import { figures, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { waitUntil, type CliProcess } from '../helpers/proc.ts';

const EVERY_2S = '*/2 * * * * *';
/** Watched after the refusal: three scheduled ticks at least. */
const WINDOW_MS = 7_000;

// Each scenario gets a rig and a daemon of its own (about 1.5 s to start): a refusal is judged by
// every call the simulator saw and by the daemon's log, the account's plan and credits are the
// simulator's, and 11c stops its daemon; so the three pass in any order.
let rig: FaultRig;
let daemon: CliProcess;
let sourceId: number;
let channelId: string;

beforeEach(async () => {
  rig = await startFaultRig('11-refusals', { sim: { catalog: { channels: 1, channelSizes: [40] } } });
  const ch = rig.sim.catalog.channels()[0]!;
  channelId = ch.id;
  const s = await rig.addSource({ ref: ch.id, cron: EVERY_2S });
  sourceId = s.id;
  daemon = rig.cli(['daemon'], {}, 'daemon');
  await daemon.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
  // the first scheduled sync submits and everything lands: later syncs list and find nothing due
  await settle(rig, [sourceId], 60_000);
});
afterEach(async () => {
  await rig?.close();
});

interface Observed {
  refusedRequests: number;
  callsAfter: number;
  holdCode: string | undefined;
  statusSays: boolean;
  logSays: boolean;
}

/**
 * Wait for the refusal, then watch the window: what was refused, what was called after.
 * `refusedUpstream` false: the refusal comes from our own credit guard (a free `/me` shows
 * nothing left before anything paid is sent), so no refused answer is waited for.
 */
async function observe(status: number, code: string, refusedUpstream = true): Promise<Observed> {
  const refusedCount = () =>
    Object.values(rig.sim.stats().byEndpoint).reduce((n, e) => n + (e.byStatus[String(status)] ?? 0), 0);
  if (refusedUpstream) await waitUntil(() => (refusedCount() > 0 ? true : undefined), 30_000, `a ${status} answer`);
  await daemon.waitForLog(
    (l) => l.event === 'hold.set' && l.level === 50 && l.code === code,
    10_000,
    `the ${code} hold logged`,
  );
  const callsAtRefusal = rig.sim.stats().total;
  await new Promise((r) => setTimeout(r, WINDOW_MS));
  const callsAfter = rig.sim.stats().total - callsAtRefusal;
  const json = await rig.run(['status', '--json']);
  const report = JSON.parse(json.stdout) as { upstreamHolds: { code: string; message: string }[] };
  const text = await rig.run(['status']);
  return {
    refusedRequests: refusedCount(),
    callsAfter,
    holdCode: report.upstreamHolds[0]?.code,
    statusSays: text.stdout.includes(`ON HOLD: upstream refused (${code})`) && /backfill --all/.test(text.stdout),
    logSays: daemon.logs().some((l) => l.event === 'hold.set' && l.level === 50 && l.code === code),
  };
}

/** A person fixed it and runs a backfill: it goes through, the hold is gone, the schedule calls again. */
async function clearAndResume(): Promise<{ backfillCode: number | null; resumedCalls: number }> {
  const r = await rig.run(['backfill', '--source', String(sourceId), '--timeout', '60s']);
  const before = rig.sim.stats().total;
  await waitUntil(() => (rig.sim.stats().total > before ? true : undefined), 30_000, 'scheduled syncs to call again');
  const [h] = await rig.db().sql<{ n: number }[]>`select count(*)::int as n from upstream_holds`;
  expect(h!.n).toBe(0);
  return { backfillCode: r.code, resumedCalls: rig.sim.stats().total - before };
}

it('11a 401: not retried, scheduling pauses, status and logs say why, 0 calls until cleared', async () => {
  const unauthorized = {
    error: 'unauthorized',
    message: 'Invalid API key.',
    details: 'The API key is unknown or was revoked.',
  };
  // the key is refused for everything, as long as the script lasts (cleared below)
  rig.sim.script(Array.from({ length: 100 }, () => ({ match: '* /**', status: 401, body: unauthorized })));
  const o = await observe(401, 'unauthorized');
  rig.sim.clearScript();
  const resumed = await clearAndResume();
  figures('11a refused-401', {
    refused_requests: o.refusedRequests,
    retries: o.refusedRequests - 1,
    calls_until_cleared: o.callsAfter,
    hold: o.holdCode ?? 'none',
  });
  expect(o.refusedRequests).toBe(1);
  expect(o.callsAfter).toBe(0);
  expect(o.holdCode).toBe('unauthorized');
  expect(o.statusSays).toBe(true);
  expect(o.logSays).toBe(true);
  expect(resumed.backfillCode).toBe(0);
});

it('11b 402: not retried, scheduling pauses, 0 calls until the plan is fixed', async () => {
  rig.sim.resetStats();
  rig.sim.setAccount(rig.sim.apiKey, { plan: 'free' });
  // something new to submit, so the next scheduled sync POSTs and meets the plan's refusal
  rig.sim.catalog.addVideos(channelId, 5);
  const o = await observe(402, 'upgrade-required');
  rig.sim.setAccount(rig.sim.apiKey, { plan: 'pro' });
  const resumed = await clearAndResume();
  figures('11b refused-402', {
    refused_requests: o.refusedRequests,
    retries: o.refusedRequests - 1,
    calls_until_cleared: o.callsAfter,
    hold: o.holdCode ?? 'none',
  });
  expect(o.refusedRequests).toBe(1);
  expect(o.callsAfter).toBe(0);
  expect(o.holdCode).toBe('upgrade-required');
  expect(o.statusSays).toBe(true);
  expect(o.logSays).toBe(true);
  expect(resumed.backfillCode).toBe(0);
});

it('11c credits used up: not retried, scheduling pauses, 0 calls until credits return', async () => {
  rig.sim.resetStats();
  const account = rig.sim.getAccount(rig.sim.apiKey)!;
  rig.sim.setAccount(rig.sim.apiKey, { usedCredits: account.maxCredits });
  // the credit guard reserves even the listing, so the sync is refused before any paid request
  const o = await observe(429, 'credits', false);
  rig.sim.setAccount(rig.sim.apiKey, { usedCredits: 0 });
  const resumed = await clearAndResume();
  figures('11c refused-credits', {
    refused_requests: o.refusedRequests,
    calls_until_cleared: o.callsAfter,
    hold: o.holdCode ?? 'none',
  });
  expect(o.refusedRequests).toBe(0);
  expect(o.callsAfter).toBe(0);
  expect(o.holdCode).toBe('credits');
  expect(o.statusSays).toBe(true);
  expect(o.logSays).toBe(true);
  expect(resumed.backfillCode).toBe(0);
  daemon.kill('SIGTERM');
  expect((await daemon.exited).code).toBe(0);
});
