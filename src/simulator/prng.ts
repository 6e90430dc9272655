/**
 * Small seeded pseudo-random numbers, so the same seed always gives the same catalog.
 *
 * Every entity draws from its own stream, seeded by hashing the simulator seed with the entity's
 * name (`rngFor(seed, 'video', channelIndex, videoIndex)`): values never depend on the order in
 * which entities are generated, which is what lets videos and transcripts be generated lazily.
 */

/** A source of uniform numbers in [0, 1) plus the helpers the generators need. */
export interface Rng {
  /** uniform in [0, 1) */
  next(): number;
  /** integer in [min, max], both inclusive */
  int(min: number, max: number): number;
  /** true with probability `p` */
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** `n` characters drawn from `alphabet` */
  chars(n: number, alphabet?: string): string;
}

/** The alphabet of video, channel and playlist IDs. */
export const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** 32-bit FNV-1a over the string, then a murmur3 finaliser to spread similar inputs apart. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** mulberry32: tiny, fast, and good enough for synthetic data (not for anything secret). */
export function mulberry32(seed: number): Rng {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number): number => min + Math.floor(next() * (max - min + 1));
  return {
    next,
    int,
    chance: (p) => next() < p,
    pick: <T>(items: readonly T[]): T => {
      if (items.length === 0) throw new Error('pick from an empty list');
      return items[Math.floor(next() * items.length)]!;
    },
    chars: (n, alphabet = ID_ALPHABET) => {
      let out = '';
      for (let i = 0; i < n; i++) out += alphabet[Math.floor(next() * alphabet.length)];
      return out;
    },
  };
}

/** The stream of one entity: `rngFor(seed, 'video', 3, 17)`. */
export function rngFor(seed: number, ...parts: Array<string | number>): Rng {
  return mulberry32(hash32(`${seed}|${parts.join('|')}`));
}
