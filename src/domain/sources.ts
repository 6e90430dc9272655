/**
 * Source kinds and their options: what a user can register, once. Behaviour that differs by kind
 * lives in the adapters of src/pipeline/kinds/ (a `Record<SourceKind, SourceAdapter>`, so a kind
 * added here fails to compile until it has one).
 */
import { PRICES } from './prices.ts';

/** `playlist`, `channel`: listed through the API; `videos`: IDs a person gave; `search`: a saved search. */
export const SOURCE_KINDS = ['playlist', 'channel', 'videos', 'search'] as const;
export type SourceKind = (typeof SOURCE_KINDS)[number];

/**
 * `--include` of a channel or playlist source: listed short and live IDs are submitted too (a
 * channel/playlist batch skips them; a `videoIds` batch does not).
 */
export const SOURCE_INCLUDES = ['shorts', 'live'] as const;
export type SourceInclude = (typeof SOURCE_INCLUDES)[number];

/** The search endpoint's filters a `search` source keeps (sent as given; the upstream judges them). */
export const SEARCH_FILTERS = ['uploadDate', 'type', 'duration', 'sortBy', 'features'] as const;
export type SearchFilter = (typeof SEARCH_FILTERS)[number];

/** Values the public documentation lists for each filter; the CLI names them when one is wrong. */
export const SEARCH_FILTER_VALUES: Record<SearchFilter, readonly string[]> = {
  uploadDate: ['hour', 'today', 'week', 'month', 'year'],
  type: ['video'],
  duration: ['short', 'medium', 'long'],
  sortBy: ['relevance', 'rating', 'date', 'views'],
  features: ['hd', 'subtitles', 'creative_commons', '3d', 'live', '4k', '360', 'location', 'hdr', 'vr180'],
};

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
 * Where a stored transcript came from: the video's captions (a transcript batch) or generated
 * from its audio (a `GET /transcript?mode=generate` job, `--generate-missing`).
 */
export const TRANSCRIPT_ORIGINS = ['captions', 'generated'] as const;
export type TranscriptOrigin = (typeof TRANSCRIPT_ORIGINS)[number];

/**
 * What a `batches` row stands for: a batch job (`POST /videosite/*\/batch`, read at
 * `GET /videosite/batch/{jobId}`) or a transcript job (`GET /transcript`, read at
 * `GET /transcript/{jobId}`), which holds one video and is polled the same way.
 */
export const BATCH_MODES = ['batch', 'generate'] as const;
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
};
