/**
 * Webhook delivery policy (issues #14, #27): the signature scheme (Standard Webhooks), the retry
 * schedule, how endpoints share the delivery slots, which answers count as delivered, and what a
 * valid endpoint URL is. Pure: the worker (src/pipeline/services/webhook-delivery.ts) does the I/O.
 */
import { createHmac } from 'node:crypto';
import { privateHostLiteral } from './private-addresses.ts';

export const WEBHOOK_DELIVERY_STATUSES = ['delivered', 'failed'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

/** Endpoints one worker delivers side by side (each holds one Postgres connection at a time). */
export const WEBHOOK_SLOTS = 2;

/**
 * A slot delivers one endpoint for a turn of about this long, ms (checked before each POST: a
 * turn is this plus at most one delivery), then hands it back and takes the endpoint whose turn
 * is the oldest. So an endpoint waits for a slot at most one turn, whatever the others' backlogs:
 * a slow receiver delays the others by at most one delivery timeout. Short against a delivery
 * timeout, long against a delivery to a quick receiver (a few ms: a turn sends dozens).
 */
export const WEBHOOK_TURN_MS = 250;

/** Bytes of an answer's body kept in `webhook_deliveries.response_body`. */
export const WEBHOOK_RESPONSE_KEEP_BYTES = 1_024;

/**
 * The headers of a delivery (the body is the event as JSON: `{"id","type","occurred_at","data"}`),
 * as the Standard Webhooks specification names them: the event id (the same on every retry, and
 * for every endpoint), the time of this attempt in unix seconds, and one `v1,<base64 HMAC-SHA256 of
 * "<id>.<timestamp>.<body>">` per secret in force, space-separated (two while a rotation's grace runs).
 */
export const WEBHOOK_ID_HEADER = 'webhook-id';
export const WEBHOOK_TIMESTAMP_HEADER = 'webhook-timestamp';
export const WEBHOOK_SIGNATURE_HEADER = 'webhook-signature';
/** The event id again, as before Standard Webhooks: on every delivery. */
export const LEGACY_EVENT_ID_HEADER = 'Videosite-Event-Id';
/**
 * The signature from before Standard Webhooks, `t=<unix seconds>,v1=<hex HMAC-SHA256 of
 * "<t>.<raw body>">`: sent only while the endpoint's secret from then (a `legacy` one) is in force,
 * so that its receivers keep verifying until they move to the standard headers.
 */
export const LEGACY_SIGNATURE_HEADER = 'Videosite-Signature';

/** A key that signs deliveries: `legacy` when it also signs LEGACY_SIGNATURE_HEADER. */
export interface SigningKey {
  key: Buffer;
  legacy: boolean;
}

/** `v1,<base64>` of one key, as Standard Webhooks signs `"<id>.<timestamp>.<body>"`. */
export function standardSignature(key: Buffer, msgId: string, unixSeconds: number, rawBody: string): string {
  return `v1,${createHmac('sha256', key).update(`${msgId}.${unixSeconds}.${rawBody}`).digest('base64')}`;
}

/** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`: the timestamp inside the signed text lets a receiver refuse a replay. */
export function legacySignature(key: Buffer | string, unixSeconds: number, rawBody: string): string {
  const v1 = createHmac('sha256', key).update(`${unixSeconds}.${rawBody}`).digest('hex');
  return `t=${unixSeconds},v1=${v1}`;
}

/** Every header of a delivery of event `eventId` signed with `keys` (newest first), at `unixSeconds`. */
export function deliveryHeaders(
  keys: readonly SigningKey[],
  eventId: number,
  unixSeconds: number,
  rawBody: string,
): Record<string, string> {
  if (keys.length === 0) throw new Error('a delivery needs at least one signing key');
  const id = String(eventId);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    [WEBHOOK_ID_HEADER]: id,
    [WEBHOOK_TIMESTAMP_HEADER]: String(unixSeconds),
    [WEBHOOK_SIGNATURE_HEADER]: keys.map((k) => standardSignature(k.key, id, unixSeconds, rawBody)).join(' '),
    [LEGACY_EVENT_ID_HEADER]: id,
  };
  const legacy = keys.find((k) => k.legacy);
  if (legacy) headers[LEGACY_SIGNATURE_HEADER] = legacySignature(legacy.key, unixSeconds, rawBody);
  return headers;
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

/**
 * A URL as it may be shown: the user and password part, if any, replaced by `***`, also in a
 * value that does not parse as a URL.
 */
export function redactUrl(value: string): string {
  try {
    const u = new URL(value);
    if (u.username === '' && u.password === '') return value;
    u.username = '***';
    u.password = '';
    return u.href;
  } catch {
    return value.replace(/^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/)[^/?#]*@/, '$1***@');
  }
}

/**
 * An endpoint URL: absolute http(s), no credentials, and, unless `allowPrivate`, a host that does
 * not name a private, loopback or link-local address literally (a host name's addresses are
 * checked at delivery, when it is resolved). Returns the reason it is refused (showing the URL
 * without credentials), or undefined.
 */
export function webhookUrlProblem(value: string, o: { allowPrivate: boolean }): string | undefined {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return `"${redactUrl(value)}" is not a URL (expected an absolute http:// or https:// URL)`;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    return `"${redactUrl(value)}" uses ${u.protocol.replace(/:$/, '')} (expected an http:// or https:// URL)`;
  }
  if (u.username !== '' || u.password !== '') {
    return (
      `"${redactUrl(value)}" carries credentials (user:password@), which are never sent and would be stored and shown: ` +
      'remove them; each delivery is signed (webhook-signature), and a token the receiver wants may go in the path or query'
    );
  }
  const range = o.allowPrivate ? undefined : privateHostLiteral(u.hostname);
  if (range !== undefined) {
    return `"${value}" names a private address (${range}): webhooks reach private, loopback and link-local addresses only when added with --allow-private`;
  }
  return undefined;
}
