/**
 * Parsing of the references the interface accepts: video IDs or URLs, playlist IDs or URLs,
 * channel IDs, channel URLs (ID or custom-name form) and handles with or without `@`.
 *
 * Written independently of the client's parser on purpose: when the two disagree, a test sees it.
 * Any host is accepted, since the platform's name is a stand-in.
 */

export const VIDEO_ID_RE = /^[A-Za-z0-9_-]{11}$/;
export const CHANNEL_ID_RE = /^UC[A-Za-z0-9_-]{22}$/;
export const PLAYLIST_ID_RE = /^PL[A-Za-z0-9_-]{32}$/;
const HANDLE_RE = /^[A-Za-z0-9._-]{3,30}$/;
/** Path prefixes under which the next segment is a video ID. */
const VIDEO_PATH_PREFIXES = new Set(['shorts', 'embed', 'live', 'v', 'e']);
/** First path segments that are pages, not custom channel names. */
const RESERVED_SEGMENTS = new Set(['watch', 'playlist', 'results', 'feed', 'shorts', 'embed', 'live']);

function asUrl(input: string): URL | undefined {
  const s = input.trim();
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(s)
    ? s
    : /^[^\s/]+\.[^\s/]+\//.test(s)
      ? `https://${s}`
      : undefined;
  if (withScheme === undefined) return undefined;
  try {
    return new URL(withScheme);
  } catch {
    return undefined;
  }
}

function segments(url: URL): string[] {
  return url.pathname
    .split('/')
    .filter((s) => s !== '')
    .map((s) => decodeURIComponent(s));
}

/** The 11-character video ID of an ID or a video URL (watch, short link, shorts, embed, live). */
export function parseVideoRef(input: string): string | undefined {
  const s = input.trim();
  if (VIDEO_ID_RE.test(s)) return s;
  const url = asUrl(s);
  if (!url) return undefined;
  const v = url.searchParams.get('v');
  if (v !== null) return VIDEO_ID_RE.test(v) ? v : undefined;
  const segs = segments(url);
  if (segs.length === 1 && VIDEO_ID_RE.test(segs[0]!) && !RESERVED_SEGMENTS.has(segs[0]!)) return segs[0];
  if (segs.length >= 2 && VIDEO_PATH_PREFIXES.has(segs[0]!) && VIDEO_ID_RE.test(segs[1]!)) return segs[1];
  return undefined;
}

/** A playlist ID, or the `list` parameter of a playlist or watch URL. */
export function parsePlaylistRef(input: string): string | undefined {
  const s = input.trim();
  if (PLAYLIST_ID_RE.test(s)) return s;
  const url = asUrl(s);
  const list = url?.searchParams.get('list');
  return list && PLAYLIST_ID_RE.test(list) ? list : undefined;
}

export type ChannelRef =
  | { kind: 'id'; id: string }
  | { kind: 'handle'; handle: string }
  /** `/c/Name`, `/user/Name` or `/Name`; a bare word may be either a handle or a custom name */
  | { kind: 'custom'; name: string };

/** What a channel reference names; handles are returned without `@`. */
export function parseChannelRef(input: string): ChannelRef | undefined {
  const s = input.trim();
  if (CHANNEL_ID_RE.test(s)) return { kind: 'id', id: s };
  if (s.startsWith('@')) return HANDLE_RE.test(s.slice(1)) ? { kind: 'handle', handle: s.slice(1) } : undefined;
  const url = asUrl(s);
  if (url) {
    const segs = segments(url);
    const [first, second] = segs;
    if (first === undefined) return undefined;
    if (first === 'channel' && second !== undefined && CHANNEL_ID_RE.test(second)) return { kind: 'id', id: second };
    if (first.startsWith('@') && HANDLE_RE.test(first.slice(1))) return { kind: 'handle', handle: first.slice(1) };
    if ((first === 'c' || first === 'user') && second !== undefined) return { kind: 'custom', name: second };
    if (!RESERVED_SEGMENTS.has(first) && first !== 'channel') return { kind: 'custom', name: first };
    return undefined;
  }
  return HANDLE_RE.test(s) ? { kind: 'handle', handle: s } : undefined;
}
