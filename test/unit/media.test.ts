/**
 * Media of every platform, locally: which platform a URL is (the published identifiers, X's own
 * host, the neutral stand-ins, media files), how a media list splits into the video platform's
 * videos and other media, what `--mode` needs, and the published prices of a media item.
 */
import { describe, expect, it } from 'vitest';
import {
  mediaBudgetMinutes,
  mediaMomentUrl,
  mediaPlatformOf,
  mediaTranscriptCredits,
  modeGenerates,
  socialPlatformOf,
} from '../../src/domain/media.ts';
import { mediaAdapter, parseMediaRefs } from '../../src/pipeline/kinds/media.ts';
import { SourceSpecError, type SourceSpec } from '../../src/pipeline/kinds/adapter.ts';

const refs = (...values: string[]) => values.map((value, i) => ({ value, where: `argument ${i + 1}` }));

describe('media platforms', () => {
  it('names the four social platforms by their published URLs, X and the stand-ins', () => {
    expect(socialPlatformOf(new URL('https://www.tiktok.com/@user/video/1234567890'))).toBe('tiktok');
    expect(socialPlatformOf(new URL('https://www.instagram.com/reel/ABC123'))).toBe('instagram');
    expect(socialPlatformOf(new URL('https://twitter.com/user/status/1234567890'))).toBe('twitter');
    expect(socialPlatformOf(new URL('https://x.com/user/status/1'))).toBe('twitter');
    expect(socialPlatformOf(new URL('https://www.facebook.com/i/videos/1234567890'))).toBe('facebook');
    expect(socialPlatformOf(new URL('https://clips.test/v/42'))).toBe('tiktok');
    expect(socialPlatformOf(new URL('https://example.com/x'))).toBeUndefined();
    expect(mediaPlatformOf(new URL('https://cdn.example.com/talks/keynote.MP3'))).toBe('file');
    expect(mediaPlatformOf(new URL('https://example.com/page.html'))).toBeUndefined();
  });

  it('splits a list into video-platform videos and other media, naming a bad line', () => {
    const split = parseMediaRefs(
      refs(
        'https://www.videosite.com/watch?v=dQw4w9WgXcQ',
        'https://www.tiktok.com/@user/video/1234567890',
        'https://x.com/abcdefghijk',
        'dQw4w9WgXcQ',
      ),
    );
    expect(split.videoIds).toEqual(['dQw4w9WgXcQ']);
    expect(split.urls).toEqual(['https://www.tiktok.com/@user/video/1234567890', 'https://x.com/abcdefghijk']);
    expect(() => parseMediaRefs(refs('https://example.com/page.html'))).toThrow(/argument 1: "https:\/\/example.com/);
  });
});

describe('--mode', () => {
  const spec = (o: Partial<SourceSpec>): SourceSpec => ({
    kind: 'media',
    refs: refs('https://www.tiktok.com/@user/video/1'),
    langs: [],
    textOnly: false,
    cron: null,
    include: [],
    filters: {},
    generateMissing: false,
    maxGenerateMinutes: null,
    ...o,
  });

  it('native by default; auto and generate need a minutes budget and then generate missing captions too', () => {
    expect(mediaAdapter.parse(spec({}))).toMatchObject({ mediaMode: 'native', generateMissing: false });
    expect(() => mediaAdapter.parse(spec({ mediaMode: 'auto' }))).toThrow(SourceSpecError);
    expect(() => mediaAdapter.parse(spec({ mediaMode: 'generate' }))).toThrow(/--max-generate-minutes/);
    expect(mediaAdapter.parse(spec({ mediaMode: 'auto', maxGenerateMinutes: 30 }))).toMatchObject({
      mediaMode: 'auto',
      generateMissing: true,
      maxGenerateMinutes: 30,
    });
    expect(() => mediaAdapter.parse(spec({ maxGenerateMinutes: 30 }))).toThrow(/--mode auto/);
    expect(() => mediaAdapter.parse(spec({ generateMissing: true }))).toThrow(/--mode auto/);
  });

  it('prices a transcript: native 1, generated 2 per started minute (counted against the budget)', () => {
    expect(modeGenerates('native')).toBe(false);
    expect(mediaTranscriptCredits('native', 3600)).toBe(1);
    expect(mediaTranscriptCredits('generate', 61)).toBe(4);
    expect(mediaTranscriptCredits('auto', 59)).toBe(2);
    expect(mediaBudgetMinutes('native', 600)).toBe(0);
    expect(mediaBudgetMinutes('generate', 601)).toBe(11);
  });
});

describe('a media item’s link at a second', () => {
  it('a media file’s URL with #t= (whole seconds); a social post’s, an unknown moment’s or one with a fragment as it is', () => {
    expect(mediaMomentUrl('https://cdn.example.com/talks/keynote.mp3', 83.9)).toBe(
      'https://cdn.example.com/talks/keynote.mp3#t=83',
    );
    expect(mediaMomentUrl('https://cdn.example.com/a.mp4?sig=1', 0)).toBe('https://cdn.example.com/a.mp4?sig=1#t=0');
    expect(mediaMomentUrl('https://cdn.example.com/a.mp4', null)).toBe('https://cdn.example.com/a.mp4');
    expect(mediaMomentUrl('https://cdn.example.com/a.mp4#t=5', 12)).toBe('https://cdn.example.com/a.mp4#t=5');
    expect(mediaMomentUrl('https://www.tiktok.com/@user/video/1234567890', 12)).toBe(
      'https://www.tiktok.com/@user/video/1234567890',
    );
    expect(mediaMomentUrl('not a url', 12)).toBe('not a url');
  });
});
