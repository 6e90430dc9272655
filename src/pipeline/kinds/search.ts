/**
 * `search`: a saved search. Each sync pages the search endpoint (1 credit a page, following
 * `nextPageToken`, which the API returns only when no `limit` is sent) until it has `--limit`
 * video results or the pages end, remembers them, and submits those not yet known. Channel and
 * playlist results are not videos and are skipped.
 */
import { LIMIT_MAX, type SearchQuery } from '../../api/schemas.ts';
import { PRICES } from '../../domain/prices.ts';
import { rememberVideos } from '../../db/source-videos.ts';
import {
  SEARCH_FILTER_VALUES,
  SEARCH_FILTERS,
  SEARCH_LIMIT_DEFAULT,
  SEARCH_SOURCE_QUERY_MAX_CHARS,
  type SearchFilter,
} from '../../domain/sources.ts';
import { controlCharacterProblem, quoteValue } from '../../terminal-text.ts';
import { kebab, refuseOptions, SourceSpecError, videoIdBatches, type SourceAdapter } from './adapter.ts';

/** A search source keeps videos: `type` is always `video`. */
const SEARCH_TYPE = 'video';

export const searchAdapter: SourceAdapter = {
  kind: 'search',

  parse(spec) {
    refuseOptions(spec, { filters: true, limit: true });
    if (spec.refs.length !== 1 || spec.refs[0]!.value.trim() === '') {
      throw new SourceSpecError('a search source takes one non-empty query, e.g. sources add search "rust async"');
    }
    const query = spec.refs[0]!.value.trim();
    if (query.length > SEARCH_SOURCE_QUERY_MAX_CHARS) {
      throw new SourceSpecError(
        `query: ${quoteValue(query)} is too long: a saved search query takes at most ${SEARCH_SOURCE_QUERY_MAX_CHARS} characters; nothing was registered`,
      );
    }
    const control = controlCharacterProblem('query', query);
    if (control !== null) throw new SourceSpecError(`${control}; nothing was registered`);
    for (const [name, value] of Object.entries(spec.filters) as [SearchFilter, string][]) {
      const valid = SEARCH_FILTER_VALUES[name];
      if (!valid.includes(value)) {
        throw new SourceSpecError(`--${kebab(name)} ${JSON.stringify(value)} is not valid; expected one of: ${valid.join(', ')}`);
      }
    }
    if (spec.limit !== undefined && (spec.limit < 1 || spec.limit > LIMIT_MAX)) {
      throw new SourceSpecError(`--limit ${spec.limit} is out of range; expected 1..${LIMIT_MAX}`);
    }
    return spec;
  },

  async resolve(_deps, spec) {
    const query = spec.refs[0]!.value.trim();
    const search: NonNullable<ReturnType<typeof searchOf>> = { query, ...spec.filters, type: SEARCH_TYPE };
    // the same query with the same filters is the same source
    const filters = SEARCH_FILTERS.filter((f) => search[f] !== undefined).map((f) => `${f}=${search[f]}`);
    return {
      ref: query,
      externalId: `${query}?${filters.join('&')}`,
      title: query,
      maxVideos: spec.limit ?? SEARCH_LIMIT_DEFAULT,
      search,
      videoIds: [],
    };
  },

  async refresh() {
    // a search has no record of its own to keep current
  },

  async list({ sql, api }, source, o) {
    const search = searchOf(source);
    const ids = new Set<string>();
    let pages = 0;
    let nextPageToken: string | undefined;
    do {
      const q: SearchQuery = { ...search, ...(nextPageToken !== undefined ? { nextPageToken } : {}) };
      const page = await api.search(q, { expectedCredits: PRICES.searchPage, signal: o?.signal });
      pages += 1;
      const before = ids.size;
      for (const r of page.results) {
        if (r.type === 'video' && ids.size < source.maxVideos) ids.add(r.id);
      }
      nextPageToken = page.nextPageToken;
      // a page that adds nothing new would only spend credits on the next one
      if (ids.size === before) break;
    } while (nextPageToken !== undefined && ids.size < source.maxVideos);
    const videoIds = [...ids];
    await rememberVideos(sql, source.id, videoIds);
    return { videoIds, credits: pages * PRICES.searchPage };
  },

  buildBatches: videoIdBatches,
};

function searchOf(source: { search: unknown; ref: string }): { query: string } & Partial<Record<SearchFilter, string>> {
  const s = source.search as ({ query?: unknown } & Partial<Record<SearchFilter, string>>) | null;
  return { ...(s ?? {}), query: typeof s?.query === 'string' ? s.query : source.ref };
}
