import { describe, expect, it } from 'vitest';
import { ApiError, InvalidRequestError } from '../../src/api/errors.ts';
import {
  ID_INPUT_MAX_CHARS,
  isChannelId,
  isHandle,
  isPlaylistId,
  isVideoId,
  parseChannelRef,
  parsePlaylistId,
  parseVideoId,
  tryParseChannelRef,
  tryParsePlaylistId,
  tryParseVideoId,
  type ChannelLocator,
} from '../../src/api/ids.ts';

// Neutral host names only: parsing is by URL shape, never by brand host.
const V = 'dQw4w9WgXcQ'; // 11 chars
const V_DASH = '-_aB3dE9fG0'; // starts with '-', holds '_'
const PL = 'PLrAXtmErZgOeiKm4sgNOknGvNjby9efdf'; // PL + 32
const UU = 'UU_x5XG1OV2P6uZZ5FSM9Ttw'; // uploads list: UU + 22
const OLAK = 'OLAK5uy_kDx9Z4kM2q1p6cR0jXGk8JvLw3nQh7sYt'; // OLAK5uy_ + 33
const RD = 'RDdQw4w9WgXcQ'; // a mix: RD + video ID (13 chars)
const UC = 'UC_x5XG1OV2P6uZZ5FSM9Ttw'; // UC + 22

describe('parseVideoId', () => {
  it.each([
    ['bare ID', V, V],
    ['bare ID starting with - and holding _', V_DASH, V_DASH],
    ['bare ID with surrounding whitespace', `  ${V}\n\t`, V],
    ['bare ID with no-break space and BOM around (trimmed by String.trim)', `\u00a0\ufeff${V}\u00a0`, V],
    ['watch URL', `https://videosite.example/watch?v=${V}`, V],
    ['watch URL over http', `http://videosite.example/watch?v=${V}`, V],
    ['watch URL with www.', `https://www.videosite.example/watch?v=${V}`, V],
    ['watch URL on a mobile host', `https://m.videosite.example/watch?v=${V}`, V],
    ['watch URL on a music host', `https://music.videosite.example/watch?v=${V}`, V],
    ['watch URL with mixed-case scheme and host', `HTTPS://WWW.VideoSite.Example/watch?v=${V}`, V],
    ['watch URL with v after other params', `https://videosite.example/watch?feature=share&v=${V}`, V],
    ['watch URL with &t= and a fragment', `https://videosite.example/watch?v=${V}&t=42s#comments`, V],
    ['watch URL with a list param', `https://videosite.example/watch?v=${V}&list=${PL}&index=3`, V],
    ['watch URL with a trailing slash on the path', `https://videosite.example/watch/?v=${V}`, V],
    ['watch URL without a scheme', `videosite.example/watch?v=${V}`, V],
    ['watch URL without a scheme, with www.', `www.videosite.example/watch?v=${V}`, V],
    ['protocol-relative watch URL', `//videosite.example/watch?v=${V}`, V],
    ['watch URL on localhost with a port, no scheme', `localhost:8080/watch?v=${V}`, V],
    ['watch URL on an IP host with a port', `http://127.0.0.1:4010/watch?v=${V}`, V],
    ['short link', `https://vs.example/${V}`, V],
    ['short link with ?si=', `https://vs.example/${V}?si=AbCdEfGhIjKlMnOp`, V],
    ['short link with ?t=', `https://vs.example/${V}?t=30`, V],
    ['short link with a trailing slash', `https://vs.example/${V}/`, V],
    ['short link without a scheme', `vs.example/${V}`, V],
    ['shorts URL', `https://videosite.example/shorts/${V}`, V],
    ['shorts URL with a query and a trailing slash', `https://videosite.example/shorts/${V}/?feature=share`, V],
    ['embed URL', `https://www.videosite.example/embed/${V}?start=10&autoplay=1`, V],
    ['live URL', `https://videosite.example/live/${V}?si=x`, V],
    ['/v/ URL', `https://videosite.example/v/${V}`, V],
    ['/e/ URL', `https://videosite.example/e/${V}`, V],
    ['ID keeps its case', 'AbCdEfGhIjK', 'AbCdEfGhIjK'],
  ])('accepts %s', (_label, input, expected) => {
    expect(parseVideoId(input)).toBe(expected);
    expect(tryParseVideoId(input)).toBe(expected);
  });

  it.each([
    ['empty string', ''],
    ['only whitespace', ' \n\t '],
    ['10-char near-ID', 'dQw4w9WgXc'],
    ['12-char near-ID', 'dQw4w9WgXcQQ'],
    ['ID with a character outside the alphabet', 'dQw4w9WgX.Q'],
    ['ID with an inner space', 'dQw4 w9WgXc'],
    ['ID with a zero-width space inside', `dQw4w9\u200bWgXcQ`],
    ['ID with non-ASCII letters', 'dQw4w9WgXcé'],
    ['ID in full-width characters', 'ｄＱｗ４ｗ９ＷｇＸｃＱ'],
    ['javascript: scheme', `javascript:alert("${V}")`],
    ['javascript: scheme dressed as a watch URL', `javascript://videosite.example/watch?v=${V}`],
    ['ftp: scheme', `ftp://videosite.example/watch?v=${V}`],
    ['data: scheme', `data:text/html,${V}`],
    ['watch URL without v', 'https://videosite.example/watch?list=PLx'],
    ['watch URL with a 10-char v', 'https://videosite.example/watch?v=dQw4w9WgXc'],
    ['watch URL with a 12-char v', 'https://videosite.example/watch?v=dQw4w9WgXcQQ'],
    ['shorts URL with a 10-char ID', 'https://videosite.example/shorts/dQw4w9WgXc'],
    ['short link with a 12-char segment', 'https://vs.example/dQw4w9WgXcQQ'],
    ['embed of a playlist (videoseries is 11 chars)', `https://videosite.example/embed/videoseries?list=${PL}`],
    ['playlist URL', `https://videosite.example/playlist?list=${PL}`],
    ['channel URL', `https://videosite.example/channel/${UC}`],
    ['handle URL', 'https://videosite.example/@somebody'],
    ['host only', 'https://videosite.example/'],
    ['unknown path shape holding an ID', `https://videosite.example/results/${V}`],
    ['ID in the fragment only', `https://videosite.example/#${V}`],
    ['path without a host', `/watch?v=${V}`],
    ['watch path without a host', `watch?v=${V}`],
    ['URL with an empty host', `https:///watch?v=${V}`],
    ['input longer than the cap', `https://videosite.example/watch?v=${V}&x=${'a'.repeat(ID_INPUT_MAX_CHARS)}`],
  ])('rejects %s', (_label, input) => {
    expect(() => parseVideoId(input)).toThrow(InvalidRequestError);
    expect(tryParseVideoId(input)).toBeUndefined();
  });
});

describe('parsePlaylistId', () => {
  it.each([
    ['bare PL ID', PL, PL],
    ['bare short PL ID (PL + 16)', 'PL0123456789abcdef', 'PL0123456789abcdef'],
    ['bare UU ID', UU, UU],
    ['bare OLAK5uy_ ID', OLAK, OLAK],
    ['bare RD mix ID', RD, RD],
    ['bare 12-char ID (shortest accepted)', 'FLabcdefghij', 'FLabcdefghij'],
    ['bare ID with whitespace', `\n ${PL} `, PL],
    ['playlist URL', `https://videosite.example/playlist?list=${PL}`, PL],
    [
      'playlist URL on a mobile host with other params',
      `https://m.videosite.example/playlist?feature=share&list=${PL}#x`,
      PL,
    ],
    ['playlist URL without a scheme', `videosite.example/playlist?list=${OLAK}`, OLAK],
    [
      'playlist URL with mixed-case host and trailing slash',
      `https://Music.VideoSite.EXAMPLE/playlist/?list=${PL}`,
      PL,
    ],
    ['watch URL naming a video and a list', `https://www.videosite.example/watch?v=${V}&list=${PL}&index=2`, PL],
    ['watch URL with list before v', `https://videosite.example/watch?list=${RD}&v=${V}&start_radio=1`, RD],
    ['short link with a list', `https://vs.example/${V}?list=${PL}`, PL],
    ['embed of a playlist', `https://videosite.example/embed/videoseries?list=${PL}`, PL],
  ])('accepts %s', (_label, input, expected) => {
    expect(parsePlaylistId(input)).toBe(expected);
    expect(tryParsePlaylistId(input)).toBe(expected);
  });

  it.each([
    ['empty string', ''],
    ['bare video ID (11 chars)', V],
    ['bare channel ID', UC],
    ['bare 2-char personal list', 'WL'],
    ['bare 65-char ID', `PL${'a'.repeat(63)}`],
    ['bare ID with a dot', 'PL0123456789.abcdef'],
    ['watch URL without a list', `https://videosite.example/watch?v=${V}`],
    ['playlist URL without a list', 'https://videosite.example/playlist'],
    ['playlist URL whose list is a video ID', `https://videosite.example/playlist?list=${V}`],
    ['playlist URL with an empty list', 'https://videosite.example/playlist?list='],
    ['list param on an unknown path shape', `https://videosite.example/feed/library?list=${PL}`],
    ['channel URL', `https://videosite.example/channel/${UC}`],
    ['javascript: scheme', `javascript:void(0)//videosite.example/playlist?list=${PL}`],
    ['list with non-ASCII characters', `https://videosite.example/playlist?list=PL${'ü'.repeat(16)}`],
  ])('rejects %s', (_label, input) => {
    expect(() => parsePlaylistId(input)).toThrow(InvalidRequestError);
    expect(tryParsePlaylistId(input)).toBeUndefined();
  });
});

describe('parseChannelRef', () => {
  const id: ChannelLocator = { kind: 'id', id: UC, canonical: UC };
  const handle = (h: string): ChannelLocator => ({ kind: 'handle', handle: h, canonical: h });
  const custom = (name: string, canonical: string): ChannelLocator => ({ kind: 'custom', name, canonical });

  it.each<[string, string, ChannelLocator]>([
    ['bare channel ID', UC, id],
    ['bare channel ID with whitespace', ` ${UC}\n`, id],
    ['channel URL', `https://videosite.example/channel/${UC}`, id],
    ['channel URL with a tab and trailing slash', `https://www.videosite.example/channel/${UC}/videos/`, id],
    ['channel URL on a mobile host with a query', `https://m.videosite.example/channel/${UC}/featured?view=0#top`, id],
    ['channel URL without a scheme', `videosite.example/channel/${UC}`, id],
    ['channel URL with mixed-case host', `HTTP://VideoSite.Example/channel/${UC}`, id],
    ['handle with @', '@some.Body_9', handle('@some.Body_9')],
    ['handle without @', 'some-body', handle('@some-body')],
    ['handle with whitespace', '  @somebody  ', handle('@somebody')],
    ['3-char handle (shortest)', 'abc', handle('@abc')],
    ['30-char handle (longest)', 'a'.repeat(30), handle(`@${'a'.repeat(30)}`)],
    ['@ and something shaped like a channel ID is a handle', `@${UC}`, handle(`@${UC}`)],
    ['handle URL', 'https://videosite.example/@somebody', handle('@somebody')],
    ['handle URL with a tab', 'https://www.videosite.example/@somebody/videos?view=0', handle('@somebody')],
    ['handle URL without a scheme', 'm.videosite.example/@somebody/', handle('@somebody')],
    ['/c/ URL', 'https://videosite.example/c/SomeName', custom('SomeName', 'https://videosite.example/c/SomeName')],
    [
      '/c/ URL on www. with a tab, query, fragment',
      'https://www.VideoSite.example/c/SomeName/videos?x=1#y',
      custom('SomeName', 'https://videosite.example/c/SomeName'),
    ],
    [
      '/c/ URL over http on a mobile host',
      'http://m.videosite.example/c/SomeName/',
      custom('SomeName', 'https://videosite.example/c/SomeName'),
    ],
    [
      '/user/ URL',
      'https://videosite.example/user/someuser',
      custom('someuser', 'https://videosite.example/user/someuser'),
    ],
    [
      '/user/ URL without a scheme, port kept',
      'localhost:4010/user/someuser',
      custom('someuser', 'https://localhost:4010/user/someuser'),
    ],
  ])('accepts %s', (_label, input, expected) => {
    expect(parseChannelRef(input)).toEqual(expected);
    expect(tryParseChannelRef(input)).toEqual(expected);
  });

  it.each([
    ['empty string', ''],
    ['a name with a space', 'foo bar'],
    ['2-char handle', '@ab'],
    ['31-char handle', 'a'.repeat(31)],
    ['@ alone', '@'],
    ['handle with non-ASCII letters', '@名前です'],
    ['handle with an emoji', 'some🙂body'],
    ['/channel/ with something not a channel ID', 'https://videosite.example/channel/somebody'],
    ['/channel/ with a 23-char UC ID', `https://videosite.example/channel/${UC.slice(0, 23)}`],
    ['/channel/ without an ID', 'https://videosite.example/channel/'],
    ['/c/ without a name', 'https://videosite.example/c/'],
    ['handle URL with a 2-char handle', 'https://videosite.example/@ab'],
    ['watch URL', `https://videosite.example/watch?v=${V}`],
    ['host only', 'https://videosite.example'],
    ['legacy bare vanity path', 'https://videosite.example/SomeName'],
    ['javascript: scheme', 'javascript:alert(1)'],
    ['mailto: scheme', 'mailto:somebody@videosite.example'],
  ])('rejects %s', (_label, input) => {
    expect(() => parseChannelRef(input)).toThrow(InvalidRequestError);
    expect(tryParseChannelRef(input)).toBeUndefined();
  });
});

describe('errors', () => {
  function caught(f: () => unknown): InvalidRequestError {
    try {
      f();
    } catch (e) {
      if (e instanceof InvalidRequestError) return e;
      throw e;
    }
    throw new Error('expected a throw');
  }

  it('names the field, the value and the valid forms (the documented channel message)', () => {
    const e = caught(() => parseChannelRef('  foo bar '));
    expect(e).toBeInstanceOf(ApiError);
    expect(e.code).toBe('invalid-request');
    expect(e.path).toBe('channelId');
    expect(e.message).toBe(
      'channelId: "foo bar" is not a channel ID, handle or channel URL (expected UC… (24 chars), @handle, or a …/channel/UC…, …/@handle, …/c/Name or …/user/Name URL)',
    );
  });

  it.each([
    [
      'video',
      () => parseVideoId('abc'),
      'videoId',
      'videoId: "abc" is not a video ID or video URL (expected an 11-character',
    ],
    [
      'playlist',
      () => parsePlaylistId('abc'),
      'playlistId',
      'playlistId: "abc" is not a playlist ID or playlist URL (expected',
    ],
    [
      'video, caller field',
      () => parseVideoId('abc', 'videoIds[3]'),
      'videoIds[3]',
      'videoIds[3]: "abc" is not a video ID',
    ],
    ['playlist, caller field', () => parsePlaylistId('abc', 'id'), 'id', 'id: "abc" is not a playlist ID'],
    [
      'channel, caller field',
      () => parseChannelRef('a b', 'sources.ref'),
      'sources.ref',
      'sources.ref: "a b" is not a channel ID',
    ],
  ])('%s: path is the field and the message starts with it', (_label, f, path, start) => {
    const e = caught(f);
    expect(e.path).toBe(path);
    expect(e.message.startsWith(start)).toBe(true);
  });

  it.each([
    ['javascript: scheme', () => parseVideoId(`javascript:alert(1)`), 'scheme "javascript:" is not http or https'],
    ['empty', () => parseVideoId('   '), 'empty after trimming whitespace'],
    ['near-ID', () => parseVideoId('dQw4w9WgXcQQ'), 'got 12 characters'],
    ['bad v', () => parseVideoId('https://videosite.example/watch?v=short'), 'v parameter "short"'],
    ['channel ID as playlist', () => parsePlaylistId(UC), 'is a channel ID'],
    ['video ID as playlist', () => parsePlaylistId(V), 'is a video ID'],
    ['no list', () => parsePlaylistId(`https://videosite.example/watch?v=${V}`), 'no list parameter'],
    ['unknown shape', () => parseChannelRef(`https://videosite.example/watch?v=${V}`), 'not a channel URL shape'],
  ])('details say why: %s', (_label, f, why) => {
    expect(caught(f).details).toContain(why);
  });

  it('quotes the trimmed value cut to 200 characters, with control characters escaped', () => {
    const long = caught(() => parseVideoId(`  ${'x'.repeat(500)}  `, 'videoId'));
    expect(long.message).toContain(`"${'x'.repeat(200)}…"`);
    expect(long.message).not.toContain('x'.repeat(201));

    const ctl = caught(() => parseVideoId('a\nb'));
    expect(ctl.message).toContain('"a\\nb"');
    expect(ctl.message).not.toContain('\n');
  });

  it('does not crash on a non-string at run time', () => {
    const e = caught(() => parseVideoId(undefined as unknown as string));
    expect(e.details).toContain('expected a string');
    expect(tryParseChannelRef(42 as unknown as string)).toBeUndefined();
  });
});

describe('predicates', () => {
  it.each([
    [isVideoId, V, true],
    [isVideoId, 'dQw4w9WgXc', false],
    [isVideoId, ` ${V}`, false], // predicates test canonical values exactly; parsers trim
    [isVideoId, `https://vs.example/${V}`, false],
    [isPlaylistId, PL, true],
    [isPlaylistId, OLAK, true],
    [isPlaylistId, V, false],
    [isPlaylistId, UC, false],
    [isChannelId, UC, true],
    [isChannelId, `UC${'a'.repeat(21)}`, false],
    [isChannelId, `UC${'a'.repeat(23)}`, false],
    [isChannelId, `uc${'a'.repeat(22)}`, false],
    [isHandle, '@somebody', true],
    [isHandle, 'somebody', true],
    [isHandle, '@ab', false],
  ])('%o(%j) is %s', (pred, value, expected) => {
    expect(pred(value)).toBe(expected);
  });
});

describe('simulator-style IDs', () => {
  // The simulator draws IDs from the whole URL-safe alphabet; every character must pass,
  // in every position, including a leading '-' or '_'.
  const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const idAt = (offset: number, length: number): string =>
    Array.from({ length }, (_, i) => ALPHABET[(offset + i * 7) % ALPHABET.length]).join('');
  const offsets = Array.from({ length: ALPHABET.length }, (_, i) => i);

  it.each(offsets)('accepts video, channel and playlist IDs drawn from offset %i', (offset) => {
    const video = idAt(offset, 11);
    const channel = `UC${idAt(offset, 22)}`;
    const playlist = `PL${idAt(offset, 32)}`;
    expect(parseVideoId(video)).toBe(video);
    expect(parseVideoId(`https://videosite.example/watch?v=${video}`)).toBe(video);
    expect(parseChannelRef(channel)).toEqual({ kind: 'id', id: channel, canonical: channel });
    expect(parseChannelRef(`https://videosite.example/channel/${channel}`).canonical).toBe(channel);
    expect(parsePlaylistId(playlist)).toBe(playlist);
    expect(parsePlaylistId(`https://videosite.example/playlist?list=${playlist}`)).toBe(playlist);
  });
});
