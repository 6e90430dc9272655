/**
 * Subtitle cues (src/domain/subtitles.ts): timing from chunks, text cleaning and escaping, and the
 * SRT and WebVTT text read back by independent parsers (test/helpers/subtitle-readers.ts).
 */
import { describe, expect, it } from 'vitest';
import {
  cleanCueText,
  cuesFromChunks,
  DEFAULT_CUE_MS,
  formatSrt,
  formatTimestamp,
  formatVtt,
  srtText,
  vttText,
  type Cue,
} from '../../src/domain/subtitles.ts';
import { readSrt, readVtt } from '../helpers/subtitle-readers.ts';

describe('formatTimestamp', () => {
  it.each([
    [0, '00:00:00,000'],
    [1, '00:00:00,001'],
    [999, '00:00:00,999'],
    [1000, '00:00:01,000'],
    [59_999, '00:00:59,999'],
    [60_000, '00:01:00,000'],
    [3_599_999, '00:59:59,999'],
    [3_600_000, '01:00:00,000'],
    [36_061_001, '10:01:01,001'],
    [360_000_000, '100:00:00,000'],
    [1234.4, '00:00:01,234'],
    [1234.5, '00:00:01,235'],
  ])('%d ms is %s', (ms, srt) => {
    expect(formatTimestamp(ms, ',')).toBe(srt);
    expect(formatTimestamp(ms, '.')).toBe(srt.replace(',', '.'));
  });
});

describe('cuesFromChunks: timing', () => {
  const c = (offset: unknown, duration: unknown, text = 'x') => ({ text, offset, duration });

  it('a chunk lasts from its offset for its duration', () => {
    expect(cuesFromChunks([c(1000, 2500, 'a'), c(4000, 1000, 'b')])).toEqual([
      { startMs: 1000, endMs: 3500, text: 'a' },
      { startMs: 4000, endMs: 5000, text: 'b' },
    ]);
  });

  it("a chunk without an end takes the next chunk's start, the last one DEFAULT_CUE_MS", () => {
    for (const missing of [undefined, null, 'long', Number.NaN, Number.POSITIVE_INFINITY, -5]) {
      expect(cuesFromChunks([c(1000, missing), c(1800, missing)])).toEqual([
        { startMs: 1000, endMs: 1800, text: 'x' },
        { startMs: 1800, endMs: 1800 + DEFAULT_CUE_MS, text: 'x' },
      ]);
    }
  });

  it('a zero-length chunk (0 ms, or an end that rounds to its start) is one without an end', () => {
    expect(cuesFromChunks([c(0, 0, 'a'), c(500, 0.4, 'b'), c(2000, 1, 'c')])).toEqual([
      { startMs: 0, endMs: 500, text: 'a' },
      { startMs: 500, endMs: 2000, text: 'b' },
      { startMs: 2000, endMs: 2001, text: 'c' },
    ]);
  });

  it('an overlapping cue ends where the next one starts; one that does not reach it keeps its end', () => {
    expect(cuesFromChunks([c(0, 5000, 'a'), c(2000, 1000, 'b'), c(4000, 500, 'c')])).toEqual([
      { startMs: 0, endMs: 2000, text: 'a' },
      { startMs: 2000, endMs: 3000, text: 'b' },
      { startMs: 4000, endMs: 4500, text: 'c' },
    ]);
  });

  it('chunks that start at the same millisecond are one cue, lines in delivery order, the latest end', () => {
    expect(cuesFromChunks([c(1000, 500, 'a'), c(1000.2, 2000, 'b'), c(1000, undefined, 'c'), c(9000, 1, 'd')])).toEqual(
      [
        { startMs: 1000, endMs: 3000, text: 'a\nb\nc' },
        { startMs: 9000, endMs: 9001, text: 'd' },
      ],
    );
  });

  it('chunks out of order are put in start order (equal starts keep their order); times rounded to the ms', () => {
    expect(cuesFromChunks([c(5000.6, 1000.2, 'late'), c(0.4, 999.5, 'early'), c(2000, 100, 'mid')])).toEqual([
      { startMs: 0, endMs: 1000, text: 'early' },
      { startMs: 2000, endMs: 2100, text: 'mid' },
      { startMs: 5001, endMs: 6001, text: 'late' },
    ]);
  });

  it('a negative offset starts at 0; a chunk without a usable offset or text makes no cue', () => {
    expect(
      cuesFromChunks([
        c(-250, 1000, 'a'),
        c(undefined, 1000, 'no offset'),
        c('12', 1000, 'offset as text'),
        c(Number.NaN, 1000, 'NaN'),
        { offset: 3000, duration: 10 },
        c(4000, 10, ' \n\t \r\n '),
        null,
        'text',
        c(5000, 10, 'b'),
      ]),
    ).toEqual([
      { startMs: 0, endMs: 750, text: 'a' },
      { startMs: 5000, endMs: 5010, text: 'b' },
    ]);
    expect(cuesFromChunks([])).toEqual([]);
  });

  it('every cue ends after it starts, and none overlaps the next, whatever the chunks', () => {
    const rng = mulberry32(7);
    for (let n = 0; n < 300; n++) {
      const chunks = Array.from({ length: 1 + Math.floor(rng() * 12) }, () =>
        c(Math.floor(rng() * 20) * 250 - 500, rng() < 0.3 ? undefined : Math.floor(rng() * 8) * 300 - 300),
      );
      const cues = cuesFromChunks(chunks);
      cues.forEach((cue, i) => {
        expect(cue.endMs).toBeGreaterThan(cue.startMs);
        const next = cues[i + 1];
        if (next) {
          expect(next.startMs).toBeGreaterThan(cue.startMs);
          expect(cue.endMs).toBeLessThanOrEqual(next.startMs);
        }
      });
    }
  });
});

describe('cue text', () => {
  it('line breaks of every kind become one; blank lines, control characters and edge spaces go; tabs are spaces', () => {
    expect(cleanCueText('  one\r\n\r\ntwo\rthree\u2028four\u0085five\n\n\n')).toBe('one\ntwo\nthree\nfour\nfive');
    expect(cleanCueText('a\u0000b\u001bc\u007fd\te')).toBe('abcd e');
    expect(cleanCueText('♪ [Music] ♪')).toBe('♪ [Music] ♪');
    expect(cleanCueText(' \n \t ')).toBe('');
  });

  it('SRT: no timing arrow in the text', () => {
    expect(srtText('a --> b ---> c -> d --->> e')).toBe('a -> b -> c -> d ->> e');
    expect(srtText('a - -> b')).toBe('a - -> b');
  });

  it('WebVTT: & < > escaped', () => {
    expect(vttText('a & <b>c</b> --> &amp;')).toBe('a &amp; &lt;b&gt;c&lt;/b&gt; --&gt; &amp;amp;');
  });
});

describe('SRT and WebVTT files read back by independent parsers', () => {
  const cues: Cue[] = [
    { startMs: 0, endMs: 1, text: 'first' },
    { startMs: 1500, endMs: 4250, text: '>> two lines\nand & <i>tags</i>' },
    { startMs: 59_999, endMs: 60_001, text: '1\n00:00:01,000 -- 00:00:02,000' },
    { startMs: 3_600_000, endMs: 3_600_999, text: 'WEBVTT\nNOTE this is text' },
    { startMs: 36_061_001, endMs: 36_061_002, text: '&lt; stays as typed' },
  ];

  it('SRT: valid, numbered from 1, times and text as given', () => {
    const srt = formatSrt(cues);
    expect(srt.startsWith('1\n00:00:00,000 --> 00:00:00,001\nfirst\n\n2\n00:00:01,500 --> 00:00:04,250\n')).toBe(true);
    const back = readSrt(srt);
    expect(back.errors).toEqual([]);
    expect(back.cues).toEqual(cues);
  });

  it('WebVTT: valid, with the language note, times and text as given', () => {
    const vtt = formatVtt(cues, 'pt-BR');
    expect(vtt.startsWith('WEBVTT\n\nNOTE\nLanguage: pt-BR\n\n00:00:00.000 --> 00:00:00.001\nfirst\n\n')).toBe(true);
    const back = readVtt(vtt);
    expect(back.errors).toEqual([]);
    expect(back.cues).toEqual(cues);
    // a language that is not a plain tag gets no note
    expect(formatVtt(cues, 'en\n\n00:00:00.000 --> 99:00:00.000')).not.toContain('Language');
    expect(formatVtt([], 'en')).toBe('WEBVTT\n\nNOTE\nLanguage: en\n\n');
  });

  it('random chunks with hostile text read back as their cues in both formats', () => {
    const rng = mulberry32(33);
    const pieces = [
      '-->',
      '--->',
      '&',
      '&amp;',
      '<b>',
      '</c>',
      '\n',
      '\r\n',
      '\n\n',
      ' ',
      '\t',
      '12',
      'WEBVTT',
      'NOTE',
      'é',
      '♪',
      '>>',
      'a',
      'word',
    ];
    for (let n = 0; n < 200; n++) {
      const chunks = Array.from({ length: 1 + Math.floor(rng() * 10) }, () => ({
        text: Array.from({ length: 1 + Math.floor(rng() * 8) }, () => pieces[Math.floor(rng() * pieces.length)]).join(
          '',
        ),
        offset: Math.floor(rng() * 400_000),
        duration: rng() < 0.2 ? undefined : Math.floor(rng() * 5000),
      }));
      const made = cuesFromChunks(chunks);
      // a transcript without a cue gets no file (an empty SRT file is not a valid one)
      if (made.length === 0) continue;
      const srt = readSrt(formatSrt(made));
      expect(srt.errors).toEqual([]);
      expect(srt.cues).toEqual(made.map((c) => ({ ...c, text: srtText(c.text) })));
      const vtt = readVtt(formatVtt(made, 'en'));
      expect(vtt.errors).toEqual([]);
      expect(vtt.cues).toEqual(made);
    }
  });
});

/** A small seeded PRNG: the same cases on every run. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
