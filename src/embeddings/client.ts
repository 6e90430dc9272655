/**
 * The embeddings client: one `POST {base}/embeddings` per call, in the OpenAI wire format
 * (`wire.ts`), over undici (issue #32). It never retries on its own: the embedder decides (a 429
 * pauses every embedding for its `Retry-After`, a 5xx backs off), and `embedQuery` retries a
 * query's one text. Errors are `EmbeddingsError`s with a stable `code`; the API key travels only
 * in the `authorization` header and is in no message.
 *
 * The API for search (issue #32 part 2): `createEmbeddingsClient(config.embeddings)` and
 * `embedQuery(client, text)`, the vector to compare with `embeddings.embedding` of rows whose
 * `model` is `client.model` (`src/db/embeddings.ts`).
 */
import { request } from 'undici';
import { backoffDelayMs, sleepMs } from '../api/retry.ts';
import { EmbeddingsErrorSchema, EmbeddingsResponseSchema, type EmbeddingsRequest } from './wire.ts';

/** What went wrong with a call, as callers branch on it. */
export const EMBEDDINGS_ERROR_CODES = [
  /** 429: wait `retryAfterMs` (every caller: the limit is the account's) */
  'rate-limited',
  /** 5xx: the provider failed and billed nothing; try again later */
  'unavailable',
  /** the request never left (connection refused, DNS): nothing was billed */
  'not-sent',
  /** the connection failed or timed out after the request may have arrived (maybe billed) */
  'lost',
  /** 401/403: the key */
  'unauthorized',
  /** another 4xx: asking again gives the same answer */
  'rejected',
  /** a 2xx that is not the wire format, or not one vector per input */
  'invalid-answer',
  /** the caller aborted */
  'aborted',
] as const;
export type EmbeddingsErrorCode = (typeof EMBEDDINGS_ERROR_CODES)[number];

const RETRYABLE: ReadonlySet<EmbeddingsErrorCode> = new Set(['rate-limited', 'unavailable', 'not-sent', 'lost']);

export class EmbeddingsError extends Error {
  readonly code: EmbeddingsErrorCode;
  readonly status: number | undefined;
  /** from `retry-after-ms` or `Retry-After`, when the provider said */
  readonly retryAfterMs: number | undefined;
  constructor(
    code: EmbeddingsErrorCode,
    message: string,
    init: { status?: number | undefined; retryAfterMs?: number | undefined; cause?: unknown } = {},
  ) {
    super(message, { cause: init.cause });
    this.name = 'EmbeddingsError';
    this.code = code;
    this.status = init.status;
    this.retryAfterMs = init.retryAfterMs;
  }
  /** a later attempt may succeed */
  get retryable(): boolean {
    return RETRYABLE.has(this.code);
  }
}

export interface EmbeddingsClientOptions {
  /** `https://api.openai.com/v1`: requests go to `{baseUrl}/embeddings` */
  baseUrl: string;
  model: string;
  /** sent as `dimensions` when set */
  dimensions?: number | undefined;
  apiKey?: string | undefined;
  timeoutMs: number;
}

export interface EmbeddingsResult {
  /** one per input, in the inputs' order */
  vectors: number[][];
  /** tokens the provider billed (its `usage.total_tokens`) */
  tokens: number;
}

export interface EmbeddingsClient {
  readonly model: string;
  readonly dimensions: number | undefined;
  embed(inputs: readonly string[], opts?: { signal?: AbortSignal }): Promise<EmbeddingsResult>;
}

/** A `retry-after-ms` (OpenAI's) or `Retry-After` (seconds or a date), in ms. */
export function retryAfterMsOf(headers: Record<string, string | string[] | undefined>): number | undefined {
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const ms = Number(first(headers['retry-after-ms']));
  if (first(headers['retry-after-ms']) !== undefined && Number.isFinite(ms) && ms >= 0) return ms;
  const ra = first(headers['retry-after']);
  if (ra === undefined) return undefined;
  const s = Number(ra);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const at = Date.parse(ra);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/**
 * The most an answer may hold: a vector of 4 096 dimensions written as JSON floats is under 100 KB,
 * so these leave room for any real provider while a hostile or broken one cannot fill memory.
 */
export const ANSWER_MAX_BYTES_BASE = 1024 * 1024;
export const ANSWER_MAX_BYTES_PER_INPUT = 256 * 1024;
/** An error answer's body is read up to this much (its message is all that is kept). */
export const ERROR_BODY_MAX_BYTES = 64 * 1024;

/** The body as text, or null when it is longer than `maxBytes` (the rest is not read). */
async function readAtMost(
  body: AsyncIterable<Buffer> & { destroy(): unknown },
  maxBytes: number,
): Promise<string | null> {
  const parts: Buffer[] = [];
  let bytes = 0;
  for await (const part of body) {
    bytes += part.length;
    if (bytes > maxBytes) {
      body.destroy();
      return null;
    }
    parts.push(part);
  }
  return Buffer.concat(parts).toString('utf8');
}

const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT', 'EHOSTUNREACH']);

function errorOfFailure(err: unknown, signal: AbortSignal | undefined): EmbeddingsError {
  if (signal?.aborted) return new EmbeddingsError('aborted', 'embeddings request aborted', { cause: err });
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && NOT_SENT_CODES.has(code)) {
    return new EmbeddingsError('not-sent', `embeddings provider unreachable (${code})`, { cause: err });
  }
  const what = typeof code === 'string' ? code : err instanceof Error ? err.name : 'error';
  return new EmbeddingsError('lost', `embeddings request failed after sending (${what})`, { cause: err });
}

function errorOfStatus(status: number, body: string, retryAfterMs: number | undefined): EmbeddingsError {
  let said = '';
  try {
    const parsed = EmbeddingsErrorSchema.safeParse(JSON.parse(body));
    if (parsed.success) said = `: ${parsed.data.error.message.slice(0, 200)}`;
  } catch {
    // not JSON (a gateway's page): the status says enough
  }
  const code: EmbeddingsErrorCode =
    status === 429
      ? 'rate-limited'
      : status >= 500
        ? 'unavailable'
        : status === 401 || status === 403
          ? 'unauthorized'
          : 'rejected';
  return new EmbeddingsError(code, `embeddings provider answered ${status}${said}`, { status, retryAfterMs });
}

export function createEmbeddingsClient(opts: EmbeddingsClientOptions): EmbeddingsClient {
  const url = `${opts.baseUrl.replace(/\/+$/, '')}/embeddings`;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.apiKey !== undefined) headers.authorization = `Bearer ${opts.apiKey}`;
  return {
    model: opts.model,
    dimensions: opts.dimensions,
    async embed(inputs, o = {}) {
      const body: EmbeddingsRequest = { input: [...inputs], model: opts.model, encoding_format: 'float' };
      if (opts.dimensions !== undefined) body.dimensions = opts.dimensions;
      const deadline = AbortSignal.timeout(opts.timeoutMs);
      const signal = o.signal ? AbortSignal.any([o.signal, deadline]) : deadline;
      let status: number;
      let text: string | null;
      let retryAfterMs: number | undefined;
      const maxBytes = ANSWER_MAX_BYTES_BASE + inputs.length * ANSWER_MAX_BYTES_PER_INPUT;
      try {
        const res = await request(url, { method: 'POST', headers, body: JSON.stringify(body), signal });
        status = res.statusCode;
        retryAfterMs = retryAfterMsOf(res.headers);
        const ok = status >= 200 && status < 300;
        text = await readAtMost(res.body, ok ? maxBytes : ERROR_BODY_MAX_BYTES);
      } catch (err: unknown) {
        throw errorOfFailure(err, o.signal);
      }
      if (status < 200 || status >= 300) throw errorOfStatus(status, text ?? '', retryAfterMs);
      if (text === null) {
        throw new EmbeddingsError(
          'invalid-answer',
          `embeddings answer is larger than ${maxBytes} bytes for ${inputs.length} input(s); not read further`,
        );
      }
      return resultOf(text, inputs.length, opts.dimensions);
    },
  };
}

function resultOf(text: string, inputs: number, dimensions: number | undefined): EmbeddingsResult {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err: unknown) {
    throw new EmbeddingsError('invalid-answer', 'embeddings answer is not JSON', { cause: err });
  }
  const r = EmbeddingsResponseSchema.safeParse(json);
  if (!r.success) {
    const path = r.error.issues[0]?.path.join('.') ?? '';
    throw new EmbeddingsError(
      'invalid-answer',
      `embeddings answer does not match the wire format at ${path || 'its root'}`,
    );
  }
  const vectors = new Array<number[] | undefined>(inputs);
  for (const d of r.data.data) if (d.index < inputs) vectors[d.index] = d.embedding;
  const dims = vectors[0]?.length;
  if (vectors.some((v) => v === undefined || v.length !== dims || v.length === 0)) {
    throw new EmbeddingsError(
      'invalid-answer',
      `embeddings answer lacks a vector for some of its ${inputs} inputs, or mixes lengths`,
    );
  }
  if (dimensions !== undefined && dims !== dimensions) {
    throw new EmbeddingsError('invalid-answer', `embeddings answer has ${dims} dimensions, asked for ${dimensions}`);
  }
  return { vectors: vectors as number[][], tokens: r.data.usage.total_tokens };
}

/** Attempts of `embedQuery`, and the longest wait between two: someone waits for the answer. */
export const QUERY_ATTEMPTS = 3;
export const QUERY_RETRY_MAX_DELAY_MS = 5_000;

/**
 * The vector of a search query, with the tokens the provider billed for it, with the configured
 * provider: retried (a 429 after its `Retry-After`, when at most QUERY_RETRY_MAX_DELAY_MS; a 5xx
 * or a lost connection after a short backoff) up to QUERY_ATTEMPTS times.
 */
export async function embedQuery(
  client: EmbeddingsClient,
  text: string,
  opts: { signal?: AbortSignal } = {},
): Promise<{ vector: number[]; tokens: number }> {
  for (let attempt = 1; ; attempt++) {
    try {
      const r = await client.embed([text], opts);
      return { vector: r.vectors[0]!, tokens: r.tokens };
    } catch (err: unknown) {
      if (!(err instanceof EmbeddingsError) || !err.retryable || attempt >= QUERY_ATTEMPTS) throw err;
      const wait =
        err.retryAfterMs ??
        backoffDelayMs(
          attempt,
          { maxAttempts: QUERY_ATTEMPTS, baseDelayMs: 250, maxDelayMs: QUERY_RETRY_MAX_DELAY_MS },
          Math.random,
        );
      if (wait > QUERY_RETRY_MAX_DELAY_MS) throw err;
      await sleepMs(wait, opts.signal);
    }
  }
}
