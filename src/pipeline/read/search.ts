/**
 * The corpus search both the `search` command and the MCP server's `search` tool run: which kinds
 * of document a query covers given its filters, the three searches (src/db/search.ts), and their
 * hits merged best first. The search index is brought up to date by the caller first (the CLI
 * shows progress on stderr), so both answer from the same index.
 */
import type { Queryable } from '../../db/connection.ts';
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

export type CorpusHit =
  { kind: 'video'; hit: SearchHit } | { kind: 'page'; hit: PageSearchHit } | { kind: 'media'; hit: MediaSearchHit };

/** Why the filters cannot go together, naming the option (without its dashes), or null. */
export function searchScopeProblem(s: Pick<CorpusSearch, 'kind' | 'lang' | 'channelId'>): string | null {
  if ((s.kind === 'page' || s.kind === 'media') && (s.lang !== undefined || s.channelId !== undefined))
    return `${s.lang !== undefined ? 'lang' : 'channel'} applies to videos, not to kind ${s.kind}`;
  return null;
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
