/**
 * Answers and how they are written. A JSON answer is serialised at once; a batch answer is
 * streamed item by item with backpressure (a 5000-item transcript batch is ~100 MB, and must
 * never exist as one string). Writing can be damaged on purpose (faults, scripts): cut short,
 * stalled, or made to break its schema.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { STATUS_OF_CODE } from '../api/errors.ts';
import type { ApiErrorCode, ErrorBody } from '../api/schemas.ts';

export type Headers = Record<string, string>;

export type Reply =
  | { kind: 'json'; status: number; body: unknown; headers?: Headers }
  | { kind: 'raw'; status: number; body: string; contentType: string; headers?: Headers }
  /** `head` followed by `"<arrayKey>": [items...]`, serialised one item at a time */
  | {
      kind: 'stream';
      status: number;
      head: Record<string, unknown>;
      arrayKey: string;
      items: Iterable<unknown>;
      headers?: Headers;
    };

/** An item already serialised: written into a streamed answer as is. */
export class RawJson {
  constructor(readonly json: string) {}
}

/** How to damage the writing of an answer. */
export interface Damage {
  /** cut the body at this fraction (0..1) of its (first flushed) bytes, then close the connection */
  truncateAt?: number | undefined;
  /** with `truncateAt`: close the connection this long after the cut part was sent, ms; default 0 */
  cutAfterMs?: number | undefined;
  /** send headers and part of the body, then stall forever */
  stall?: boolean | undefined;
  /** send `afterFraction` of the body at once, then one byte every `byteEveryMs` until done or the client leaves */
  trickle?: { afterFraction: number; byteEveryMs: number } | undefined;
  /** make the first field of the body the wrong type */
  violate?: boolean | undefined;
}

/** Where the Error objects point people to. */
export const DOCUMENTATION_URL = 'https://docs.example.com/api/errors';

export function errorBody(code: ApiErrorCode, message: string, details: string): ErrorBody {
  return { error: code, message, details, documentationUrl: `${DOCUMENTATION_URL}#${code}` };
}

export function errorReply(code: ApiErrorCode, message: string, details = message, headers?: Headers): Reply {
  const reply: Reply = { kind: 'json', status: STATUS_OF_CODE[code], body: errorBody(code, message, details) };
  if (headers) reply.headers = headers;
  return reply;
}

export function json(body: unknown, status = 200): Reply {
  return { kind: 'json', status, body };
}

/** The body with its first field replaced by an object: every answer schema rejects that. */
export function violateSchema(body: unknown): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return { violated: true };
  const out: Record<string, unknown> = {};
  let first = true;
  for (const [k, v] of Object.entries(body)) {
    out[k] = first ? { violated: true } : v;
    first = false;
  }
  return out;
}

/** Bytes gathered before a write while streaming. */
const STREAM_FLUSH_BYTES = 64 * 1024;

/** Resolve when the response can take more data; false when the connection went away. */
function drained(res: ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    res.on('drain', onDrain);
    res.on('close', onClose);
  });
}

/** Write `part`, then close the connection once it reached the socket (and `afterMs` more passed). */
function writeThenDestroy(res: ServerResponse, part: Buffer, afterMs = 0): void {
  res.write(part, () => {
    if (afterMs > 0) setTimeout(() => res.socket?.destroy(), afterMs);
    else res.socket?.destroy();
  });
}

export async function writeReply(res: ServerResponse, reply: Reply, damage: Damage = {}): Promise<void> {
  const headers: Headers = { ...(reply.headers ?? {}) };
  if (reply.kind === 'stream') {
    await writeStream(res, reply, headers, damage);
    return;
  }
  const text =
    reply.kind === 'raw' ? reply.body : JSON.stringify(damage.violate ? violateSchema(reply.body) : reply.body);
  const buf = Buffer.from(text, 'utf8');
  headers['content-type'] = reply.kind === 'raw' ? reply.contentType : 'application/json; charset=utf-8';
  headers['content-length'] = String(buf.length);
  res.writeHead(reply.status, headers);
  if (damage.truncateAt !== undefined) {
    writeThenDestroy(res, buf.subarray(0, Math.floor(buf.length * damage.truncateAt)), damage.cutAfterMs);
    return;
  }
  if (damage.stall) {
    res.write(buf.subarray(0, Math.floor(buf.length / 2)));
    return;
  }
  if (damage.trickle) {
    await trickle(res, buf, damage.trickle);
    return;
  }
  res.end(buf);
}

/** The first `afterFraction` of `buf` at once, then one byte per `byteEveryMs`; stops when the client leaves. */
async function trickle(
  res: ServerResponse,
  buf: Buffer,
  t: { afterFraction: number; byteEveryMs: number },
): Promise<void> {
  let gone = res.destroyed;
  let wake: (() => void) | undefined;
  const onClose = () => {
    gone = true;
    wake?.();
  };
  res.on('close', onClose);
  try {
    let at = Math.floor(buf.length * t.afterFraction);
    if (at > 0) res.write(buf.subarray(0, at));
    while (at < buf.length && !gone) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, t.byteEveryMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (gone) return;
      res.write(buf.subarray(at, at + 1));
      at++;
    }
    if (!gone) res.end();
  } finally {
    res.off('close', onClose);
  }
}

/**
 * A streamed answer as one raw body, so damage that needs its whole length (cut at 90%, trickle
 * the second half) can apply; only for test-sized answers (the whole body is held in memory).
 */
export function materialize(reply: Reply): Reply {
  if (reply.kind !== 'stream') return reply;
  const parts: string[] = [];
  for (const item of reply.items) parts.push(item instanceof RawJson ? item.json : JSON.stringify(item));
  const headJson = JSON.stringify(reply.head);
  const body = `${headJson.length > 2 ? `${headJson.slice(0, -1)},` : '{'}${JSON.stringify(reply.arrayKey)}:[${parts.join(',')}]}`;
  const out: Reply = { kind: 'raw', status: reply.status, body, contentType: 'application/json; charset=utf-8' };
  if (reply.headers) out.headers = reply.headers;
  return out;
}

async function writeStream(
  res: ServerResponse,
  reply: Extract<Reply, { kind: 'stream' }>,
  headers: Headers,
  damage: Damage,
): Promise<void> {
  headers['content-type'] = 'application/json; charset=utf-8';
  res.writeHead(reply.status, headers);
  const head = damage.violate ? (violateSchema(reply.head) as Record<string, unknown>) : reply.head;
  const headJson = JSON.stringify(head);
  let pending = `${headJson.length > 2 ? `${headJson.slice(0, -1)},` : '{'}${JSON.stringify(reply.arrayKey)}:[`;
  let firstItem = true;
  let flushed = false;

  // false when writing must stop (damage applied, or the client went away)
  const flush = async (): Promise<boolean> => {
    const buf = Buffer.from(pending, 'utf8');
    pending = '';
    if (!flushed && (damage.truncateAt !== undefined || damage.stall)) {
      const cut = buf.subarray(0, Math.max(1, Math.floor(buf.length * (damage.truncateAt ?? 0.5))));
      if (damage.truncateAt !== undefined) writeThenDestroy(res, cut);
      else res.write(cut);
      return false;
    }
    flushed = true;
    if (res.destroyed) return false;
    if (!res.write(buf)) return drained(res);
    return true;
  };

  try {
    for (const item of reply.items) {
      pending += (firstItem ? '' : ',') + (item instanceof RawJson ? item.json : JSON.stringify(item));
      firstItem = false;
      if (pending.length >= STREAM_FLUSH_BYTES && !(await flush())) return;
    }
    pending += ']}';
    if (!(await flush())) return;
    res.end();
  } catch {
    // the headers are out already: the only honest signal left is a broken connection
    res.socket?.destroy();
  }
}

/** Read a request body as text, up to `maxBytes` (undefined when larger). */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  // read to the end even when too large: leaving the rest unread would break the connection
  // before the 400 answer gets out
  for await (const chunk of req) {
    const b = chunk as Buffer;
    size += b.length;
    if (size <= maxBytes) chunks.push(b);
  }
  return size > maxBytes ? undefined : Buffer.concat(chunks).toString('utf8');
}
