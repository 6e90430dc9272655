/**
 * Access control of the admin server: who may ask. The probes (/healthz, /readyz) stay open:
 * orchestrators call them without credentials, and they carry no secret. /metrics is open too
 * unless `METRICS_TOKEN` is set (then it takes that token, or the admin token, as a bearer token:
 * Prometheus' `authorization: credentials`). Every other page needs `ADMIN_TOKEN`, either as a
 * bearer token (scripts: `curl -H 'Authorization: Bearer …'`) or as the password of basic auth
 * with any user name (browsers: the login prompt).
 *
 * A browser sends cached basic credentials with any request to the server, a foreign page's
 * included: what such a page may make it send is refused before this (request-guard.ts).
 *
 * Without a token the server serves everything, so it must not be reachable from other machines:
 * it then refuses to listen beyond loopback.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import type { MiddlewareHandler } from 'hono';
import { ConfigError } from '../config.ts';

/** Paths served without a token. */
export const OPEN_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz']);

/** Open unless METRICS_TOKEN is set. */
export const METRICS_PATH = '/metrics';

/** The realm of the basic-auth challenge (what a browser shows in its login prompt). */
export const ADMIN_REALM = 'videosite-ingest admin';

/** The realm of /metrics' bearer challenge. */
export const METRICS_REALM = 'videosite-ingest metrics';

/** True for an address only this machine can reach: 127.0.0.0/8, ::1, or the name localhost. */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost') return true;
  const family = isIP(h);
  if (family === 4) return h.startsWith('127.');
  if (family === 6) return h === '::1' || h === '0:0:0:0:0:0:0:1' || /^::ffff:127\./.test(h);
  return false;
}

/**
 * Refuse to serve the admin pages to the network without a token. Thrown before anything
 * listens, as a ConfigError, so the command exits 2 with a one-line reason.
 */
export function assertSafeExposure(host: string, token: string | undefined): void {
  if (token === undefined && !isLoopbackHost(host)) {
    throw new ConfigError(
      'ADMIN_TOKEN',
      `not set, but the admin server would listen on ${host}, beyond loopback, where anyone who can reach it ` +
        'could read the overview and manage the queues; set ADMIN_TOKEN (at least 16 characters) or listen on 127.0.0.1',
    );
  }
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

/** How an Authorization header carries its credential. */
export type CredentialScheme = 'bearer' | 'basic';

/** The scheme and credential of an Authorization header: a bearer token, or a basic-auth password. */
export function authorizationOf(
  header: string | undefined,
): { scheme: CredentialScheme; credential: string } | undefined {
  if (header === undefined) return undefined;
  const m = /^\s*(\S+)\s+(\S+)\s*$/.exec(header);
  if (!m) return undefined;
  const scheme = m[1]!.toLowerCase();
  const value = m[2]!;
  if (scheme === 'bearer') return { scheme, credential: value };
  if (scheme === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon < 0 ? undefined : { scheme, credential: decoded.slice(colon + 1) };
  }
  return undefined;
}

/** The credential an Authorization header carries: a bearer token, or a basic-auth password. */
export function credentialOf(header: string | undefined): string | undefined {
  return authorizationOf(header)?.credential;
}

/** Constant-time comparison (of digests, so the lengths leak nothing either), in one of `schemes` (default: either). */
export function tokenMatches(
  header: string | undefined,
  token: string,
  schemes: readonly CredentialScheme[] = ['bearer', 'basic'],
): boolean {
  const given = authorizationOf(header);
  if (given === undefined || !schemes.includes(given.scheme)) return false;
  return timingSafeEqual(digest(given.credential), digest(token));
}

export interface TokenOptions {
  /** ADMIN_TOKEN; undefined: every page is served without one (loopback only, see assertSafeExposure) */
  token: string | undefined;
  /** METRICS_TOKEN; undefined: /metrics is open */
  metricsToken?: string | undefined;
}

/**
 * Hono middleware: every path outside OPEN_PATHS needs the admin token; /metrics needs the
 * metrics token (or the admin token) when one is set.
 */
export function requireToken({ token, metricsToken }: TokenOptions): MiddlewareHandler {
  return async (c, next) => {
    // the router ignores a trailing slash, so this check does too
    const path = c.req.path.replace(/\/+$/, '') || '/';
    const authorization = c.req.header('authorization');
    if (OPEN_PATHS.has(path)) return next();
    if (path === METRICS_PATH) {
      if (
        metricsToken === undefined ||
        tokenMatches(authorization, metricsToken, ['bearer']) ||
        (token !== undefined && tokenMatches(authorization, token))
      ) {
        return next();
      }
      c.header('WWW-Authenticate', `Bearer realm="${METRICS_REALM}"`);
      return c.text('authentication required: send METRICS_TOKEN as a bearer token\n', 401);
    }
    if (token === undefined || tokenMatches(authorization, token)) return next();
    c.header('WWW-Authenticate', `Basic realm="${ADMIN_REALM}", charset="UTF-8"`);
    c.header('Cache-Control', 'no-store');
    return c.text('authentication required: send ADMIN_TOKEN as a bearer token or as the basic-auth password\n', 401);
  };
}
