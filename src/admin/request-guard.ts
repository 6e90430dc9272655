/**
 * What a web page the operator visits could make a browser send to the admin server, refused
 * before any route (or the token check) runs:
 *
 * - DNS rebinding. A page whose name the attacker re-points at 127.0.0.1 reaches this server as
 *   its own origin, so the browser lets it read the answers, but the Host it sends is still the
 *   page's name. A Host that is not a name of this server is refused (421): the loopback name
 *   `localhost`, any IP address (an address cannot be rebound; Vite and webpack-dev-server accept
 *   them for that reason), the address the server listens on and ADMIN_ALLOWED_HOSTS. The port
 *   is not compared: behind a published container port or a proxy the browser's differs from the
 *   server's, and a page on another port is another origin, which the next check covers.
 * - Cross-site requests. A browser sends cached basic credentials with any request to the
 *   server, a foreign form's included. A state-changing request (any method but GET, HEAD,
 *   OPTIONS) is refused (403) when its Origin is not this server, when Sec-Fetch-Site says
 *   another site sent it, or when it is one a page of another site can send without asking: a
 *   POST with no body type or a form's (`text/plain`, `application/x-www-form-urlencoded`,
 *   `multipart/form-data`). Everything else needs a CORS preflight first, which this server never
 *   grants: another method (the queue dashboard's PUT and PATCH), a JSON body (its POST), an
 *   `Authorization: Bearer` or an `X-Requested-With` header. The token, when one is set, is
 *   checked after this (auth.ts).
 */
import { isIP } from 'node:net';
import type { Context, MiddlewareHandler } from 'hono';
import type { Logger } from '../log.ts';
import { authorizationOf } from './auth.ts';

/** Methods that change nothing (their routes only read). */
export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The body types an HTML form (or a `no-cors` fetch) can send to another site without a preflight. */
export const FORM_CONTENT_TYPES: ReadonlySet<string> = new Set([
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  'text/plain',
]);

/** Names that resolve to this machine without DNS. */
export const LOOPBACK_NAMES: readonly string[] = ['localhost'];

/** Sec-Fetch-Site values of a request another site's page made. */
const CROSS_SITE_FETCHES: ReadonlySet<string> = new Set(['cross-site', 'same-site']);

/** The longest piece of a request header quoted back in a refusal. */
const QUOTED_MAX_CHARS = 100;

/** The host name of a Host header (`name`, `name:port`, `[v6]:port`), lower-case, brackets removed; undefined when malformed. */
export function hostNameOf(host: string): string | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9._-]+))(?::(\d{1,5}))?$/.exec(host.trim());
  if (!m) return undefined;
  if (m[3] !== undefined && Number(m[3]) > 65_535) return undefined;
  return (m[1] ?? m[2]!).toLowerCase();
}

/** The names a server answers to: the loopback names and `extra` (ADMIN_ALLOWED_HOSTS, the listen address). */
export function allowedHostNames(extra: readonly string[]): ReadonlySet<string> {
  return new Set([...LOOPBACK_NAMES, ...extra.map((h) => h.toLowerCase().replace(/^\[(.*)\]$/, '$1'))]);
}

/** Whether a request whose Host header is `host` is meant for this server. */
export function hostAllowed(host: string, names: ReadonlySet<string>): boolean {
  const name = hostNameOf(host);
  if (name === undefined) return false;
  return isIP(name) !== 0 || names.has(name);
}

/** What a request carries that tells who sent it. */
export interface RequestFacts {
  method: string;
  /** the Host the request was sent to */
  host: string;
  header(name: string): string | undefined;
}

/** Why a state-changing request may come from a page of another site, or undefined when it cannot. */
export function crossSiteReason(r: RequestFacts): string | undefined {
  if (SAFE_METHODS.has(r.method)) return undefined;
  const fetchSite = r.header('sec-fetch-site')?.trim().toLowerCase();
  if (fetchSite !== undefined && CROSS_SITE_FETCHES.has(fetchSite))
    return `a state-changing request sent by another site (Sec-Fetch-Site: ${fetchSite})`;
  const origin = r.header('origin');
  if (origin !== undefined && !sameOrigin(origin, r.host))
    return `a state-changing request from another origin (Origin: ${quoted(origin)})`;
  if (formCouldSend(r)) {
    return "a POST that a page of another site could have sent (a form's); send a JSON body, or an Authorization: Bearer or X-Requested-With header";
  }
  return undefined;
}

/** Origin names the server the request was sent to (scheme http or https, same host and port). */
function sameOrigin(origin: string, host: string): boolean {
  let o: URL;
  try {
    o = new URL(origin);
  } catch {
    // `null` (a sandboxed frame, a redirect across sites) and anything unparsable
    return false;
  }
  if (o.protocol !== 'http:' && o.protocol !== 'https:') return false;
  try {
    return new URL(`${o.protocol}//${host}`).host === o.host;
  } catch {
    return false;
  }
}

/** A POST another site's form (or a `no-cors` fetch) can send: no header that would need a preflight. */
function formCouldSend(r: RequestFacts): boolean {
  if (r.method !== 'POST') return false;
  if (authorizationOf(r.header('authorization'))?.scheme === 'bearer') return false;
  if (r.header('x-requested-with') !== undefined) return false;
  const type = mediaTypeOf(r.header('content-type'));
  return type === undefined || FORM_CONTENT_TYPES.has(type);
}

/** `application/json` of `application/json; charset=utf-8`; undefined for none. */
export function mediaTypeOf(contentType: string | undefined): string | undefined {
  const t = contentType?.split(';')[0]!.trim().toLowerCase();
  return t === '' ? undefined : t;
}

function quoted(s: string): string {
  return JSON.stringify(s.length > QUOTED_MAX_CHARS ? `${s.slice(0, QUOTED_MAX_CHARS)}…` : s);
}

/** The Host a request was sent to: its header, else (HTTP/1.0) the URL the server made of it. */
function hostOf(c: Context): string {
  return c.req.header('host') ?? new URL(c.req.url).host;
}

function refuse(c: Context, log: Logger, status: 403 | 421, reason: string): Response {
  log.warn(
    { event: 'admin.request_refused', status, method: c.req.method, path: c.req.path, reason },
    'admin request refused',
  );
  return c.text(`refused: ${reason}\n`, status);
}

/** Hono middleware: 421 for a request whose Host is not one of `names` (see hostAllowed). */
export function refuseForeignHost(names: ReadonlySet<string>, log: Logger): MiddlewareHandler {
  return async (c, next) => {
    const host = hostOf(c);
    if (hostAllowed(host, names)) return next();
    return refuse(
      c,
      log,
      421,
      `this admin server does not answer to the Host ${quoted(host)} (a page may have re-pointed its name here); ` +
        'it answers to localhost, IP addresses, its listen address and the names in ADMIN_ALLOWED_HOSTS',
    );
  };
}

/** Hono middleware: 403 for a state-changing request a page of another site may have sent (see crossSiteReason). */
export function refuseCrossSite(log: Logger): MiddlewareHandler {
  return async (c, next) => {
    const reason = crossSiteReason({ method: c.req.method, host: hostOf(c), header: (name) => c.req.header(name) });
    if (reason === undefined) return next();
    return refuse(c, log, 403, reason);
  };
}
