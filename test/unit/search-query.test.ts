/**
 * What a search query may hold (issue #27): a NUL or another control character is named before
 * any database sees it.
 */
import { describe, expect, it } from 'vitest';
import { searchQueryProblem } from '../../src/domain/search.ts';

const ESC = '\x1b';

describe('search query problems', () => {
  it('a NUL or another control character is named, with where it is', () => {
    expect(searchQueryProblem('a\0b')).toMatch(/words: "a\\u0000b" holds a control character \(\\u0000 at position 2\)/);
    expect(searchQueryProblem(`a${ESC}[2J`)).toMatch(/\\u001b/);
    expect(searchQueryProblem('   ')).toMatch(/expected words/);
    expect(searchQueryProblem('x'.repeat(501))).toMatch(/at most 500 characters/);
    expect(searchQueryProblem('"saffron emulsion" -pasta')).toBeNull();
  });
});
