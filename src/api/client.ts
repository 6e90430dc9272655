/**
 * The typed client of the upstream interface v1.3.0: one method per endpoint (the twelve of the
 * interface, the seven gap endpoints of UPSTREAM.md and the extract jobs of the published
 * document `upstream/openapi-v1.json`, deprecated ones included).
 *
 * Every method validates its parameters with the request schema before anything is sent (a
 * violation is a local `invalid-request` naming the field), and parses the answer with the
 * answer schema (a violation is `schema-mismatch` with the failing path and the raw body). GETs
 * are retried; the POSTs that create jobs (and cost credits) follow the stricter rule of
 * `retry.ts`. Errors are ApiError subclasses from `errors.ts`.
 */
import type { Readable } from 'node:stream';
import { Pool, type Dispatcher } from 'undici';
import { z } from 'zod';
import {
  API_BODY_TIMEOUT_MS,
  API_CONNECT_TIMEOUT_MS,
  API_HEADERS_TIMEOUT_MS,
  API_MAX_BODY_BYTES,
  API_REQUEST_TIMEOUT_MS,
  API_RETRY_AFTER_MAX_MS,
  API_RETRY_BASE_DELAY_MS,
  API_RETRY_MAX_ATTEMPTS,
  API_RETRY_MAX_DELAY_MS,
  DEFAULT_PLATFORM,
} from './defaults.ts';
import { silentLogger, type Logger } from '../log.ts';
import { invalidRequestFromZod, SchemaMismatchError } from './errors.ts';
import {
  createHttp,
  type Http,
  type IncomingHttpHeaders,
  type QueryValue,
  type RequestEvent,
  type RequestSpec,
} from './http.ts';
import { keyFingerprint } from './key-fingerprint.ts';
import { sleepMs, type RetryPolicy } from './retry.ts';
import {
  AccountSchema,
  BatchResultsSchema,
  ChannelSchema,
  ChannelVideosQuerySchema,
  CrawlJobSchema,
  CrawlQuerySchema,
  CrawlRequestSchema,
  ExtractJobResultSchema,
  ExtractRequestSchema,
  IdQuerySchema,
  JobIdParamSchema,
  JobIdSchema,
  JobResultSchema,
  MediaTranscriptRequestSchema,
  MetadataQuerySchema,
  MetadataSchema,
  PlaylistSchema,
  PlaylistVideosQuerySchema,
  ScrapeSchema,
  SearchQuerySchema,
  SearchResultsSchema,
  SiteMapSchema,
  TranscriptBatchRequestSchema,
  TranscriptOrJobIdSchema,
  TranscriptQuerySchema,
  TranscriptSchema,
  TranslatedTranscriptSchema,
  TranslateQuerySchema,
  VideoBatchRequestSchema,
  VideoIdsSchema,
  VideoSchema,
  WebPageQuerySchema,
  type Account,
  type BatchResults,
  type Channel,
  type ChannelVideosQuery,
  type CrawledPage,
  type CrawlJob,
  type CrawlRequest,
  type ExtractJobResult,
  type ExtractRequest,
  type IdQuery,
  type JobId,
  type JobResult,
  type MediaTranscriptQuery,
  type Metadata,
  type MetadataQuery,
  type Playlist,
  type PlaylistVideosQuery,
  type Scrape,
  type SearchQuery,
  type SearchResults,
  type SiteMap,
  type Transcript,
  type TranscriptBatchRequest,
  type TranscriptQuery,
  type TranslatedTranscript,
  type TranslateQuery,
  type Video,
  type VideoBatchRequest,
  type VideoIds,
  type WebPageQuery,
} from './schemas.ts';

export type { RequestEvent } from './http.ts';
export type { RetryPolicy } from './retry.ts';

/** How long an idle keep-alive connection of the owned pool stays open, in milliseconds. */
export const API_KEEP_ALIVE_TIMEOUT_MS = 10_000;
/** Most connections the owned pool opens to the upstream at once. */
export const API_POOL_CONNECTIONS = 16;

export interface ApiClientOptions {
  /** base URL ending in `/v1`, e.g. `https://api.example.com/v1` (no default) */
  baseUrl: string;
  /** sent as `x-api-key`; never logged, never part of an error (no default) */
  apiKey: string;
  /** the platform path segment; default `videosite` */
  platform?: string | undefined;
  /** TCP/TLS connect timeout of the owned pool, in milliseconds; default 10 000 */
  connectTimeoutMs?: number | undefined;
  /** time to wait for an answer's head, in milliseconds; default 30 000 */
  headersTimeoutMs?: number | undefined;
  /** longest silence while a body arrives, in milliseconds; default 60 000 */
  bodyTimeoutMs?: number | undefined;
  /**
   * the most one attempt may take from sending to its whole answer, in milliseconds: a
   * trickling answer ends here (`openBatch` streams: its reader bounds the body); default 120 000
   */
  requestTimeoutMs?: number | undefined;
  /** retries; default 5 attempts, 500 ms base, 30 000 ms cap */
  retry?: Partial<RetryPolicy> | undefined;
  /**
   * longest `Retry-After` honoured, in milliseconds; a longer one counts as this everywhere
   * (errors, `onRequest`, retries) and is logged as `retry-after capped`; default 3 600 000
   */
  retryAfterMaxMs?: number | undefined;
  /**
   * largest answer body read, in bytes (not `openBatch`, which streams); a larger answer is a
   * SchemaMismatchError, read no further than this; default 16 MiB
   */
  maxBodyBytes?: number | undefined;
  /** default: a silent logger */
  log?: Logger | undefined;
  /**
   * undici dispatcher to send through (tests, a shared Agent); default: a keep-alive Pool to the
   * base URL's origin, owned and closed by the client. A given dispatcher is not closed.
   */
  dispatcher?: Dispatcher | undefined;
  /** wait between attempts; default a timer that ends early when the signal aborts */
  sleep?: ((ms: number, signal?: AbortSignal) => Promise<void>) | undefined;
  /** uniform [0, 1) source for backoff jitter; default `Math.random` */
  random?: (() => number) | undefined;
  /** called after every attempt (metrics, request counting) */
  onRequest?: ((e: RequestEvent) => void) | undefined;
  /**
   * awaited before every attempt, retries included: a shared rate limiter's `acquire`, so all
   * processes together stay under the plan's rate; default none
   */
  beforeRequest?: ((signal?: AbortSignal) => Promise<void>) | undefined;
}

/** Every method takes this as its last argument. */
export interface CallOptions {
  signal?: AbortSignal | undefined;
  /**
   * what the caller expects the request to cost at the published prices (src/domain/prices.ts),
   * passed on to `onRequest`: the price recorded when an answer carries no `x-billable-requests`
   */
  expectedCredits?: number | undefined;
}

/** `GET /transcript` answers either at once (200) or with a job to poll (202). */
export type MediaTranscriptResult = { kind: 'transcript'; transcript: Transcript } | { kind: 'job'; jobId: string };

/** The raw answer of `GET /{platform}/batch/{jobId}`, for incremental parsing. */
export interface BatchStream {
  status: number;
  headers: IncomingHttpHeaders;
  /** the JSON body as it arrives; consume or destroy it */
  body: Readable;
}

export interface ApiClient {
  /** the platform path segment this client speaks to (`videosite` unless configured) */
  readonly platform: string;
  /** which key this client sends, safe to show and store (src/api/key-fingerprint.ts); holds are recorded per key */
  readonly keyFingerprint: string;
  /** `POST /{platform}/video/batch`: a metadata batch. Costs 1 credit + 1 per video. */
  createVideoBatch(body: VideoBatchRequest, o?: CallOptions): Promise<JobId>;
  /** `POST /{platform}/transcript/batch`: a transcript batch (items carry `transcript`). */
  createTranscriptBatch(body: TranscriptBatchRequest, o?: CallOptions): Promise<JobId>;
  /** `GET /{platform}/batch/{jobId}`, parsed whole. Large batches: use `openBatch`. */
  getBatch(jobId: string, o?: CallOptions): Promise<BatchResults>;
  /**
   * `GET /{platform}/batch/{jobId}` as a stream (a 5000-item transcript batch is ~100 MB). Error
   * answers (non-2xx, 206) are thrown as ApiErrors; retries apply until the head arrives.
   */
  openBatch(jobId: string, o?: CallOptions): Promise<BatchStream>;
  /** `GET /{platform}/playlist/videos` */
  getPlaylistVideos(q: PlaylistVideosQuery, o?: CallOptions): Promise<VideoIds>;
  /** `GET /{platform}/channel/videos` */
  getChannelVideos(q: ChannelVideosQuery, o?: CallOptions): Promise<VideoIds>;
  /**
   * `GET /{platform}/video`
   * @deprecated in the provider's published document: use `getMetadata` (`GET /metadata` with
   * the video's URL) instead (UPSTREAM.md). It still answers; its answer has
   * `transcriptLanguages`, which `Metadata` has not.
   */
  getVideo(q: IdQuery, o?: CallOptions): Promise<Video>;
  /** `GET /{platform}/playlist` */
  getPlaylist(q: IdQuery, o?: CallOptions): Promise<Playlist>;
  /** `GET /{platform}/channel` */
  getChannel(q: IdQuery, o?: CallOptions): Promise<Channel>;
  /**
   * `GET /{platform}/transcript`
   * @deprecated in the provider's published document: use `getMediaTranscript`
   * (`GET /transcript` with the video's URL; `mode: 'native'` for the same captions only)
   * instead (UPSTREAM.md). It still answers.
   */
  getTranscript(q: TranscriptQuery, o?: CallOptions): Promise<Transcript>;
  /** `GET /{platform}/transcript/translate`: `lang` is the target language */
  translateTranscript(q: TranslateQuery, o?: CallOptions): Promise<TranslatedTranscript>;
  /**
   * `GET /transcript`: a transcript now (200) or a job to poll with `getTranscriptJob` (202).
   * `mode` is always sent, `native` unless given: the interface's default (`auto`) may buy a
   * generated transcript.
   */
  getMediaTranscript(q: MediaTranscriptQuery, o?: CallOptions): Promise<MediaTranscriptResult>;
  /** `GET /transcript`, with the answer as received (what the pipeline lands raw) */
  readMediaTranscript(
    q: MediaTranscriptQuery,
    o?: CallOptions,
  ): Promise<{ result: MediaTranscriptResult; raw: unknown }>;
  /** `GET /transcript/{jobId}` */
  getTranscriptJob(jobId: string, o?: CallOptions): Promise<JobResult>;
  /** `GET /transcript/{jobId}`, with the answer as received (what the pipeline lands raw) */
  readTranscriptJob(jobId: string, o?: CallOptions): Promise<{ result: JobResult; raw: unknown }>;
  /** `GET /web/scrape` */
  scrape(q: WebPageQuery, o?: CallOptions): Promise<Scrape>;
  /** `GET /web/map` */
  mapSite(q: WebPageQuery, o?: CallOptions): Promise<SiteMap>;
  /** `POST /web/crawl` */
  startCrawl(body: CrawlRequest, o?: CallOptions): Promise<JobId>;
  /** `GET /web/crawl/{jobId}`, one page of pages from `skip` */
  getCrawl(jobId: string, o?: CallOptions & { skip?: number | undefined }): Promise<CrawlJob>;
  /**
   * Every page of a crawl, following `next` by its `skip` offset whatever its shape, always asked
   * on this client's own `/web/crawl/{jobId}` and origin (the key is never sent where `next`
   * points). An offset that does not move forward stops it (SchemaMismatchError at `next`). A
   * crawl that is not `completed` has no pages and yields nothing; wait for
   * `getCrawl(...).status === 'completed'` first.
   */
  crawlPages(jobId: string, o?: CallOptions): AsyncIterable<CrawledPage>;
  /**
   * One answer of a crawl from `skip`, as received (read with `LiberalCrawlAnswerSchema`: any
   * status, pages kept whole), and the offset its `next` names (undefined when there is none), read
   * as `crawlPages` reads it: the next answer is always asked on this client's own path.
   */
  readCrawl(
    jobId: string,
    o?: CallOptions & { skip?: number | undefined },
  ): Promise<{ answer: LiberalCrawlAnswer; nextSkip: number | undefined }>;
  /** `GET /web/scrape`, with the answer as received (what the pipeline lands raw) */
  scrapePage(q: WebPageQuery, o?: CallOptions): Promise<{ page: Scrape; raw: unknown }>;
  /** `GET /{platform}/search` */
  search(q: SearchQuery, o?: CallOptions): Promise<SearchResults>;
  /** `GET /metadata`: any supported platform's media item (1 credit) */
  getMetadata(q: MetadataQuery, o?: CallOptions): Promise<Metadata>;
  /**
   * `POST /extract`: start extracting structured data from a video, by `prompt`, JSON `schema`
   * or both; always a job (202 `{jobId}`), read with `getExtractJob`. Costs 5 credits per
   * started minute of the media, at least 5; like a batch POST, never repeated once it may have
   * arrived.
   */
  startExtract(body: ExtractRequest, o?: CallOptions): Promise<JobId>;
  /** `GET /extract/{jobId}` (free); a result is kept 1 hour after the job completes, then 404 */
  getExtractJob(jobId: string, o?: CallOptions): Promise<ExtractJobResult>;
  /** `GET /me`: plan and credits (free) */
  me(o?: CallOptions): Promise<Account>;
  /** Close the owned connection pool (a given dispatcher is left open). */
  close(): Promise<void>;
}

/** Validate parameters before sending; a violation is a local `invalid-request` naming the field. */
function validate<S extends z.ZodType>(schema: S, value: unknown, endpoint: string): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) throw invalidRequestFromZod(endpoint, r.error);
  return r.data;
}

/** Named `jobId`, so a bad one is reported as that field. */
const JobIdPathSchema = z.object({ jobId: JobIdParamSchema });

function jobIdSegment(jobId: unknown, endpoint: string): string {
  return encodeURIComponent(validate(JobIdPathSchema, { jobId }, endpoint).jobId);
}

function toQuery(q: object): Record<string, QueryValue> {
  const out: Record<string, QueryValue> = {};
  for (const [k, v] of Object.entries(q)) {
    if (v === undefined || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[k] = v;
    else if (Array.isArray(v) && v.every((x) => typeof x === 'string')) out[k] = v as string[];
  }
  return out;
}

function checkOptions(opts: ApiClientOptions): void {
  let base: URL;
  try {
    base = new URL(opts.baseUrl);
  } catch {
    throw new TypeError('createApiClient: baseUrl is not a URL');
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw new TypeError('createApiClient: baseUrl must be an http(s) URL');
  }
  if (base.search !== '' || base.hash !== '') {
    throw new TypeError('createApiClient: baseUrl must not carry a query or fragment');
  }
  // Say what is wrong without ever echoing the value.
  if (typeof opts.apiKey !== 'string' || opts.apiKey === '') {
    throw new TypeError('createApiClient: apiKey is required');
  }
  if (/[\r\n\0]/.test(opts.apiKey)) {
    throw new TypeError('createApiClient: apiKey holds characters a header cannot carry');
  }
  const platform = opts.platform ?? DEFAULT_PLATFORM;
  if (!/^[a-z0-9][a-z0-9-]*$/.test(platform)) {
    throw new TypeError('createApiClient: platform must be a path segment of lowercase letters, digits and dashes');
  }
  for (const name of ['retryAfterMaxMs', 'maxBodyBytes', 'requestTimeoutMs'] as const) {
    const v = opts[name];
    if (v !== undefined && !(Number.isFinite(v) && v > 0)) {
      throw new TypeError(`createApiClient: ${name} must be a positive number`);
    }
  }
}

/** The HTTP layer over the owned pool (or the given dispatcher), every default filled in. */
function createTransport(opts: ApiClientOptions): { http: Http; close(): Promise<void> } {
  const connectTimeoutMs = opts.connectTimeoutMs ?? API_CONNECT_TIMEOUT_MS;
  const headersTimeoutMs = opts.headersTimeoutMs ?? API_HEADERS_TIMEOUT_MS;
  const bodyTimeoutMs = opts.bodyTimeoutMs ?? API_BODY_TIMEOUT_MS;
  const retry: RetryPolicy = {
    maxAttempts: opts.retry?.maxAttempts ?? API_RETRY_MAX_ATTEMPTS,
    baseDelayMs: opts.retry?.baseDelayMs ?? API_RETRY_BASE_DELAY_MS,
    maxDelayMs: opts.retry?.maxDelayMs ?? API_RETRY_MAX_DELAY_MS,
  };
  const ownedDispatcher =
    opts.dispatcher === undefined
      ? new Pool(new URL(opts.baseUrl).origin, {
          connect: { timeout: connectTimeoutMs },
          headersTimeout: headersTimeoutMs,
          bodyTimeout: bodyTimeoutMs,
          keepAliveTimeout: API_KEEP_ALIVE_TIMEOUT_MS,
          connections: API_POOL_CONNECTIONS,
        })
      : undefined;
  let closed = false;
  const http = createHttp({
    baseUrl: opts.baseUrl,
    apiKey: opts.apiKey,
    dispatcher: opts.dispatcher ?? ownedDispatcher!,
    headersTimeoutMs,
    bodyTimeoutMs,
    requestTimeoutMs: opts.requestTimeoutMs ?? API_REQUEST_TIMEOUT_MS,
    retry,
    retryAfterMaxMs: opts.retryAfterMaxMs ?? API_RETRY_AFTER_MAX_MS,
    maxBodyBytes: opts.maxBodyBytes ?? API_MAX_BODY_BYTES,
    log: opts.log ?? silentLogger(),
    sleep: opts.sleep ?? sleepMs,
    random: opts.random ?? Math.random,
    onRequest: opts.onRequest,
    beforeRequest: opts.beforeRequest,
  });
  return {
    http,
    close: async () => {
      if (ownedDispatcher === undefined || closed) return;
      closed = true;
      await ownedDispatcher.close();
    },
  };
}

/** What every endpoint family is built from: the HTTP layer and its two common shapes of call. */
interface Calls {
  http: Http;
  get<S extends z.ZodType>(
    endpoint: string,
    path: string,
    query: object | undefined,
    schema: S,
    o: CallOptions | undefined,
  ): Promise<z.output<S>>;
  /** a POST that starts a (paid) job: `kind: 'create'`, never repeated once it may have arrived */
  createJob(endpoint: string, path: string, body: unknown, o: CallOptions | undefined): Promise<JobId>;
}

/** The request of a call: its signal and expected credits from the call's options. */
function specOf(o: CallOptions | undefined, spec: Omit<RequestSpec, 'signal' | 'expectedCredits'>): RequestSpec {
  return { ...spec, signal: o?.signal, expectedCredits: o?.expectedCredits };
}

function callsOf(http: Http): Calls {
  return {
    http,
    get: async (endpoint, path, query, schema, o) => {
      const q = query === undefined ? undefined : toQuery(query);
      return (
        await http.requestJson(specOf(o, { method: 'GET', endpoint, path, query: q, kind: 'idempotent' }), schema)
      ).data;
    },
    createJob: async (endpoint, path, body, o) =>
      (await http.requestJson(specOf(o, { method: 'POST', endpoint, path, body, kind: 'create' }), JobIdSchema)).data,
  };
}

type PlatformEndpoints = Pick<
  ApiClient,
  | 'createVideoBatch'
  | 'createTranscriptBatch'
  | 'getBatch'
  | 'openBatch'
  | 'getPlaylistVideos'
  | 'getChannelVideos'
  | 'getVideo'
  | 'getPlaylist'
  | 'getChannel'
  | 'getTranscript'
  | 'translateTranscript'
  | 'search'
>;

/** The endpoints under `/{platform}`: batches, listings, items, search. */
function platformEndpoints({ http, get, createJob }: Calls, platform: string): PlatformEndpoints {
  const p = `/${platform}`;
  return {
    createVideoBatch: async (body, o) => {
      const endpoint = `POST ${p}/video/batch`;
      return createJob(endpoint, `${p}/video/batch`, validate(VideoBatchRequestSchema, body, endpoint), o);
    },
    createTranscriptBatch: async (body, o) => {
      const endpoint = `POST ${p}/transcript/batch`;
      return createJob(endpoint, `${p}/transcript/batch`, validate(TranscriptBatchRequestSchema, body, endpoint), o);
    },
    getBatch: async (jobId, o) => {
      const endpoint = `GET ${p}/batch/{jobId}`;
      return get(endpoint, `${p}/batch/${jobIdSegment(jobId, endpoint)}`, undefined, BatchResultsSchema, o);
    },
    openBatch: async (jobId, o) => {
      const endpoint = `GET ${p}/batch/{jobId}`;
      const path = `${p}/batch/${jobIdSegment(jobId, endpoint)}`;
      return http.openStream(specOf(o, { method: 'GET', endpoint, path, kind: 'idempotent' }));
    },
    getPlaylistVideos: async (q, o) => {
      const endpoint = `GET ${p}/playlist/videos`;
      return get(endpoint, `${p}/playlist/videos`, validate(PlaylistVideosQuerySchema, q, endpoint), VideoIdsSchema, o);
    },
    getChannelVideos: async (q, o) => {
      const endpoint = `GET ${p}/channel/videos`;
      return get(endpoint, `${p}/channel/videos`, validate(ChannelVideosQuerySchema, q, endpoint), VideoIdsSchema, o);
    },
    getVideo: async (q, o) => {
      const endpoint = `GET ${p}/video`;
      return get(endpoint, `${p}/video`, validate(IdQuerySchema, q, endpoint), VideoSchema, o);
    },
    getPlaylist: async (q, o) => {
      const endpoint = `GET ${p}/playlist`;
      return get(endpoint, `${p}/playlist`, validate(IdQuerySchema, q, endpoint), PlaylistSchema, o);
    },
    getChannel: async (q, o) => {
      const endpoint = `GET ${p}/channel`;
      return get(endpoint, `${p}/channel`, validate(IdQuerySchema, q, endpoint), ChannelSchema, o);
    },
    getTranscript: async (q, o) => {
      const endpoint = `GET ${p}/transcript`;
      return get(endpoint, `${p}/transcript`, validate(TranscriptQuerySchema, q, endpoint), TranscriptSchema, o);
    },
    translateTranscript: async (q, o) => {
      const endpoint = `GET ${p}/transcript/translate`;
      const query = toQuery(validate(TranslateQuerySchema, q, endpoint));
      // the most expensive call there is (30 credits a minute): like a batch POST, never repeated
      // once it may have arrived (a timed-out translation is charged when the server completed it)
      const spec = specOf(o, { method: 'GET', endpoint, path: `${p}/transcript/translate`, query, kind: 'create' });
      return (await http.requestJson(spec, TranslatedTranscriptSchema)).data;
    },
    search: async (q, o) => {
      const endpoint = `GET ${p}/search`;
      return get(endpoint, `${p}/search`, validate(SearchQuerySchema, q, endpoint), SearchResultsSchema, o);
    },
  };
}

type TranscriptEndpoints = Pick<
  ApiClient,
  'getMediaTranscript' | 'readMediaTranscript' | 'getTranscriptJob' | 'readTranscriptJob'
>;

/** `GET /transcript` and its jobs (any platform, by URL). */
function transcriptEndpoints({ http, get }: Calls): TranscriptEndpoints {
  async function readMediaTranscript(
    q: MediaTranscriptQuery,
    o?: CallOptions,
  ): Promise<{ result: MediaTranscriptResult; raw: unknown }> {
    const endpoint = 'GET /transcript';
    const query = validate(MediaTranscriptRequestSchema, q, endpoint);
    // anything but `native` may start a paid job: like a batch POST, never repeated once it may have arrived
    const kind = query.mode === 'native' ? 'idempotent' : 'create';
    const spec = specOf(o, { method: 'GET', endpoint, path: '/transcript', query: toQuery(query), kind });
    const { data, raw } = await http.requestJson(spec, TranscriptOrJobIdSchema);
    return {
      result: 'jobId' in data ? { kind: 'job', jobId: data.jobId } : { kind: 'transcript', transcript: data },
      raw,
    };
  }
  return {
    getMediaTranscript: async (q, o) => (await readMediaTranscript(q, o)).result,
    readMediaTranscript,
    getTranscriptJob: async (jobId, o) => {
      const endpoint = 'GET /transcript/{jobId}';
      return get(endpoint, `/transcript/${jobIdSegment(jobId, endpoint)}`, undefined, JobResultSchema, o);
    },
    readTranscriptJob: async (jobId, o) => {
      const endpoint = 'GET /transcript/{jobId}';
      const path = `/transcript/${jobIdSegment(jobId, endpoint)}`;
      const { data, raw } = await http.requestJson(
        specOf(o, { method: 'GET', endpoint, path, kind: 'idempotent' }),
        JobResultSchema,
      );
      return { result: data, raw };
    },
  };
}

type WebEndpoints = Pick<
  ApiClient,
  | 'scrape'
  | 'scrapePage'
  | 'mapSite'
  | 'startCrawl'
  | 'getCrawl'
  | 'crawlPages'
  | 'readCrawl'
  | 'getMetadata'
  | 'startExtract'
  | 'getExtractJob'
>;

/**
 * A crawl answer read liberally: a status this interface version does not list, fields it does
 * not name and pages of any shape are kept (each page is checked where it is stored).
 */
export const LiberalCrawlAnswerSchema = z
  .object({
    status: z.string(),
    pages: z.array(z.unknown()).optional(),
    next: z.string().optional(),
  })
  .passthrough();
export type LiberalCrawlAnswer = z.infer<typeof LiberalCrawlAnswerSchema>;

/** The endpoints that take any URL: web pages, crawls, metadata, extract jobs. */
function webEndpoints({ http, get, createJob }: Calls): WebEndpoints {
  return {
    scrape: async (q, o) => {
      const endpoint = 'GET /web/scrape';
      return get(endpoint, '/web/scrape', validate(WebPageQuerySchema, q, endpoint), ScrapeSchema, o);
    },
    mapSite: async (q, o) => {
      const endpoint = 'GET /web/map';
      return get(endpoint, '/web/map', validate(WebPageQuerySchema, q, endpoint), SiteMapSchema, o);
    },
    startCrawl: async (body, o) => {
      const endpoint = 'POST /web/crawl';
      return createJob(endpoint, '/web/crawl', validate(CrawlRequestSchema, body, endpoint), o);
    },
    getCrawl: async (jobId, o) => {
      const endpoint = 'GET /web/crawl/{jobId}';
      const seg = jobIdSegment(jobId, endpoint);
      const q = validate(CrawlQuerySchema, { skip: o?.skip }, endpoint);
      return get(endpoint, `/web/crawl/${seg}`, q, CrawlJobSchema, o);
    },
    crawlPages: async function* (jobId, o) {
      const endpoint = 'GET /web/crawl/{jobId}';
      const seg = jobIdSegment(jobId, endpoint);
      let skip: number | undefined;
      for (;;) {
        // always our own path on our own origin: whatever `next` looked like, only its offset is used
        const spec = specOf(o, {
          method: 'GET',
          endpoint,
          path: `/web/crawl/${seg}`,
          query: { skip },
          kind: 'idempotent',
        });
        const { data } = await http.requestJson(spec, CrawlJobSchema);
        for (const page of data.pages ?? []) yield page;
        if (data.next === undefined) return;
        skip = skipOfNext(data.next, jobId, skip ?? 0, endpoint);
      }
    },
    readCrawl: async (jobId, o) => {
      const endpoint = 'GET /web/crawl/{jobId}';
      const seg = jobIdSegment(jobId, endpoint);
      const skip = o?.skip;
      validate(CrawlQuerySchema, { skip }, endpoint);
      const { data } = await http.requestJson(
        specOf(o, { method: 'GET', endpoint, path: `/web/crawl/${seg}`, query: { skip }, kind: 'idempotent' }),
        LiberalCrawlAnswerSchema,
      );
      const nextSkip = data.next === undefined ? undefined : skipOfNext(data.next, jobId, skip ?? 0, endpoint);
      return { answer: data, nextSkip };
    },
    scrapePage: async (q, o) => {
      const endpoint = 'GET /web/scrape';
      const { data, raw } = await http.requestJson(
        specOf(o, {
          method: 'GET',
          endpoint,
          path: '/web/scrape',
          query: toQuery(validate(WebPageQuerySchema, q, endpoint)),
          kind: 'idempotent',
        }),
        ScrapeSchema,
      );
      return { page: data, raw };
    },
    getMetadata: async (q, o) => {
      const endpoint = 'GET /metadata';
      return get(endpoint, '/metadata', validate(MetadataQuerySchema, q, endpoint), MetadataSchema, o);
    },
    startExtract: async (body, o) => {
      const endpoint = 'POST /extract';
      return createJob(endpoint, '/extract', validate(ExtractRequestSchema, body, endpoint), o);
    },
    getExtractJob: async (jobId, o) => {
      const endpoint = 'GET /extract/{jobId}';
      return get(endpoint, `/extract/${jobIdSegment(jobId, endpoint)}`, undefined, ExtractJobResultSchema, o);
    },
  };
}

export function createApiClient(opts: ApiClientOptions): ApiClient {
  checkOptions(opts);
  const platform = opts.platform ?? DEFAULT_PLATFORM;
  const transport = createTransport(opts);
  const calls = callsOf(transport.http);
  return {
    platform,
    keyFingerprint: keyFingerprint(opts.apiKey),
    ...platformEndpoints(calls, platform),
    ...transcriptEndpoints(calls),
    ...webEndpoints(calls),
    me: async (o) => calls.get('GET /me', '/me', undefined, AccountSchema, o),
    close: transport.close,
  };
}

/**
 * The offset a crawl answer's `next` asks for. Its shape is not fixed (UPSTREAM.md): the published
 * example is an absolute URL on another path (`https://<host>/v1/crawl/<jobId>?skip=1`), one SDK
 * follows it as a URL, another hands it back as an opaque value. So every shape gives only its
 * `skip`: an absolute or relative URL (of this crawl: a path naming another job is refused), a
 * bare `skip=N` or `N`. The next page is then asked on the client's own path and origin, never at
 * the URL given, so the key never goes to a host `next` names (an absolute URL on another origin
 * is how an API behind a proxy or gateway names itself; it is read, not requested). An offset that
 * does not move forward would loop: it stops the crawl with a SchemaMismatchError at `next`.
 */
function skipOfNext(next: string, jobId: string, previousSkip: number, endpoint: string): number {
  const refuse = (why: string): SchemaMismatchError =>
    new SchemaMismatchError({
      message: `${endpoint}: next ${JSON.stringify(next)} ${why}; stopping`,
      endpoint,
      path: 'next',
      rawBody: JSON.stringify({ next }),
    });
  const text = next.trim();
  let skipText: string | null;
  if (/^\d+$/.test(text)) skipText = text;
  else if (text.startsWith('?') || (!/[/:]/.test(text) && text.includes('='))) {
    // a query string alone: `?skip=20`, `skip=20`
    skipText = new URLSearchParams(text.replace(/^[?&]/, '')).get('skip');
  } else {
    let u: URL;
    try {
      // a relative `next` is read against a stand-in origin: only its path and query matter
      u = new URL(text, 'http://next.invalid/');
    } catch {
      throw refuse('is neither a URL nor an offset');
    }
    const named = u.pathname
      .split('/')
      .filter((p) => p !== '')
      .at(-1);
    if (named !== undefined && safeDecodeSegment(named) !== jobId) throw refuse('names another crawl');
    skipText = u.searchParams.get('skip');
  }
  if (skipText === null || !/^\d+$/.test(skipText) || !Number.isSafeInteger(Number(skipText))) {
    throw refuse('carries no skip offset');
  }
  const skip = Number(skipText);
  if (skip <= previousSkip) {
    throw refuse(
      skip === previousSkip
        ? `asks for skip=${skip} again (a loop)`
        : `goes back from skip=${previousSkip} to skip=${skip}`,
    );
  }
  return skip;
}

function safeDecodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
