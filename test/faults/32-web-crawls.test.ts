/**
 * Scenario 32: crawls that go wrong.
 *
 * 32a: a crawl's results go away half way through reading them (not-found from the middle on):
 * the pages read before are kept and stored once, the crawl ends `expired` saying why, it is
 * never bought again by the polls (one POST), and the next sync's crawl stores the rest without
 * a second `page.added` for a page already stored.
 *
 * 32b: a daemon killed (SIGKILL) while a crawl is scraping: the next daemon polls the same crawl
 * (reconcile rebuilds its poll from Postgres) to its end; one POST, every page stored, billed
 * 1 + pages.
 *
 * How it fails when the property breaks: a poll that re-POSTs a crawl shows as a second
 * `POST /web/crawl` (`posts`); a result that drops what was read shows fewer pages than the
 * answers delivered (`kept`); a poll lost with the daemon leaves the batch in flight until the
 * deadline (`waitUntil` times out naming it).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { countOf, figures, requestsTo, startFaultRig, type FaultRig } from '../helpers/fault-rig.ts';
import { waitUntil } from '../helpers/proc.ts';

const SITE = 'https://crawled.example.test';
const PAGES = 40;

let rig: FaultRig;
beforeAll(async () => {
  rig = await startFaultRig('32-web-crawls', { sim: { jobs: { queuedMs: 100, crawlPageMs: 1 } } });
});
afterAll(async () => {
  await rig?.close();
});

async function addWebsite(origin: string): Promise<number> {
  rig.sim.web.editSite(origin, { size: PAGES });
  const s = await rig.addSource({ kind: 'website', ref: `${origin}/`, limit: 1000 });
  return s.id;
}

async function storedPages(origin: string): Promise<number> {
  return countOf(rig.db().sql`select count(*)::int as n from pages where url like ${`${origin}/%`}`);
}

async function addedEvents(origin: string): Promise<number> {
  return countOf(rig.db().sql`
    select count(*)::int as n from events where type = 'page.added' and data->>'url' like ${`${origin}/%`}`);
}

it('32a: results gone half way: what was read is kept, nothing bought twice, the next crawl adds the rest', async () => {
  const origin = `${SITE.replace('crawled', 'half')}`;
  const id = await addWebsite(origin);
  rig.sim.setJobSettings({ crawlFault: 'results-gone' });
  const postsBefore = requestsTo(rig.sim, 'POST /web/crawl');
  const first = await rig.run(['backfill', '--source', String(id)], {}, 120_000);
  // the crawl did not deliver everything: the backfill says so with its exit code
  expect(first.code, first.stderr).toBe(1);
  const kept = await storedPages(origin);
  const [b] = await rig.db().sql<{ status: string; reason: string | null }[]>`
    select status, reason from batches where source_id = ${id} and mode = 'crawl'`;
  expect(b).toMatchObject({ status: 'expired' });
  expect(b!.reason).toContain(`the ${kept} pages read before are kept`);
  expect(kept).toBe(PAGES / 2);
  const posts = requestsTo(rig.sim, 'POST /web/crawl') - postsBefore;
  expect(posts).toBe(1);

  rig.sim.setJobSettings({ crawlFault: 'none' });
  const second = await rig.run(['backfill', '--source', String(id)], {}, 120_000);
  expect(second.code, second.stderr).toBe(0);
  expect(await storedPages(origin)).toBe(PAGES);
  expect(await addedEvents(origin)).toBe(PAGES);
  figures('32a crawl-results-gone', { kept, posts, stored_after: PAGES, added_events: await addedEvents(origin) });
});

it('32b: a daemon killed mid-crawl: the next daemon polls the same crawl to its end, bought once', async () => {
  const origin = SITE;
  const id = await addWebsite(origin);
  // a crawl that scrapes for a while: the daemon is killed while it does
  rig.sim.setJobSettings({ crawlFault: 'none', crawlPageMs: 150 });
  const postsBefore = requestsTo(rig.sim, 'POST /web/crawl');
  const daemon = rig.cli(['daemon'], {}, 'daemon-1');
  await daemon.waitForLog((l) => l.event === 'daemon.started', 60_000, 'daemon started');
  const submit = await rig.run(['backfill', '--source', String(id), '--no-wait']);
  expect(submit.code, submit.stderr).toBe(0);
  await waitUntil(
    async () =>
      (await countOf(rig.db().sql`
        select count(*)::int as n from batches where source_id = ${id} and mode = 'crawl' and status = 'active' and polls >= 1`)) >
      0
        ? true
        : undefined,
    60_000,
    'the daemon to poll the scraping crawl',
  );
  daemon.kill('SIGKILL');
  await daemon.exited;

  const next = rig.cli(['daemon'], {}, 'daemon-2');
  await waitUntil(
    async () =>
      (await countOf(rig.db().sql`
        select count(*)::int as n from batches where source_id = ${id} and mode = 'crawl' and status = 'completed'`)) >
      0
        ? true
        : undefined,
    90_000,
    'the second daemon to finish the crawl',
  );
  next.kill('SIGTERM');
  const posts = requestsTo(rig.sim, 'POST /web/crawl') - postsBefore;
  expect(posts).toBe(1);
  expect(await storedPages(origin)).toBe(PAGES);
  const [run] = await rig.db().sql<{ billed: number }[]>`
    select credits_billed::float8 as billed from sync_runs where source_id = ${id} order by id desc limit 1`;
  expect(run!.billed).toBe(1 + PAGES);
  figures('32b crawl-daemon-sigkill', { posts, pages: PAGES, billed: run!.billed });
});

it('32c: a crawl that fails or is cancelled upstream ends saying so, the source shows it, nothing stored twice', async () => {
  for (const fault of ['failed', 'cancelled'] as const) {
    const origin = `https://${fault}.example.test`;
    const id = await addWebsite(origin);
    rig.sim.setJobSettings({ crawlFault: fault, crawlPageMs: 1 });
    const r = await rig.run(['backfill', '--source', String(id)], {}, 120_000);
    expect(r.code, r.stderr).toBe(1);
    const [b] = await rig.db().sql<{ status: string; errorCode: string; reason: string }[]>`
      select status, error_code as "errorCode", reason from batches where source_id = ${id} and mode = 'crawl'`;
    expect(b).toMatchObject({ status: 'failed', errorCode: `crawl-${fault}` });
    expect(b!.reason).toContain(`the crawl ended ${fault} upstream`);
    const [s] = await rig.db().sql<{ lastErrorCode: string }[]>`
      select last_error_code as "lastErrorCode" from sources where id = ${id}`;
    expect(s!.lastErrorCode).toBe(`crawl-${fault}`);
    expect(await storedPages(origin)).toBe(0);
  }
  rig.sim.setJobSettings({ crawlFault: 'none' });
  figures('32c crawl-failed-cancelled', { failed: 1, cancelled: 1 });
});
