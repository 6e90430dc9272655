/**
 * A fingerprint of an API key: what a hold records to say which key the upstream refused
 * (`upstream_holds.key_fingerprint`), shown in logs, `status` and `/readyz`, where the key itself
 * must never go. The first 12 hex digits (48 bits) of HMAC-SHA256 keyed with a fixed, public
 * domain string: one-way, and bound to this use (it matches no plain SHA-256 of the key found
 * elsewhere). 48 bits tell apart the few keys one installation uses (two colliding: about 1 in
 * 10^14 per pair) and say nothing of a random key; a guessable one (`wrong`) can be confirmed by
 * hashing the guess, as it could be by trying it against the API.
 */
import { createHmac } from 'node:crypto';

/** Fixed and public: it separates this hash from any other use of the key. */
export const KEY_FINGERPRINT_DOMAIN = 'videosite-ingest/api-key-fingerprint/v1';
/** Hex digits kept. */
export const KEY_FINGERPRINT_HEX_DIGITS = 12;

export function keyFingerprint(apiKey: string): string {
  return createHmac('sha256', KEY_FINGERPRINT_DOMAIN)
    .update(apiKey, 'utf8')
    .digest('hex')
    .slice(0, KEY_FINGERPRINT_HEX_DIGITS);
}
