/**
 * One error base class for everything the upstream interface (or the way to it) can do wrong.
 * Callers branch on the class or on `code`, never on message text.
 *
 * `errorFromResponse` is the single factory that maps an HTTP answer to an error; `toApiError`
 * normalises anything caught. Messages never contain the API key: they are built from the
 * endpoint template, the status and the server's own words, never from request headers.
 */
import type { z } from 'zod';
import { firstIssue, formatIssuePath } from './issues.ts';
import { API_ERROR_CODES, ErrorBodySchema, type ApiErrorCode } from './schemas.ts';

/**
 * Codes raised locally, beside the interface's own. `gateway-forbidden`: a 403 whose body is not
 * the interface's Error object (see GatewayForbiddenError).
 */
export const LOCAL_ERROR_CODES = ['schema-mismatch', 'timeout', 'network', 'aborted', 'gateway-forbidden'] as const;
export type LocalErrorCode = (typeof LOCAL_ERROR_CODES)[number];
export type ErrorCode = ApiErrorCode | LocalErrorCode;

/**
 * Most characters of a body an error keeps in `rawBody` (2 KiB): errors end up in logs (pino
 * serialises their fields) and in `--json` output, and a body can be megabytes.
 */
export const RAW_BODY_PREFIX_CHARS = 2_048;

/** At most `RAW_BODY_PREFIX_CHARS` of `text`, never ending in half a surrogate pair. */
function rawBodyPrefix(text: string): string {
  if (text.length <= RAW_BODY_PREFIX_CHARS) return text;
  const cut = text.slice(0, RAW_BODY_PREFIX_CHARS);
  const last = cut.charCodeAt(cut.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut;
}

/** HTTP status of each error code (UPSTREAM.md). */
export const STATUS_OF_CODE: Readonly<Record<ApiErrorCode, number>> = {
  'invalid-request': 400,
  unauthorized: 401,
  'upgrade-required': 402,
  forbidden: 403,
  'not-found': 404,
  'limit-exceeded': 429,
  'transcript-unavailable': 206,
  'internal-error': 500,
};

export interface ApiErrorInit {
  message: string;
  /** HTTP status of the answer, when there was one. */
  status?: number | undefined;
  /** the Error object's `details`, or a local explanation */
  details?: string | undefined;
  documentationUrl?: string | undefined;
  /** `METHOD /path/{template}`: which endpoint, without IDs or query values */
  endpoint?: string | undefined;
  /** the answer's body, raw, when it could not be understood (kept: its first 2 KiB) */
  rawBody?: string | undefined;
  /** the answer's body was a valid Error object (see `ApiError.errorBody`); default false */
  errorBody?: boolean | undefined;
  /** from `Retry-After`, in milliseconds */
  retryAfterMs?: number | undefined;
  /** for `invalid-request` raised locally and `schema-mismatch`: the failing field */
  path?: string | undefined;
  cause?: unknown;
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number | undefined;
  readonly details: string | undefined;
  readonly documentationUrl: string | undefined;
  readonly endpoint: string | undefined;
  /**
   * The first `RAW_BODY_PREFIX_CHARS` (2 KiB) of an answer body that could not be understood
   * (not JSON, not an Error object, or failing its schema); undefined otherwise. Only a prefix,
   * so a log line never carries a whole body.
   */
  readonly rawBody: string | undefined;
  /** true when `rawBody` holds only the start of a longer body */
  readonly rawBodyTruncated: boolean;
  /**
   * True when the answer's body was a valid Error object of the interface: the API itself said
   * this (a JSON `not-found` for a job it no longer knows). False for a status with any other
   * body (a gateway's HTML or bare 404, an empty body; `rawBody` then holds it) and for local
   * errors. For an error made by `errorFromResponse`, `errorBody === (rawBody === undefined)`.
   */
  readonly errorBody: boolean;
  /** from `Retry-After`, in milliseconds, already bounded by the client's `retryAfterMaxMs` */
  readonly retryAfterMs: number | undefined;
  readonly path: string | undefined;

  constructor(code: ErrorCode, init: ApiErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = init.status;
    this.details = init.details;
    this.documentationUrl = init.documentationUrl;
    this.endpoint = init.endpoint;
    this.rawBody = init.rawBody === undefined ? undefined : rawBodyPrefix(init.rawBody);
    this.rawBodyTruncated = init.rawBody !== undefined && this.rawBody !== init.rawBody;
    this.errorBody = init.errorBody ?? false;
    this.retryAfterMs = init.retryAfterMs;
    this.path = init.path;
  }

  /** A plain object for logs and `--json` output. */
  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      status: this.status,
      endpoint: this.endpoint,
      details: this.details,
      path: this.path,
      retryAfterMs: this.retryAfterMs,
      errorBody: this.errorBody,
      rawBody: this.rawBody,
      rawBodyTruncated: this.rawBodyTruncated || undefined,
    };
  }
}

type Init = Omit<ApiErrorInit, never>;

export class InvalidRequestError extends ApiError {
  constructor(init: Init) {
    super('invalid-request', init);
  }
}
export class UnauthorizedError extends ApiError {
  constructor(init: Init) {
    super('unauthorized', init);
  }
}
export class UpgradeRequiredError extends ApiError {
  constructor(init: Init) {
    super('upgrade-required', init);
  }
}
export class ForbiddenError extends ApiError {
  constructor(init: Init) {
    super('forbidden', init);
  }
}
/**
 * A 403 whose body is not the interface's Error object: a gateway in front of the API refusing
 * the request (it has been seen answering a bad key so, with an HTML page), not the API saying a
 * video is restricted. Not a ForbiddenError on purpose: what it means is for a free `GET /me` to
 * tell (refused: the key is bad, `unauthorized`; answered: a passing upstream fault), so nothing
 * is marked forbidden and no key is held on its word alone. `rawBody` holds the body.
 */
export class GatewayForbiddenError extends ApiError {
  constructor(init: Init) {
    super('gateway-forbidden', init);
  }
}
export class NotFoundError extends ApiError {
  constructor(init: Init) {
    super('not-found', init);
  }
}
/** 429: a rate limit or an exhausted quota; `/me` tells which. */
export class LimitExceededError extends ApiError {
  constructor(init: Init) {
    super('limit-exceeded', init);
  }
}
/** A 2xx (206) whose body is an Error object. */
export class TranscriptUnavailableError extends ApiError {
  constructor(init: Init) {
    super('transcript-unavailable', init);
  }
}
/** Any 5xx, also from gateways with a non-JSON body. */
export class InternalError extends ApiError {
  constructor(init: Init) {
    super('internal-error', init);
  }
}
/** An answer that does not match its schema; carries the failing path and the raw body. */
export class SchemaMismatchError extends ApiError {
  constructor(init: Init) {
    super('schema-mismatch', init);
  }
}
export class TimeoutError extends ApiError {
  constructor(init: Init) {
    super('timeout', init);
  }
}
export class NetworkError extends ApiError {
  /** true when the request certainly never reached the server (connection refused, DNS) */
  readonly notSent: boolean;
  constructor(init: Init & { notSent?: boolean }) {
    super('network', init);
    this.notSent = init.notSent ?? false;
  }
}
export class AbortedError extends ApiError {
  constructor(init: Init) {
    super('aborted', init);
  }
}

const CLASS_OF_CODE: Readonly<Record<ApiErrorCode, new (init: Init) => ApiError>> = {
  'invalid-request': InvalidRequestError,
  unauthorized: UnauthorizedError,
  'upgrade-required': UpgradeRequiredError,
  forbidden: ForbiddenError,
  'not-found': NotFoundError,
  'limit-exceeded': LimitExceededError,
  'transcript-unavailable': TranscriptUnavailableError,
  'internal-error': InternalError,
};

/** The error code an HTTP status means when the body does not say (UPSTREAM.md). */
export function codeOfStatus(status: number): ApiErrorCode {
  if (status >= 500) return 'internal-error';
  for (const code of API_ERROR_CODES) {
    if (STATUS_OF_CODE[code] === status) return code;
  }
  return status === 206 ? 'transcript-unavailable' : 'invalid-request';
}

/** Parse a `Retry-After` header (delta-seconds or an HTTP date) into milliseconds. */
export function parseRetryAfter(value: string | string[] | undefined, nowMs = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v.trim() === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(v.trim())) return Math.round(Number(v.trim()) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

export interface ResponseFacts {
  status: number;
  /** the body as text (possibly empty, possibly not JSON) */
  body: string;
  endpoint: string;
  /** from `Retry-After`, in milliseconds, already bounded by the caller */
  retryAfterMs?: number | undefined;
}

/**
 * The single factory: an HTTP answer that is an error (any non-2xx, or a 2xx whose body is an
 * Error object) becomes the ApiError subclass of its code. The code comes from the body when the
 * body is a valid Error object, else from the status; a gateway's HTML 502 is an InternalError
 * carrying the raw body.
 *
 * `errorBody` is true and `rawBody` undefined exactly when the body was a valid Error object; so
 * a JSON `not-found` (the API does not know the job) and a gateway's bare 404 are both
 * NotFoundErrors, told apart by `errorBody`. A 403 without an Error object is the one status read
 * otherwise: a GatewayForbiddenError, never a ForbiddenError (a restricted video).
 */
export function errorFromResponse(facts: ResponseFacts): ApiError {
  let parsed: z.infer<typeof ErrorBodySchema> | undefined;
  try {
    const r = ErrorBodySchema.safeParse(JSON.parse(facts.body));
    if (r.success) parsed = r.data;
  } catch {
    parsed = undefined;
  }
  const code = parsed?.error ?? codeOfStatus(facts.status);
  const gateway = parsed === undefined && facts.status === STATUS_OF_CODE.forbidden;
  const Cls = gateway ? GatewayForbiddenError : CLASS_OF_CODE[code];
  const what = parsed ? `${parsed.message}` : facts.body.trim() === '' ? 'empty body' : 'body is not an Error object';
  return new Cls({
    message: `${facts.endpoint}: ${facts.status} ${gateway ? 'gateway-forbidden' : code}: ${what}`,
    status: facts.status,
    details: parsed?.details,
    documentationUrl: parsed?.documentationUrl,
    endpoint: facts.endpoint,
    rawBody: parsed ? undefined : facts.body,
    errorBody: parsed !== undefined,
    retryAfterMs: facts.retryAfterMs,
  });
}

/** An `invalid-request` raised locally, before sending, naming the field. */
export function invalidRequestFromZod(endpoint: string, error: z.ZodError): InvalidRequestError {
  const issue = error.issues[0];
  const path = issue ? formatIssuePath(issue.path) : '(root)';
  return new InvalidRequestError({
    message: `${endpoint}: invalid request: ${firstIssue(error)}`,
    details: error.issues.map((i) => `${formatIssuePath(i.path)}: ${i.message}`).join('; '),
    endpoint,
    path,
  });
}

/** A 2xx answer that does not match its schema. */
export function schemaMismatchFromZod(
  endpoint: string,
  error: z.ZodError,
  rawBody: string,
  status: number,
): SchemaMismatchError {
  const issue = error.issues[0];
  const path = issue ? formatIssuePath(issue.path) : '(root)';
  return new SchemaMismatchError({
    message: `${endpoint}: answer does not match the interface at ${firstIssue(error)}`,
    details: error.issues
      .slice(0, 10)
      .map((i) => `${formatIssuePath(i.path)}: ${i.message}`)
      .join('; '),
    endpoint,
    path,
    status,
    rawBody,
  });
}

/** Normalise anything caught into an ApiError (unknown errors become `network`). */
export function toApiError(e: unknown, endpoint?: string): ApiError {
  if (e instanceof ApiError) return e;
  const err = e instanceof Error ? e : new Error(String(e));
  const code = (err as { code?: unknown }).code;
  if (err.name === 'AbortError' || code === 'ABORT_ERR') {
    return new AbortedError({ message: `${endpoint ?? 'request'}: aborted`, endpoint, cause: err });
  }
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return new TimeoutError({
      message: `${endpoint ?? 'request'}: timed out (${String(code)})`,
      endpoint,
      cause: err,
    });
  }
  const notSent = code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN';
  return new NetworkError({
    message: `${endpoint ?? 'request'}: ${typeof code === 'string' ? code : 'network error'}: ${err.message}`,
    endpoint,
    notSent,
    cause: err,
  });
}

export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}
