/**
 * Local parsing of every ID form the interface accepts (seed endpoints 1, 3–6: "video URL or ID",
 * "playlist URL or playlist ID", "channel URL (channel-ID form or custom-name form), channel ID,
 * handle with leading `@`, or handle without it") into the one canonical string we send.
 *
 * Parsing is by URL SHAPE, never by host name: the platform is configurable (`API_PLATFORM`), the
 * simulator runs on localhost, and brand host names must not be hard-coded. Any http(s) host
 * passes, with or without a scheme; only the path and query decide what a URL names.
 *
 * Why parse locally at all: a typo in `sources add` should fail before it costs a request, and the
 * canonical form lets the same playlist given as a URL and as an ID be one source, not two.
 * Handles and custom names still need the API to resolve them to a channel ID.
 */
import { InvalidRequestError } from './errors.ts';

/** A video ID: exactly 11 characters of the URL-safe base64 alphabet. */
const VIDEO_ID_RE = /^[A-Za-z0-9_-]{11}$/;
/** A channel ID: `UC` and 22 characters (24 in all). */
const CHANNEL_ID_RE = /^UC[A-Za-z0-9_-]{22}$/;
/**
 * A playlist ID. Real ones carry a prefix (`PL`, `UU`, `LL`, `FL`, `OL`, `RD`, `UL`, `OLAK5uy_`…)
 * and run from 12 to ~41 characters; the length range is kept loose so a new prefix still passes.
 * 11 characters is excluded by the range, so a video ID is never taken for a playlist.
 */
const PLAYLIST_ID_RE = /^[A-Za-z0-9_-]{12,64}$/;
/** A handle without its `@`. */
const HANDLE_RE = /^[A-Za-z0-9._-]{3,30}$/;
/** The name of a `/c/Name` or `/user/Name` URL (legacy usernames and custom names). */
const CUSTOM_NAME_RE = /^[A-Za-z0-9._-]{1,100}$/;

/** Inputs longer than this (in characters) are rejected unread; real URLs of these shapes are far shorter. */
export const ID_INPUT_MAX_CHARS = 2048;
/** How much of a rejected value an error message quotes, in characters. */
const ERROR_VALUE_MAX_CHARS = 200;

/** Path prefixes of the `/<prefix>/<videoId>` URL shapes. */
const VIDEO_PATH_PREFIXES: ReadonlySet<string> = new Set(['shorts', 'embed', 'live', 'v', 'e']);
/**
 * 11-character path words that are not video IDs: `/embed/videoseries?list=…` embeds a playlist.
 */
const NOT_VIDEO_IDS: ReadonlySet<string> = new Set(['videoseries']);
/**
 * Host prefixes dropped from a canonical custom-name URL, so the desktop, mobile and music forms
 * of the same channel URL become one source.
 */
const ALIAS_HOST_PREFIX_RE = /^(?:www|m|music)\./;

/** What a channel reference names. `canonical` is what we send as `id` / `channelId`. */
export type ChannelLocator =
  | { kind: 'id'; id: string; canonical: string }
  | { kind: 'handle'; /** with its leading `@` */ handle: string; canonical: string }
  | { kind: 'custom'; name: string; /** `https://<host>/c/Name` or `…/user/Name` */ canonical: string };

export function isVideoId(value: string): boolean {
  return VIDEO_ID_RE.test(value);
}

/** True for a playlist ID; a channel ID (`UC` + 22) is not one, though its characters would fit. */
export function isPlaylistId(value: string): boolean {
  return PLAYLIST_ID_RE.test(value) && !CHANNEL_ID_RE.test(value);
}

export function isChannelId(value: string): boolean {
  return CHANNEL_ID_RE.test(value);
}

/** A handle, with or without its leading `@`. */
export function isHandle(value: string): boolean {
  return HANDLE_RE.test(value.startsWith('@') ? value.slice(1) : value);
}

// ---------------------------------------------------------------------------------------------
// Public parsers

/** The 11-character video ID of a video ID or video URL; throws InvalidRequestError naming `field`. */
export function parseVideoId(input: string, field = 'videoId'): string {
  return unwrap(videoOutcome(input), input, field, VIDEO_WHAT);
}

export function tryParseVideoId(input: string): string | undefined {
  const r = videoOutcome(input);
  return r.ok ? r.value : undefined;
}

/** The list ID of a playlist ID or playlist URL; throws InvalidRequestError naming `field`. */
export function parsePlaylistId(input: string, field = 'playlistId'): string {
  return unwrap(playlistOutcome(input), input, field, PLAYLIST_WHAT);
}

export function tryParsePlaylistId(input: string): string | undefined {
  const r = playlistOutcome(input);
  return r.ok ? r.value : undefined;
}

/** What a channel ID, handle or channel URL names; throws InvalidRequestError naming `field`. */
export function parseChannelRef(input: string, field = 'channelId'): ChannelLocator {
  return unwrap(channelOutcome(input), input, field, CHANNEL_WHAT);
}

export function tryParseChannelRef(input: string): ChannelLocator | undefined {
  const r = channelOutcome(input);
  return r.ok ? r.value : undefined;
}

// ---------------------------------------------------------------------------------------------
// Errors

interface Expectation {
  /** "a video ID or video URL" */
  noun: string;
  /** the forms that are valid, for the message */
  expected: string;
}

const VIDEO_WHAT: Expectation = {
  noun: 'a video ID or video URL',
  expected:
    'an 11-character ID of A-Z a-z 0-9 _ -, or a …/watch?v=ID, …/ID, …/shorts/ID, …/embed/ID, …/live/ID or …/v/ID URL',
};
const PLAYLIST_WHAT: Expectation = {
  noun: 'a playlist ID or playlist URL',
  expected:
    'an ID of 12 to 64 characters of A-Z a-z 0-9 _ - such as PL…, or a …/playlist?list=ID or …/watch?v=…&list=ID URL',
};
const CHANNEL_WHAT: Expectation = {
  noun: 'a channel ID, handle or channel URL',
  expected: 'UC… (24 chars), @handle, or a …/channel/UC…, …/@handle, …/c/Name or …/user/Name URL',
};

type Outcome<T> = { ok: true; value: T } | { ok: false; reason: string };

const ok = <T>(value: T): Outcome<T> => ({ ok: true, value });
const fail = <T>(reason: string): Outcome<T> => ({ ok: false, reason });

function unwrap<T>(r: Outcome<T>, input: unknown, field: string, what: Expectation): T {
  if (r.ok) return r.value;
  throw new InvalidRequestError({
    message: `${field}: ${quote(input)} is not ${what.noun} (expected ${what.expected})`,
    details: r.reason,
    path: field,
  });
}

/** The value as the user gave it (trimmed), cut and JSON-quoted so control characters stay visible. */
function quote(input: unknown): string {
  const s = (typeof input === 'string' ? input : String(input)).trim();
  return JSON.stringify(s.length > ERROR_VALUE_MAX_CHARS ? `${s.slice(0, ERROR_VALUE_MAX_CHARS)}…` : s);
}

/** A path cut short for a `details` text. */
function shortPath(url: URL): string {
  return url.pathname.length > 80 ? `${url.pathname.slice(0, 80)}…` : url.pathname;
}

// ---------------------------------------------------------------------------------------------
// Telling a URL from a bare token

type Located = { kind: 'bare'; token: string } | { kind: 'url'; url: URL; segments: string[] };

/** A scheme (`https:`, `javascript:`); a colon followed by a digit is a port (`localhost:8080/…`). */
const SCHEME_RE = /^([A-Za-z][A-Za-z0-9+.-]*):(?!\d)/;
/** `host[:port]` followed by a path, query or fragment: a URL written without its scheme. */
const SCHEMELESS_RE = /^([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*)(?::\d{1,5})?[/?#]/;

function locate(input: unknown): Outcome<Located> {
  if (typeof input !== 'string') return fail(`expected a string, got ${typeof input}`);
  const s = input.trim();
  if (s === '') return fail('empty after trimming whitespace');
  if (s.length > ID_INPUT_MAX_CHARS) return fail(`longer than ${ID_INPUT_MAX_CHARS} characters`);

  const scheme = SCHEME_RE.exec(s)?.[1]?.toLowerCase();
  if (scheme !== undefined) {
    if (scheme !== 'http' && scheme !== 'https') return fail(`scheme "${scheme}:" is not http or https`);
    return urlOf(s);
  }
  if (s.startsWith('//')) return urlOf(`https:${s}`);
  const host = SCHEMELESS_RE.exec(s)?.[1];
  // A dot or `localhost` is what tells `videosite.example/watch?v=…` from a token with a slash.
  if (host !== undefined && (host.includes('.') || host.toLowerCase() === 'localhost')) {
    return urlOf(`https://${s}`);
  }
  return ok({ kind: 'bare', token: s });
}

function urlOf(text: string): Outcome<Located> {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return fail('not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return fail('not an http(s) URL');
  if (url.hostname === '') return fail('URL has no host');
  // Empty segments come from trailing or doubled slashes, which name the same page.
  return ok({ kind: 'url', url, segments: url.pathname.split('/').filter((p) => p !== '') });
}

// ---------------------------------------------------------------------------------------------
// Shapes

/**
 * The video ID a URL names; a failure (with its reason) when the path has a video shape but no
 * valid ID; `undefined` when the path is not a video shape at all.
 */
function videoOfPath(url: URL, segments: string[]): Outcome<string> | undefined {
  const [first, second] = segments;
  if (first === undefined) return undefined;
  const word = first.toLowerCase();
  if (segments.length === 1 && word === 'watch') {
    const v = url.searchParams.get('v');
    if (v === null) return fail('watch URL without a v parameter');
    return VIDEO_ID_RE.test(v) ? ok(v) : fail(`v parameter "${v.slice(0, 40)}" is not an 11-character video ID`);
  }
  if (segments.length === 2 && second !== undefined && VIDEO_PATH_PREFIXES.has(word)) {
    if (NOT_VIDEO_IDS.has(second)) return fail(`/${word}/${second} names a playlist, not a video`);
    return VIDEO_ID_RE.test(second)
      ? ok(second)
      : fail(`"${second.slice(0, 40)}" after /${word}/ is not an 11-character video ID`);
  }
  if (segments.length === 1 && VIDEO_ID_RE.test(first) && !NOT_VIDEO_IDS.has(first)) return ok(first);
  return undefined;
}

function videoOutcome(input: string): Outcome<string> {
  const loc = locate(input);
  if (!loc.ok) return loc;
  if (loc.value.kind === 'bare') {
    const t = loc.value.token;
    return VIDEO_ID_RE.test(t) ? ok(t) : fail(`not 11 characters of A-Z a-z 0-9 _ - (got ${t.length} characters)`);
  }
  const { url, segments } = loc.value;
  return videoOfPath(url, segments) ?? fail(`URL path ${shortPath(url)} is not a video URL shape`);
}

function checkPlaylistId(id: string, where: string): Outcome<string> {
  if (CHANNEL_ID_RE.test(id)) return fail(`${where} is a channel ID (UC…), not a playlist ID`);
  if (VIDEO_ID_RE.test(id)) return fail(`${where} is a video ID (11 characters), not a playlist ID`);
  if (!PLAYLIST_ID_RE.test(id)) return fail(`${where} is not 12 to 64 characters of A-Z a-z 0-9 _ -`);
  return ok(id);
}

function playlistOutcome(input: string): Outcome<string> {
  const loc = locate(input);
  if (!loc.ok) return loc;
  if (loc.value.kind === 'bare') return checkPlaylistId(loc.value.token, 'the value');
  const { url, segments } = loc.value;
  const word = segments[0]?.toLowerCase();
  const isPlaylistPage = segments.length === 1 && word === 'playlist';
  // A `list` parameter counts on a playlist page or on any page that shows a video (watch, short
  // link, embed, including `/embed/videoseries`); elsewhere it is not a playlist URL we know.
  const isVideoPage =
    (segments.length === 1 && word === 'watch') ||
    (segments.length === 2 && word === 'embed' && NOT_VIDEO_IDS.has(segments[1] ?? '')) ||
    videoOfPath(url, segments)?.ok === true;
  if (!isPlaylistPage && !isVideoPage) return fail(`URL path ${shortPath(url)} is not a playlist URL shape`);
  const list = url.searchParams.get('list');
  if (list === null) {
    return fail(
      isPlaylistPage
        ? 'playlist URL without a list parameter'
        : 'URL names a video but no playlist (no list parameter)',
    );
  }
  return checkPlaylistId(list, `list parameter "${list.slice(0, 80)}"`);
}

function channelOutcome(input: string): Outcome<ChannelLocator> {
  const loc = locate(input);
  if (!loc.ok) return loc;
  if (loc.value.kind === 'bare') {
    const t = loc.value.token;
    if (CHANNEL_ID_RE.test(t)) return ok({ kind: 'id', id: t, canonical: t });
    const name = t.startsWith('@') ? t.slice(1) : t;
    if (HANDLE_RE.test(name)) return ok({ kind: 'handle', handle: `@${name}`, canonical: `@${name}` });
    return fail('neither a channel ID (UC + 22 characters) nor a handle (3 to 30 characters of A-Z a-z 0-9 . _ -)');
  }
  const { url, segments } = loc.value;
  const [first, second] = segments;
  if (first?.startsWith('@')) {
    const name = first.slice(1);
    return HANDLE_RE.test(name)
      ? ok({ kind: 'handle', handle: `@${name}`, canonical: `@${name}` })
      : fail(`"${first.slice(0, 40)}" is not a handle (3 to 30 characters of A-Z a-z 0-9 . _ -)`);
  }
  // Later segments (`/videos`, `/featured`, `/about`…) are tabs of the same channel.
  const word = first?.toLowerCase();
  if (word === 'channel') {
    return second !== undefined && CHANNEL_ID_RE.test(second)
      ? ok({ kind: 'id', id: second, canonical: second })
      : fail(`"${(second ?? '').slice(0, 40)}" after /channel/ is not a channel ID (UC + 22 characters)`);
  }
  if (word === 'c' || word === 'user') {
    if (second === undefined || !CUSTOM_NAME_RE.test(second)) {
      return fail(`"${(second ?? '').slice(0, 40)}" after /${word}/ is not a name of A-Z a-z 0-9 . _ -`);
    }
    // Scheme, alias subdomain, tabs, query and fragment do not change which channel is meant.
    const host = url.host.replace(ALIAS_HOST_PREFIX_RE, '');
    return ok({ kind: 'custom', name: second, canonical: `https://${host}/${word}/${second}` });
  }
  return fail(`URL path ${shortPath(url)} is not a channel URL shape`);
}
