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
  normalizeFeatures,
  SEARCH_FEATURE_ALIASES,
  SEARCH_FILTER_VALUES,
  SEARCH_FILTERS,
  SEARCH_LIMIT_DEFAULT,
  SEARCH_SOURCE_QUERY_MAX_CHARS,
  SEARCH_SOURCE_TYPE,
  type SearchFilter,
  type SearchFilterValues,
} from '../../domain/sources.ts';
import { controlCharacterProblem, quoteValue } from '../../terminal-text.ts';
import { kebab, refuseOptions, SourceSpecError, videoIdBatches, type SourceAdapter } from './adapter.ts';

/** A filter's value that the interface does not take: named with its flag, its field and the valid values. */
function invalidFilter(name: SearchFilter, value: string): SourceSpecError {
  const aliases = Object.keys(SEARCH_FEATURE_ALIASES);
  const alsoTaken = name === 'features' && aliases.length > 0 ? ` (also taken: ${aliases.join(', ')})` : '';
  return new SourceSpecError(
    `--${kebab(name)} ${JSON.stringify(value)} is not a valid ${name}; expected one of: ${SEARCH_FILTER_VALUES[name].join(', ')}${alsoTaken}`,
  );
}

/** The filters checked against the interface's values, features normalised (aliases, each once, in order). */
function checkFilters(filters: SearchFilterValues): SearchFilterValues {
  const out: SearchFilterValues = {};
  for (const name of SEARCH_FILTERS) {
    if (name === 'features') continue;
    const value = filters[name];
    if (value === undefined) continue;
    if (!SEARCH_FILTER_VALUES[name].includes(value)) throw invalidFilter(name, value);
    out[name] = value;
  }
  if (out.type !== undefined && out.type !== SEARCH_SOURCE_TYPE) {
    throw new SourceSpecError(
      `--type ${JSON.stringify(out.type)}: a search source keeps videos, so it searches with --type ${SEARCH_SOURCE_TYPE} only`,
    );
  }
  if (filters.features !== undefined) {
    const features = normalizeFeatures(filters.features);
    const wrong = features?.find((f) => !SEARCH_FILTER_VALUES.features.includes(f));
    if (wrong !== undefined) throw invalidFilter('features', wrong);
    if (features !== undefined) out.features = features;
  }
  return out;
}

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
    const filters = checkFilters(spec.filters);
    if (spec.limit !== undefined && (spec.limit < 1 || spec.limit > LIMIT_MAX)) {
      throw new SourceSpecError(`--limit ${spec.limit} is out of range; expected 1..${LIMIT_MAX}`);
    }
    return { ...spec, filters };
  },

  async resolve(_deps, spec) {
    const query = spec.refs[0]!.value.trim();
    const search: ReturnType<typeof searchOf> = { query, ...spec.filters, type: SEARCH_SOURCE_TYPE };
    // the same query with the same filters is the same source (features in the interface's order)
    const filters = SEARCH_FILTERS.filter((f) => search[f] !== undefined).map((f) => `${f}=${String(search[f])}`);
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
      // values checked when the source was added; the client checks them again before sending
      const q = { ...search, ...(nextPageToken !== undefined ? { nextPageToken } : {}) } as SearchQuery;
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

/** The search as kept, read liberally: a row of an older release may hold one feature as a string. */
function searchOf(source: { search: unknown; ref: string }): { query: string } & SearchFilterValues {
  const s = source.search as ({ query?: unknown; features?: unknown } & Omit<SearchFilterValues, 'features'>) | null;
  const { features: kept, ...rest } = s ?? {};
  const features = normalizeFeatures(kept);
  return {
    ...rest,
    ...(features !== undefined ? { features } : {}),
    query: typeof s?.query === 'string' ? s.query : source.ref,
  };
}
