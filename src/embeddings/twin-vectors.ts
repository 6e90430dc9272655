/**
 * The embeddings twin's vectors: deterministic, and carrying some meaning, so that a test can
 * find a passage by what it says rather than by its words. A text is a bag of word stems; each
 * stem of a small built-in synonym table adds to the dimension of its concept (shared by the
 * group: "car", "automobile" and "vehicle" land on one, and no other word does), every other
 * stem to a hashed dimension; the vector is L2-normalised, so cosine similarity is the share of meaning two
 * texts have in common. The model name seeds the hashing: two models are two unrelated spaces,
 * as they are with real providers.
 */

/** Groups of words that mean the same for the twin; each group is one concept dimension. */
export const SYNONYM_GROUPS: readonly (readonly string[])[] = [
  ['car', 'automobile', 'vehicle', 'auto', 'motorcar', 'sedan'],
  ['doctor', 'physician', 'medic', 'surgeon'],
  ['film', 'movie', 'cinema', 'picture'],
  ['child', 'kid', 'youngster', 'toddler'],
  ['house', 'home', 'dwelling', 'residence'],
  ['buy', 'purchase', 'acquire', 'shop'],
  ['fast', 'quick', 'rapid', 'speedy', 'swift'],
  ['big', 'large', 'huge', 'enormous', 'giant'],
  ['happy', 'glad', 'joyful', 'cheerful'],
  ['money', 'cash', 'currency', 'fund', 'dollar'],
  ['ocean', 'sea', 'marine'],
  ['song', 'music', 'melody', 'tune'],
  ['cook', 'chef', 'recipe', 'cuisine', 'bake'],
  ['sick', 'ill', 'illness', 'disease'],
  ['phone', 'telephone', 'smartphone', 'mobile'],
  ['computer', 'laptop', 'pc'],
  ['teacher', 'instructor', 'educator', 'tutor'],
  ['road', 'street', 'highway', 'avenue'],
  ['begin', 'start', 'commence'],
  ['help', 'assist', 'aid', 'support'],
];

const STOP_WORDS = new Set(
  'a about an and are as at be but by for from has have he her his i in is it its more of on or our she so that the their them they this to was we were what which who will with you your'.split(
    ' ',
  ),
);

/** A crude stem: enough that "cars" and "car", "cooking" and "cook" meet. */
export function stem(word: string): string {
  for (const suffix of ['ing', 'ies', 'es', 'ed', 's']) {
    if (word.length > suffix.length + 2 && word.endsWith(suffix)) {
      const base = word.slice(0, -suffix.length);
      return suffix === 'ies' ? `${base}y` : base;
    }
  }
  return word;
}

const CONCEPT_OF = new Map<string, number>();
SYNONYM_GROUPS.forEach((group, i) => {
  for (const w of group) CONCEPT_OF.set(stem(w), i);
});

/** The stems of `text` the vector is made of (lower case, stop words left out). */
export function stems(text: string): string[] {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return words.filter((w) => !STOP_WORDS.has(w)).map(stem);
}

/** FNV-1a, 32 bits. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The twin's vector of `text` under `model`, `dimensions` long, of length 1. */
export function twinVector(text: string, model: string, dimensions: number): number[] {
  const v = new Array<number>(dimensions).fill(0);
  // concepts own the first dimensions (when there is room), so no word lands on one by chance
  const reserved = dimensions >= 2 * SYNONYM_GROUPS.length ? SYNONYM_GROUPS.length : 0;
  for (const s of stems(text)) {
    const concept = CONCEPT_OF.get(s);
    const h = fnv1a(`${model}\u0000${concept === undefined ? `w:${s}` : `c:${concept}`}`);
    // the top bit signs the contribution, so unrelated words sharing a dimension cancel on average
    const sign = h & 0x80000000 ? -1 : 1;
    if (concept !== undefined && reserved > 0) v[concept]! += sign;
    else v[reserved + (h % (dimensions - reserved))]! += sign;
  }
  let norm = Math.sqrt(v.reduce((sum, x) => sum + x * x, 0));
  if (norm === 0) {
    // no words: a fixed direction of its own, still of length 1
    v[fnv1a(`${model}\u0000empty`) % dimensions] = 1;
    norm = 1;
  }
  return v.map((x) => x / norm);
}
