/**
 * What a search query may hold (issue #27): a NUL or another control character is named before
 * any database sees it; a saved search's query is bounded and refused at `sources add`.
 */
import { describe, expect, it } from 'vitest';
import { searchQueryProblem } from '../../src/domain/search.ts';
import { SEARCH_SOURCE_QUERY_MAX_CHARS } from '../../src/domain/sources.ts';
import { parseSource } from '../../src/pipeline/commands/sources.ts';

const ESC = '\x1b';

describe('search query problems', () => {
  it('a NUL or another control character is named, with where it is', () => {
    expect(searchQueryProblem('a\0b')).toMatch(
      /words: "a\\u0000b" holds a control character \(\\u0000 at position 2\)/,
    );
    expect(searchQueryProblem(`a${ESC}[2J`)).toMatch(/\\u001b/);
    expect(searchQueryProblem('   ')).toMatch(/expected words/);
    expect(searchQueryProblem('x'.repeat(501))).toMatch(/at most 500 characters/);
    expect(searchQueryProblem('"saffron emulsion" -pasta')).toBeNull();
  });

  it('a saved search query longer than SEARCH_SOURCE_QUERY_MAX_CHARS, or with a control character, is refused locally', () => {
    const add = (query: string) => () =>
      parseSource({ kind: 'search', ref: query, langs: [], textOnly: false, cron: null });
    expect(add('x'.repeat(SEARCH_SOURCE_QUERY_MAX_CHARS))).not.toThrow();
    expect(add('x'.repeat(SEARCH_SOURCE_QUERY_MAX_CHARS + 1))).toThrow(
      new RegExp(
        `query: "x+…" \\(${SEARCH_SOURCE_QUERY_MAX_CHARS + 1} characters\\) is too long: a saved search query takes at most ${SEARCH_SOURCE_QUERY_MAX_CHARS} characters; nothing was registered`,
      ),
    );
    expect(add('a\0b')).toThrow(/query: "a\\u0000b" holds a control character/);
  });
});
