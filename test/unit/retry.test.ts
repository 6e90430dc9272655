import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from '../../src/api/errors.ts';
import {
  backoffDelayMs,
  capRetryAfterMs,
  decideRetry,
  type AttemptOutcome,
  type RetryPolicy,
} from '../../src/api/retry.ts';
import { API_RETRY_AFTER_MAX_MS } from '../../src/config.ts';

const policy: RetryPolicy = { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 1_000 };
const top = (): number => 0.999_999;
const half = (): number => 0.5;

describe('backoffDelayMs', () => {
  it('doubles the ceiling per retry and never exceeds the cap', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffDelayMs(n, policy, top))).toEqual([99, 199, 399, 799, 999, 999]);
  });

  it('draws the wait uniformly below the ceiling (full jitter)', () => {
    expect(backoffDelayMs(3, policy, () => 0)).toBe(0);
    expect(backoffDelayMs(3, policy, half)).toBe(200);
    expect(backoffDelayMs(1, policy, () => 0.25)).toBe(25);
  });

  it('stays at the cap for absurd retry counts', () => {
    expect(backoffDelayMs(5_000, policy, top)).toBe(999);
  });
});

describe('decideRetry for GETs (idempotent)', () => {
  const retried: AttemptOutcome[] = [
    { kind: 'not-sent' },
    { kind: 'timeout' },
    { kind: 'network' },
    { kind: 'truncated' },
    { kind: 'answered', status: 429, errorBody: true, retryAfterMs: 50 },
    { kind: 'answered', status: 500, errorBody: true },
    { kind: 'answered', status: 502, errorBody: false },
    { kind: 'answered', status: 503, errorBody: false },
  ];
  it.each(retried.map((o) => [JSON.stringify(o), o] as const))('retries %s', (_, outcome) => {
    expect(decideRetry('idempotent', outcome, 1, policy, half)).toEqual({ retry: true, delayMs: 50 });
  });

  const notRetried: AttemptOutcome[] = [
    { kind: 'answered', status: 400, errorBody: true },
    { kind: 'answered', status: 401, errorBody: true },
    { kind: 'answered', status: 402, errorBody: true },
    { kind: 'answered', status: 403, errorBody: true },
    { kind: 'answered', status: 404, errorBody: true },
    { kind: 'answered', status: 206, errorBody: true },
    // an exhausted quota, most likely: the caller checks /me instead of asking again
    { kind: 'answered', status: 429, errorBody: true },
    { kind: 'invalid-answer' },
    { kind: 'final' },
  ];
  it.each(notRetried.map((o) => [JSON.stringify(o), o] as const))('does not retry %s', (_, outcome) => {
    expect(decideRetry('idempotent', outcome, 1, policy, half)).toEqual({ retry: false, reason: 'not-retryable' });
  });

  it('stops after maxAttempts attempts in total', () => {
    expect(decideRetry('idempotent', { kind: 'network' }, 4, policy, half).retry).toBe(true);
    expect(decideRetry('idempotent', { kind: 'network' }, 5, policy, half)).toEqual({
      retry: false,
      reason: 'attempts-exhausted',
    });
  });

  it('waits exactly Retry-After instead of the backoff', () => {
    const outcome: AttemptOutcome = { kind: 'answered', status: 429, errorBody: true, retryAfterMs: 700 };
    expect(decideRetry('idempotent', outcome, 1, policy, half)).toEqual({ retry: true, delayMs: 700 });
  });

  it('gives up at once when Retry-After exceeds maxDelayMs (the queue pauses instead)', () => {
    const outcome: AttemptOutcome = { kind: 'answered', status: 429, errorBody: true, retryAfterMs: 1_001 };
    expect(decideRetry('idempotent', outcome, 1, policy, half)).toEqual({
      retry: false,
      reason: 'retry-after-too-long',
    });
  });
});

describe('decideRetry for job-creating POSTs', () => {
  it('retries only when the request never left or the API itself refused it', () => {
    expect(decideRetry('create', { kind: 'not-sent' }, 1, policy, half).retry).toBe(true);
    expect(
      decideRetry('create', { kind: 'answered', status: 429, errorBody: true, retryAfterMs: 50 }, 1, policy, half)
        .retry,
    ).toBe(true);
    expect(decideRetry('create', { kind: 'answered', status: 429, errorBody: true }, 1, policy, half).retry).toBe(
      false,
    );
    expect(decideRetry('create', { kind: 'answered', status: 503, errorBody: true }, 1, policy, half).retry).toBe(true);
  });

  const notRetried: AttemptOutcome[] = [
    { kind: 'timeout' },
    { kind: 'network' },
    { kind: 'truncated' },
    // a gateway's HTML page: the request may have reached the backend
    { kind: 'answered', status: 502, errorBody: false },
    { kind: 'answered', status: 429, errorBody: false },
    { kind: 'answered', status: 400, errorBody: true },
    { kind: 'invalid-answer' },
  ];
  it.each(notRetried.map((o) => [JSON.stringify(o), o] as const))('does not retry %s', (_, outcome) => {
    expect(decideRetry('create', outcome, 1, policy, half).retry).toBe(false);
  });
});

describe('parseRetryAfter', () => {
  it('reads delta-seconds', () => {
    expect(parseRetryAfter('3')).toBe(3_000);
    expect(parseRetryAfter('0.5')).toBe(500);
  });
  it('reads an HTTP date relative to now', () => {
    const now = Date.parse('2024-01-01T00:00:00Z');
    expect(parseRetryAfter('Mon, 01 Jan 2024 00:00:10 GMT', now)).toBe(10_000);
    expect(parseRetryAfter('Mon, 01 Jan 2023 00:00:10 GMT', now)).toBe(0);
  });
  it('ignores absent or unreadable values', () => {
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
  });
});

describe('capRetryAfterMs', () => {
  const HOUR_MS = 3_600_000;

  it('caps a Retry-After of a year at the cap, and says it did', () => {
    const received = parseRetryAfter('31536000');
    expect(received).toBe(31_536_000_000);
    expect(capRetryAfterMs(received, HOUR_MS)).toEqual({ ms: HOUR_MS, capped: true });
  });

  it('caps a far HTTP date and absurd values too', () => {
    const now = Date.parse('2024-01-01T00:00:00Z');
    expect(capRetryAfterMs(parseRetryAfter('Fri, 01 Jan 2100 00:00:00 GMT', now), HOUR_MS)).toEqual({
      ms: HOUR_MS,
      capped: true,
    });
    expect(capRetryAfterMs(Number.POSITIVE_INFINITY, HOUR_MS)).toEqual({ ms: HOUR_MS, capped: true });
  });

  it('leaves a value at or under the cap as it is', () => {
    expect(capRetryAfterMs(2_000, HOUR_MS)).toEqual({ ms: 2_000, capped: false });
    expect(capRetryAfterMs(HOUR_MS, HOUR_MS)).toEqual({ ms: HOUR_MS, capped: false });
    expect(capRetryAfterMs(0, HOUR_MS)).toEqual({ ms: 0, capped: false });
  });

  it('leaves no Retry-After as none', () => {
    expect(capRetryAfterMs(undefined, HOUR_MS)).toBeUndefined();
    expect(capRetryAfterMs(Number.NaN, HOUR_MS)).toBeUndefined();
  });

  it('defaults to one hour', () => {
    expect(API_RETRY_AFTER_MAX_MS).toBe(HOUR_MS);
  });

  it('hands the retry rules the capped value: waited for when it fits the policy, handed back when not', () => {
    const capped = capRetryAfterMs(parseRetryAfter('31536000'), 800)!;
    const outcome: AttemptOutcome = { kind: 'answered', status: 429, errorBody: true, retryAfterMs: capped.ms };
    expect(decideRetry('idempotent', outcome, 1, policy, half)).toEqual({ retry: true, delayMs: 800 });
    const hour = capRetryAfterMs(parseRetryAfter('31536000'), HOUR_MS)!;
    expect(decideRetry('idempotent', { ...outcome, retryAfterMs: hour.ms }, 1, policy, half)).toEqual({
      retry: false,
      reason: 'retry-after-too-long',
    });
  });
});
