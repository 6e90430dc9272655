/**
 * The crawl workload: one website source whose crawl finds `pages` pages (5 000 at scale 1), run
 * as a user runs it (a daemon with poller and sink already running, then `backfill --source`):
 * the pages landed per second once the crawl completed upstream, how long after that the last
 * page was stored (land lag), every page stored once, the credits /me charged against the
 * estimate (1 + pages), and each process's peak RSS.
 *
 * The simulator scrapes a crawl's pages at `crawlPageMs` each (simulated ms at speed 1), so the
 * crawl completes upstream at its submission + pages x crawlPageMs; the poller then reads the
 * results ten pages an answer and stores each answer's pages in one transaction.
 */
import { registerSource } from '../src/pipeline/commands/sources.ts';
import type { BenchEnv } from './setup.ts';
import { runWorkload, type WorkloadFigures } from './workload.ts';

/** Simulated ms per crawled page: 5 000 pages take 10 s upstream. */
export const CRAWL_PAGE_MS = 2;
export const CRAWL_ORIGIN = 'https://docs.bench.example';

export interface CrawlFigures {
  workload: WorkloadFigures;
  pages: number;
  /** pages stored (`pages` rows of the site) */
  stored: number;
  /** pages kept raw with their reason instead (a value Postgres cannot hold: the simulator makes a few on purpose) */
  quarantined: number;
  /** page.added events of the site (one per page: none twice) */
  addedEvents: number;
  /** from the crawl's completion upstream to its last page stored, s */
  landingS: number;
  pagesPerS: number;
  /** the crawl's estimate (1 + limit) and what /me says was charged for it */
  estimate: number;
  credits: number;
}

const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

export async function runCrawlWorkload(env: BenchEnv, pages: number): Promise<CrawlFigures> {
  env.sim.web.editSite(CRAWL_ORIGIN, { size: pages });
  env.sim.setJobSettings({ crawlPageMs: CRAWL_PAGE_MS });
  const source = await registerSource(
    { sql: env.db.sql, api: env.api },
    { kind: 'website', ref: `${CRAWL_ORIGIN}/`, limit: pages, langs: [], textOnly: false, cron: null },
  );
  const workload = await runWorkload(env, 'crawl', [source.id]);
  const [r] = await env.db.sql<
    {
      stored: number;
      quarantined: number;
      added: number;
      submittedMs: number;
      lastStoredMs: number;
      estimate: number;
    }[]
  >`
    select
      (select count(*)::int from batch_items i join batches b using (job_id)
        where b.source_id = ${source.id} and i.state = 'quarantined') as quarantined,
      (select count(*)::int from source_pages where source_id = ${source.id} and gone_at is null) as stored,
      (select count(*)::int from events where type = 'page.added' and source_id = ${source.id}) as added,
      (select extract(epoch from min(submitted_at)) * 1000 from batches where source_id = ${source.id})::float8 as "submittedMs",
      (select extract(epoch from max(p.last_seen_at)) * 1000 from pages p join source_pages sp using (url)
        where sp.source_id = ${source.id})::float8 as "lastStoredMs",
      (select sum(credits_estimated)::int from batches where source_id = ${source.id}) as estimate`;
  const completedUpstreamMs = r!.submittedMs + pages * CRAWL_PAGE_MS;
  const landingS = Math.max(0.001, (r!.lastStoredMs - completedUpstreamMs) / 1000);
  return {
    workload,
    pages,
    stored: r!.stored,
    quarantined: r!.quarantined,
    addedEvents: r!.added,
    landingS: round(landingS),
    pagesPerS: round(r!.stored / landingS, 0),
    estimate: r!.estimate,
    credits: workload.credits,
  };
}

export function renderCrawl(c: CrawlFigures): string {
  const w = c.workload;
  return (
    `Crawl: ${c.pages} pages, backfill ${w.wallS} s; ${c.stored} stored (${c.addedEvents} page.added), ${c.quarantined} kept raw with the reason; ` +
    `in ${c.landingS} s after the crawl completed upstream = ${c.pagesPerS} pages/s; ` +
    `credits ${c.credits} (estimate ${c.estimate}); peak RSS daemon ${w.peakRssMb.daemon} MB / backfill ${w.peakRssMb.backfill} MB\n`
  );
}
