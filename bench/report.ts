/**
 * The figures side by side, the ratios, and each target (issues #4 and #12) as met / not met: as
 * a Markdown table for the terminal (and docs/performance.md), and as one JSON document.
 */
import type { CeilingFigures } from './ceiling.ts';
import type { NaiveFigures } from './naive.ts';
import type { ProbeFigures } from './probe.ts';
import type { WebhookFigures } from './webhooks.ts';
import type { CrawlFigures } from './crawl.ts';
import { EMBED_TARGET_SHARE, type EmbeddingsFigures } from './embeddings.ts';
import type { MediaFigures } from './media.ts';
import { TARGETS } from './settings.ts';
import type { WorkloadFigures } from './workload.ts';

export interface Target {
  name: string;
  met: boolean;
  detail: string;
}

export interface Results {
  startedAt: string;
  machine: Record<string, unknown>;
  settings: Record<string, unknown>;
  probe: ProbeFigures;
  naive: NaiveFigures;
  /** W1: from a stored transcript to its passages (issue #31) */
  passageLag?: { transcripts: number; p50S: number | null; p95S: number | null; maxS: number | null };
  w1: WorkloadFigures;
  ceiling: CeilingFigures;
  w3: WorkloadFigures & { newVideos: number; newPublicVideos: number; newVideosLanded: number };
  w3Unchanged: WorkloadFigures;
  w2: WorkloadFigures & { loss: LossCheck };
  overlap: WorkloadFigures & { cold: ColdCost };
  /** a website's 5 000-page crawl (bench/crawl.ts) */
  crawl: CrawlFigures;
  /** a list of 1 000 media URLs (bench/media.ts) */
  media: MediaFigures;
  /** W1's passages embedded against the embeddings twin's rate limit (bench/embeddings.ts) */
  embeddings: EmbeddingsFigures;
  /** webhook delivery throughput (bench/webhooks.ts) */
  webhooks: WebhookFigures;
  ratios: Record<string, number>;
  targets: Target[];
  totalS: number;
}

export interface LossCheck {
  expectedVideos: number;
  videoRows: number;
  expectedTranscripts: number;
  transcriptRows: number;
  /** items set aside raw with their reason (counted as kept, not lost) */
  quarantinedKept: number;
  /** items neither stored, failed upstream, nor quarantined (processing, landed, retryable) */
  unsettledItems: number;
  noLoss: boolean;
}

/** A cold run's credits as computed from what it did, next to what `/me` says it spent. */
export interface ColdCost {
  sources: number;
  /** credits of the listings, as its sync runs recorded them */
  listingCredits: number;
  batches: number;
  /** the sum over its batches of 1 + the distinct videos in the batch */
  batchCredits: number;
  /** listingCredits + batchCredits */
  computed: number;
  /** usedCredits after - before (/me) */
  spent: number;
  /** videos that more than one of the sources lists */
  videosListedTwice: number;
  /** videos in two batches of the same kind (and language): bought twice */
  videosBoughtTwice: number;
}

const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;
const fmt = (x: number | undefined, digits = 1) => (x === undefined || !Number.isFinite(x) ? 'n/a' : x.toFixed(digits));

export function computeRatios(r: Pick<Results, 'naive' | 'w1' | 'ceiling'>): Record<string, number> {
  return {
    w1VsNaiveVideosPerS: round(r.w1.videosPerS / r.naive.videosPerS),
    w1VsCopyRowsPerS: round(r.w1.rowsPerS / r.ceiling.copy.rowsPerS, 3),
    designFloorVsCopyRowsPerS: round(r.ceiling.designFloor.rowsPerS / r.ceiling.copy.rowsPerS, 3),
    w1VsDesignFloorRowsPerS: round(r.w1.rowsPerS / r.ceiling.designFloor.rowsPerS, 3),
  };
}

const pct = (x: number | undefined) => (x === undefined ? 'n/a' : `${round(x * 100, 1)}%`);

export function judgeTargets(
  r: Pick<
    Results,
    'naive' | 'w1' | 'ceiling' | 'w2' | 'w3' | 'w3Unchanged' | 'overlap' | 'crawl' | 'media' | 'embeddings'
  >,
  ratios: Record<string, number>,
  w3Bound: { listings: number; batchCredits: number },
): Target[] {
  const t: Target[] = [];
  t.push({
    name: `W1 videos/s >= ${TARGETS.w1VsNaiveVideosPerS}x naive`,
    met: r.w1.ok && ratios.w1VsNaiveVideosPerS! >= TARGETS.w1VsNaiveVideosPerS,
    detail: `${r.w1.videosPerS} vs ${r.naive.videosPerS} videos/s = ${ratios.w1VsNaiveVideosPerS}x`,
  });
  t.push({
    name: `W1 rows/s >= ${pct(TARGETS.w1VsCopyCeilingRowsPerS)} of the COPY ceiling`,
    met: r.w1.ok && ratios.w1VsCopyRowsPerS! >= TARGETS.w1VsCopyCeilingRowsPerS,
    detail:
      `${r.w1.rowsPerS} vs ${r.ceiling.copy.rowsPerS} rows/s (${r.ceiling.copy.method}, this run) = ${pct(ratios.w1VsCopyRowsPerS)}; ` +
      `Postgres alone doing the design's minimum (${r.ceiling.designFloor.method}) reaches ${pct(ratios.designFloorVsCopyRowsPerS)} of it, W1 ${pct(ratios.w1VsDesignFloorRowsPerS)} of that`,
  });
  const rss = [r.w1, r.w2].flatMap((w) =>
    Object.entries(w.peakRssMb).map(([p, mb]) => ({ label: `${w.name} ${p}`, mb })),
  );
  t.push({
    name: `peak RSS <= ${TARGETS.peakRssMb} MB per process in W1 and W2`,
    met: r.w1.ok && r.w2.ok && rss.every((x) => x.mb > 0 && x.mb <= TARGETS.peakRssMb),
    detail: rss.map((x) => `${x.label} ${fmt(x.mb, 0)} MB`).join(', '),
  });
  const crawlRss = Object.entries(r.crawl.workload.peakRssMb);
  t.push({
    name: `crawl: every page stored once or kept raw with its reason, billed 1 + pages, peak RSS <= ${TARGETS.peakRssMb} MB per process`,
    met:
      r.crawl.workload.ok &&
      r.crawl.stored + r.crawl.quarantined === r.crawl.pages &&
      r.crawl.addedEvents === r.crawl.stored &&
      r.crawl.credits === 1 + r.crawl.pages &&
      crawlRss.every(([, mb]) => mb > 0 && mb <= TARGETS.peakRssMb),
    detail:
      `${r.crawl.stored}/${r.crawl.pages} pages stored (${r.crawl.quarantined} kept raw with the reason), ${r.crawl.addedEvents} page.added, ${r.crawl.credits} credits (estimate ${r.crawl.estimate}), ` +
      `${r.crawl.pagesPerS} pages/s, land lag ${r.crawl.landingS} s; ` +
      crawlRss.map(([p, mb]) => `${p} ${fmt(mb, 0)} MB`).join(', '),
  });
  t.push({
    name: `embeddings >= ${pct(EMBED_TARGET_SHARE)} of the twin's rate limit`,
    met: r.embeddings.share >= EMBED_TARGET_SHARE,
    detail:
      `${r.embeddings.textsPerS} texts/s over ${r.embeddings.windowS} s vs ${r.embeddings.limitTextsPerS} texts/s ` +
      `(${r.embeddings.requestsPerMinute} requests/min x ${r.embeddings.batch}) = ${pct(r.embeddings.share)}`,
  });
  const mediaRss = Object.entries(r.media.workload.peakRssMb);
  t.push({
    name: `media: every item stored once with its transcript, billed the published prices, peak RSS <= ${TARGETS.peakRssMb} MB per process`,
    met:
      r.media.workload.ok &&
      r.media.stored === r.media.items &&
      r.media.addedEvents === r.media.items &&
      r.media.transcripts === r.media.videos &&
      r.media.credits === r.media.expectedCredits &&
      mediaRss.every(([, mb]) => mb > 0 && mb <= TARGETS.peakRssMb),
    detail:
      `${r.media.stored}/${r.media.items} items stored, ${r.media.transcripts}/${r.media.videos} transcripts, ${r.media.credits} credits (prices ${r.media.expectedCredits}), ` +
      `${r.media.itemsPerS} items/s, land lag ${r.media.landLagS} s; ` +
      mediaRss.map(([p, mb]) => `${p} ${fmt(mb, 0)} MB`).join(', '),
  });
  t.push({
    name: 'W2 no loss',
    met: r.w2.ok && r.w2.loss.noLoss,
    detail:
      `${r.w2.loss.videoRows}/${r.w2.loss.expectedVideos} videos, ${r.w2.loss.transcriptRows}/${r.w2.loss.expectedTranscripts} transcripts, ` +
      `${r.w2.loss.quarantinedKept} kept raw (quarantined, with reason), ${r.w2.loss.unsettledItems} unsettled items`,
  });
  const runs = [r.w1, r.w2, r.w3];
  const worstLag = Math.max(...runs.map((w) => w.landing.maxLagMs ?? Infinity));
  t.push({
    name: `items land within ${TARGETS.landWithinMs / 1000} s`,
    met: worstLag <= TARGETS.landWithinMs,
    detail: runs.map((w) => `${w.name} ${fmt((w.landing.maxLagMs ?? NaN) / 1000)} s`).join(', '),
  });
  const overBudget = runs.flatMap((w) =>
    w.batches
      .filter((b) => !(b.polls < b.pollBudget))
      .map((b) => `${w.name} ${b.kind} ${b.items} items: ${b.polls} polls, budget ${b.pollBudget}`),
  );
  t.push({
    name: 'polls per batch < 2 log2(duration s) + 10',
    met: overBudget.length === 0,
    detail:
      runs
        .map(
          (w) =>
            `${w.name}: max ${w.pollsPerBatch.max} polls/batch (budget ${fmt(Math.min(...w.batches.map((b) => b.pollBudget)))} for ${fmt(Math.max(...w.batches.map((b) => b.durationS)))} s)`,
        )
        .join('; ') + (overBudget.length ? `; over budget: ${overBudget.slice(0, 3).join('; ')}` : ''),
  });
  const w3Exact = w3Bound.listings + w3Bound.batchCredits;
  t.push({
    name: 'W3 credits = listings + (1 + N) per batch, every new video landed',
    met: r.w3.ok && r.w3.credits === w3Exact && r.w3.newVideosLanded === r.w3.newPublicVideos,
    detail:
      `${r.w3.credits} spent, ${w3Exact} computed (${w3Bound.listings} listings + ${w3Bound.batchCredits} for batches of the new videos); ` +
      `${r.w3.newVideosLanded}/${r.w3.newPublicVideos} new public videos landed`,
  });
  const listings = r.w3Unchanged.apiRequests.byEndpoint['GET /videosite/channel/videos'] ?? 0;
  t.push({
    name: 'unchanged rerun spends only listings',
    met: r.w3Unchanged.ok && r.w3Unchanged.credits === listings,
    detail: `${r.w3Unchanged.credits} spent, ${listings} listings`,
  });
  const c = r.overlap.cold;
  t.push({
    name: 'a cold run of overlapping sources costs the listings + (1 + unique videos) per batch',
    met: r.overlap.ok && c.computed === c.spent && c.videosBoughtTwice === 0,
    detail:
      `${c.sources} sources sharing ${c.videosListedTwice} videos: ${c.listingCredits} listing credits + ${c.batchCredits} for ${c.batches} batches = ${c.computed}; ` +
      `/me says ${c.spent} spent; ${c.videosBoughtTwice} videos bought twice ` +
      `(W1, cold too: ${r.w1.credits} credits for ${r.w1.videos} videos; a batch costs 1 + 1 per video, per kind)`,
  });
  return t;
}

function rssCell(w: WorkloadFigures): string {
  return `${fmt(w.peakRssMb.daemon, 0)} / ${fmt(w.peakRssMb.backfill, 0)}`;
}

function cpuCell(w: WorkloadFigures): string {
  return `${fmt(w.cpuS.daemon)} / ${fmt(w.cpuS.backfill)}`;
}

function lagCell(w: WorkloadFigures): string {
  return w.landing.maxLagMs === undefined ? 'n/a' : fmt(w.landing.maxLagMs / 1000);
}

export function renderTable(r: Results): string {
  const head =
    '| run | wall s | videos | videos/s | rows | rows/s | transcript MB/s | API requests | credits | polls/batch mean (max) | max land lag s | peak RSS MB daemon / backfill | CPU s daemon / backfill |\n' +
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n';
  const w = (x: WorkloadFigures, label: string) =>
    `| ${label}${x.ok ? '' : ' (FAILED)'} | ${fmt(x.wallS)} | ${x.videos} | ${fmt(x.videosPerS)} | ${x.rows.total} | ${fmt(x.rowsPerS, 0)} | ${fmt(x.transcriptMbPerS, 2)} | ${x.apiRequests.total} | ${x.credits} | ${fmt(x.pollsPerBatch.mean)} (${x.pollsPerBatch.max}) | ${lagCell(x)} | ${rssCell(x)} | ${cpuCell(x)} |\n`;
  const n = r.naive;
  let out = head;
  out += `| naive (sample, one by one) | ${fmt(n.wallS)} | ${n.sample} | ${fmt(n.videosPerS, 2)} | ${n.rows.total} | ${fmt(n.rowsPerS, 1)} | ${fmt(n.transcriptMbPerS, 2)} | ${n.apiRequests.total} | ${n.listingCredits + n.videoCredits} | - | - | - | - |\n`;
  out += w(r.w1, 'W1 cold backfill');
  out += w(r.w2, 'W2 one huge batch');
  out += w(r.w3, 'W3 incremental');
  out += w(r.w3Unchanged, 'W3 rerun, unchanged');
  out += w(r.overlap, 'overlap: channel + 2 playlists, cold');
  for (const m of r.ceiling.methods) {
    const best = m === r.ceiling.copy ? ' **(COPY ceiling)**' : '';
    out += `| ceiling: ${m.method}${best} | ${fmt(m.wallS)} | - | - | ${r.ceiling.rows.total} | ${fmt(m.rowsPerS, 0)} | ${fmt(m.transcriptMbPerS, 2)} | 0 | 0 | - | - | - | - |\n`;
  }
  const f = r.ceiling.designFloor;
  out += `| ${f.method} | ${fmt(f.wallS)} | - | - | ${r.ceiling.rows.total} | ${fmt(f.rowsPerS, 0)} | ${fmt(f.transcriptMbPerS, 2)} | 0 | 0 | - | - | - | - |\n`;
  return out;
}

export function renderTargets(targets: Target[]): string {
  return targets.map((t) => `${t.met ? 'MET    ' : 'NOT MET'}  ${t.name}: ${t.detail}`).join('\n') + '\n';
}
