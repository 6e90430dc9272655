/**
 * The embeddings twin: a small OpenAI-compatible `/v1/embeddings` server of our own, so that tests,
 * the benchmark and the demo embed offline, over real HTTP, deterministically (issue #32). It
 * speaks the wire format of `wire.ts`, counts tokens as the passages do (cl100k_base), limits
 * requests and tokens per minute (429 with `Retry-After` and `retry-after-ms`, as OpenAI does),
 * and fails on demand: scripted answers per request (a status, a reset before or after the work)
 * and whole outages (nothing listens for a while). Its vectors carry meaning (`twin-vectors.ts`).
 *
 *   const twin = await startEmbeddingsTwin({ rateLimit: { requestsPerMinute: 600 } });
 *   // EMBEDDINGS_BASE_URL=twin.baseUrl
 *   twin.script([{ status: 500 }, { status: 429, retryAfterMs: 2000 }]);
 *   twin.stats().inputsAnswered;
 *   await twin.close();
 *
 * Its admin API (no key) under `/__admin/`: `GET stats`, `POST script` `{steps}`, `POST down`
 * `{ms}`, `POST rate-limit` `{requestsPerMinute, tokensPerMinute}`, `POST reset`.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { z } from 'zod';
import { tokenCount } from '../domain/passages.ts';
import type { Logger } from '../log.ts';
import { silentLogger } from '../log.ts';
import { twinVector } from './twin-vectors.ts';
import { EmbeddingsRequestSchema, type EmbeddingsErrorBody, type EmbeddingsResponse } from './wire.ts';

export const DEFAULT_TWIN_HOST = '127.0.0.1';
export const DEFAULT_TWIN_PORT = 8789;
/** Dimensions of a vector when the request names none (small: tests store thousands). */
export const TWIN_DEFAULT_DIMENSIONS = 256;
/** Inputs one request may carry (OpenAI's limit). */
export const TWIN_MAX_INPUTS = 2048;
/** Largest request body read, bytes. */
const TWIN_MAX_BODY_BYTES = 32 * 1024 * 1024;
/** A bucket holds this many seconds of its per-minute limit: a quiet client may burst that much. */
export const TWIN_BURST_S = 10;

export const TwinRateLimitSchema = z
  .object({
    requestsPerMinute: z.number().positive().optional(),
    tokensPerMinute: z.number().positive().optional(),
    /** seconds' worth a quiet client may burst (default TWIN_BURST_S); a measure of the sustained rate wants few */
    burstSeconds: z.number().positive().optional(),
  })
  .strict();
export type TwinRateLimit = z.infer<typeof TwinRateLimitSchema>;

/** What the twin does with one request instead of its usual answer (taken in order, one per request). */
export const TwinStepSchema = z
  .object({
    /** answer this status with an OpenAI error object (a 429 carries `retryAfterMs`) */
    status: z.number().int().min(400).max(599).optional(),
    retryAfterMs: z.number().int().min(0).optional(),
    /** drop the connection without answering: `before` the work, or `after` it (paid, never received) */
    reset: z.enum(['before', 'after']).optional(),
  })
  .strict();
export type TwinStep = z.infer<typeof TwinStepSchema>;

export interface EmbeddingsTwinOptions {
  port?: number;
  host?: string;
  /** the bearer token it requires; undefined: none */
  apiKey?: string | undefined;
  defaultDimensions?: number;
  /** the model's context: a request with an input of more tokens is refused (400), as a provider refuses it */
  maxInputTokens?: number;
  rateLimit?: TwinRateLimit;
  /** delay before every answer, ms */
  latencyMs?: number;
  /** told of every request to /v1/embeddings answered (a test orders them in time) */
  onAnswer?: (a: TwinAnswer) => void;
  logger?: Logger;
}

export interface TwinStats {
  /** requests to /v1/embeddings, whatever their answer */
  requests: number;
  byStatus: Record<string, number>;
  /** inputs of the requests answered 200: what a provider bills */
  inputsAnswered: number;
  /** tokens of the requests answered 200 */
  tokensAnswered: number;
  /** inputs answered 200 more than once (same model, same text): paid twice */
  inputsRepeated: number;
  /** requests refused by the rate limit */
  rateLimited: number;
  /** the most requests to /v1/embeddings it held at once, from reading to answering */
  maxInFlight: number;
}

/** One request to /v1/embeddings as the twin saw it. */
export interface TwinAnswer {
  status: number;
  /** epoch ms */
  receivedAt: number;
  answeredAt: number;
}

export interface EmbeddingsTwin {
  /** `http://host:port/v1`: EMBEDDINGS_BASE_URL */
  baseUrl: string;
  port: number;
  stats(): TwinStats;
  /** scripted answers for the next requests, in order */
  script(steps: TwinStep[]): void;
  setRateLimit(limit: TwinRateLimit): void;
  /** stop listening (connections refused) for `ms`, then listen again on the same port */
  down(ms: number): Promise<void>;
  resetStats(): void;
  close(): Promise<void>;
}

class Bucket {
  private level: number;
  private last = Date.now();
  constructor(
    private perMinute: number,
    private burstS: number,
  ) {
    this.level = this.capacity();
  }
  capacity(): number {
    return Math.max(1, (this.perMinute * this.burstS) / 60);
  }
  /** takes `n` and returns 0, or returns the ms until `n` (at most a full bucket) is there */
  take(n: number): number {
    const now = Date.now();
    const perMs = this.perMinute / 60_000;
    this.level = Math.min(this.capacity(), this.level + (now - this.last) * perMs);
    this.last = now;
    const need = Math.min(n, this.capacity());
    if (this.level >= need) {
      this.level -= n;
      return 0;
    }
    return Math.ceil((need - this.level) / perMs);
  }
}

function openAiError(message: string, type: string, code: string | null): EmbeddingsErrorBody {
  return { error: { message, type, param: null, code } };
}

async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const b = chunk as Buffer;
    size += b.length;
    if (size <= TWIN_MAX_BODY_BYTES) chunks.push(b);
  }
  return size > TWIN_MAX_BODY_BYTES ? undefined : Buffer.concat(chunks).toString('utf8');
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

export async function startEmbeddingsTwin(opts: EmbeddingsTwinOptions = {}): Promise<EmbeddingsTwin> {
  const log = opts.logger ?? silentLogger();
  const host = opts.host ?? DEFAULT_TWIN_HOST;
  const defaultDimensions = opts.defaultDimensions ?? TWIN_DEFAULT_DIMENSIONS;
  let requestBucket: Bucket | undefined;
  let tokenBucket: Bucket | undefined;
  const setRateLimit = (l: TwinRateLimit) => {
    const burstS = l.burstSeconds ?? TWIN_BURST_S;
    requestBucket = l.requestsPerMinute === undefined ? undefined : new Bucket(l.requestsPerMinute, burstS);
    tokenBucket = l.tokensPerMinute === undefined ? undefined : new Bucket(l.tokensPerMinute, burstS);
  };
  setRateLimit(opts.rateLimit ?? {});
  const steps: TwinStep[] = [];
  const paid = new Map<string, number>();
  let stats: TwinStats;
  const resetStats = () => {
    stats = {
      requests: 0,
      byStatus: {},
      inputsAnswered: 0,
      tokensAnswered: 0,
      inputsRepeated: 0,
      rateLimited: 0,
      maxInFlight: 0,
    };
    paid.clear();
  };
  resetStats();

  const answer = (res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>) => {
    stats.byStatus[status] = (stats.byStatus[status] ?? 0) + 1;
    send(res, status, body, headers);
  };

  let inFlight = 0;
  const embeddings = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    inFlight++;
    stats.maxInFlight = Math.max(stats.maxInFlight, inFlight);
    try {
      await embeddingsAnswer(req, res);
    } finally {
      inFlight--;
    }
  };
  const embeddingsAnswer = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    stats.requests++;
    const receivedAt = Date.now();
    const reply = (...a: Parameters<typeof answer>) => {
      answer(...a);
      opts.onAnswer?.({ status: a[1], receivedAt, answeredAt: Date.now() });
    };
    const raw = await readBody(req);
    const step = steps.shift();
    if (opts.latencyMs) await new Promise((r) => setTimeout(r, opts.latencyMs));
    if (step?.reset === 'before') {
      req.socket.destroy();
      return;
    }
    if (step?.status !== undefined) {
      const headers: Record<string, string> = {};
      if (step.retryAfterMs !== undefined) {
        headers['retry-after'] = String(Math.ceil(step.retryAfterMs / 1000));
        headers['retry-after-ms'] = String(step.retryAfterMs);
      }
      const type = step.status === 429 ? 'requests' : 'server_error';
      reply(res, step.status, openAiError(`scripted ${step.status}`, type, null), headers);
      return;
    }
    if (opts.apiKey !== undefined && req.headers.authorization !== `Bearer ${opts.apiKey}`) {
      reply(res, 401, openAiError('Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key'));
      return;
    }
    let parsed: unknown;
    try {
      parsed = raw === undefined ? undefined : JSON.parse(raw);
    } catch {
      parsed = undefined;
    }
    const r = EmbeddingsRequestSchema.safeParse(parsed);
    if (!r.success) {
      const issue = r.error.issues[0];
      const where = issue ? issue.path.join('.') || 'body' : 'body';
      reply(
        res,
        400,
        openAiError(`invalid request: ${where}: ${issue?.message ?? 'not JSON'}`, 'invalid_request_error', null),
      );
      return;
    }
    const body = r.data;
    const inputs = typeof body.input === 'string' ? [body.input] : body.input;
    const dimensions = body.dimensions ?? defaultDimensions;
    if (inputs.length > TWIN_MAX_INPUTS || dimensions > 4096 || body.encoding_format === 'base64') {
      reply(
        res,
        400,
        openAiError(
          'too many inputs, dimensions, or an encoding the twin does not write',
          'invalid_request_error',
          null,
        ),
      );
      return;
    }
    const counts = inputs.map((t) => tokenCount(t));
    const tokens = counts.reduce((n, c) => n + c, 0);
    const longest = Math.max(0, ...counts);
    if (opts.maxInputTokens !== undefined && longest > opts.maxInputTokens) {
      reply(
        res,
        400,
        openAiError(
          `This model's maximum context length is ${opts.maxInputTokens} tokens, however you requested ${longest} tokens ` +
            `(${longest} in your prompt; 0 for the completion). Please reduce your prompt; or completion length.`,
          'invalid_request_error',
          null,
        ),
      );
      return;
    }
    const waitMs = Math.max(requestBucket?.take(1) ?? 0, tokenBucket?.take(tokens) ?? 0);
    if (waitMs > 0) {
      stats.rateLimited++;
      reply(res, 429, openAiError('Rate limit reached; try again later.', 'requests', 'rate_limit_exceeded'), {
        'retry-after': String(Math.ceil(waitMs / 1000)),
        'retry-after-ms': String(waitMs),
      });
      return;
    }
    const out: EmbeddingsResponse = {
      object: 'list',
      data: inputs.map((text, index) => ({
        object: 'embedding',
        index,
        embedding: twinVector(text, body.model, dimensions),
      })),
      model: body.model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    };
    stats.inputsAnswered += inputs.length;
    stats.tokensAnswered += tokens;
    for (const text of inputs) {
      const key = createHash('sha256').update(`${body.model}\u0000${text}`).digest('hex');
      const n = (paid.get(key) ?? 0) + 1;
      paid.set(key, n);
      if (n > 1) stats.inputsRepeated++;
    }
    if (step?.reset === 'after') {
      req.socket.destroy();
      return;
    }
    reply(res, 200, out);
  };

  const admin = async (req: IncomingMessage, res: ServerResponse, path: string): Promise<void> => {
    const raw = req.method === 'POST' ? await readBody(req) : undefined;
    let body: unknown;
    try {
      body = raw ? JSON.parse(raw) : {};
    } catch {
      send(res, 400, { error: 'not JSON' });
      return;
    }
    if (req.method === 'GET' && path === 'stats') return send(res, 200, stats);
    if (req.method === 'POST' && path === 'reset') {
      resetStats();
      steps.length = 0;
      return send(res, 200, { ok: true });
    }
    if (req.method === 'POST' && path === 'script') {
      const r = z
        .object({ steps: z.array(TwinStepSchema) })
        .strict()
        .safeParse(body);
      if (!r.success) return send(res, 400, { error: r.error.message });
      steps.push(...r.data.steps);
      return send(res, 200, { queued: steps.length });
    }
    if (req.method === 'POST' && path === 'rate-limit') {
      const r = TwinRateLimitSchema.safeParse(body);
      if (!r.success) return send(res, 400, { error: r.error.message });
      setRateLimit(r.data);
      return send(res, 200, r.data);
    }
    if (req.method === 'POST' && path === 'down') {
      const r = z
        .object({ ms: z.number().int().min(1).max(3_600_000) })
        .strict()
        .safeParse(body);
      if (!r.success) return send(res, 400, { error: r.error.message });
      send(res, 200, { down: r.data.ms });
      // after the answer is out: the admin's own connection goes with the rest
      res.on('finish', () => void twin.down(r.data.ms));
      return;
    }
    send(res, 404, { error: 'no such admin endpoint' });
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://twin');
    const path = url.pathname.replace(/\/+$/, '');
    const run =
      req.method === 'POST' && path === '/v1/embeddings'
        ? embeddings(req, res)
        : path.startsWith('/__admin/')
          ? admin(req, res, path.slice('/__admin/'.length))
          : Promise.resolve(send(res, 404, openAiError('not found', 'invalid_request_error', null)));
    run.catch((err: unknown) => {
      log.error({ event: 'embeddings_twin.error', err }, 'embeddings twin failed to answer');
      if (!res.headersSent) send(res, 500, openAiError('twin error', 'server_error', null));
      else res.destroy();
    });
  };

  const sockets = new Set<Socket>();
  let server: Server;
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server = createServer(handle);
      server.on('connection', (s) => {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
      });
      server.once('error', reject);
      server.listen(port, host, () => {
        const a = server.address();
        resolve(typeof a === 'object' && a ? a.port : port);
      });
    });
  const stopListening = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });

  const port = await listen(opts.port ?? 0);
  let closed = false;
  let outage: Promise<void> | undefined;
  const twin: EmbeddingsTwin = {
    baseUrl: `http://${host}:${port}/v1`,
    port,
    stats: () => structuredClone(stats),
    script: (s) => void steps.push(...s.map((x) => TwinStepSchema.parse(x))),
    setRateLimit,
    resetStats,
    async down(ms) {
      if (outage) return outage;
      outage = (async () => {
        log.info({ event: 'embeddings_twin.down', ms }, 'embeddings twin down');
        await stopListening();
        await new Promise((r) => setTimeout(r, ms));
        if (!closed) await listen(port);
        outage = undefined;
      })();
      return outage;
    },
    async close() {
      closed = true;
      await outage;
      await stopListening();
    },
  };
  return twin;
}
