/**
 * A URL's credentials never leave the process in an error or a log line: a bad `DATABASE_URL`,
 * `REDIS_URL` or `API_BASE_URL` is named, and shown, with its password as `***`.
 *
 * The password is whatever lies between the user's `:` and the last `@` before the host, even
 * when it holds characters a URL should have escaped (`/`, `#`, `?`, `@`, as generated passwords
 * often do), so the value is never cut at the first of them: better to hide a little too much
 * than to show part of a password.
 */

/** Where a URL starts: its scheme and `//`. */
const URL_START = /\b[a-z][a-z0-9+.-]*:\/\//i;
/** Where a URL written inside a message ends. */
const MESSAGE_URL_END = /[\s"'<>`]/;

const SHOWN = '***';

/** `userinfo@` as it may be shown: `user:***@`; a lone user name kept, except in an http(s) URL, where it is a token. */
function redactUserinfo(scheme: string, userinfo: string): string {
  const colon = userinfo.indexOf(':');
  if (colon >= 0) return `${userinfo.slice(0, colon)}:${SHOWN}`;
  return /^https?:\/\/$/i.test(scheme) ? SHOWN : userinfo;
}

/** `rest` (what follows `scheme://`, up to the URL's end) with its userinfo redacted. */
function redactAuthority(scheme: string, rest: string): string {
  const at = rest.lastIndexOf('@');
  if (at < 0) return rest;
  return `${redactUserinfo(scheme, rest.slice(0, at))}${rest.slice(at)}`;
}

/** A value that is one URL (an environment variable's), with its password as `***`. */
export function redactUrl(value: string): string {
  const m = URL_START.exec(value);
  if (m === null || m.index !== value.search(/\S/)) return value;
  const start = m.index + m[0].length;
  return `${value.slice(0, start)}${redactAuthority(m[0], value.slice(start))}`;
}

/**
 * The URL without its password, for a command a message suggests (`psql URL`): the tool asks for
 * the password, or reads it from its own configuration, instead of the terminal's scrollback
 * keeping it. A URL that does not parse is redacted instead.
 */
export function urlWithoutPassword(value: string): string {
  try {
    const u = new URL(value);
    if (u.password === '') return value;
    u.password = '';
    return u.toString();
  } catch {
    return redactUrl(value);
  }
}

/** Free text (an error message) with the password of every URL in it as `***`. */
export function redactUrlsIn(text: string): string {
  let out = '';
  let last = 0;
  for (const m of text.matchAll(new RegExp(URL_START, 'gi'))) {
    const start = m.index + m[0].length;
    if (start <= last) continue;
    const end = text.slice(start).search(MESSAGE_URL_END);
    const stop = end < 0 ? text.length : start + end;
    out += text.slice(last, start) + redactAuthority(m[0], text.slice(start, stop));
    last = stop;
  }
  return out + text.slice(last);
}
