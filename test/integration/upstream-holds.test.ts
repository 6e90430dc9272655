/**
 * Upstream holds end without a person when `/me` says the cause is gone. A real `daemon` process
 * (roles scheduler and poller, HOLD_RECHECK_MS=1000) against the in-process simulator, with holds
 * set for the daemon's key as a refusal would set them; every assertion is on Postgres rows (`upstream_holds`,
 * `upstream_hold_events`, `credit_snapshots`), the simulator's request counts, log events, and
 * what `status` shows. Each test starts from no holds, no hold events and no credit snapshots,
 * sets the holds it needs, and starts its own daemon (on an account of its own) when it needs one.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { renderStatus } from '../../src/cli/status.ts';
import { keyFingerprint } from '../../src/api/key-fingerprint.ts';
import { clearHolds, LIFTED_BY_SYNC, setHold } from '../../src/db/upstream-holds.ts';
import { collectStatus, STATUS_HOLD_EVENTS } from '../../src/pipeline/read/status.ts';
import { createPipelineHarness, type PipelineHarness } from '../helpers/pipeline.ts';
import { startCli, waitUntil, type CliProcess } from '../helpers/proc.ts';

const RECHECK_MS = 1_000;
/** long enough for several re-checks */
const WAIT_MS = 20_000;
const MAX_CREDITS = 500;

let h: PipelineHarness;
/** the running test's daemon, if it started one */
let daemon: CliProcess | undefined;

beforeAll(async () => {
  h = await createPipelineHarness('upstream-holds');
});

beforeEach(async () => {
  await h.database.sql`delete from upstream_hold_events`;
  await h.database.sql`delete from upstream_holds`;
  await h.database.sql`delete from credit_snapshots`;
});

afterEach(async () => {
  daemon?.kill('SIGKILL');
  await daemon?.exited;
  daemon = undefined;
});

afterAll(async () => {
  await h?.close();
});

/** A key the simulator does not know yet: `/me` answers 401 until the test creates its account. */
function newKey(): string {
  return `vsi-test-holds-${randomBytes(6).toString('hex')}`;
}

/** What the scheduler and the poller record on a 401, a 402 and an exhausted quota of `key`. */
async function setHolds(key: string, ...codes: ('unauthorized' | 'credits' | 'upgrade-required')[]): Promise<void> {
  const reasons = {
    unauthorized: 'Invalid API key.',
    credits: 'quota used up (used 500 of 500 credits)',
    'upgrade-required': 'Batches are not part of this plan.',
  };
  for (const code of codes) expect(await setHold(h.database.sql, keyFingerprint(key), code, reasons[code])).toBe(true);
}

async function startDaemon(key: string): Promise<CliProcess> {
  daemon = startCli(
    ['daemon', '--role', 'scheduler,poller'],
    { ...h.env, API_KEY: key, HOLD_RECHECK_MS: String(RECHECK_MS), LOG_LEVEL: 'info' },
    'daemon',
  );
  await daemon.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
  return daemon;
}

async function holds(): Promise<string[]> {
  const rows = await h.database.sql<{ code: string }[]>`select code from upstream_holds order by code`;
  return rows.map((r) => r.code);
}

async function events(): Promise<{ code: string; event: string; reason: string | null }[]> {
  return h.database.sql<{ code: string; event: string; reason: string | null }[]>`
    select code, event, reason from upstream_hold_events order by id`;
}

/** `/me` requests the simulator answered with `status` so far. */
function meAnswers(status: number): number {
  return h.sim.stats().byEndpoint['GET /me']?.byStatus[String(status)] ?? 0;
}

/** Wait until the daemon has asked `/me` `n` more times (answered `status`). */
async function moreRechecks(status: number, n: number): Promise<void> {
  const target = meAnswers(status) + n;
  await waitUntil(() => (meAnswers(status) >= target ? true : undefined), WAIT_MS, `${n} more /me answered ${status}`);
}

it('records each new hold as a set event', async () => {
  const key = newKey();
  await setHolds(key, 'unauthorized', 'credits', 'upgrade-required');
  expect(await events()).toEqual([
    { code: 'unauthorized', event: 'set', reason: 'Invalid API key.' },
    { code: 'credits', event: 'set', reason: 'quota used up (used 500 of 500 credits)' },
    { code: 'upgrade-required', event: 'set', reason: 'Batches are not part of this plan.' },
  ]);
  // a refusal seen again refreshes the hold: not a new event
  expect(await setHold(h.database.sql, keyFingerprint(key), 'credits', 'quota used up (used 500 of 500 credits)')).toBe(
    false,
  );
  expect(await events()).toHaveLength(3);
});

it('unauthorized (scope all) stands while /me refuses the key, and lifts by itself once the key works', async () => {
  const key = newKey();
  await setHolds(key, 'unauthorized', 'credits', 'upgrade-required');
  await startDaemon(key);
  // the re-check asks /me although a hold of scope `all` stands: that call is how such a hold ends
  await moreRechecks(401, 2);
  expect(await holds()).toEqual(['credits', 'unauthorized', 'upgrade-required']);

  // the key works again, on an account whose quota is used up
  h.sim.setAccount(key, { maxCredits: MAX_CREDITS, usedCredits: MAX_CREDITS });
  await waitUntil(
    async () => ((await holds()).includes('unauthorized') ? undefined : true),
    WAIT_MS,
    'the unauthorized hold lifted',
  );
  expect(await holds()).toEqual(['credits', 'upgrade-required']);
  const lifted = (await events()).filter((e) => e.event === 'lifted');
  expect(lifted).toEqual([{ code: 'unauthorized', event: 'lifted', reason: 'recheck: /me answered, 0 credits left' }]);
});

it('credits stands while the quota is used up, and lifts by itself when the billing period renews', async () => {
  const key = newKey();
  await setHolds(key, 'credits', 'upgrade-required');
  h.sim.setAccount(key, { maxCredits: MAX_CREDITS, usedCredits: MAX_CREDITS });
  const d = await startDaemon(key);
  await moreRechecks(200, 2);
  expect(await holds()).toEqual(['credits', 'upgrade-required']);

  // a new billing period: nothing used yet
  h.sim.setAccount(key, { usedCredits: 0 });
  await waitUntil(
    async () => ((await holds()).includes('credits') ? undefined : true),
    WAIT_MS,
    'the credits hold lifted',
  );
  expect(await holds()).toEqual(['upgrade-required']);
  const lifted = (await events()).filter((e) => e.event === 'lifted');
  expect(lifted.at(-1)).toEqual({
    code: 'credits',
    event: 'lifted',
    reason: `recheck: /me answered, ${MAX_CREDITS} credits left`,
  });

  const line = d.logs().find((l) => l.event === 'hold.recheck_cleared');
  expect(line).toMatchObject({ level: 30, cleared: ['credits'], usedCredits: 0, maxCredits: MAX_CREDITS });
  // the answer is kept, so status and /metrics show the renewed credits at once
  const [snap] = await h.database.sql<{ used_credits: number; max_credits: number; reason: string }[]>`
    select used_credits, max_credits, reason from credit_snapshots order by id desc limit 1`;
  expect(snap).toEqual({ used_credits: 0, max_credits: MAX_CREDITS, reason: 'hold-recheck' });
});

it('upgrade-required stands through later re-checks, and the daemon says once that a person must act', async () => {
  const key = newKey();
  await setHolds(key, 'upgrade-required');
  h.sim.setAccount(key, { maxCredits: MAX_CREDITS, usedCredits: 0 });
  const d = await startDaemon(key);

  // a new credits hold on an account with credits: the next re-check lifts it, so re-checks ran
  const eventsBefore = (await events()).length;
  expect(await setHold(h.database.sql, keyFingerprint(key), 'credits', 'quota used up')).toBe(true);
  await waitUntil(
    async () => ((await holds()).includes('credits') ? undefined : true),
    WAIT_MS,
    'the new credits hold lifted',
  );
  expect(await holds()).toEqual(['upgrade-required']);
  expect((await events()).slice(eventsBefore).map((e) => `${e.code} ${e.event}`)).toEqual([
    'credits set',
    'credits lifted',
  ]);
  expect((await events()).filter((e) => e.code === 'upgrade-required').map((e) => e.event)).toEqual(['set']);

  // with only upgrade-required left, re-checks make no call: /me cannot judge it
  const calls = h.sim.stats().total;
  await new Promise((r) => setTimeout(r, 3 * RECHECK_MS));
  expect(h.sim.stats().total).toBe(calls);
  expect(await holds()).toEqual(['upgrade-required']);

  const told = d.logs().filter((l) => l.event === 'hold.needs_person');
  expect(told).toHaveLength(1);
  expect(told[0]).toMatchObject({ level: 40, code: 'upgrade-required', needsPerson: true });
});

it('status shows the hold that stands and the latest hold events, newest first', async () => {
  // the history a daemon writes while its account's key, then its credits, come back
  const sql = h.database.sql;
  const key = newKey();
  const fp = keyFingerprint(key);
  await setHolds(key, 'unauthorized', 'credits', 'upgrade-required');
  await clearHolds(sql, fp, ['unauthorized'], 'recheck: /me answered, 0 credits left');
  await clearHolds(sql, fp, ['credits'], `recheck: /me answered, ${MAX_CREDITS} credits left`);
  await setHold(sql, fp, 'credits', 'quota used up');
  await clearHolds(sql, fp, ['credits'], `recheck: /me answered, ${MAX_CREDITS} credits left`);

  const report = await collectStatus(sql);
  expect(report.upstreamHolds.map((x) => x.code)).toEqual(['upgrade-required']);
  expect(report.holdEvents).toHaveLength(STATUS_HOLD_EVENTS);
  expect(report.holdEvents.slice(0, 2).map((e) => [e.code, e.event])).toEqual([
    ['credits', 'lifted'],
    ['credits', 'set'],
  ]);
  const text = renderStatus(report);
  expect(text).toContain('ON HOLD: upstream refused (upgrade-required)');
  expect(text).toContain(`holding the API key with fingerprint ${fp}`);
  expect(report.upstreamHolds[0]!.keyFingerprint).toBe(fp);
  const section = text.slice(text.indexOf('Upstream holds, latest events'));
  expect(section).toContain(`recheck: /me answered, ${MAX_CREDITS} credits left`);
  expect(section).toContain('unauthorized');
});

it('stops cleanly on SIGTERM while re-checking', async () => {
  const key = newKey();
  await setHolds(key, 'credits');
  h.sim.setAccount(key, { maxCredits: MAX_CREDITS, usedCredits: MAX_CREDITS });
  const d = await startDaemon(key);
  await moreRechecks(200, 1);
  d.kill('SIGTERM');
  const exit = await d.exited;
  expect(exit).toEqual({ code: 0, signal: null });
  expect(d.logs().find((l) => l.event === 'daemon.stopped')).toMatchObject({ closedCleanly: true });
});

it("a sync a person started lifts every hold of its key, each recorded with that reason; another key's stay", async () => {
  const key = newKey();
  const fp = keyFingerprint(key);
  const other = keyFingerprint(newKey());
  await setHolds(key, 'upgrade-required');
  expect(await setHold(h.database.sql, fp, 'credits', 'quota used up')).toBe(true);
  expect(await setHold(h.database.sql, other, 'unauthorized', 'Invalid API key.')).toBe(true);
  const before = (await events()).length;
  expect(await clearHolds(h.database.sql, fp)).toEqual(['credits', 'upgrade-required']);
  expect(await holds()).toEqual(['unauthorized']);
  const lifted = (await events()).slice(before).sort((a, b) => a.code.localeCompare(b.code));
  expect(lifted).toEqual([
    { code: 'credits', event: 'lifted', reason: LIFTED_BY_SYNC },
    { code: 'upgrade-required', event: 'lifted', reason: LIFTED_BY_SYNC },
  ]);
  expect(await clearHolds(h.database.sql, fp)).toEqual([]);
});
