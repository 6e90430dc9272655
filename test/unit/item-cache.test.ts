import { describe, expect, it } from 'vitest';
import { ItemCache } from '../../src/simulator/item-cache.ts';

describe('ItemCache (simulator)', () => {
  it('keeps items per job and evicts whole jobs, least recently read first', () => {
    const c = new ItemCache(30);
    c.set('a', 0, 'x'.repeat(10));
    c.set('b', 0, 'y'.repeat(10));
    c.set('a', 1, 'x'.repeat(5)); // a read again: b is now the oldest
    c.set('c', 0, 'z'.repeat(10)); // 35 > 30: b goes
    expect(c.get('b', 0)).toBeUndefined();
    expect(c.get('a', 0)).toBe('x'.repeat(10));
    expect(c.get('a', 1)).toBe('x'.repeat(5));
    expect(c.get('c', 0)).toBe('z'.repeat(10));
    expect(c.bytes).toBe(25);
  });

  it('never grows past its bound, even for one job larger than the cache', () => {
    const c = new ItemCache(25);
    for (let i = 0; i < 10; i++) c.set('big', i, 'q'.repeat(10));
    expect(c.bytes).toBeLessThanOrEqual(25);
    expect(c.get('big', 0)).toBe('q'.repeat(10));
    expect(c.get('big', 9)).toBeUndefined();
  });
});
