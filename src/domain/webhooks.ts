/**
 * Webhook delivery policy (issue #14): the signature scheme, the retry schedule, which answers
 * count as delivered, and what a valid endpoint URL is. Pure: the worker (src/pipeline/webhooks.ts)
 * does the I/O.
 */
import { createHmac } from 'node:crypto';

export const WEBHOOK_DELIVERY_STATUSES = ['delivered', 'failed'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

/** Endpoints one worker delivers side by side (each holds one Postgres connection at a time). */
export const WEBHOOK_SLOTS = 2;

/** Bytes of an answer's body kept in `webhook_deliveries.response_body`. */
export const WEBHOOK_RESPONSE_KEEP_BYTES = 1_024;

/** The headers of a delivery (the body is the event as JSON: `{"id","type","occurred_at","data"}`). */
export const WEBHOOK_EVENT_ID_HEADER = 'Videosite-Event-Id';
export const WEBHOOK_SIGNATURE_HEADER = 'Videosite-Signature';

/**
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">` keyed with the endpoint's secret: the
 * timestamp inside the signed text lets a receiver refuse a replayed old delivery.
 */
export function webhookSignature(secret: string, unixSeconds: number, rawBody: string): string {
  const v1 = createHmac('sha256', secret).update(`${unixSeconds}.${rawBody}`).digest('hex');
  return `t=${unixSeconds},v1=${v1}`;
}

/** Any 2xx is delivered; a 3xx too is a failure (redirects are not followed). */
export function isDelivered(statusCode: number): boolean {
  return statusCode >= 200 && statusCode < 300;
}

/**
 * Wait before the next attempt after `failures` failed ones in a row: exponential from `baseMs`,
 * capped at `maxMs`, with full jitter over the upper half (never 0: a receiver that is down is
 * not hammered), `random` in [0, 1).
 */
export function webhookBackoffMs(failures: number, baseMs: number, maxMs: number, random: number): number {
  const exp = Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(failures - 1, 0), 30));
  return Math.round(exp / 2 + (exp / 2) * random);
}

/** An endpoint URL: absolute http(s). Returns the reason it is not one, or undefined. */
export function webhookUrlProblem(value: string): string | undefined {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return `"${value}" is not a URL (expected an absolute http:// or https:// URL)`;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    return `"${value}" uses ${u.protocol.replace(/:$/, '')} (expected an http:// or https:// URL)`;
  }
  return undefined;
}
