/**
 * Reads a `GET /videosite/batch/{jobId}` answer as a stream: items come out one at a time as
 * their bytes arrive, and only the top-level fields are kept, so a 5000-item transcript answer
 * (about 100 MB of JSON) is never held in memory as one parsed object.
 *
 * Items are yielded as parsed but unvalidated values: the caller validates each one on its own, so
 * one bad item is quarantined instead of failing the whole answer.
 */
import JSONParser from '@streamparser/json/jsonparser.js';

/** The top-level fields of BatchResults other than `results`, unvalidated. */
export interface RawBatchHead {
  status?: unknown;
  errorCode?: unknown;
  stats?: unknown;
  completedAt?: unknown;
  /** whether a `results` array was seen at all */
  sawResults: boolean;
}

export class BatchStreamError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BatchStreamError';
  }
}

const HEAD_FIELDS = new Set(['status', 'errorCode', 'stats', 'completedAt']);

/**
 * Yield each element of `results` as it is parsed; return the head once the body ends.
 * Throws BatchStreamError on malformed or truncated JSON.
 */
export async function* readBatchStream(
  body: AsyncIterable<Uint8Array | string>,
): AsyncGenerator<unknown, RawBatchHead, undefined> {
  const head: RawBatchHead = { sawResults: false };
  let pending: unknown[] = [];
  let failure: unknown;
  let topLevelSeen = false;
  const parser = new JSONParser({
    paths: ['$.results.*', '$.results', '$.status', '$.errorCode', '$.stats', '$.completedAt', '$'],
    keepStack: false,
  });
  parser.onValue = (info) => {
    const depth = info.stack.length;
    if (depth === 0) {
      topLevelSeen = true;
      if (info.value === null || typeof info.value !== 'object' || Array.isArray(info.value)) {
        failure = new BatchStreamError('batch answer is not a JSON object');
      }
      return;
    }
    if (depth === 1 && info.key === 'results') {
      head.sawResults = true;
      if (!Array.isArray(info.value)) failure = new BatchStreamError('batch answer: results is not an array');
      return;
    }
    if (depth === 1 && typeof info.key === 'string' && HEAD_FIELDS.has(info.key)) {
      (head as unknown as Record<string, unknown>)[info.key] = info.value;
      return;
    }
    if (depth === 2) pending.push(info.value);
  };
  parser.onError = (err) => {
    failure ??= new BatchStreamError(`batch answer is not valid JSON: ${err.message}`, { cause: err });
  };
  for await (const chunk of body) {
    parser.write(chunk);
    if (failure !== undefined) throw failure;
    if (pending.length > 0) {
      const out = pending;
      pending = [];
      yield* out;
    }
  }
  if (!parser.isEnded) parser.end();
  if (failure !== undefined) throw failure;
  if (!topLevelSeen) throw new BatchStreamError('batch answer ended before the JSON object was complete');
  yield* pending;
  return head;
}
