/**
 * Transcript search, the parts that are not SQL: how a query is prepared for the index (the
 * passages, src/domain/passages.ts cuts them), how a moment is written and how a hit becomes a
 * link. Which text search configuration a language gets is decided in one place,
 * the SQL function `search_config_map` of migrations/0011 (the trigger needs it; the query reads it).
 */
import { controlCharacterProblem, quoteValue } from '../terminal-text.ts';

/** Hits shown when `--limit` is not given. */
export const SEARCH_HITS_DEFAULT = 20;
/** Most hits one search returns. */
export const SEARCH_HITS_MAX = 1_000;
/** Longest query accepted, characters (a query is parsed once per text search configuration). */
export const SEARCH_QUERY_MAX_CHARS = 500;

/**
 * Why `query` cannot be searched for, or null when it can: blank, too long, or holding a control
 * character (a NUL is a byte Postgres text cannot hold: without this check it fails in the
 * database instead of here, named).
 */
export function searchQueryProblem(query: string): string | null {
  if (query.trim() === '') return 'words: expected words to search for';
  if (query.length > SEARCH_QUERY_MAX_CHARS) {
    return `words: ${quoteValue(query)} is too long: expected at most ${SEARCH_QUERY_MAX_CHARS} characters`;
  }
  return controlCharacterProblem('words', query);
}

/**
 * Where ts_headline marks the words found: private-use code points (U+E000, U+E001), which no
 * transcript is expected to carry, so the marks are told apart from the text whatever it holds
 * (a French transcript's « », a `*`), then rendered by each reader (CLI, JSON, HTML).
 */
export const SNIPPET_START = '\uE000';
export const SNIPPET_STOP = '\uE001';

/** Han, Hiragana and Katakana: written without spaces; indexed a character a word (migrations/0011 `search_document`). */
const CJK_RUN = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+/g;

/**
 * The query as websearch_to_tsquery should read it: each run of CJK characters becomes a phrase
 * of single characters (quoted outside quotes, spaced inside them), matching how the index splits
 * those scripts. Everything else is left to websearch_to_tsquery (quoted phrases, `or`, `-word`).
 */
export function prepareSearchQuery(query: string): string {
  // split on quotes: odd parts are inside a quoted phrase
  return query
    .split('"')
    .map((part, i) =>
      part.replace(CJK_RUN, (run) => (i % 2 === 1 ? ` ${[...run].join(' ')} ` : ` "${[...run].join(' ')}" `)),
    )
    .join('"');
}

/** A moment of a video as `h:mm:ss` (seconds rounded down). */
export function formatMoment(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return `${h}:${String(m).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

/** The placeholders of `VIDEO_URL_TEMPLATE`. */
export const VIDEO_URL_PLACEHOLDERS = ['{id}', '{seconds}'] as const;

/**
 * Why a `VIDEO_URL_TEMPLATE` value is not usable, or null when it is: it must name the video
 * (`{id}`) and, with its placeholders filled, be an http(s) URL.
 */
export function videoUrlTemplateProblem(template: string): string | null {
  if (!template.includes('{id}'))
    return 'expected a URL with {id} (and optionally {seconds}), e.g. https://videos.example/watch?v={id}&t={seconds}';
  try {
    const u = new URL(fillVideoUrl(template, 'id', 0));
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'expected an http(s) URL';
  } catch {
    return 'expected an http(s) URL with {id} (and optionally {seconds})';
  }
  return null;
}

/** The link that opens video `id` at `seconds` (whole seconds; the start when unknown). */
export function fillVideoUrl(template: string, id: string, seconds: number | null): string {
  const at = String(Math.max(0, Math.floor(seconds ?? 0)));
  return template.replaceAll('{id}', encodeURIComponent(id)).replaceAll('{seconds}', at);
}

/** A snippet's parts, each marked or not. */
export interface SnippetPart {
  text: string;
  marked: boolean;
}

/** A snippet as returned by the query, cut at its marks. */
export function snippetParts(snippet: string): SnippetPart[] {
  const parts: SnippetPart[] = [];
  let marked = false;
  let text = '';
  for (const ch of snippet) {
    if (ch === SNIPPET_START || ch === SNIPPET_STOP) {
      if (text !== '') parts.push({ text, marked });
      text = '';
      marked = ch === SNIPPET_START;
    } else text += ch;
  }
  if (text !== '') parts.push({ text, marked });
  return parts;
}

/** The snippet with its marks written as `open` and `close` (`«`, `»` for a reader; ANSI bold on a terminal). */
export function markSnippet(snippet: string, open: string, close: string): string {
  return snippetParts(snippet)
    .map((p) => (p.marked ? `${open}${p.text}${close}` : p.text))
    .join('');
}
