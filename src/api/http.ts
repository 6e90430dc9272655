/**
 * The transport under the typed client: one undici request per attempt, answers mapped to
 * ApiErrors by the single factory (`errorFromResponse`), 2xx bodies parsed with their zod
 * schema, and the retry rules of `retry.ts` applied around it all.
 *
 * The API key goes out in the `x-api-key` header and nowhere else: it is not part of any URL,
 * log line or error (and an error whose text somehow holds it, say a server echoing the key
 * back, has it replaced before it leaves this module).
 */
import { performance } from 'node:perf_hooks';
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { z } from 'zod';
import {
  AbortedError,
  ApiError,
  errorFromResponse,
  parseRetryAfter,
  SchemaMismatchError,
  schemaMismatchFromZod,
  toApiError,
} from './errors.ts';
import { decideRetry, type AttemptOutcome, type RequestKind, type RetryPolicy } from './retry.ts';
import { ErrorBodySchema } from './schemas.ts';
import type { Logger } from '../log.ts';

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
  /** the answer's `Retry-After`, in milliseconds (a 429 or 503 that says when to come back) */
  retryAfterMs?: number | undefined;
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
  retry: RetryPolicy;
  log: Logger;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  random: () => number;
  onRequest?: ((e: RequestEvent) => void) | undefined;
  beforeRequest?: ((signal?: AbortSignal) => Promise<void>) | undefined;
}

export type QueryValue = string | number | boolean | undefined;

export interface RequestSpec {
  method: 'GET' | 'POST';
  /** the endpoint template for errors and logs (no IDs, no query) */
  endpoint: string;
  /** path below the base URL, starting with `/`, segments already encoded */
  path: string;
  /** query parameters; undefined values are left out */
  query?: Readonly<Record<string, QueryValue>> | undefined;
  /** a raw query string (`skip=20`) used as is, for URLs the server handed back */
  rawSearch?: string | undefined;
  /** JSON body (POST) */
  body?: unknown;
  kind: RequestKind;
  signal?: AbortSignal | undefined;
}

export interface JsonAnswer<T> {
  status: number;
  data: T;
}

export interface StreamAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** the undici body stream; the caller must consume or destroy it */
  body: Readable;
}

export interface Http {
  requestJson<S extends z.ZodType>(spec: RequestSpec, schema: S): Promise<JsonAnswer<z.output<S>>>;
  openStream(spec: RequestSpec): Promise<StreamAnswer>;
  /** the URL a path below the base resolves to (no query): for checking server-given URLs */
  urlOf(path: string): URL;
}

/** How much of a raw body an error message quotes (the full body stays in `rawBody`). */
const MESSAGE_BODY_EXCERPT_CHARS = 200;

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
  ) {
    super(error.message);
  }
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

function isErrorBody(text: string): boolean {
  try {
    return ErrorBodySchema.safeParse(JSON.parse(text)).success;
  } catch {
    return false;
  }
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

function buildSearch(query: RequestSpec['query'], rawSearch: string | undefined): string {
  if (rawSearch !== undefined) return rawSearch.replace(/^\?/, '');
  if (query === undefined) return '';
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined) params.append(k, String(v));
  }
  return params.toString();
}

export function createHttp(opts: HttpOptions): Http {
  const base = new URL(opts.baseUrl);
  const origin = base.origin;
  const basePath = base.pathname.replace(/\/+$/, '');
  const headersBase: Record<string, string> = {
    accept: 'application/json',
    'x-api-key': opts.apiKey,
  };

  function pathWithQuery(spec: RequestSpec): string {
    const search = buildSearch(spec.query, spec.rawSearch);
    return `${basePath}${spec.path}${search === '' ? '' : `?${search}`}`;
  }

  /** Send one attempt and return the answer head; transport errors become AttemptFailures. */
  async function send(spec: RequestSpec): Promise<Dispatcher.ResponseData> {
    const headers: Record<string, string> = { ...headersBase };
    let body: string | undefined;
    if (spec.body !== undefined) {
      body = JSON.stringify(spec.body);
      headers['content-type'] = 'application/json';
    }
    try {
      return await opts.dispatcher.request({
        origin,
        path: pathWithQuery(spec),
        method: spec.method,
        headers,
        body,
        signal: spec.signal ?? null,
        headersTimeout: opts.headersTimeoutMs,
        bodyTimeout: opts.bodyTimeoutMs,
      });
    } catch (e: unknown) {
      throw transportFailure(e, spec.endpoint, spec.signal);
    }
  }

  async function readText(res: Dispatcher.ResponseData, spec: RequestSpec): Promise<string> {
    try {
      return await res.body.text();
    } catch (e: unknown) {
      throw bodyFailure(e, spec.endpoint, spec.signal);
    }
  }

  /** A non-2xx answer, or a 206: always an error. Reads the (small) error body. */
  async function errorAnswer(res: Dispatcher.ResponseData, spec: RequestSpec): Promise<AttemptFailure> {
    const text = await readText(res, spec);
    const retryAfterMs = parseRetryAfter(res.headers['retry-after']);
    const error = errorFromResponse({ status: res.statusCode, body: text, endpoint: spec.endpoint, retryAfterMs });
    return new AttemptFailure(error, {
      kind: 'answered',
      status: res.statusCode,
      errorBody: isErrorBody(text),
      retryAfterMs,
    });
  }

  function isSuccess(status: number): boolean {
    // 206 is the interface's `transcript-unavailable`: a 2xx whose body is an Error object.
    return status >= 200 && status < 300 && status !== 206;
  }

  /** A metrics hook that throws must not turn a good answer into a failure. */
  function emit(e: RequestEvent): void {
    if (opts.onRequest === undefined) return;
    try {
      opts.onRequest(e);
    } catch (err: unknown) {
      opts.log.warn({ endpoint: e.endpoint, err }, 'onRequest hook failed');
    }
  }

  async function withRetries<T extends { status: number }>(spec: RequestSpec, attemptOnce: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      if (opts.beforeRequest !== undefined) {
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
      const started = performance.now();
      let failure: AttemptFailure;
      try {
        const answer = await attemptOnce();
        const durationMs = performance.now() - started;
        emit({ endpoint: spec.endpoint, method: spec.method, status: answer.status, attempt, durationMs });
        opts.log.debug({ endpoint: spec.endpoint, status: answer.status, attempt, durationMs }, 'upstream request');
        return answer;
      } catch (e: unknown) {
        failure = e instanceof AttemptFailure ? e : transportFailure(e, spec.endpoint, spec.signal);
      }
      const durationMs = performance.now() - started;
      const { error, outcome } = failure;
      emit({
        endpoint: spec.endpoint,
        method: spec.method,
        status: error.status,
        attempt,
        durationMs,
        errorCode: error.code,
        retryAfterMs: error.retryAfterMs,
      });
      const decision = decideRetry(spec.kind, outcome, attempt, opts.retry, opts.random);
      if (!decision.retry) {
        opts.log.debug(
          { endpoint: spec.endpoint, status: error.status, attempt, durationMs, code: error.code, reason: decision.reason },
          'upstream request failed',
        );
        throw scrubSecret(error, opts.apiKey);
      }
      opts.log.warn(
        { endpoint: spec.endpoint, attempt, delayMs: decision.delayMs, code: error.code, status: error.status, durationMs: Math.round(durationMs) },
        'upstream request retry',
      );
      try {
        await opts.sleep(decision.delayMs, spec.signal);
      } catch (e: unknown) {
        throw new AbortedError({ message: `${spec.endpoint}: aborted`, endpoint: spec.endpoint, cause: e });
      }
      if (spec.signal?.aborted) {
        throw new AbortedError({ message: `${spec.endpoint}: aborted`, endpoint: spec.endpoint });
      }
    }
  }

  async function requestJson<S extends z.ZodType>(spec: RequestSpec, schema: S): Promise<JsonAnswer<z.output<S>>> {
    return withRetries(spec, async () => {
      const res = await send(spec);
      if (!isSuccess(res.statusCode)) throw await errorAnswer(res, spec);
      const text = await readText(res, spec);
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch (e: unknown) {
        throw new AttemptFailure(
          new SchemaMismatchError({
            message: `${spec.endpoint}: answer is not JSON: ${JSON.stringify(excerpt(text))}`,
            details: e instanceof Error ? e.message : String(e),
            endpoint: spec.endpoint,
            path: '(root)',
            status: res.statusCode,
            rawBody: text,
          }),
          { kind: 'invalid-answer' },
        );
      }
      if (ErrorBodySchema.safeParse(json).success) {
        // Some other 2xx carrying an Error object: an error all the same.
        const error = errorFromResponse({ status: res.statusCode, body: text, endpoint: spec.endpoint });
        throw new AttemptFailure(error, { kind: 'answered', status: res.statusCode, errorBody: true });
      }
      const parsed = schema.safeParse(json);
      if (!parsed.success) {
        throw new AttemptFailure(schemaMismatchFromZod(spec.endpoint, parsed.error, text, res.statusCode), {
          kind: 'invalid-answer',
        });
      }
      return { status: res.statusCode, data: parsed.data as z.output<S> };
    });
  }

  async function openStream(spec: RequestSpec): Promise<StreamAnswer> {
    return withRetries(spec, async () => {
      const res = await send(spec);
      if (!isSuccess(res.statusCode)) throw await errorAnswer(res, spec);
      return { status: res.statusCode, headers: res.headers, body: res.body };
    });
  }

  function urlOf(path: string): URL {
    return new URL(`${origin}${basePath}${path}`);
  }

  return { requestJson, openStream, urlOf };
}
