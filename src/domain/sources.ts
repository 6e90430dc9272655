/**
 * Source kinds and their options: what a user can register, once. Behaviour that differs by kind
 * lives in the adapters of src/pipeline/kinds/ (a `Record<SourceKind, SourceAdapter>`, so a kind
 * added here fails to compile until it has one).
 */

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

/** A generated transcript costs this many credits per started minute of the media (UPSTREAM.md). */
export const GENERATE_CREDITS_PER_MINUTE = 2;

/** Started minutes of a duration in seconds (what a generated transcript is priced by). */
export function startedMinutes(durationS: number): number {
  return Math.max(1, Math.ceil(durationS / 60));
}

/** Credits of one generated transcript of a video of `durationS` seconds. */
export function generateCredits(durationS: number): number {
  return GENERATE_CREDITS_PER_MINUTE * startedMinutes(durationS);
}

/** An extract job (`POST /extract`) costs this many credits per started minute of the media (UPSTREAM.md). */
export const EXTRACT_CREDITS_PER_MINUTE = 5;

/** Credits of one extract job of media of `durationS` seconds: at least one minute's worth. */
export function extractCredits(durationS: number): number {
  return EXTRACT_CREDITS_PER_MINUTE * startedMinutes(durationS);
}

/** A channel's or playlist's metadata record is re-fetched (1 credit) when older than this. */
export const SOURCE_METADATA_REFRESH_MS = 24 * 3_600_000;

/**
 * What a sync pays before any batch, per kind (UPSTREAM.md: every answered request but `/me` and
 * polls costs 1 credit): `listing` credits for the ID listing, or that much per page
 * (`perPage`: a search follows its pages, and how many only the search knows), plus 1 to re-read
 * the source's own record (`record`) when it is older than SOURCE_METADATA_REFRESH_MS.
 */
export const LISTING_PRICE: Readonly<
  Record<SourceKind, { listing: number; perPage: boolean; record: 'channels' | 'playlists' | null }>
> = {
  channel: { listing: 1, perPage: false, record: 'channels' },
  playlist: { listing: 1, perPage: false, record: 'playlists' },
  videos: { listing: 0, perPage: false, record: null },
  search: { listing: 1, perPage: true, record: null },
};
