/**
 * The provider's published prices, in credits (UPSTREAM.md, "Credits"): every estimate, the
 * credit guard, `backfill --dry-run` and the simulator price a request here and nowhere else.
 * What a request was really billed comes in its answer's `x-billable-requests` header; these
 * prices stand in where an answer carries none (src/domain/charges.ts).
 */

/** The published price list: credits per unit. */
export const PRICES = {
  /** a batch POST (`/video/batch`, `/transcript/batch`): per request, and per video after expansion */
  batchRequest: 1,
  batchVideo: 1,
  /** a channel's or playlist's video IDs; a channel, playlist or video record */
  listing: 1,
  record: 1,
  /** `/metadata` of a media item of any platform */
  metadata: 1,
  /** a native transcript (`/transcript?mode=native`, `/videosite/transcript`); a 206 `transcript-unavailable` too */
  nativeTranscript: 1,
  /** a generated transcript (`mode=generate`, or `auto` without captions): per started minute of the media */
  generatedPerMinute: 2,
  /** a translation: per started minute of the transcript */
  translationPerMinute: 30,
  /** search: per page of results, `searchPageSize` results a page; with `limit` the API pages and charges each */
  searchPage: 1,
  /** a crawl: per request, and per page crawled */
  crawlRequest: 1,
  crawlPage: 1,
  /** a scrape or a map of one site */
  scrape: 1,
  map: 1,
  /** extraction from a video: per started minute of the media, at least `extractMin` */
  extractPerMinute: 5,
  extractMin: 5,
} as const;

/** Results a search page holds (the API pages by this many; a page is one credit). */
export const SEARCH_PAGE_SIZE = 20;

/** Started minutes of a duration in seconds (what generated transcripts, translations and extractions are priced by). */
export function startedMinutes(durationS: number): number {
  return Math.max(1, Math.ceil(durationS / 60));
}

/** One batch POST of `videos` videos (after a playlist or channel is expanded). */
export function batchCredits(videos: number): number {
  return PRICES.batchRequest + PRICES.batchVideo * videos;
}

/** One generated transcript of media `durationS` seconds long. */
export function generateCredits(durationS: number): number {
  return PRICES.generatedPerMinute * startedMinutes(durationS);
}

/** One translation of a transcript `durationS` seconds long. */
export function translationCredits(durationS: number): number {
  return PRICES.translationPerMinute * startedMinutes(durationS);
}

/** One search request that answers `results` results (a `limit` search is paged for you: each page is charged). */
export function searchCredits(results: number): number {
  return PRICES.searchPage * Math.max(1, Math.ceil(results / SEARCH_PAGE_SIZE));
}

/** One crawl that crawled `pages` pages. */
export function crawlCredits(pages: number): number {
  return PRICES.crawlRequest + PRICES.crawlPage * pages;
}

/** One extraction from media `durationS` seconds long. */
export function extractCredits(durationS: number): number {
  return Math.max(PRICES.extractMin, PRICES.extractPerMinute * startedMinutes(durationS));
}
