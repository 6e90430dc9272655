/**
 * The transport under the typed client: one undici request per attempt, answers mapped to
 * ApiErrors by the single factory (`errorFromResponse`), 2xx bodies parsed with their zod
 * schema, and the retry rules of `retry.ts` applied around it all.
 *
 * The API key goes out in the `x-api-key` header and nowhere else: it is not part of any URL,
 * log line or error (and an error whose text somehow holds it, say a server echoing the key
 * back, has it replaced before it leaves this module).
 *
 * Nothing an answer says can make a process hold unbounded memory or sleep unboundedly: a JSON
 * body is read up to `maxBodyBytes`, an error body up to `ERROR_BODY_MAX_BYTES`, and a
 * `Retry-After` counts as at most `retryAfterMaxMs`. Only `openStream` hands a body over
 * unread (its reader bounds what it keeps).
 */
import { performance } from 'node:perf_hooks';
import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { z } from 'zod';
import {
  AbortedError,
  ApiError,
  TimeoutError,
  errorFromResponse,
  parseRetryAfter,
  SchemaMismatchError,
  schemaMismatchFromZod,
  toApiError,
} from './errors.ts';
import { capRetryAfterMs, decideRetry, type AttemptOutcome, type RequestKind, type RetryPolicy } from './retry.ts';
import { ErrorBodySchema } from './schemas.ts';
import type { Logger } from '../log.ts';

/** The answer header that says how many credits the request consumed (UPSTREAM.md, "Credits"). */
export const BILLING_HEADER = 'x-billable-requests';

/** The instrumentation scope of the client's spans (src/tracing.ts names the program's the same). */
const TRACER_NAME = 'videosite-ingest';

/** Answer headers as undici gives them. */
export type IncomingHttpHeaders = Dispatcher.ResponseData['headers'];

/** One attempt as seen by the `onRequest` hook (metrics, request counting). */
export interface RequestEvent {
  /** the endpoint template, e.g. `GET /videosite/batch/{jobId}` */
  endpoint: string;
  method: 'GET' | 'POST';
  /** the HTTP status, when an answer arrived */
  status?: number | undefined;
  /** 1 for the first attempt */
  attempt: number;
  durationMs: number;
  /** set when the attempt failed */
  errorCode?: string | undefined;
  /**
   * the answer's `Retry-After`, in milliseconds (a 429 or 503 that says when to come back),
   * bounded by `retryAfterMaxMs`
   */
  retryAfterMs?: number | undefined;
  /** the credits the answer's `x-billable-requests` header says this attempt consumed; undefined: no answer, or no (valid) header */
  billedCredits?: number | undefined;
  /** what the caller expected this request to cost at the published prices (`CallOptions.expectedCredits`) */
  expectedCredits?: number | undefined;
  /**
   * how the attempt ended when no answer arrived: `not-sent` (it never reached the server: not
   * charged) or what may have been charged all the same (`timeout`, `network`, `truncated`)
   */
  failure?: AttemptOutcome['kind'] | undefined;
}

export interface HttpOptions {
  /** base URL ending in `/v1` (a trailing slash is ignored) */
  baseUrl: string;
  apiKey: string;
  dispatcher: Dispatcher;
  /** per request: time to wait for the answer's head, in milliseconds */
  headersTimeoutMs: number;
  /** per request: longest silence while the body arrives, in milliseconds */
  bodyTimeoutMs: number;
  /**
   * per attempt: the most one request may take from sending to its whole answer read, in
   * milliseconds: a server that trickles a byte at a time never trips the silence timeout, and
   * would otherwise hold the caller for good (`openStream` hands its body over unread: the
   * caller bounds it)
   */
  requestTimeoutMs: number;
  retry: RetryPolicy;
  /** longest `Retry-After` honoured, ms: a longer one counts as this (and is logged) */
  retryAfterMaxMs: number;
  /** largest answer body `requestJson` reads, bytes; a larger answer is a SchemaMismatchError */
  maxBodyBytes: number;
  log: Logger;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  random: () => number;
  onRequest?: ((e: RequestEvent) => void) | undefined;
  beforeRequest?: ((signal?: AbortSignal) => Promise<void>) | undefined;
}

/** A query parameter's value; a list is sent as one key per element (`features=hd&features=4k`). */
export type QueryValue = string | number | boolean | readonly string[] | undefined;

export interface RequestSpec {
  method: 'GET' | 'POST';
  /** the endpoint template for errors and logs (no IDs, no query) */
  endpoint: string;
  /** path below the base URL, starting with `/`, segments already encoded */
  path: string;
  /** query parameters; undefined values are left out */
  query?: Readonly<Record<string, QueryValue>> | undefined;
  /** JSON body (POST) */
  body?: unknown;
  kind: RequestKind;
  signal?: AbortSignal | undefined;
  /** the request's price at the published prices, passed on to `onRequest` */
  expectedCredits?: number | undefined;
}

export interface JsonAnswer<T> {
  status: number;
  /** the answer's `x-billable-requests` */
  billedCredits?: number | undefined;
  data: T;
  /** the body as received (JSON-parsed, before the schema dropped or coerced anything): what is landed raw */
  raw: unknown;
}

export interface StreamAnswer {
  status: number;
  /** the answer's `x-billable-requests` */
  billedCredits?: number | undefined;
  headers: IncomingHttpHeaders;
  /** the undici body stream; the caller must consume or destroy it */
  body: Readable;
}

export interface Http {
  requestJson<S extends z.ZodType>(spec: RequestSpec, schema: S): Promise<JsonAnswer<z.output<S>>>;
  openStream(spec: RequestSpec): Promise<StreamAnswer>;
}

/** How much of a raw body an error message quotes (`rawBody` keeps a longer prefix). */
const MESSAGE_BODY_EXCERPT_CHARS = 200;
/**
 * Most bytes read of an error answer's body (4xx, 5xx, 206), 64 KiB: an Error object is a few
 * hundred bytes; the rest of a bigger body (a gateway's page, a misbehaving server) is not read
 * (the connection is dropped instead).
 */
export const ERROR_BODY_MAX_BYTES = 64 * 1024;

/** Transport error codes after which the request certainly never reached the server. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
/** Local mistakes (a bad header value, a closed client): asking again cannot help. */
const FINAL_CODES = new Set(['UND_ERR_INVALID_ARG', 'UND_ERR_DESTROYED', 'UND_ERR_CLOSED', 'UND_ERR_NOT_SUPPORTED']);

/** An attempt that failed, with what the retry rules need to know about it. */
class AttemptFailure extends Error {
  constructor(
    readonly error: ApiError,
    readonly outcome: AttemptOutcome,
    /** the error answer's `x-billable-requests` (a 206 is charged) */
    readonly billedCredits?: number,
  ) {
    super(error.message);
  }
}

/**
 * The credits an answer's `x-billable-requests` header states: a non-negative integer, or
 * undefined when the header is missing or holds anything else (the caller then prices the
 * request itself).
 */
export function billedCreditsOf(headers: IncomingHttpHeaders): number | undefined {
  const v = headers[BILLING_HEADER];
  const text = (Array.isArray(v) ? v[0] : v)?.trim();
  if (text === undefined || !/^\d{1,9}$/.test(text)) return undefined;
  return Number(text);
}

function errorCodeOf(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Map a thrown transport error (no answer head) to an ApiError and its retry outcome. */
function transportFailure(e: unknown, endpoint: string, signal: AbortSignal | undefined): AttemptFailure {
  if (signal?.aborted) {
    return new AttemptFailure(new AbortedError({ message: `${endpoint}: aborted`, endpoint, cause: e }), {
      kind: 'final',
    });
  }
  const error = toApiError(e, endpoint);
  const code = errorCodeOf(e);
  if (error.code === 'aborted') return new AttemptFailure(error, { kind: 'final' });
  if (code !== undefined && NOT_SENT_CODES.has(code)) return new AttemptFailure(error, { kind: 'not-sent' });
  if (code !== undefined && TIMEOUT_CODES.has(code)) return new AttemptFailure(error, { kind: 'timeout' });
  if (code !== undefined && FINAL_CODES.has(code)) return new AttemptFailure(error, { kind: 'final' });
  return new AttemptFailure(error, { kind: 'network' });
}

/** A body that broke off mid-way (reset, closed, body timeout). */
function bodyFailure(e: unknown, endpoint: string, signal: AbortSignal | undefined): AttemptFailure {
  const f = transportFailure(e, endpoint, signal);
  if (f.outcome.kind === 'final') return f;
  const timedOut = f.outcome.kind === 'timeout';
  return new AttemptFailure(f.error, timedOut ? { kind: 'timeout' } : { kind: 'truncated' });
}

/** A body read up to a limit. */
interface BoundedBody {
  text: string;
  /** the body went on past the limit; the rest was not read */
  cut: boolean;
}

function declaredLength(headers: IncomingHttpHeaders): number | undefined {
  const v = headers['content-length'];
  const n = Number(Array.isArray(v) ? v[0] : v);
  return v === undefined || !Number.isFinite(n) ? undefined : n;
}

/**
 * Stop reading a body: undici then aborts the request and drops the connection. Destroying its
 * body emits an 'error' (RequestAbortedError), which must not go unhandled.
 */
function discard(body: Readable): void {
  body.on('error', () => {});
  if (!body.destroyed) body.destroy();
}

function decodeUtf8(parts: Buffer[], size: number): string {
  const buf = Buffer.concat(parts, size);
  // skip a BOM, as undici's body.text() does
  const start = size > 2 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0;
  return buf.toString('utf8', start);
}

function excerpt(text: string): string {
  return text.length > MESSAGE_BODY_EXCERPT_CHARS ? `${text.slice(0, MESSAGE_BODY_EXCERPT_CHARS)}…` : text;
}

/** Replace the secret wherever an error carries text, so it cannot leak through `message`. */
export function scrubSecret<E extends ApiError>(err: E, secret: string): E {
  if (secret === '') return err;
  for (const field of ['message', 'stack', 'details', 'rawBody'] as const) {
    const v = (err as unknown as Record<string, unknown>)[field];
    if (typeof v === 'string' && v.includes(secret)) {
      Object.defineProperty(err, field, {
        value: v.split(secret).join('[redacted]'),
        writable: true,
        configurable: true,
        enumerable: field !== 'stack' && field !== 'message',
      });
    }
  }
  return err;
}

function buildSearch(query: RequestSpec['query']): string {
  if (query === undefined) return '';
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined) continue;
    if (typeof v === 'object') for (const item of v) params.append(k, item);
    else params.append(k, String(v));
  }
  return params.toString();
}

export function createHttp(opts: HttpOptions): Http {
  const base = new URL(opts.baseUrl);
  const t: Transport = { opts, origin: base.origin, basePath: base.pathname.replace(/\/+$/, '') };

  async function requestJson<S extends z.ZodType>(spec: RequestSpec, schema: S): Promise<JsonAnswer<z.output<S>>> {
    return withRetries(opts, spec, () => withDeadline(opts, spec, (spec) => attemptJson(t, spec, schema)));
  }

  async function openStream(spec: RequestSpec): Promise<StreamAnswer> {
    // no overall deadline here: the head is bounded by headersTimeoutMs, and the body is the
    // caller's to read under its own signal (the poller bounds a download by POLL_MAX_DURATION_MS)
    return withRetries(opts, spec, async () => {
      const res = await send(t, spec);
      if (!isSuccess(res.statusCode)) throw await errorAnswer(opts, res, spec);
      return {
        status: res.statusCode,
        billedCredits: billedCreditsOf(res.headers),
        headers: res.headers,
        body: res.body,
      };
    });
  }

  return { requestJson, openStream };
}

/** The options of one Http and the parts of its base URL every attempt is sent to. */
interface Transport {
  opts: HttpOptions;
  origin: string;
  /** the base URL's path, without a trailing slash */
  basePath: string;
}

function pathWithQuery(basePath: string, spec: RequestSpec): string {
  const search = buildSearch(spec.query);
  return `${basePath}${spec.path}${search === '' ? '' : `?${search}`}`;
}

/**
 * One attempt under the overall deadline (`requestTimeoutMs`): `run` gets the spec with a
 * signal that aborts at the deadline or when the caller's does. A deadline that passes is a
 * timeout (retried like one); the caller's abort stays an abort.
 */
async function withDeadline<T>(opts: HttpOptions, spec: RequestSpec, run: (s: RequestSpec) => Promise<T>): Promise<T> {
  const attempt = new AbortController();
  let deadlinePassed = false;
  const timer = setTimeout(() => {
    deadlinePassed = true;
    attempt.abort();
  }, opts.requestTimeoutMs);
  timer.unref();
  // the caller's signal aborts this attempt too; a listener removed at the end, not
  // AbortSignal.any, so a long-lived signal (a worker's) gathers nothing over thousands of polls
  const callerAborted = () => attempt.abort(spec.signal?.reason);
  if (spec.signal?.aborted) attempt.abort(spec.signal.reason);
  else spec.signal?.addEventListener('abort', callerAborted, { once: true });
  try {
    return await run({ ...spec, signal: attempt.signal });
  } catch (e: unknown) {
    if (!deadlinePassed || spec.signal?.aborted) throw e;
    const billed = e instanceof AttemptFailure ? e.billedCredits : undefined;
    throw new AttemptFailure(
      new TimeoutError({
        message: `${spec.endpoint}: no whole answer within API_REQUEST_TIMEOUT_MS (${opts.requestTimeoutMs} ms)`,
        endpoint: spec.endpoint,
        cause: e,
      }),
      { kind: 'timeout' },
      billed,
    );
  } finally {
    clearTimeout(timer);
    spec.signal?.removeEventListener('abort', callerAborted);
  }
}

/** Send one attempt and return the answer head; transport errors become AttemptFailures. */
async function send(t: Transport, spec: RequestSpec): Promise<Dispatcher.ResponseData> {
  const headers: Record<string, string> = {
    accept: 'application/json',
    'x-api-key': t.opts.apiKey,
  };
  let body: string | undefined;
  if (spec.body !== undefined) {
    body = JSON.stringify(spec.body);
    headers['content-type'] = 'application/json';
  }
  try {
    return await t.opts.dispatcher.request({
      origin: t.origin,
      path: pathWithQuery(t.basePath, spec),
      method: spec.method,
      headers,
      body,
      signal: spec.signal ?? null,
      headersTimeout: t.opts.headersTimeoutMs,
      bodyTimeout: t.opts.bodyTimeoutMs,
    });
  } catch (e: unknown) {
    throw transportFailure(e, spec.endpoint, spec.signal);
  }
}

/**
 * Read at most `maxBytes` of the body. A body that goes on is cut there: the stream is
 * destroyed (undici then drops the connection), so no more than the limit is ever buffered.
 */
async function readBounded(res: Dispatcher.ResponseData, spec: RequestSpec, maxBytes: number): Promise<BoundedBody> {
  const parts: Buffer[] = [];
  let size = 0;
  let cut = false;
  try {
    for await (const chunk of res.body) {
      const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
      const room = maxBytes - size;
      if (b.length > room) {
        if (room > 0) parts.push(b.subarray(0, room));
        size += Math.max(0, room);
        cut = true;
        discard(res.body);
        break;
      }
      parts.push(b);
      size += b.length;
    }
  } catch (e: unknown) {
    throw bodyFailure(e, spec.endpoint, spec.signal);
  }
  return { text: decodeUtf8(parts, size), cut };
}

/**
 * A body's text as an error may carry it: the key replaced wherever it appears, and a body
 * that was cut short loses a trailing start of the key (the cut may have split it), so no
 * prefix or excerpt taken later can hold any of it.
 */
function redactBody(body: BoundedBody, key: string): string {
  if (key === '') return body.text;
  let t = body.text.includes(key) ? body.text.split(key).join('[redacted]') : body.text;
  if (body.cut) {
    for (let n = Math.min(key.length - 1, t.length); n > 0; n--) {
      if (t.endsWith(key.slice(0, n))) {
        t = t.slice(0, t.length - n);
        break;
      }
    }
  }
  return t;
}

/** A 2xx body that is larger than `maxBodyBytes`: not JSON we will parse. */
function tooLarge(
  maxBodyBytes: number,
  res: Dispatcher.ResponseData,
  spec: RequestSpec,
  detail: string,
  prefix: string | undefined,
): AttemptFailure {
  return new AttemptFailure(
    new SchemaMismatchError({
      message: `${spec.endpoint}: answer body is larger than API_MAX_BODY_BYTES (${maxBodyBytes} bytes); not read past it`,
      details: detail,
      endpoint: spec.endpoint,
      path: '(root)',
      status: res.statusCode,
      rawBody: prefix,
    }),
    // the same answer would come again: not retried
    { kind: 'invalid-answer' },
  );
}

/** The answer's `Retry-After`, bounded; a bounded one is logged (once per answer). */
function retryAfterOf(opts: HttpOptions, res: Dispatcher.ResponseData, spec: RequestSpec): number | undefined {
  const receivedMs = parseRetryAfter(res.headers['retry-after']);
  const r = capRetryAfterMs(receivedMs, opts.retryAfterMaxMs);
  if (r?.capped) {
    opts.log.warn(
      {
        event: 'upstream.retry_after_capped',
        endpoint: spec.endpoint,
        status: res.statusCode,
        receivedMs,
        cappedMs: r.ms,
      },
      'retry-after capped',
    );
  }
  return r?.ms;
}

/**
 * A non-2xx answer, or a 206: always an error. Reads the error body up to
 * `ERROR_BODY_MAX_BYTES` and drops the rest.
 */
async function errorAnswer(
  opts: HttpOptions,
  res: Dispatcher.ResponseData,
  spec: RequestSpec,
): Promise<AttemptFailure> {
  const retryAfterMs = retryAfterOf(opts, res, spec);
  const body = await readBounded(res, spec, ERROR_BODY_MAX_BYTES);
  const error = errorFromResponse({
    status: res.statusCode,
    body: redactBody(body, opts.apiKey),
    endpoint: spec.endpoint,
    retryAfterMs,
  });
  return new AttemptFailure(
    error,
    { kind: 'answered', status: res.statusCode, errorBody: error.errorBody, retryAfterMs },
    billedCreditsOf(res.headers),
  );
}

function isSuccess(status: number): boolean {
  // 206 is the interface's `transcript-unavailable`: a 2xx whose body is an Error object.
  return status >= 200 && status < 300 && status !== 206;
}

/** A metrics hook that throws must not turn a good answer into a failure. */
function emit(opts: HttpOptions, e: RequestEvent): void {
  if (opts.onRequest === undefined) return;
  try {
    opts.onRequest(e);
  } catch (err: unknown) {
    opts.log.warn({ event: 'upstream.hook_failed', endpoint: e.endpoint, err }, 'onRequest hook failed');
  }
}

/** What an attempt that got an answer reports: its status and what it was billed. */
interface AttemptAnswer {
  status: number;
  billedCredits?: number | undefined;
}

/** Attempts until one succeeds or the retry policy (`decideRetry`) says stop; each attempt reported to `onRequest`. */
async function withRetries<T extends AttemptAnswer>(
  opts: HttpOptions,
  spec: RequestSpec,
  attemptOnce: () => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    await awaitPermit(opts, spec);
    const started = performance.now();
    const span = attemptSpan(opts, spec, attempt);
    let failure: AttemptFailure;
    try {
      const answer = await context.with(trace.setSpan(context.active(), span), attemptOnce);
      reportAnswer(opts, spec, attempt, performance.now() - started, answer);
      endAttemptSpan(span, answer.status, answer.billedCredits, jobIdOfAnswer(answer));
      return answer;
    } catch (e: unknown) {
      failure = e instanceof AttemptFailure ? e : transportFailure(e, spec.endpoint, spec.signal);
    }
    const durationMs = performance.now() - started;
    endAttemptSpan(span, failure.error.status, failure.billedCredits, undefined, failure.error.code);
    reportFailure(opts, spec, attempt, durationMs, failure);
    const { error, outcome } = failure;
    const decision = decideRetry(spec.kind, outcome, attempt, opts.retry, opts.random);
    if (!decision.retry) {
      opts.log.debug(
        {
          event: 'upstream.request_failed',
          endpoint: spec.endpoint,
          status: error.status,
          attempt,
          durationMs,
          code: error.code,
          reason: decision.reason,
        },
        'upstream request failed',
      );
      throw scrubSecret(error, opts.apiKey);
    }
    opts.log.warn(
      {
        event: 'upstream.retry',
        endpoint: spec.endpoint,
        attempt,
        delayMs: decision.delayMs,
        code: error.code,
        status: error.status,
        durationMs: Math.round(durationMs),
      },
      'upstream request retry',
    );
    await sleepBeforeRetry(opts, spec, decision.delayMs);
  }
}

/**
 * One attempt as a client span of the active trace (the global tracer of @opentelemetry/api: a
 * no-op unless the program registered one). Its attributes are the method, the path without
 * the query (a query could carry a key a caller put there), the job ID and the status: never a
 * header, never the key.
 */
function attemptSpan(opts: HttpOptions, spec: RequestSpec, attempt: number): Span {
  const attributes: Attributes = {
    'http.request.method': spec.method,
    'url.path': `${new URL(opts.baseUrl).pathname.replace(/\/+$/, '')}${spec.path}`,
    'videosite.endpoint': spec.endpoint,
    'http.request.resend_count': attempt - 1,
  };
  const jobId = jobIdOfPath(spec);
  if (jobId !== undefined) attributes['videosite.job_id'] = jobId;
  return trace.getTracer(TRACER_NAME).startSpan(`${spec.method} ${spec.endpoint.replace(/^[A-Z]+ /, '')}`, {
    kind: SpanKind.CLIENT,
    attributes,
  });
}

function endAttemptSpan(
  span: Span,
  status: number | undefined,
  billed: number | undefined,
  jobId: string | undefined,
  errorCode?: string,
): void {
  if (status !== undefined) span.setAttribute('http.response.status_code', status);
  if (billed !== undefined) span.setAttribute('videosite.credits_billed', billed);
  if (jobId !== undefined) span.setAttribute('videosite.job_id', jobId);
  if (errorCode !== undefined) {
    span.setAttribute('error.type', errorCode);
    span.setStatus({ code: SpanStatusCode.ERROR, message: errorCode });
  }
  span.end();
}

/** The `{jobId}` segment of the path, where the endpoint template has one. */
function jobIdOfPath(spec: RequestSpec): string | undefined {
  const template = spec.endpoint.replace(/^[A-Z]+ /, '').split('/');
  const at = template.indexOf('{jobId}');
  if (at < 0) return undefined;
  const segment = spec.path.split('/')[at];
  if (segment === undefined) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** The job ID a POST that creates a job answered with. */
function jobIdOfAnswer(answer: AttemptAnswer): string | undefined {
  const data = (answer as { data?: unknown }).data;
  if (typeof data !== 'object' || data === null) return undefined;
  const jobId = (data as { jobId?: unknown }).jobId;
  return typeof jobId === 'string' ? jobId : undefined;
}

/** Wait for `beforeRequest` (the shared rate limiter) to let an attempt go. */
async function awaitPermit(opts: HttpOptions, spec: RequestSpec): Promise<void> {
  if (opts.beforeRequest === undefined) return;
  try {
    await opts.beforeRequest(spec.signal);
  } catch (e: unknown) {
    if (spec.signal?.aborted) {
      throw new AbortedError({ message: `${spec.endpoint}: aborted`, endpoint: spec.endpoint, cause: e });
    }
    // not the upstream's doing (say, the shared limiter's Redis is down): passed on as is
    throw e;
  }
}

function reportAnswer(
  opts: HttpOptions,
  spec: RequestSpec,
  attempt: number,
  durationMs: number,
  answer: AttemptAnswer,
) {
  emit(opts, {
    endpoint: spec.endpoint,
    method: spec.method,
    status: answer.status,
    attempt,
    durationMs,
    billedCredits: answer.billedCredits,
    expectedCredits: spec.expectedCredits,
  });
  opts.log.debug(
    { event: 'upstream.request', endpoint: spec.endpoint, status: answer.status, attempt, durationMs },
    'upstream request',
  );
}

function reportFailure(
  opts: HttpOptions,
  spec: RequestSpec,
  attempt: number,
  durationMs: number,
  failure: AttemptFailure,
): void {
  const { error, outcome } = failure;
  emit(opts, {
    endpoint: spec.endpoint,
    method: spec.method,
    status: error.status,
    attempt,
    durationMs,
    errorCode: error.code,
    retryAfterMs: error.retryAfterMs,
    billedCredits: failure.billedCredits,
    expectedCredits: spec.expectedCredits,
    failure: outcome.kind === 'answered' ? undefined : outcome.kind,
  });
}

/** The retry's delay; the caller's abort during it (or just after it) ends the request. */
async function sleepBeforeRetry(opts: HttpOptions, spec: RequestSpec, delayMs: number): Promise<void> {
  try {
    await opts.sleep(delayMs, spec.signal);
  } catch (e: unknown) {
    throw new AbortedError({ message: `${spec.endpoint}: aborted`, endpoint: spec.endpoint, cause: e });
  }
  if (spec.signal?.aborted) {
    throw new AbortedError({ message: `${spec.endpoint}: aborted`, endpoint: spec.endpoint });
  }
}

/** One JSON attempt: send, read the 2xx body within `maxBodyBytes`, parse it against `schema`. */
async function attemptJson<S extends z.ZodType>(
  t: Transport,
  spec: RequestSpec,
  schema: S,
): Promise<JsonAnswer<z.output<S>>> {
  const { opts } = t;
  const res = await send(t, spec);
  if (!isSuccess(res.statusCode)) throw await errorAnswer(opts, res, spec);
  // a 2xx was charged whatever its body holds: every failure below carries what it cost
  const billed = billedCreditsOf(res.headers);
  const failed = (f: AttemptFailure) => new AttemptFailure(f.error, f.outcome, billed);
  const declared = declaredLength(res.headers);
  if (declared !== undefined && declared > opts.maxBodyBytes) {
    // said up front: nothing of it is read
    discard(res.body);
    throw failed(tooLarge(opts.maxBodyBytes, res, spec, `content-length ${declared}`, undefined));
  }
  let body: BoundedBody;
  try {
    body = await readBounded(res, spec, opts.maxBodyBytes);
  } catch (e: unknown) {
    throw e instanceof AttemptFailure ? failed(e) : e;
  }
  if (body.cut) {
    throw failed(
      tooLarge(opts.maxBodyBytes, res, spec, `more than ${opts.maxBodyBytes} bytes`, redactBody(body, opts.apiKey)),
    );
  }
  const json = parseJsonBody(opts.apiKey, res, spec, body, billed);
  return {
    status: res.statusCode,
    billedCredits: billed,
    data: validateAnswer(opts.apiKey, res, spec, body, json, schema, billed),
    raw: json,
  };
}

/** The body as JSON; a body that is not is an invalid answer (not retried), billed all the same. */
function parseJsonBody(
  apiKey: string,
  res: Dispatcher.ResponseData,
  spec: RequestSpec,
  body: BoundedBody,
  billed: number | undefined,
): unknown {
  try {
    return JSON.parse(body.text);
  } catch (e: unknown) {
    const safe = redactBody(body, apiKey);
    throw new AttemptFailure(
      new SchemaMismatchError({
        message: `${spec.endpoint}: answer is not JSON: ${JSON.stringify(excerpt(safe))}`,
        details: e instanceof Error ? e.message : String(e),
        endpoint: spec.endpoint,
        path: '(root)',
        status: res.statusCode,
        rawBody: safe,
      }),
      { kind: 'invalid-answer' },
      billed,
    );
  }
}

/** The parsed body checked against `schema`; an Error object in a 2xx is an error all the same. */
function validateAnswer<S extends z.ZodType>(
  apiKey: string,
  res: Dispatcher.ResponseData,
  spec: RequestSpec,
  body: BoundedBody,
  json: unknown,
  schema: S,
  billed: number | undefined,
): z.output<S> {
  if (ErrorBodySchema.safeParse(json).success) {
    // Some other 2xx carrying an Error object: an error all the same.
    const error = errorFromResponse({
      status: res.statusCode,
      body: redactBody(body, apiKey),
      endpoint: spec.endpoint,
    });
    throw new AttemptFailure(error, { kind: 'answered', status: res.statusCode, errorBody: true }, billed);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    throw new AttemptFailure(
      schemaMismatchFromZod(spec.endpoint, parsed.error, redactBody(body, apiKey), res.statusCode),
      { kind: 'invalid-answer' },
      billed,
    );
  }
  return parsed.data as z.output<S>;
}
