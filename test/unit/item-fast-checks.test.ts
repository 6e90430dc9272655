/**
 * The poller's hand-written check stands in for a slower one on every item, so it must answer
 * exactly as that does: `hasHugeNumberText` as `HUGE_NUMBER_RE.test` (it decides whether an item
 * lands as jsonb or raw).
 */
import { describe, expect, it } from 'vitest';
import { HUGE_NUMBER_RE, hasHugeNumberText } from '../../src/db/items.ts';

describe('hasHugeNumberText', () => {
  const digits = (n: number) => '7'.repeat(n);
  const cases = [
    '{"a":1e200000}',
    '{"a":1.5E-99999}',
    '{"a":".e+12345"}',
    '{"a":"5e1234"}',
    '{"a":1e+1234}',
    '{"a":"xe12345"}',
    '{"a":"1ee12345"}',
    '{"a":"1e+-12345"}',
    `{"a":${digits(1000)}}`,
    `{"a":${digits(999)}}`,
    `{"a":"${'x'.repeat(998)}${digits(1000)}"}`,
    `{"a":"${'x'.repeat(1)}${digits(999)}x${digits(999)}"}`,
    `${digits(2500)}`,
    `${'x'.repeat(1999)}${digits(1000)}`,
    `${'x'.repeat(2000)}${digits(999)}`,
    `${'x'.repeat(500)}${digits(1000)}${'y'.repeat(10)}`,
    '',
    '{"text":"♪ plain text ♪","offset":1234567,"duration":98765}',
  ];
  for (const text of cases) {
    it(`agrees with HUGE_NUMBER_RE on ${JSON.stringify(text.length > 40 ? `${text.slice(0, 20)}…(${text.length})` : text)}`, () => {
      expect(hasHugeNumberText(text)).toBe(HUGE_NUMBER_RE.test(text));
    });
  }

  it('agrees with HUGE_NUMBER_RE on random texts of digits, exponents and signs', () => {
    let seed = 12345;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const alphabet = ['1', '9', '0', 'e', 'E', '+', '-', '.', 'x', '"'];
    for (let t = 0; t < 3000; t++) {
      const len = rand(3) === 0 ? 900 + rand(2200) : rand(40);
      let text = '';
      while (text.length < len) text += rand(4) === 0 ? digits(rand(1100)) : alphabet[rand(alphabet.length)]!;
      expect(hasHugeNumberText(text), text.slice(0, 60)).toBe(HUGE_NUMBER_RE.test(text));
    }
  });
});
