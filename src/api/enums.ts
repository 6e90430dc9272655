/**
 * The values of the upstream interface's enums and codes (v1.3.0:
 * `shared/seed/000_84d3d256e7e95224.txt` and `upstream/openapi-v1.json`), as plain constants:
 * src/api/schemas.ts builds its schemas on them and re-exports them. What needs only the values
 * (`status` comparing a batch's upstream status) imports them from here without loading zod's
 * schemas of the whole interface.
 */

/** The `error` values of the Error object. */
export const API_ERROR_CODES = [
  'invalid-request',
  'internal-error',
  'forbidden',
  'unauthorized',
  'upgrade-required',
  'transcript-unavailable',
  'not-found',
  'limit-exceeded',
] as const;

/** `BatchItem.errorCode`: the error codes plus the two item-only states. */
export const ITEM_ERROR_CODES = [...API_ERROR_CODES, 'processing', 'result-unavailable'] as const;

/** `BatchResults.errorCode`: its only value. */
export const BATCH_ERROR_CODES = ['job-expired'] as const;

/** Status of a video batch job and of a transcript job. */
export const JOB_STATUSES = ['queued', 'active', 'completed', 'failed'] as const;

export const CRAWL_STATUSES = ['scraping', 'completed', 'failed', 'cancelled'] as const;

export const SEARCH_ITEM_TYPES = ['video', 'channel', 'playlist'] as const;
/** `Metadata.platform`: the video platform's production identifier and the four social platforms. */
export const METADATA_PLATFORMS = ['youtube', 'tiktok', 'instagram', 'twitter', 'facebook'] as const;
/** `MediaType`: what a `Metadata` describes, and the discriminator of its `media`. */
export const MEDIA_TYPES = ['video', 'image', 'carousel', 'post'] as const;
export const CHANNEL_VIDEO_TYPES = ['all', 'video', 'short', 'live'] as const;
export const TRANSCRIPT_MODES = ['native', 'auto', 'generate'] as const;

/** Search filters (`GET /videosite/search`), each the interface's enum. */
export const SEARCH_UPLOAD_DATES = ['all', 'hour', 'today', 'week', 'month', 'year'] as const;
export const SEARCH_TYPES = ['all', 'video', 'channel', 'playlist', 'movie'] as const;
export const SEARCH_DURATIONS = ['all', 'short', 'medium', 'long'] as const;
export const SEARCH_SORTS = ['relevance', 'rating', 'date', 'views'] as const;
/** `features` is an array, sent as repeated `features=` keys. */
export const SEARCH_FEATURES = [
  'hd',
  'subtitles',
  'creative-commons',
  '3d',
  'live',
  '4k',
  '360',
  'location',
  'hdr',
  'vr180',
] as const;
export type SearchFeature = (typeof SEARCH_FEATURES)[number];
