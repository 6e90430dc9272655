/** The webhook policy (src/domain/webhooks.ts): the signature a receiver recomputes, the backoff's bounds, what counts as delivered. */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isDelivered, webhookBackoffMs, webhookSignature, webhookUrlProblem } from '../../src/domain/webhooks.ts';

describe('webhook policy', () => {
  it('signs "<t>.<raw body>" with HMAC-SHA256 of the secret, as t=<t>,v1=<hex>', () => {
    const body = '{"id":7,"type":"batch.completed","occurred_at":"2026-11-23T10:00:00.000Z","data":{}}';
    const sig = webhookSignature('s3cret-s3cret-s3cret', 1_795_000_000, body);
    const hex = createHmac('sha256', 's3cret-s3cret-s3cret').update(`1795000000.${body}`).digest('hex');
    expect(sig).toBe(`t=1795000000,v1=${hex}`);
    expect(webhookSignature('another-secret-value', 1_795_000_000, body)).not.toBe(sig);
  });

  it('backs off exponentially with jitter over the upper half, capped', () => {
    expect(webhookBackoffMs(1, 5_000, 600_000, 0)).toBe(2_500);
    expect(webhookBackoffMs(1, 5_000, 600_000, 0.999_999)).toBe(5_000);
    expect(webhookBackoffMs(3, 5_000, 600_000, 0)).toBe(10_000);
    for (const f of [10, 30, 1_000]) {
      expect(webhookBackoffMs(f, 5_000, 600_000, 0.5)).toBeLessThanOrEqual(600_000);
      expect(webhookBackoffMs(f, 5_000, 600_000, 0)).toBe(300_000);
    }
  });

  it('only a 2xx is delivered (a redirect is not); only http(s) URLs', () => {
    expect([200, 204, 299].map(isDelivered)).toEqual([true, true, true]);
    expect([199, 301, 302, 307, 400, 500].map(isDelivered)).toEqual([false, false, false, false, false, false]);
    expect(webhookUrlProblem('https://hooks.example.com/x?y=1')).toBeUndefined();
    expect(webhookUrlProblem('ftp://example.com/x')).toContain('"ftp://example.com/x" uses ftp');
    expect(webhookUrlProblem('example.com/x')).toContain('is not a URL');
  });
});
