/**
 * The credit guard across processes: each "process" here is a pool of its own on one real
 * Postgres database (as several daemons would have), all checking one account. `/me` is a
 * stand-in for the upstream's, whose answers the test can hold back, so that a read can be kept
 * in progress while another process charges and releases: the cases the guard must get right.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/client.ts';
import type { Account } from '../../src/api/schemas.ts';
import { loadConfig } from '../../src/config.ts';
import { createDb, type DbHandle } from '../../src/db/connection.ts';
import { CREDIT_RESERVATIONS_PRUNE_MAX, heldCredits, type DbInstant } from '../../src/db/credit-reservations.ts';
import { insertSource } from '../../src/db/sources.ts';
import {
  BudgetRefusedError,
  CREDIT_RESERVATION_TTL_MS,
  reserveCredits,
  type CreditCheck,
  type CreditRequest,
} from '../../src/pipeline/ingest/credits.ts';
import type { PipelineDeps } from '../../src/pipeline/deps.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let database: TestDatabase;
/** three processes' pools, two connections each (a check needs one) */
const pools: DbHandle[] = [];

beforeAll(async () => {
  database = await createTestDatabase('credit_reservations');
  for (let i = 0; i < 3; i++) pools.push(createDb(database.url, { max: 2 }));
});
afterAll(async () => {
  await Promise.allSettled(pools.map((p) => p.close()));
  await database?.drop();
});

/**
 * The upstream account: `left` credits, charged by `charge`. Each `/me` answers at once, or,
 * while `holdReads()` is in force, when the test lets it (`answer()`), with what is left then.
 */
function account(left: number) {
  const state = { left, reads: 0 };
  let held: (() => void)[] | undefined;
  const me = async (): Promise<Account> => {
    state.reads++;
    if (held) await new Promise<void>((resolve) => held!.push(resolve));
    return { organizationId: 'org', plan: 'pro', maxCredits: 1_000_000, usedCredits: 1_000_000 - state.left };
  };
  return {
    state,
    api: { me } as unknown as ApiClient,
    charge(credits: number) {
      state.left -= credits;
    },
    holdReads() {
      held = [];
    },
    /** answer the reads held so far, and answer later ones at once */
    answer() {
      const h = held ?? [];
      held = undefined;
      for (const r of h) r();
    },
  };
}

type Account_ = ReturnType<typeof account>;

function deps(
  pool: number,
  acc: Account_,
  settings: Partial<PipelineDeps['settings']> = {},
): Pick<PipelineDeps, 'sql' | 'api' | 'settings'> {
  return { sql: pools[pool]!.sql, api: acc.api, settings: { ...loadConfig({}).pipeline, ...settings } };
}

const check = (
  pool: number,
  acc: Account_,
  req: Partial<CreditRequest> & { estimate: number },
  settings?: Partial<PipelineDeps['settings']>,
) => reserveCredits(deps(pool, acc, settings), { sourceId: null, ...req });

/** Until `cond` holds (a check waiting on the lock, a read in progress). */
async function until(cond: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function clear(): Promise<void> {
  await database.sql`delete from credit_reservations`;
}

async function openRows(): Promise<{ credits: number; holder: string; ttl_s: number }[]> {
  return database.sql<{ credits: number; holder: string; ttl_s: number }[]>`
    select credits, holder, round(extract(epoch from expires_at - created_at))::int as ttl_s
    from credit_reservations where released_at is null order by id`;
}

function granted(c: CreditCheck) {
  if (c.refused) throw new Error(`refused: ${c.refused.message}`);
  return c.hold;
}

describe('credit reservations in Postgres, shared by processes', () => {
  it('two processes checking at once: the second waits for the first, sees its reservation, and is refused', async () => {
    await clear();
    const acc = account(1000);
    acc.holdReads();
    const first = check(0, acc, { estimate: 600 });
    await until(() => acc.state.reads === 1, "the first process's read");
    const second = check(1, acc, { estimate: 600 });
    // the second waits on the lock while the first reads: it has not even asked /me yet
    await new Promise((r) => setTimeout(r, 200));
    expect(acc.state.reads).toBe(1);
    acc.answer();
    const a = granted(await first);
    const b = await second;
    expect(a.available).toBe(1000);
    expect(b.refused?.message).toBe('not enough credits: this submission needs 600, 400 are left');
    expect(b.refused?.limit).toBe('account');
    const rows = await openRows();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      credits: 600,
      holder: `${(await import('node:os')).hostname()}:${process.pid}`,
      ttl_s: CREDIT_RESERVATION_TTL_MS / 1000,
    });
    await a.release();
    expect(await openRows()).toEqual([]);
  });

  it('thirty checks from three processes at once on 1000 credits: exactly ten of 100 pass', async () => {
    await clear();
    const acc = account(1000);
    const checks = await Promise.all(Array.from({ length: 30 }, (_, i) => check(i % 3, acc, { estimate: 100 })));
    expect(checks.filter((c) => c.hold).length).toBe(10);
    expect(checks.filter((c) => c.refused).length).toBe(20);
    const [sum] = await database.sql<
      { n: number }[]
    >`select sum(credits)::int as n from credit_reservations where released_at is null`;
    expect(sum!.n).toBe(1000);
    await Promise.all(checks.map((c) => c.hold?.release()));
  });

  it('counts a reservation released after a read began (the read may not show its charge): a charge counted twice refuses', async () => {
    await clear();
    const acc = account(1000);
    const first = granted(await check(0, acc, { estimate: 300 }));
    // another process's read begins; meanwhile the first is charged and releases
    acc.holdReads();
    const late = check(1, acc, { estimate: 800 });
    await until(() => acc.state.reads === 2, "the second process's read");
    acc.charge(300);
    await first.release();
    acc.answer();
    // /me said 700, and may or may not have shown the 300: counted again
    expect((await late).refused?.available).toBe(400);
  });

  // Failed in full-suite runs (2026-11-23) with the released 300 still counted: the read's
  // instant lost its microseconds on the way back to Postgres (see the next case), so a release in
  // the same millisecond before the read began counted. A scratch loop of this case: 144 of 1000.
  it('does not count a reservation released before a read began (its charge is in that read)', async () => {
    await clear();
    const acc = account(1000);
    const first = granted(await check(0, acc, { estimate: 300 }));
    acc.charge(300);
    await first.release();
    const next = granted(await check(1, acc, { estimate: 700 }));
    expect(next.available).toBe(700);
    await next.release();
  });

  it('a release earlier in the same millisecond as the read began is not counted: the instant keeps its microseconds', async () => {
    await clear();
    await database.sql`
      insert into credit_reservations (credits, holder, created_at, released_at, expires_at)
      values (300, 'same-ms', '2026-01-01 00:00:00.100200+00', '2026-01-01 00:00:00.100400+00', '2026-01-01 00:10:00+00')`;
    // 200 us after the release, same millisecond: sent as a JS Date (postgres.js's timestamptz
    // serializer) the read would begin at .100000, before the release, and count it
    expect(await heldCredits(database.sql, '2026-01-01 00:00:00.100600+00' as DbInstant)).toBe(0);
    // released at the very instant the read began: it may not be in that read
    expect(await heldCredits(database.sql, '2026-01-01 00:00:00.100400+00' as DbInstant)).toBe(300);
  });

  it('a spent part is released at once, the rest stays reserved until release', async () => {
    await clear();
    const acc = account(1000);
    const hold = granted(await check(0, acc, { estimate: 500 }));
    // a batch of 200 was sent and recorded: charged, and spent in the recording transaction
    acc.charge(200);
    await pools[0]!.sql.begin((tx) => hold.spend(tx, 200));
    expect((await openRows()).map((r) => r.credits)).toEqual([300]);
    // a read that begins now sees 800 left and 300 still reserved
    expect(granted(await check(1, acc, { estimate: 500 })).available).toBe(500);
  });

  it('headroom is reserved with the estimate only when credits are plentiful and no budget applies; spending draws on both', async () => {
    await clear();
    // 4 x (10 + 240) = 1000 <= 1000 left: granted, one row of 250, counted by every other check
    const acc = account(1000);
    const roomy = granted(await check(0, acc, { estimate: 10, headroom: 240 }));
    expect(roomy.reserved).toBe(250);
    expect((await openRows()).map((r) => r.credits)).toEqual([250]);
    expect(granted(await check(1, acc, { estimate: 1 })).available).toBe(750);
    await clear();
    // the listing (10) and then a batch (200) spent on the same hold, without another check
    const again = granted(await check(0, acc, { estimate: 10, headroom: 240 }));
    await pools[0]!.sql.begin((tx) => again.spend(tx, 10));
    expect(again.left()).toBe(240);
    await pools[0]!.sql.begin((tx) => again.spend(tx, 200));
    expect(again.left()).toBe(40);
    expect((await openRows()).map((r) => r.credits)).toEqual([40]);
    await again.release();
    expect(await openRows()).toEqual([]);

    // 4 x 250 > 999: only the estimate, so headroom never refuses anyone when credits are scarce
    const tight = granted(await check(0, account(999), { estimate: 10, headroom: 240 }));
    expect(tight.reserved).toBe(10);
    expect(tight.left()).toBe(10);
    await clear();
    // a daily budget counts reservations: headroom would use it up, so none
    const budgeted = granted(
      await check(0, account(1_000_000), { estimate: 10, headroom: 240 }, { creditBudgetPerDay: 100_000 }),
    );
    expect(budgeted.reserved).toBe(10);
    await clear();
  });

  it("a dead process's reservation counts until it expires, then is deleted", async () => {
    await clear();
    const acc = account(1000);
    const dying = createDb(database.url, { max: 1 });
    await reserveCredits({ ...deps(0, acc), sql: dying.sql }, { sourceId: null, estimate: 400 });
    await dying.close();
    expect((await check(1, acc, { estimate: 700 })).refused?.available).toBe(600);
    // CREDIT_RESERVATION_TTL_MS later (its process never renewed it)
    await database.sql`update credit_reservations set expires_at = now() - interval '1 second' where released_at is null`;
    const after = granted(await check(2, acc, { estimate: 700 }));
    expect(after.available).toBe(1000);
    expect(await database.sql`select 1 from credit_reservations where credits = 400`).toHaveLength(0);
    await after.release();
  });

  it('a renewal keeps a reservation counted; one that expired says so', async () => {
    await clear();
    const acc = account(1000);
    const hold = granted(await check(0, acc, { estimate: 100 }));
    await database.sql`update credit_reservations set expires_at = now() + interval '1 second'`;
    expect(await hold.renew()).toBe(true);
    const [r] = await database.sql<
      { s: number }[]
    >`select extract(epoch from expires_at - now())::float8 as s from credit_reservations`;
    expect(r!.s).toBeGreaterThan(CREDIT_RESERVATION_TTL_MS / 1000 - 5);
    await database.sql`update credit_reservations set expires_at = now() - interval '1 second'`;
    expect(await hold.renew()).toBe(false);
  });

  it('deletes old released rows as it goes, at most a bounded number per check', async () => {
    await clear();
    await database.sql`
      insert into credit_reservations (credits, holder, created_at, released_at, expires_at)
      select 1, 'old', now() - interval '1 hour', now() - interval '1 hour', now() - interval '50 minutes'
      from generate_series(1, 250)`;
    const acc = account(1000);
    await granted(await check(0, acc, { estimate: 1 })).release();
    const [n] = await database.sql<
      { n: number }[]
    >`select count(*)::int as n from credit_reservations where holder = 'old'`;
    expect(n!.n).toBe(250 - CREDIT_RESERVATIONS_PRUNE_MAX);
  });
});

describe('daily budgets in the same check', () => {
  it("a source's budget counts its open reservations and refuses without calling /me; another source is not limited by it", async () => {
    await clear();
    const [a, b] = await Promise.all(
      ['aaaaaaaaaaa', 'bbbbbbbbbbb'].map((v) =>
        insertSource(database.sql, { kind: 'videos', ref: v, externalId: `budget-${v}`, maxVideos: 1 }),
      ),
    );
    const acc = account(1_000_000);
    const held = granted(await check(0, acc, { sourceId: a!.id, sourceBudget: 100, estimate: 60 }));
    const reads = acc.state.reads;
    const refused = (await check(1, acc, { sourceId: a!.id, sourceBudget: 100, estimate: 50 })).refused;
    expect(refused).toBeInstanceOf(BudgetRefusedError);
    expect(refused?.limit).toBe('source-budget');
    expect(refused?.message).toMatch(
      /^daily credit budget spent: this submission needs 50, 40 are left of --max-credits-per-day 100 of source \d+ \(60 spent or reserved/,
    );
    expect(acc.state.reads).toBe(reads);
    // the other source has a budget of its own
    await granted(await check(2, acc, { sourceId: b!.id, sourceBudget: 100, estimate: 100 })).release();
    await held.release();
    await database.sql`delete from sources where id = any(${[a!.id, b!.id]}::int[])`;
  });

  it('CREDIT_BUDGET_PER_DAY counts every source: batches recorded today, listings, and POSTs whose answer was lost', async () => {
    await clear();
    const acc = account(1_000_000);
    const s = await insertSource(database.sql, {
      kind: 'videos',
      ref: 'ccccccccccc',
      externalId: 'budget-installation',
      maxVideos: 1,
    });
    // today: a batch of 30 credits, a listing of 2; yesterday's do not count
    await database.sql`
      insert into batches (job_id, source_id, kind, status, credits_estimated, request, submitted_at)
      values ('budget-today', ${s.id}, 'video', 'completed', 30, '{}', now()),
             ('budget-yesterday', ${s.id}, 'video', 'completed', 500, '{}', date_trunc('day', now() at time zone 'UTC') at time zone 'UTC' - interval '1 second')`;
    await database.sql`insert into sync_runs (source_id, listing_credits) values (${s.id}, 2)`;
    // a POST whose answer was lost (maybe charged, no batch row) counts; one answered counts as its batch
    await database.sql`
      insert into batch_submissions (source_id, kind, request, credits_estimated, state, job_id)
      values (${s.id}, 'video', '{}', 5, 'unknown', null), (${s.id}, 'video', '{}', 30, 'submitted', 'budget-today')`;
    const settings = { creditBudgetPerDay: 100 };
    const refused = (await check(0, acc, { estimate: 64 }, settings)).refused;
    expect(refused?.limit).toBe('installation-budget');
    expect(refused?.message).toContain('needs 64, 63 are left of CREDIT_BUDGET_PER_DAY=100 (37 spent or reserved');
    const fits = granted(await check(1, acc, { estimate: 63 }, settings));
    await fits.release();
    await database.sql`delete from batch_submissions`;
    await database.sql`delete from batches where job_id like 'budget-%'`;
    await database.sql`delete from sync_runs`;
    await database.sql`delete from sources where id = ${s.id}`;
  });
});
