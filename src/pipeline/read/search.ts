/**
 * The corpus search both the `search` command and the MCP server's `search` tool run: which kinds
 * of document a query covers given its filters, the three searches (src/db/search.ts), and their
 * hits merged best first. The search index is brought up to date by the caller first (the CLI
 * shows progress on stderr), so both answer from the same index.
 *
 * By meaning (issue #32): `semantic` answers the passages nearest the query's vector
 * (src/db/semantic-search.ts) with the model in use (./search-model.ts); `hybrid` fuses the text
 * hits and those by reciprocal rank, a text hit counted as the passage it falls in, so a place
 * found both ways is one hit.
 */
import type { EmbeddingsConfig } from '../../config.ts';
import type { Queryable } from '../../db/connection.ts';
import { recordQueryTokens } from '../../db/embeddings.ts';
import type { Logger } from '../../log.ts';
import { nearestPassages, passagesOfPlaces, type NearPassage, type TextPlace } from '../../db/semantic-search.ts';
import { createEmbeddingsClient, embedQuery } from '../../embeddings/client.ts';
import type { PassageKind } from '../../domain/passages.ts';
import { searchModel, searchModelProblem, type SearchModel } from './search-model.ts';
import {
  searchMedia,
  searchPages,
  searchTranscripts,
  type MediaSearchHit,
  type PageSearchHit,
  type SearchHit,
} from '../../db/search.ts';
import { sectionLink } from '../../domain/pages.ts';
import { mediaMomentUrl } from '../../domain/media.ts';
import { fillVideoUrl } from '../../domain/search.ts';

export const SEARCH_KINDS = ['video', 'page', 'media'] as const;
export type SearchKind = (typeof SEARCH_KINDS)[number];

export const SEARCH_MODES = ['text', 'semantic', 'hybrid'] as const;
export type SearchMode = (typeof SEARCH_MODES)[number];

/** Reciprocal rank fusion's constant (Cormack et al. 2009): a hit's score is the sum of 1 / (k + its rank) over the lists. */
export const RRF_K = 60;

const PASSAGE_KIND_OF: Record<SearchKind, PassageKind> = { video: 'transcript', page: 'page', media: 'media' };

export interface CorpusSearch {
  /** the words, in web-search syntax */
  words: string;
  /** only this kind of document; default all (videos only with `lang` or `channel`) */
  kind?: SearchKind | undefined;
  /** only what this source holds */
  sourceId?: number | undefined;
  /** only transcripts in this language (videos only) */
  lang?: string | undefined;
  /** only videos of this channel */
  channelId?: string | undefined;
  limit: number;
}

export type CorpusHit = (
  { kind: 'video'; hit: SearchHit } | { kind: 'page'; hit: PageSearchHit } | { kind: 'media'; hit: MediaSearchHit }
) & {
  /** found by meaning: the passage's cosine distance to the query (0 same direction, 2 opposite) */
  distance?: number | undefined;
  /** hybrid: the reciprocal rank fusion score */
  score?: number | undefined;
};

/** Why search by meaning cannot answer: EMBEDDINGS_BASE_URL unset (`off`) or pgvector missing. */
export class SearchModeUnavailableError extends Error {
  readonly code: 'off' | 'no-pgvector';
  constructor(code: 'off' | 'no-pgvector', message: string) {
    super(message);
    this.name = 'SearchModeUnavailableError';
    this.code = code;
  }
}

export interface CorpusAnswer {
  mode: SearchMode;
  /** the model whose vectors answered (semantic, hybrid) */
  model?: string | undefined;
  /** the tokens the provider billed for the query's embedding (semantic, hybrid): the caller records them (`recordQueryTokens`) */
  queryTokens?: number | undefined;
  hits: CorpusHit[];
}

/** Why the filters cannot go together, naming the option (without its dashes), or null. */
export function searchScopeProblem(s: Pick<CorpusSearch, 'kind' | 'lang' | 'channelId'>): string | null {
  if ((s.kind === 'page' || s.kind === 'media') && (s.lang !== undefined || s.channelId !== undefined))
    return `${s.lang !== undefined ? 'lang' : 'channel'} applies to videos, not to kind ${s.kind}`;
  return null;
}

/** The mode a search runs in when none is asked: hybrid once the model in use covers every passage, else text. */
export function defaultSearchMode(m: SearchModel): SearchMode {
  return m.state === 'ready' && m.covers ? 'hybrid' : 'text';
}

/** The kinds of passage a search covers given its filters. */
function passageKinds(s: Pick<CorpusSearch, 'kind' | 'lang' | 'channelId'>): PassageKind[] {
  if (s.kind !== undefined) return [PASSAGE_KIND_OF[s.kind]];
  return s.lang !== undefined || s.channelId !== undefined ? ['transcript'] : ['transcript', 'page', 'media'];
}

/** The mode a search runs in and, by meaning, the model in use; throws SearchModeUnavailableError when it cannot run. */
export async function resolveSearchMode(
  sql: Queryable,
  asked: SearchMode | undefined,
  embeddings: EmbeddingsConfig | undefined,
): Promise<{ mode: 'text' } | { mode: 'semantic' | 'hybrid'; model: Extract<SearchModel, { state: 'ready' }> }> {
  if (asked === 'text') return { mode: 'text' };
  const m = await searchModel(sql, embeddings);
  const mode = asked ?? defaultSearchMode(m);
  if (mode === 'text') return { mode };
  if (m.state !== 'ready') {
    const code = m.state === 'off' ? 'off' : 'no-pgvector';
    throw new SearchModeUnavailableError(code, searchModelProblem(m) ?? code);
  }
  return { mode, model: m };
}

/**
 * The search in `mode` (default: `defaultSearchMode`), with the embeddings settings for search by
 * meaning; throws SearchModeUnavailableError when semantic or hybrid was asked for and cannot run.
 */
export async function searchCorpusIn(
  sql: Queryable,
  s: CorpusSearch & { mode?: SearchMode | undefined },
  embeddings: EmbeddingsConfig | undefined,
): Promise<CorpusAnswer> {
  const r = await resolveSearchMode(sql, s.mode, embeddings);
  if (r.mode === 'text' || embeddings === undefined) return { mode: 'text', hits: await searchCorpus(sql, s) };
  const { mode, model: m } = r;
  const client = createEmbeddingsClient({ ...embeddings, model: m.model, dimensions: m.dimensions });
  const { vector, tokens: queryTokens } = await embedQuery(client, s.words);
  const near = await nearestPassages(sql, {
    model: m.model,
    dimensions: vector.length,
    vector,
    kinds: passageKinds(s),
    sourceId: s.sourceId,
    lang: s.lang,
    channelId: s.channelId,
    limit: s.limit,
  });
  const byMeaning = near.map(hitOfPassage);
  if (mode === 'semantic') return { mode, model: m.model, queryTokens, hits: byMeaning };
  const byWords = await searchCorpus(sql, s);
  return { mode, model: m.model, queryTokens, hits: await fuse(sql, byWords, near, byMeaning, s.limit) };
}

/**
 * Counts the query's embedding (semantic, hybrid) in today's usage, outside the search's own
 * read-only transaction. A database that takes no writes (a standby) loses only the count, which
 * the log says.
 */
export async function countQueryTokens(sql: Queryable, a: CorpusAnswer, log: Logger | undefined): Promise<void> {
  if (a.queryTokens === undefined || a.model === undefined) return;
  await recordQueryTokens(sql, a.model, a.queryTokens).catch((err: unknown) => {
    log?.warn(
      { event: 'search.query_tokens_not_counted', model: a.model, tokens: a.queryTokens, err },
      "could not count the search query's embedding tokens",
    );
  });
}

/** How many words of a passage a hit found by meaning shows (a text hit's snippet shows 20 to 40). */
const PASSAGE_SNIPPET_WORDS = 40;

function passageSnippet(text: string): string {
  const words = text.trim().split(/\s+/);
  return words.length <= PASSAGE_SNIPPET_WORDS
    ? words.join(' ')
    : `${words.slice(0, PASSAGE_SNIPPET_WORDS).join(' ')} …`;
}

/** A passage found by meaning as the hit of its kind: its moment or section, its text unmarked, 1 - distance as its rank. */
function hitOfPassage(p: NearPassage): CorpusHit {
  const snippet = passageSnippet(p.text);
  const rank = 1 - p.distance;
  const distance = p.distance;
  if (p.kind === 'page')
    return {
      kind: 'page',
      hit: { url: p.doc, name: p.title, headings: p.headings ?? [], anchor: p.anchor, section: p.n, snippet, rank },
      distance,
    };
  if (p.kind === 'media')
    return {
      kind: 'media',
      hit: {
        url: p.doc,
        platform: p.platform ?? '',
        type: p.type ?? '',
        title: p.title,
        author: p.author,
        seconds: p.startS,
        snippet,
        rank,
      },
      distance,
    };
  return {
    kind: 'video',
    hit: {
      videoId: p.doc,
      title: p.title,
      channelId: p.channelId,
      channelName: p.channelName,
      lang: p.lang,
      origin: p.origin ?? 'captions',
      translatedFrom: p.translatedFrom,
      seconds: p.startS,
      window: p.n,
      snippet,
      rank,
    },
    distance,
  };
}

/** The place a text hit names, to find the passage it falls in. */
function placeOf(h: CorpusHit): TextPlace {
  if (h.kind === 'page') return { kind: 'page', doc: h.hit.url, lang: '', seconds: null, anchor: h.hit.anchor };
  if (h.kind === 'media') return { kind: 'media', doc: h.hit.url, lang: '', seconds: h.hit.seconds, anchor: null };
  return { kind: 'transcript', doc: h.hit.videoId, lang: h.hit.lang, seconds: h.hit.seconds, anchor: null };
}

/**
 * Reciprocal rank fusion of the text hits and the hits by meaning (RRF_K): each passage scores
 * the sum of 1 / (RRF_K + rank) over the lists it is in (ranks from 1); a text hit is the passage
 * it falls in (a text hit in no passage, such as a media item's title, stands alone). A place
 * found both ways is shown as its text hit (the words marked) with the distance.
 */
async function fuse(
  sql: Queryable,
  byWords: CorpusHit[],
  near: NearPassage[],
  byMeaning: CorpusHit[],
  limit: number,
): Promise<CorpusHit[]> {
  const ids = await passagesOfPlaces(sql, byWords.map(placeOf));
  const fused = new Map<string, { hit: CorpusHit; score: number; order: number }>();
  let order = 0;
  byWords.forEach((hit, i) => {
    const id = ids[i];
    const key = id === null || id === undefined ? `text ${i}` : `passage ${id}`;
    // two moments in one passage: the better one stands for it
    if (fused.has(key)) return;
    fused.set(key, { hit, score: 1 / (RRF_K + i + 1), order: order++ });
  });
  near.forEach((p, i) => {
    const key = `passage ${p.id}`;
    const score = 1 / (RRF_K + i + 1);
    const found = fused.get(key);
    if (found) {
      found.score += score;
      found.hit = { ...found.hit, distance: p.distance };
    } else fused.set(key, { hit: byMeaning[i]!, score, order: order++ });
  });
  return [...fused.values()]
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .slice(0, limit)
    .map((f) => ({ ...f.hit, score: f.score }));
}

/** The best `limit` hits of every kind the search covers, best first (each ranked by ts_rank_cd). */
export async function searchCorpus(sql: Queryable, s: CorpusSearch): Promise<CorpusHit[]> {
  const all = s.kind === undefined && s.lang === undefined && s.channelId === undefined;
  const found: CorpusHit[] = [];
  if (s.kind === undefined || s.kind === 'video') {
    const v = await searchTranscripts(sql, {
      query: s.words,
      lang: s.lang,
      sourceId: s.sourceId,
      channelId: s.channelId,
      limit: s.limit,
    });
    for (const hit of v) found.push({ kind: 'video', hit });
  }
  if (s.kind === 'page' || all) {
    for (const hit of await searchPages(sql, { query: s.words, sourceId: s.sourceId, limit: s.limit }))
      found.push({ kind: 'page', hit });
  }
  if (s.kind === 'media' || all) {
    for (const hit of await searchMedia(sql, { query: s.words, sourceId: s.sourceId, limit: s.limit }))
      found.push({ kind: 'media', hit });
  }
  // a stable sort: equal ranks keep their kind's own order
  return found.sort((a, b) => b.hit.rank - a.hit.rank).slice(0, s.limit);
}

/**
 * Where a hit opens: a video at its moment (VIDEO_URL_TEMPLATE; none without it), a page at its
 * section, a media item at its URL.
 */
export function hitLink(h: CorpusHit, videoUrlTemplate: string | undefined): string | undefined {
  if (h.kind === 'page') return sectionLink(h.hit.url, h.hit.anchor);
  if (h.kind === 'media') return mediaMomentUrl(h.hit.url, h.hit.seconds);
  return videoUrlTemplate === undefined ? undefined : fillVideoUrl(videoUrlTemplate, h.hit.videoId, h.hit.seconds);
}
