/**
 * The passage cutter (issue #31): the passages of a transcript cover its text exactly once apart
 * from the overlap, never split a word, start and end at their chunks' offsets, and hold at most
 * the size in tokens (cl100k_base), repeating at most the overlap; any two words side by side
 * are whole in one passage (search finds a phrase across two chunks).
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import {
  cutPassages,
  cutTextPassages,
  sha256Hex,
  tokenCount,
  transcriptChunks,
  type Passage,
  type PassageChunk,
} from '../../src/domain/passages.ts';

const WORDS = ['saffron', 'emulsion', 'the', 'quick', 'brown', 'fox', 'jumps', 'Zürich', '東京', 'über', "can't", 'x1'];

/** `n` chunks of 3 to 14 words each, chunk i at 10 s + 2.5 s * i, lasting 2.4 s. */
function chunks(n: number, seed = 7): PassageChunk[] {
  let r = seed;
  const next = () => (r = (r * 1103515245 + 12345) % 2 ** 31);
  return Array.from({ length: n }, (_, i) => {
    const words = Array.from({ length: 3 + (next() % 12) }, () => WORDS[next() % WORDS.length]!);
    return { text: `${words.join(' ')} c${i}`, startS: 10 + i * 2.5, endS: 10 + i * 2.5 + 2.4 };
  });
}

/** The words of the passages with each one's repeat of the one before removed, by chunk range. */
function wordsOnce(ps: Passage[], cs: PassageChunk[]): string[] {
  const out: string[] = [];
  let lastChunk = -1;
  for (const p of ps) {
    // a passage of whole chunks: drop the chunks the one before already held
    const from = Math.max(p.firstChunk!, lastChunk + 1);
    for (let i = from; i <= p.lastChunk!; i++) out.push(...cs[i]!.text.split(' '));
    lastChunk = p.lastChunk!;
  }
  return out;
}

describe('cutPassages', () => {
  const cs = chunks(300);
  const o = { size: 64, overlap: 16 };
  const ps = cutPassages(cs, o);

  it('covers the text exactly once apart from the overlap, in whole chunks but for a repeated end', () => {
    expect(ps.length).toBeGreaterThan(10);
    expect(wordsOnce(ps, cs)).toEqual(cs.flatMap((c) => c.text.split(' ')));
    ps.forEach((p, i) => {
      const whole = cs
        .slice(p.firstChunk!, p.lastChunk! + 1)
        .map((c) => c.text)
        .join(' ');
      // whole chunks, or the last words of the one before's last chunk, then whole chunks
      if (p.text !== whole) {
        expect(i).toBeGreaterThan(0);
        expect(p.firstChunk).toBe(ps[i - 1]!.lastChunk);
        expect(whole.endsWith(` ${p.text}`)).toBe(true);
      }
    });
    ps.forEach((p, i) => expect(p.n).toBe(i));
    expect(ps[0]!.firstChunk).toBe(0);
    expect(ps.at(-1)!.lastChunk).toBe(cs.length - 1);
  });

  it('a phrase across any two chunks is whole in one passage, however big the chunks', () => {
    // the chunks end with a unique word (c0, c1, ...); many are bigger than the overlap
    expect(cs.filter((c) => tokenCount(` ${c.text}`) > o.overlap).length).toBeGreaterThan(cs.length / 3);
    for (let i = 0; i + 1 < cs.length; i++) {
      const phrase = ` c${i} ${cs[i + 1]!.text.split(' ')[0]!}`;
      expect(ps.some((p) => ` ${p.text}`.includes(phrase))).toBe(true);
    }
  });

  it('starts and ends at its chunks’ offsets', () => {
    for (const p of ps) {
      expect(p.startS).toBe(cs[p.firstChunk!]!.startS);
      expect(p.endS).toBe(cs[p.lastChunk!]!.endS);
    }
  });

  it('holds at most the size in tokens and repeats at most the overlap', () => {
    for (const p of ps) {
      expect(p.tokens).toBe(tokenCount(p.text));
      expect(p.tokens).toBeLessThanOrEqual(o.size);
      expect(p.sha256).toBe(sha256Hex(p.text));
    }
    for (let i = 1; i < ps.length; i++) {
      const prev = ps[i - 1]!;
      const cur = ps[i]!;
      // it moves on, and what it repeats is whole chunks of at most `overlap` tokens
      expect(cur.firstChunk!).toBeGreaterThan(prev.firstChunk!);
      expect(cur.firstChunk!).toBeLessThanOrEqual(prev.lastChunk! + 1);
      const fresh = cs
        .slice(prev.lastChunk! + 1, cur.lastChunk! + 1)
        .map((c) => c.text)
        .join(' ');
      expect(cur.text.endsWith(fresh)).toBe(true);
      const repeated = cur.text.slice(0, cur.text.length - fresh.length).trim();
      if (repeated !== '') expect(tokenCount(` ${repeated}`)).toBeLessThanOrEqual(o.overlap);
    }
    // the overlap is used everywhere (whole chunks where they fit in it, else the last chunk's end)
    expect(ps.every((p, i) => i === 0 || p.firstChunk! <= ps[i - 1]!.lastChunk!)).toBe(true);
  });

  it('no overlap: consecutive chunk ranges', () => {
    const flat = cutPassages(cs, { size: 64, overlap: 0 });
    for (let i = 1; i < flat.length; i++) expect(flat[i]!.firstChunk).toBe(flat[i - 1]!.lastChunk! + 1);
  });

  it('a chunk bigger than the size is split at word boundaries, each part at the chunk’s start', () => {
    const long = Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ');
    const mixed: PassageChunk[] = [
      { text: 'before it', startS: 1, endS: 2 },
      { text: long, startS: 5, endS: 60 },
      { text: 'after it', startS: 61, endS: 62 },
    ];
    const parts = cutPassages(mixed, { size: 50, overlap: 8 });
    const inLong = parts.filter((p) => p.firstChunk === 1 || p.lastChunk === 1);
    expect(inLong.length).toBeGreaterThan(3);
    for (const p of parts) {
      expect(p.tokens).toBeLessThanOrEqual(50);
      for (const w of p.text.split(' ')) expect(w).toMatch(/^(before|it|after|word\d+)$/);
      expect(p.startS).toBe(mixed[p.firstChunk!]!.startS);
    }
    // every word of the long chunk is in some passage, in order, and so is every two words side by side
    const seen = parts.flatMap((p) => p.text.split(' ')).filter((w) => w.startsWith('word'));
    expect([...new Set(seen)]).toEqual(long.split(' '));
    for (let i = 0; i + 1 < 200; i++)
      expect(parts.some((p) => ` ${p.text} `.includes(` word${i} word${i + 1} `))).toBe(true);
  });

  it('a single word longer than the size stays whole, alone', () => {
    const word = 'x'.repeat(400);
    const ps2 = cutTextPassages(`a ${word} b`, { size: 20, overlap: 4 });
    expect(ps2.map((p) => p.text)).toContain(word);
    expect(ps2.every((p) => p.startS === null && p.firstChunk === null)).toBe(true);
  });

  it('reads stored chunks: milliseconds to seconds, no offset no moment, non-objects skipped', () => {
    expect(transcriptChunks([{ text: 'a', offset: 1500, duration: 500 }, 'junk', { text: 'b' }])).toEqual([
      { text: 'a', startS: 1.5, endS: 2 },
      { text: 'b', startS: null, endS: null },
    ]);
    expect(transcriptChunks(null)).toEqual([]);
  });
});

/** The passage settings as the configuration reads them from `env`. */
const passagesOf = (env: Record<string, string>) => loadConfig(env).pipeline.passages;

describe('passage settings', () => {
  it('defaults 256/32; an overlap not below the size is refused, named', () => {
    expect(passagesOf({})).toEqual({ size: 256, overlap: 32 });
    expect(passagesOf({ PASSAGE_TOKENS: '512', PASSAGE_OVERLAP_TOKENS: '0' })).toEqual({
      size: 512,
      overlap: 0,
    });
    expect(() => passagesOf({ PASSAGE_TOKENS: '32', PASSAGE_OVERLAP_TOKENS: '32' })).toThrow(
      /PASSAGE_OVERLAP_TOKENS: invalid value 32: must be less than PASSAGE_TOKENS \(32\)/,
    );
    expect(() => passagesOf({ PASSAGE_TOKENS: 'big' })).toThrow(ConfigError);
    expect(() => passagesOf({ PASSAGE_TOKENS: 'big' })).toThrow(/PASSAGE_TOKENS: invalid value "big"/);
    expect(() => loadConfig({ PASSAGE_TOKENS: '10', PASSAGE_OVERLAP_TOKENS: '20' })).toThrow(/PASSAGE_OVERLAP_TOKENS/);
  });
});
