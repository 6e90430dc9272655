/**
 * `content_sha256` decides whether a stored transcript changed, so the canonical JSON it hashes
 * must stay exactly what it has been: a rule change would rewrite every stored transcript on its
 * next delivery. The reference below is the replacer-function form the hashes were first
 * computed with.
 */
import { describe, expect, it } from 'vitest';
import { canonicalJson, transcriptSha256 } from '../../src/db/transcripts.ts';

function sortKeys(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const keys = Object.keys(value);
  let sorted = true;
  for (let i = 1; i < keys.length && sorted; i++) sorted = keys[i - 1]! < keys[i]!;
  if (sorted) return value;
  const out: Record<string, unknown> = {};
  for (const k of keys.sort()) out[k] = (value as Record<string, unknown>)[k];
  return out;
}
const reference = (v: unknown) => JSON.stringify(v, sortKeys) ?? 'null';

describe('canonicalJson', () => {
  const cases: [string, string][] = [
    [
      'chunks with unsorted keys',
      '{"content":[{"text":"a ♪","offset":1.5,"duration":2,"lang":"en"},{"text":"b","offset":3,"duration":1}],"lang":"en","availableLangs":["en","de"]}',
    ],
    [
      'index-like keys, which an object lists first',
      '{"b":1,"10":2,"9":3,"a":{"2":1,"1":2,"01":3,"-1":4},"4294967295":5,"4294967294":6}',
    ],
    ['keys differing by case and by non-ASCII characters', '{"é":1,"e":2,"E":3,"z":4,"Z":{"ß":1,"ss":2}}'],
    ['nested arrays and empty values', '{"x":[[{"b":null,"a":[]}],{}],"y":"","w":[1,"2",true,null]}'],
    ['a plain-text transcript', '{"content":"just text","lang":"en"}'],
    ['a __proto__ key', '{"content":[{"text":"x","__proto__":{"b":1,"a":2}}],"lang":"en"}'],
    [
      'a key that names an Object.prototype method',
      '{"content":[{"toString":"t","constructor":"c","text":"x"},{"text":"y"}],"lang":"en"}',
    ],
  ];
  for (const [name, json] of cases) {
    it(`matches the replacer-function form: ${name}`, () => {
      const value: unknown = JSON.parse(json);
      expect(canonicalJson(value)).toBe(reference(value));
    });
  }

  it('keeps the hash of a delivered transcript', () => {
    const t = {
      content: [
        { text: 'Hello ♪ world', offset: 0, duration: 1500, lang: 'en' },
        { text: 'again', offset: 1500, duration: 900 },
      ],
      lang: 'en',
      availableLangs: ['en', 'fr'],
    };
    expect(transcriptSha256(t)).toBe('305881e537051c80661d27c159202f337c9c5d16f7b90e6f70d5d047b7113f70');
  });
});
