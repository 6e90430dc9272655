/**
 * Source kinds and their options: what a user can register, once. Behaviour that differs by kind
 * lives in the adapters of src/pipeline/kinds/ (a `Record<SourceKind, SourceAdapter>`, so a kind
 * added here fails to compile until it has one).
 */
import { PRICES } from './prices.ts';
import {
  SEARCH_DURATIONS,
  SEARCH_FEATURES,
  SEARCH_SORTS,
  SEARCH_TYPES,
  SEARCH_UPLOAD_DATES,
  type SearchFeature,
} from '../api/enums.ts';

/**
 * `playlist`, `channel`: listed through the API; `videos`: IDs a person gave; `search`: a saved
 * search; `website`: a site crawled (`POST /web/crawl`); `pages`: web pages a person gave, scraped;
 * `media`: media URLs of any platform a person gave (`/metadata`, then `/transcript`).
 */
export const SOURCE_KINDS = ['playlist', 'channel', 'videos', 'search', 'website', 'pages', 'media'] as const;
export type SourceKind = (typeof SOURCE_KINDS)[number];

/**
 * `--include` of a channel or playlist source: listed short and live IDs are submitted too (a
 * channel/playlist batch skips them; a `videoIds` batch does not).
 */
export const SOURCE_INCLUDES = ['shorts', 'live'] as const;
export type SourceInclude = (typeof SOURCE_INCLUDES)[number];

/** The search endpoint's filters a `search` source keeps (checked when it is added, sent as kept). */
export const SEARCH_FILTERS = ['uploadDate', 'type', 'duration', 'sortBy', 'features'] as const;
export type SearchFilter = (typeof SEARCH_FILTERS)[number];

/** Values the interface takes for each filter; `sources add search` names them when one is wrong. */
export const SEARCH_FILTER_VALUES: Readonly<Record<SearchFilter, readonly string[]>> = {
  uploadDate: SEARCH_UPLOAD_DATES,
  type: SEARCH_TYPES,
  duration: SEARCH_DURATIONS,
  sortBy: SEARCH_SORTS,
  features: SEARCH_FEATURES,
};

/** A search source keeps videos: it always searches with this `type` (the only one `--type` takes). */
export const SEARCH_SOURCE_TYPE = 'video' satisfies (typeof SEARCH_TYPES)[number];

/**
 * Spellings taken for a feature besides the interface's own, so that a search source stored with
 * one keeps syncing and a person who types one is not refused over a dash.
 */
export const SEARCH_FEATURE_ALIASES: Readonly<Record<string, SearchFeature>> = { creative_commons: 'creative-commons' };

/** A search source's filters: one value each, `features` a list. */
export type SearchFilterValues = Partial<Record<Exclude<SearchFilter, 'features'>, string>> & { features?: string[] };

/**
 * Features as given or stored (a list, or one string as rows of an older release hold), aliases
 * replaced, each once, in the interface's order; values it does not list are kept, last, for the
 * caller to refuse by name. Undefined when there are none.
 */
export function normalizeFeatures(value: unknown): string[] | undefined {
  const given = (Array.isArray(value) ? value : typeof value === 'string' ? [value] : []).filter(
    (v): v is string => typeof v === 'string',
  );
  const named = new Set(given.map((v) => SEARCH_FEATURE_ALIASES[v] ?? v));
  if (named.size === 0) return undefined;
  const known = (SEARCH_FEATURES as readonly string[]).filter((f) => named.has(f));
  return [...known, ...[...named].filter((f) => !known.includes(f))];
}

/** `--limit` of a search source when not given: results kept per sync. */
export const SEARCH_LIMIT_DEFAULT = 100;

/**
 * Longest saved-search query, in characters (the interface sets no maximum). Every page request
 * carries the query in its URL, percent-encoded, and its page token may carry it again: a query
 * much longer than a person types would make every sync's request line too long for the servers
 * and proxies on the way, so it is refused when the source is added rather than at each sync.
 */
export const SEARCH_SOURCE_QUERY_MAX_CHARS = 256;

/**
 * Where a stored transcript came from: the video's captions (a transcript batch), generated
 * from its audio (a `GET /transcript?mode=generate` job, `--generate-missing`), or translated
 * from another stored transcript of the video (`GET /videosite/transcript/translate`,
 * `--translate`; the row says the language it was translated from).
 */
export const TRANSCRIPT_ORIGINS = ['captions', 'generated', 'translation'] as const;
export type TranscriptOrigin = (typeof TRANSCRIPT_ORIGINS)[number];

/**
 * What became of one translation (a `translations` row): `sending` (recorded before the request,
 * left so by a process that died mid-request), `stored`, `failed` (refused for the video: gone,
 * private, no transcript; nothing spent, not asked again), `unknown` (the answer was lost after
 * the request may have been billed: not asked again automatically), `refused-budget` (the
 * source's `--max-translate-minutes` left no room: nothing sent, asked again when it has room),
 * `released` (an `unknown` one, or a stale `sending` one, a person released with `replay --lost
 * --yes` for one new purchase; kept, since it may have been billed).
 */
export const TRANSLATION_STATES = ['sending', 'stored', 'failed', 'unknown', 'refused-budget', 'released'] as const;
export type TranslationState = (typeof TRANSLATION_STATES)[number];

/**
 * How long a translation may stay `sending` before it is taken as `unknown` (ms): its process died
 * during the request, which may have been billed. Well past the longest request the client makes
 * (API_REQUEST_TIMEOUT_MS, 2 min by default; the translate request is not retried). Such a row
 * still counts as bought: only `replay --lost --yes` releases it for one new purchase.
 */
export const TRANSLATION_SENDING_STALE_MS = 15 * 60_000;

/**
 * The states in which a translation of a video into a language, from one content of its source
 * transcript, counts as bought (or possibly bought): no source asks for it again.
 */
export const TRANSLATION_BOUGHT_STATES = [
  'sending',
  'stored',
  'failed',
  'unknown',
] as const satisfies readonly TranslationState[];

/**
 * What a `batches` row stands for: a batch job (`POST /videosite/*\/batch`, read at
 * `GET /videosite/batch/{jobId}`) or a transcript job (`GET /transcript`, read at
 * `GET /transcript/{jobId}`), which holds one video (or, kind `media`, one media item) and is
 * polled the same way; `crawl`, `scrape`: web pages; `media`: a sync's `/metadata` reads of a
 * `media` source (no upstream job: `job_id` is `media:<sync run>`).
 */
export const BATCH_MODES = ['batch', 'generate', 'crawl', 'scrape', 'media'] as const;
export type BatchMode = (typeof BATCH_MODES)[number];

/** A channel's or playlist's metadata record is re-fetched (1 credit) when older than this. */
export const SOURCE_METADATA_REFRESH_MS = 24 * 3_600_000;

/**
 * What a sync pays before any batch, per kind (src/domain/prices.ts): `listing` credits for the
 * ID listing, or that much per page
 * (`perPage`: a search follows its pages, and how many only the search knows), plus 1 to re-read
 * the source's own record (`record`) when it is older than SOURCE_METADATA_REFRESH_MS.
 */
export const LISTING_PRICE: Readonly<
  Record<SourceKind, { listing: number; perPage: boolean; record: 'channels' | 'playlists' | null }>
> = {
  channel: { listing: PRICES.listing, perPage: false, record: 'channels' },
  playlist: { listing: PRICES.listing, perPage: false, record: 'playlists' },
  videos: { listing: 0, perPage: false, record: null },
  search: { listing: PRICES.searchPage, perPage: true, record: null },
  // a web source lists nothing: its crawl or its scrapes are its purchase (src/domain/pages.ts)
  website: { listing: 0, perPage: false, record: null },
  pages: { listing: 0, perPage: false, record: null },
  // a media list lists nothing: its video-platform URLs are a `videos` list, the rest read one by one (src/domain/media.ts)
  media: { listing: 0, perPage: false, record: null },
};
