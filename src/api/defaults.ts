/**
 * The client's own defaults, used when an option is not given. The configuration table
 * (src/config.ts) takes its defaults for the API_* settings from here.
 */

/** The platform path segment spoken to unless told otherwise. */
export const DEFAULT_PLATFORM = 'videosite';
/** TCP/TLS connect timeout of the owned pool, ms. */
export const API_CONNECT_TIMEOUT_MS = 10_000;
/** Time to wait for an answer's head, ms. */
export const API_HEADERS_TIMEOUT_MS = 30_000;
/** Longest silence while a body arrives, ms. */
export const API_BODY_TIMEOUT_MS = 60_000;
/** The most one attempt may take from sending to its whole answer, ms (a streamed batch: its poll bounds it, POLL_MAX_DURATION_MS). */
export const API_REQUEST_TIMEOUT_MS = 120_000;
/** Attempts of a retryable request. */
export const API_RETRY_MAX_ATTEMPTS = 5;
/** First backoff delay, ms (exponential, full jitter). */
export const API_RETRY_BASE_DELAY_MS = 500;
/** Backoff cap, ms. */
export const API_RETRY_MAX_DELAY_MS = 30_000;
/**
 * Longest `Retry-After` honoured, ms (1 h): one answer of `Retry-After: 31536000` must not
 * silence every process for a year. A longer one is used as this and logged.
 */
export const API_RETRY_AFTER_MAX_MS = 3_600_000;
/**
 * Largest answer body read, bytes (16 MiB), except the streamed batch answer (`openBatch`):
 * a bigger one fails as schema-mismatch without being buffered.
 */
export const API_MAX_BODY_BYTES = 16 * 1024 * 1024;
