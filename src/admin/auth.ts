/**
 * Access control of the admin server. The probes (/healthz, /readyz) and /metrics stay open:
 * orchestrators and Prometheus call them without credentials, and they carry no secret. Every
 * other page needs `ADMIN_TOKEN`, either as a bearer token (scripts: `curl -H 'Authorization:
 * Bearer …'`) or as the password of basic auth with any user name (browsers: the login prompt).
 *
 * Without a token the server serves everything, so it must not be reachable from other machines:
 * it then refuses to listen beyond loopback.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import type { MiddlewareHandler } from 'hono';
import { ConfigError } from '../config.ts';

/** Paths served without a token. */
export const OPEN_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

/** The realm of the basic-auth challenge (what a browser shows in its login prompt). */
export const ADMIN_REALM = 'videosite-ingest admin';

/** True for an address only this machine can reach: 127.0.0.0/8, ::1, or the name localhost. */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
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

/** The credential an Authorization header carries: a bearer token, or a basic-auth password. */
export function credentialOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const m = /^\s*(\S+)\s+(\S+)\s*$/.exec(header);
  if (!m) return undefined;
  const scheme = m[1]!.toLowerCase();
  const value = m[2]!;
  if (scheme === 'bearer') return value;
  if (scheme === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon < 0 ? undefined : decoded.slice(colon + 1);
  }
  return undefined;
}

/** Constant-time comparison (of digests, so the lengths leak nothing either). */
export function tokenMatches(header: string | undefined, token: string): boolean {
  const given = credentialOf(header);
  if (given === undefined) return false;
  return timingSafeEqual(digest(given), digest(token));
}

/**
 * Hono middleware: every path outside OPEN_PATHS needs the token. With no token configured it
 * lets everything through (the server then listens on loopback only, see assertSafeExposure).
 */
export function requireToken(token: string | undefined): MiddlewareHandler {
  return async (c, next) => {
    // the router ignores a trailing slash, so this check does too
    const path = c.req.path.replace(/\/+$/, '') || '/';
    if (token === undefined || OPEN_PATHS.has(path) || tokenMatches(c.req.header('authorization'), token)) {
      await next();
      return;
    }
    c.header('WWW-Authenticate', `Basic realm="${ADMIN_REALM}", charset="UTF-8"`);
    c.header('Cache-Control', 'no-store');
    return c.text('authentication required: send ADMIN_TOKEN as a bearer token or as the basic-auth password\n', 401);
  };
}
