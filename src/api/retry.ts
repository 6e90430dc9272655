/**
 * When to retry an upstream request and how long to wait first. Pure functions (no I/O, no
 * clock), so the rules are unit-tested on their own; `http.ts` feeds them what happened.
 *
 * Two kinds of request:
 * - `idempotent` (every GET): retried on 429 with Retry-After, 5xx, network errors, timeouts and
 *   truncated bodies. A 429 without Retry-After (an exhausted quota, most likely) is not.
 * - `create` (batch-creating POSTs, crawl start): each one costs credits, and a retry after the
 *   request may have reached the server could create (and charge) a second job. Retried only
 *   when the request certainly never left (connection refused, connect timeout) or when the
 *   server answered 429/5xx with its own Error object (it processed and refused the request).
 */

export interface RetryPolicy {
  /** total attempts, the first one included (1 = never retry) */
  maxAttempts: number;
  /** backoff base in milliseconds: the n-th retry waits up to `baseDelayMs * 2^(n-1)` */
  baseDelayMs: number;
  /** cap on one wait in milliseconds; a `Retry-After` above it is not waited for */
  maxDelayMs: number;
}

export type RequestKind = 'idempotent' | 'create';

/** What happened to one attempt, as far as the retry rules care. */
export type AttemptOutcome =
  /** the request certainly never reached the server (connection refused, DNS, connect timeout) */
  | { kind: 'not-sent' }
  /** no answer in time after the request was (or may have been) sent: headers or body timeout */
  | { kind: 'timeout' }
  /** the connection failed after the request may have been sent (reset, closed) */
  | { kind: 'network' }
  /** the answer's head arrived but its body was cut short */
  | { kind: 'truncated' }
  /** the server answered with an error status (or a 206) */
  | {
      kind: 'answered';
      status: number;
      /** the body was a valid Error object (not, say, a gateway's HTML page) */
      errorBody: boolean;
      /** from `Retry-After`, in milliseconds */
      retryAfterMs?: number | undefined;
    }
  /** a complete 2xx answer that failed its schema: asking again gives the same answer */
  | { kind: 'invalid-answer' }
  /** the caller aborted, or a local error that retrying cannot fix */
  | { kind: 'final' };

export type RetryDecision =
  | { retry: true; delayMs: number }
  | { retry: false; reason: 'not-retryable' | 'attempts-exhausted' | 'retry-after-too-long' };

/** A `Retry-After` as the client uses it: the value received, at most the cap. */
export interface CappedRetryAfter {
  /** min(received, cap), in milliseconds */
  ms: number;
  /** true when the received value was above the cap (the caller logs it) */
  capped: boolean;
}

/**
 * Bound a received `Retry-After` (ms) by `capMs`. Everything downstream (the retry decision,
 * `ApiError.retryAfterMs`, the shared limiter's pause, the queue's `rateLimit`) sees only the
 * bounded value: one answer of `Retry-After: 31536000` must not silence every process for a
 * year. Undefined (no header, or one that does not parse) stays undefined.
 */
export function capRetryAfterMs(receivedMs: number | undefined, capMs: number): CappedRetryAfter | undefined {
  if (receivedMs === undefined || Number.isNaN(receivedMs)) return undefined;
  const ms = Math.max(0, receivedMs);
  return ms > capMs ? { ms: capMs, capped: true } : { ms, capped: false };
}

/** 429 and every 5xx: statuses that may succeed on a later attempt. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/**
 * Exponential backoff with full jitter: a uniform wait in `[0, min(maxDelayMs, base * 2^(n-1)))`
 * before retry `n` (1-based). Full jitter spreads the retries of many workers that failed at
 * the same moment (AWS architecture blog, "Exponential Backoff And Jitter").
 *
 * @param retryNumber 1 for the first retry
 * @param random a uniform number in [0, 1)
 */
export function backoffDelayMs(retryNumber: number, policy: RetryPolicy, random: () => number): number {
  const exponent = Math.max(0, retryNumber - 1);
  // 2^exponent overflows to Infinity for silly attempt counts; the cap still applies.
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** exponent);
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.floor(r * ceiling);
}

function mayRetry(kind: RequestKind, outcome: AttemptOutcome): boolean {
  switch (outcome.kind) {
    case 'not-sent':
      return true;
    case 'timeout':
    case 'network':
    case 'truncated':
      return kind === 'idempotent';
    case 'answered':
      if (!isRetryableStatus(outcome.status)) return false;
      // A 429 is a rate limit or an exhausted quota (UPSTREAM.md); a rate limit says when to
      // come back (Retry-After). Without one, asking again cannot help if it is the quota: the
      // caller decides (/me tells which), instead of repeating a refused request.
      if (outcome.status === 429 && outcome.retryAfterMs === undefined) return false;
      // A non-JSON 5xx comes from a gateway: the request may have reached the backend.
      return kind === 'idempotent' || outcome.errorBody;
    case 'invalid-answer':
    case 'final':
      return false;
  }
}

/**
 * Whether to retry after attempt number `attemptsDone` (1-based) ended in `outcome`, and how long
 * to wait first. A `Retry-After` is honoured as given; when it is longer than `maxDelayMs` the
 * request is not retried at all, so the caller (a queue worker) can pause for that long instead
 * of holding a worker slot asleep.
 */
export function decideRetry(
  kind: RequestKind,
  outcome: AttemptOutcome,
  attemptsDone: number,
  policy: RetryPolicy,
  random: () => number,
): RetryDecision {
  if (!mayRetry(kind, outcome)) return { retry: false, reason: 'not-retryable' };
  if (attemptsDone >= policy.maxAttempts) return { retry: false, reason: 'attempts-exhausted' };
  if (outcome.kind === 'answered' && outcome.retryAfterMs !== undefined) {
    if (outcome.retryAfterMs > policy.maxDelayMs) return { retry: false, reason: 'retry-after-too-long' };
    return { retry: true, delayMs: outcome.retryAfterMs };
  }
  return { retry: true, delayMs: backoffDelayMs(attemptsDone, policy, random) };
}

/** A `setTimeout` sleep that ends early (rejecting) when the signal aborts. */
export function sleepMs(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason instanceof Error ? signal.reason : new DOMException('aborted', 'AbortError'));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason instanceof Error ? signal.reason : new DOMException('aborted', 'AbortError'));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
