/**
 * Scenario 25: three daemons, twelve sources on one cron, and an account whose credits (above
 * CREDIT_RESERVE) pay for the twelve listings and four batches. The twelve syncs fire on the same
 * tick and run side by side in the three processes: together they spend at most the budget
 * (read from the simulator's `/me`), the syncs that do not fit are refused before any POST and
 * recorded (`sync_runs` refused-credits, the source's error), and every POST sent is a recorded
 * batch (no submission lost, none left undecided).
 *
 * How it fails when reservations are per process (each daemon counting only its own, as the
 * in-memory guard did): each daemon sees room for two syncs, so the three together submit up to
 * six, and the account's usage runs into the reserve: `spent` passes `budget`. Checked by
 * swapping that in (the lock and the count of reservations per process): three runs spent 138,
 * 116 and 94 credits of the 56 (6, 5 and 4 syncs submitted); with the shared reservations, three
 * runs spent 55 each (2 syncs; one listing refused while a POST was under way, counted twice).
 * The reserve is what makes an overspend visible: without it the upstream would refuse the extra
 * POSTs by itself (429). SCHEDULE_JITTER_MS=0 starts the twelve syncs together, the hardest case
 * (with the default window they start over 15 s, mostly one after another, and nothing overlaps).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { settle } from '../helpers/fault-checks.ts';
import { countOf, figures, requestsTo, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { waitUntil } from '../helpers/proc.ts';

const SOURCES = 12;
const VIDEOS = 10;
/** The twelve syncs fire on one tick this far after the sources are added (time for every daemon's reconcile to see them). */
const FIRE_IN_MS = 15_000;
/** a batch of a source: 1 + its VIDEOS (a sync: its listing, 1, and a metadata and a transcript batch) */
const BATCH_CREDITS = 1 + VIDEOS;
/** the twelve listings and four batches: two syncs' worth */
const BUDGET = SOURCES + 4 * BATCH_CREDITS;
/** credits never spent; large, so that an overspend shows instead of being refused upstream */
const RESERVE = 1_000;

let rig: FaultRig;
beforeAll(async () => {
  rig = await startFaultRig('25-credits', {
    // a little latency: the syncs of one tick overlap while each waits on the API, as they do in production
    sim: {
      latencyMs: 30,
      catalog: { channels: SOURCES, channelSizes: Array<number>(SOURCES).fill(VIDEOS), privateShare: 0, goneShare: 0 },
    },
  });
});
afterAll(async () => {
  await rig?.close();
});

it('25 three daemons, twelve sources, credits for four batches: at most the budget spent, the rest refused and recorded', async () => {
  await rig.migrate();
  // no jitter: the twelve syncs of the tick start at once, the hardest case for the guard
  const env = { CREDIT_RESERVE: String(RESERVE), SCHEDULE_JITTER_MS: '0' };
  const daemons = [1, 2, 3].map((i) => rig.cli(['daemon'], env, `daemon-${i}`));
  await Promise.all(daemons.map((d) => d.waitForLog((l) => l.event === 'daemon.started', 90_000, 'daemon started')));

  // one cron for all twelve, at a second of the minute far enough ahead that every scheduler is
  // in place (the daemons' reconcile adds them) before it comes: all twelve fire on that tick,
  // and the next is a minute later, after the test
  const fireAt = Math.ceil((Date.now() + FIRE_IN_MS) / 1000) * 1000;
  const cron = `${new Date(fireAt).getUTCSeconds()} * * * * *`;
  const sourceIds: number[] = [];
  for (const ch of rig.sim.catalog.channels()) sourceIds.push((await rig.addSource({ ref: ch.id, cron })).id);
  // registering resolved each channel (1 credit each); the budget starts from here
  const start = rig.sim.getAccount(rig.sim.apiKey)!.usedCredits;
  rig.sim.setAccount(rig.sim.apiKey, { maxCredits: start + BUDGET + RESERVE });
  expect(Date.now()).toBeLessThan(fireAt - 5_000);

  const { sql } = rig.db();
  // every source synced once (the tick), or the tick's syncs are over: an account spent to
  // the reserve holds the syncs not started yet (no run), which the judging below counts
  await waitUntil(
    async () => {
      const [r] = await sql<{ finished: number; running: number; held: number }[]>`
      select (select count(distinct source_id)::int from sync_runs where finished_at is not null) as finished,
        (select count(*)::int from sync_runs where finished_at is null) as running,
        (select count(*)::int from upstream_holds) as held`;
      return r!.finished === SOURCES || (r!.held > 0 && r!.running === 0 && Date.now() > fireAt + 5_000)
        ? true
        : undefined;
    },
    FIRE_IN_MS + 60_000,
    'a finished sync of every source',
    250,
  );
  await settle(rig, [], 60_000);
  for (const d of daemons) d.kill('SIGTERM');
  const codes = await Promise.all(daemons.map((d) => d.exited));

  const spent = rig.sim.getAccount(rig.sim.apiKey)!.usedCredits - start;
  const runs = await sql<{ source_id: number; outcome: string; detail: string | null }[]>`
    select source_id, outcome, detail from sync_runs order by id`;
  const submittedSources = new Set(runs.filter((r) => r.outcome === 'submitted').map((r) => r.source_id));
  const refusedSources = new Set(runs.filter((r) => r.outcome === 'refused-credits').map((r) => r.source_id));
  const batches = await sql<
    { source_id: number; credits_estimated: number }[]
  >`select source_id, credits_estimated from batches`;
  const submissions = await sql<
    { state: string; n: number }[]
  >`select state, count(*)::int as n from batch_submissions group by state`;
  const posts =
    requestsTo(rig.sim, 'POST /videosite/video/batch') + requestsTo(rig.sim, 'POST /videosite/transcript/batch');
  const listings = requestsTo(rig.sim, 'GET /videosite/channel/videos');
  const refused429 = Object.values(rig.sim.stats().byEndpoint).reduce((n, e) => n + (e.byStatus['429'] ?? 0), 0);
  const openReservations = await countOf(
    sql`select count(*)::int as n from credit_reservations where released_at is null`,
  );
  const [errors] = await sql<{ codes: string[] }[]>`
    select coalesce(array_agg(distinct last_error_code), '{}') as codes from sources where id <> all(${[...submittedSources]}::int[])`;
  figures('25 credits-three-daemons', {
    budget: BUDGET,
    spent,
    listings,
    batches: batches.length,
    syncs_submitted: submittedSources.size,
    sources_refused: [...refusedSources].filter((id) => !submittedSources.has(id)).length,
    posts,
    refused_429: refused429,
  });

  // at most the budget: never into the reserve
  expect(spent).toBeLessThanOrEqual(BUDGET);
  expect(codes.map((c) => c.code)).toEqual([0, 0, 0]);
  // one tick: one sync of each source, across the three daemons
  expect(runs).toHaveLength(SOURCES);
  // the credits are exact: what was spent is the listings and the batches recorded
  expect(spent).toBe(listings + batches.reduce((n, b) => n + b.credits_estimated, 0));
  // four batches fit, a fifth does not; a charge counted twice (a /me read while a POST is under
  // way) may refuse one sync more, never let one more through
  expect(batches.length).toBeLessThanOrEqual(4);
  expect(batches.length).toBeGreaterThanOrEqual(2);
  expect(batches.length % 2).toBe(0);
  expect(submittedSources.size).toBe(batches.length / 2);
  // the rest refused and recorded, each with why
  for (const id of sourceIds.filter((x) => !submittedSources.has(x))) expect(refusedSources.has(id)).toBe(true);
  for (const r of runs.filter((x) => x.outcome === 'refused-credits'))
    expect(r.detail).toMatch(
      /^not enough credits: (listing this source|this submission) needs \d+, \d+ are left above the reserve of 1000$/,
    );
  expect(runs.filter((r) => !['submitted', 'refused-credits', 'up-to-date'].includes(r.outcome))).toEqual([]);
  expect(errors!.codes).toEqual(['credits']);
  // no submission lost or undecided: every POST is a batch row
  expect(submissions).toEqual([{ state: 'submitted', n: batches.length }]);
  expect(posts).toBe(batches.length);
  // nothing refused upstream: the guard refused first
  expect(refused429).toBe(0);
  expect(openReservations).toBe(0);
});
