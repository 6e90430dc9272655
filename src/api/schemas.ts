/**
 * zod schemas for every resource and request of the upstream interface v1.3.0
 * (`shared/seed/000_84d3d256e7e95224.txt`), the gap endpoints of `shared/UPSTREAM.md`, and what
 * the provider's published OpenAPI document (`upstream/openapi-v1.json`) pins beyond them.
 *
 * Field by field as the interface says: "Req: yes" is required, anything else `.optional()`,
 * `T|null` is `.nullable()`. Types are inferred from here and never written twice. The client
 * parses every answer with these, and the simulator builds every answer against them, so the
 * two cannot drift apart.
 *
 * Answer objects keep unknown keys out of the typed value (zod's default strip): an upstream that
 * adds a field breaks nothing. Callers that must keep the answer byte for byte (the poller's raw
 * items) keep the raw JSON beside the parsed value.
 */
import { z } from 'zod';
import {
  API_ERROR_CODES,
  BATCH_ERROR_CODES,
  CHANNEL_VIDEO_TYPES,
  CRAWL_STATUSES,
  ITEM_ERROR_CODES,
  JOB_STATUSES,
  MEDIA_TYPES,
  METADATA_PLATFORMS,
  SEARCH_DURATIONS,
  SEARCH_FEATURES,
  SEARCH_ITEM_TYPES,
  SEARCH_SORTS,
  SEARCH_TYPES,
  SEARCH_UPLOAD_DATES,
  TRANSCRIPT_MODES,
} from './enums.ts';

export * from './enums.ts';

// ---------------------------------------------------------------------------------------------
// Codes and enums

/** Every value list is in src/api/enums.ts; the schemas of the lists that are checked as enums: */
export const ApiErrorCodeSchema = z.enum(API_ERROR_CODES);
export type ApiErrorCode = z.infer<typeof ApiErrorCodeSchema>;
export const ItemErrorCodeSchema = z.enum(ITEM_ERROR_CODES);
export type ItemErrorCode = z.infer<typeof ItemErrorCodeSchema>;
export const BatchErrorCodeSchema = z.enum(BATCH_ERROR_CODES);
export const JobStatusSchema = z.enum(JOB_STATUSES);
export type JobStatus = z.infer<typeof JobStatusSchema>;
export const CrawlStatusSchema = z.enum(CRAWL_STATUSES);
export type CrawlStatus = z.infer<typeof CrawlStatusSchema>;

// ---------------------------------------------------------------------------------------------
// Scalars

/** "string (date-time)": ISO 8601 with a zone (`Z` or an offset). */
export const DateTimeSchema = z.iso.datetime({ offset: true });

/**
 * A value of a published enum, read liberally: one of `known`, or any other string, kept as
 * received (the upstream adds values before a document lists them). The type still names the
 * known values.
 */
function openEnum<const T extends readonly string[]>(known: T) {
  return z.custom<T[number] | (string & {})>((v) => typeof v === 'string', {
    message: `expected a string (known values: ${known.join(', ')})`,
  });
}

/** A JSON object whose keys and values are not pinned (`additionalProperties: {}`). */
const JsonObjectSchema = z.record(z.string(), z.unknown());

// ---------------------------------------------------------------------------------------------
// Resources

/** Error: the body of every error answer (and of the 206 `transcript-unavailable` answer). */
export const ErrorBodySchema = z.object({
  error: ApiErrorCodeSchema,
  message: z.string(),
  details: z.string(),
  documentationUrl: z.string().optional(),
});
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

/** `{id, name}`, both required: the channel of a video or a playlist. */
export const ChannelRefSchema = z.object({ id: z.string(), name: z.string() });
export type ChannelRef = z.infer<typeof ChannelRefSchema>;

export const VideoSchema = z.object({
  id: z.string(),
  title: z.string(),
  description: z.string(),
  /** seconds */
  duration: z.number(),
  channel: ChannelRefSchema,
  tags: z.array(z.string()),
  thumbnail: z.string().optional(),
  uploadDate: DateTimeSchema.nullable().optional(),
  viewCount: z.number().nullable().optional(),
  likeCount: z.number().nullable().optional(),
  transcriptLanguages: z.array(z.string()),
});
export type Video = z.infer<typeof VideoSchema>;

export const PlaylistSchema = z.object({
  id: z.string(),
  title: z.string(),
  /** empty string when the playlist has none */
  description: z.string().optional(),
  videoCount: z.number(),
  viewCount: z.number().optional(),
  lastUpdated: DateTimeSchema.optional(),
  channel: ChannelRefSchema,
});
export type Playlist = z.infer<typeof PlaylistSchema>;

export const ChannelSchema = z.object({
  id: z.string(),
  name: z.string(),
  /** empty string when the channel has none */
  handle: z.string().optional(),
  description: z.string().optional(),
  subscriberCount: z.number().optional(),
  videoCount: z.number().optional(),
  viewCount: z.number().optional(),
  thumbnail: z.string().optional(),
  banner: z.string().optional(),
});
export type Channel = z.infer<typeof ChannelSchema>;

export const VideoIdsSchema = z.object({
  videoIds: z.array(z.string()),
  shortIds: z.array(z.string()),
  liveIds: z.array(z.string()),
});
export type VideoIds = z.infer<typeof VideoIdsSchema>;

export const TranscriptChunkSchema = z.object({
  text: z.string(),
  /** milliseconds */
  offset: z.number(),
  /** milliseconds */
  duration: z.number(),
  lang: z.string().optional(),
});
export type TranscriptChunk = z.infer<typeof TranscriptChunkSchema>;

/** A string (plain text) when the request set `text=true`, otherwise an array of chunks. */
export const TranscriptContentSchema = z.union([z.array(TranscriptChunkSchema), z.string()]);
export type TranscriptContent = z.infer<typeof TranscriptContentSchema>;

export const TranscriptSchema = z.object({
  content: TranscriptContentSchema,
  lang: z.string(),
  availableLangs: z.array(z.string()),
});
export type Transcript = z.infer<typeof TranscriptSchema>;

export const TranslatedTranscriptSchema = z.object({
  content: TranscriptContentSchema,
  lang: z.string(),
});
export type TranslatedTranscript = z.infer<typeof TranslatedTranscriptSchema>;

export const JobIdSchema = z.object({ jobId: z.string().min(1) });
export type JobId = z.infer<typeof JobIdSchema>;

/** Either a Transcript (synchronous answer) or a JobId (asynchronous answer). */
export const TranscriptOrJobIdSchema = z.union([TranscriptSchema, JobIdSchema]);
export type TranscriptOrJobId = z.infer<typeof TranscriptOrJobIdSchema>;

export const JobResultSchema = z.object({
  status: JobStatusSchema,
  error: ErrorBodySchema.nullable().optional(),
  content: TranscriptContentSchema.optional(),
  lang: z.string().optional(),
  availableLangs: z.array(z.string()).optional(),
});
export type JobResult = z.infer<typeof JobResultSchema>;

export const BatchItemSchema = z.object({
  videoId: z.string(),
  transcript: TranscriptSchema.nullable().optional(),
  video: VideoSchema.nullable().optional(),
  // Read liberally: the upstream adds codes before any interface document lists them; an
  // unknown one is recorded as received (src/domain/items.ts gives each code its policy).
  errorCode: z.string().nullable().optional(),
});
export type BatchItem = z.infer<typeof BatchItemSchema>;

export const BatchStatsSchema = z.object({
  total: z.number(),
  succeeded: z.number(),
  failed: z.number(),
});
export type BatchStats = z.infer<typeof BatchStatsSchema>;

/** Everything of BatchResults but `results`: what a streaming reader sees around the items. */
export const BatchHeadSchema = z.object({
  status: JobStatusSchema,
  errorCode: BatchErrorCodeSchema.optional(),
  stats: BatchStatsSchema,
  completedAt: DateTimeSchema.nullable().optional(),
});
export type BatchHead = z.infer<typeof BatchHeadSchema>;

export const BatchResultsSchema = BatchHeadSchema.extend({
  results: z.array(BatchItemSchema),
});
export type BatchResults = z.infer<typeof BatchResultsSchema>;

export const SearchItemSchema = z.object({
  type: z.enum(SEARCH_ITEM_TYPES),
  id: z.string(),
  title: z.string(),
  description: z.string().optional(),
  thumbnail: z.string().optional(),
  /** seconds, videos only */
  duration: z.number().optional(),
  viewCount: z.number().optional(),
  uploadDate: DateTimeSchema.optional(),
  channel: z.object({ id: z.string(), name: z.string(), thumbnail: z.string().optional() }).optional(),
  handle: z.string().optional(),
  videoCount: z.number().optional(),
});
export type SearchItem = z.infer<typeof SearchItemSchema>;

export const SearchResultsSchema = z.object({
  query: z.string(),
  results: z.array(SearchItemSchema),
  totalResults: z.number().optional(),
  /** only returned when no `limit` was given */
  nextPageToken: z.string().optional(),
});
export type SearchResults = z.infer<typeof SearchResultsSchema>;

export const ScrapeSchema = z.object({
  url: z.string(),
  content: z.string(),
  name: z.string().optional(),
  description: z.string().optional(),
  ogUrl: z.string().optional(),
  countCharacters: z.number(),
  urls: z.array(z.string()),
});
export type Scrape = z.infer<typeof ScrapeSchema>;

export const SiteMapSchema = z.object({ urls: z.array(z.string()) });
export type SiteMap = z.infer<typeof SiteMapSchema>;

export const CrawledPageSchema = z.object({
  url: z.string(),
  content: z.string(),
  name: z.string().optional(),
  description: z.string().optional(),
  ogUrl: z.string().optional(),
  countCharacters: z.number(),
});
export type CrawledPage = z.infer<typeof CrawledPageSchema>;

export const CrawlJobSchema = z.object({
  status: CrawlStatusSchema,
  /** only present when status is `completed` */
  pages: z.array(CrawledPageSchema).optional(),
  /** the same endpoint with the next `skip`; only present when more pages are available */
  next: z.string().optional(),
});
export type CrawlJob = z.infer<typeof CrawlJobSchema>;

/** `media` of a video: its length and best thumbnail. */
export const VideoMediaSchema = z.object({
  type: z.literal('video'),
  /** seconds */
  duration: z.number().optional(),
  thumbnailUrl: z.string().optional(),
});
export const ImageMediaSchema = z.object({ type: z.literal('image'), url: z.string() });
/**
 * A `media` (or carousel item) of a type this interface version does not list, kept with all its
 * fields; a listed type must have its listed shape.
 */
const OtherMediaSchema = z.looseObject({
  type: z
    .string()
    .refine((t) => !(MEDIA_TYPES as readonly string[]).includes(t), 'a listed media type without its listed fields'),
});
export const CarouselMediaSchema = z.object({
  type: z.literal('carousel'),
  items: z.array(z.union([VideoMediaSchema, ImageMediaSchema, OtherMediaSchema])),
});
export const PostMediaSchema = z.object({ type: z.literal('post') });
/** `Metadata.media`, by `type`. */
export const MediaSchema = z.union([
  VideoMediaSchema,
  ImageMediaSchema,
  CarouselMediaSchema,
  PostMediaSchema,
  OtherMediaSchema,
]);
export type Media = z.infer<typeof MediaSchema>;

/** Metadata of a media URL of any supported platform (`GET /metadata`). */
export const MetadataSchema = z.object({
  platform: openEnum(METADATA_PLATFORMS),
  type: openEnum(MEDIA_TYPES),
  id: z.string(),
  url: z.string().optional(),
  title: z.string().nullable().optional(),
  description: z.string().nullable().optional(),
  author: z
    .object({
      username: z.string().optional(),
      displayName: z.string(),
      avatarUrl: z.string().optional(),
      verified: z.boolean().optional(),
    })
    .optional(),
  /** null: the platform does not have or show that count */
  stats: z
    .object({
      views: z.number().nullable().optional(),
      likes: z.number().nullable(),
      comments: z.number().nullable(),
      shares: z.number().nullable(),
    })
    .optional(),
  media: MediaSchema.optional(),
  tags: z.array(z.string()).optional(),
  /** ISO 8601 as the platform gives it (not checked: a platform's odd date must not fail the answer) */
  createdAt: z.string().optional(),
  /** platform-specific fields */
  additionalData: JsonObjectSchema.optional(),
});
export type Metadata = z.infer<typeof MetadataSchema>;

/** A job of `POST /extract`, read at `GET /extract/{jobId}`. */
export const ExtractJobResultSchema = z.object({
  status: openEnum(JOB_STATUSES),
  error: ErrorBodySchema.nullable().optional(),
  /** the extracted data, shaped by the request's schema (or by `schema` below) */
  data: JsonObjectSchema.optional(),
  /** the JSON Schema the upstream wrote itself; only when the request gave none */
  schema: JsonObjectSchema.optional(),
});
export type ExtractJobResult = z.infer<typeof ExtractJobResultSchema>;

export const AccountSchema = z.object({
  organizationId: z.string(),
  plan: z.string(),
  maxCredits: z.number(),
  usedCredits: z.number(),
});
export type Account = z.infer<typeof AccountSchema>;

// ---------------------------------------------------------------------------------------------
// Requests. The client validates with these before sending; the simulator validates incoming
// requests with the same ones, so query values may arrive as strings (numbers and booleans are
// coerced from their text form, nothing else is).

/** Batch `limit` and ID-listing `limit`: 1..5000. */
export const LIMIT_MIN = 1;
export const LIMIT_MAX = 5000;
/** Transcript chunk size in characters, only when `text` is false. */
export const CHUNK_SIZE_MIN = 50;
export const CHUNK_SIZE_MAX = 10_000;
/** `limit` defaults that bite (UPSTREAM.md): a playlist/channel batch without `limit` gets 10. */
export const BATCH_LIMIT_DEFAULT = 10;
export const CHANNEL_VIDEOS_LIMIT_DEFAULT = 30;
export const PLAYLIST_VIDEOS_LIMIT_DEFAULT = 100;
export const CRAWL_LIMIT_DEFAULT = 100;

const intFromQuery = z.union([
  z.number(),
  z
    .string()
    .regex(/^-?\d+$/, 'expected an integer')
    .transform((s) => Number(s)),
]);
const int = (min: number, max: number) => intFromQuery.pipe(z.number().int().min(min).max(max));
const boolFromQuery = z.union([z.boolean(), z.enum(['true', 'false']).transform((s) => s === 'true')]);
const nonEmpty = z.string().trim().min(1, 'must not be empty');
/**
 * A parameter the published document declares `format: uri`: an absolute URL, so a bare ID, a
 * relative path or a blank is refused here instead of upstream.
 */
const uri = nonEmpty
  .pipe(z.url({ message: 'expected an absolute URL' }))
  .refine((s) => !/\s/.test(s), 'expected a URL without blanks (percent-encode them)');

export const LimitSchema = int(LIMIT_MIN, LIMIT_MAX);
export const ChunkSizeSchema = int(CHUNK_SIZE_MIN, CHUNK_SIZE_MAX);

/** Exactly one of `videoIds` / `playlistId` / `channelId`; `limit` only with the last two. */
function exactlyOneSource<T extends { videoIds?: unknown; playlistId?: unknown; channelId?: unknown; limit?: unknown }>(
  body: T,
  ctx: z.core.$RefinementCtx<T>,
): void {
  const given = (['videoIds', 'playlistId', 'channelId'] as const).filter((k) => body[k] !== undefined);
  if (given.length !== 1) {
    ctx.addIssue({
      code: 'custom',
      path: given.length === 0 ? ['videoIds'] : [given[1]!],
      message:
        given.length === 0
          ? 'exactly one of videoIds, playlistId, channelId is required; none was given'
          : `exactly one of videoIds, playlistId, channelId is allowed; got ${given.join(', ')}`,
    });
  }
  if (body.videoIds !== undefined && body.limit !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['limit'],
      message: 'limit applies only with playlistId or channelId',
    });
  }
}

const batchSourceShape = {
  videoIds: z.array(nonEmpty).min(1, 'must hold at least one video').optional(),
  playlistId: nonEmpty.optional(),
  channelId: nonEmpty.optional(),
  limit: LimitSchema.optional(),
};

/** Body of `POST /videosite/video/batch`. */
export const VideoBatchRequestSchema = z.object(batchSourceShape).strict().superRefine(exactlyOneSource);
export type VideoBatchRequest = z.infer<typeof VideoBatchRequestSchema>;

/** Body of `POST /videosite/transcript/batch`. */
export const TranscriptBatchRequestSchema = z
  .object({ ...batchSourceShape, lang: nonEmpty.optional(), text: boolFromQuery.optional() })
  .strict()
  .superRefine(exactlyOneSource);
export type TranscriptBatchRequest = z.infer<typeof TranscriptBatchRequestSchema>;

/** `{id}` for the single-resource GETs (video, playlist, channel). */
export const IdQuerySchema = z.object({ id: nonEmpty });
export type IdQuery = z.infer<typeof IdQuerySchema>;

export const PlaylistVideosQuerySchema = z.object({ id: nonEmpty, limit: LimitSchema.optional() });
export type PlaylistVideosQuery = z.infer<typeof PlaylistVideosQuerySchema>;

export const ChannelVideosQuerySchema = z.object({
  id: nonEmpty,
  limit: LimitSchema.optional(),
  type: z.enum(CHANNEL_VIDEO_TYPES).optional(),
});
export type ChannelVideosQuery = z.infer<typeof ChannelVideosQuerySchema>;

function chunkSizeOnlyWithoutText(
  q: { text?: boolean | undefined; chunkSize?: number | undefined },
  ctx: z.core.$RefinementCtx<{ text?: boolean | undefined; chunkSize?: number | undefined }>,
): void {
  if (q.text === true && q.chunkSize !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['chunkSize'],
      message: 'chunkSize applies only when text is false',
    });
  }
}

function urlOrVideoId(
  q: { url?: string | undefined; videoId?: string | undefined },
  ctx: z.core.$RefinementCtx<{ url?: string | undefined; videoId?: string | undefined }>,
): void {
  if ((q.url === undefined) === (q.videoId === undefined)) {
    ctx.addIssue({
      code: 'custom',
      path: [q.url === undefined ? 'url' : 'videoId'],
      message: 'exactly one of url, videoId is required',
    });
  }
}

const transcriptShape = {
  url: uri.optional(),
  videoId: nonEmpty.optional(),
  lang: nonEmpty.optional(),
  text: boolFromQuery.optional(),
  chunkSize: ChunkSizeSchema.optional(),
};

/** Query of `GET /videosite/transcript` (deprecated). */
export const TranscriptQuerySchema = z
  .object(transcriptShape)
  .superRefine(urlOrVideoId)
  .superRefine(chunkSizeOnlyWithoutText);
export type TranscriptQuery = z.infer<typeof TranscriptQuerySchema>;

/** Query of `GET /videosite/transcript/translate`: `lang` is the target and required. */
export const TranslateQuerySchema = z
  .object({ ...transcriptShape, lang: nonEmpty })
  .superRefine(urlOrVideoId)
  .superRefine(chunkSizeOnlyWithoutText);
export type TranslateQuery = z.infer<typeof TranslateQuerySchema>;

const mediaTranscriptShape = {
  url: uri,
  lang: nonEmpty.optional(),
  text: boolFromQuery.optional(),
  chunkSize: ChunkSizeSchema.optional(),
};

/**
 * Query of `GET /transcript` (any media URL) as the interface takes it: a request without `mode`
 * means `auto`, which may buy a generated transcript. The simulator reads requests with this.
 */
export const MediaTranscriptQuerySchema = z
  .object({ ...mediaTranscriptShape, mode: z.enum(TRANSCRIPT_MODES).optional() })
  .superRefine(chunkSizeOnlyWithoutText);

/** The `mode` this client sends when the caller names none: existing captions only, never a generation. */
export const MEDIA_TRANSCRIPT_MODE_DEFAULT = 'native' satisfies (typeof TRANSCRIPT_MODES)[number];

/**
 * Query of `GET /transcript` as this client sends it: `mode` always on the wire (the interface's
 * own default, `auto`, can buy a generated transcript), `native` unless the caller asks for more.
 */
export const MediaTranscriptRequestSchema = z
  .object({ ...mediaTranscriptShape, mode: z.enum(TRANSCRIPT_MODES).default(MEDIA_TRANSCRIPT_MODE_DEFAULT) })
  .superRefine(chunkSizeOnlyWithoutText);
/** What a caller passes (`mode` optional: the client sends `native` when it is left out). */
export type MediaTranscriptQuery = z.infer<typeof MediaTranscriptQuerySchema>;

/** Query of `GET /web/scrape` and `GET /web/map`. */
export const WebPageQuerySchema = z.object({
  url: nonEmpty,
  noLinks: boolFromQuery.optional(),
  lang: nonEmpty.optional(),
});
export type WebPageQuery = z.infer<typeof WebPageQuerySchema>;

/** Body of `POST /web/crawl`. */
export const CrawlRequestSchema = z.object({ url: uri, limit: LimitSchema.optional() }).strict();
export type CrawlRequest = z.infer<typeof CrawlRequestSchema>;

export const CrawlQuerySchema = z.object({ skip: intFromQuery.pipe(z.number().int().min(0)).optional() });
export type CrawlQuery = z.infer<typeof CrawlQuerySchema>;

/**
 * Query of `GET /videosite/search`. `features` is a list on the wire (repeated keys); a key given
 * once arrives as one string, read as a list of one.
 */
export const SearchQuerySchema = z.object({
  query: nonEmpty,
  uploadDate: z.enum(SEARCH_UPLOAD_DATES).optional(),
  type: z.enum(SEARCH_TYPES).optional(),
  duration: z.enum(SEARCH_DURATIONS).optional(),
  sortBy: z.enum(SEARCH_SORTS).optional(),
  features: z.preprocess((v) => (typeof v === 'string' ? [v] : v), z.array(z.enum(SEARCH_FEATURES)).min(1)).optional(),
  limit: LimitSchema.optional(),
  nextPageToken: nonEmpty.optional(),
});
export type SearchQuery = z.infer<typeof SearchQuerySchema>;

/** Query of `GET /metadata`: the URL of a media item of any supported platform. */
export const MetadataQuerySchema = z.object({ url: uri });
export type MetadataQuery = z.infer<typeof MetadataQuerySchema>;

/**
 * Body of `POST /extract`: what to extract from the video at `url`, as a `prompt`, a JSON
 * Schema `schema` the data must follow, or both; at least one of the two.
 */
export const ExtractRequestSchema = z
  .object({ url: uri, prompt: nonEmpty.optional(), schema: JsonObjectSchema.optional() })
  .strict()
  .superRefine((b, ctx) => {
    if (b.prompt === undefined && b.schema === undefined) {
      ctx.addIssue({ code: 'custom', path: ['prompt'], message: 'at least one of prompt, schema is required' });
    }
  });
export type ExtractRequest = z.infer<typeof ExtractRequestSchema>;

/** A job ID in a path: non-empty, no slash. */
export const JobIdParamSchema = z.string().regex(/^[^/\s]+$/, 'expected a job ID (no slash, no blank)');
