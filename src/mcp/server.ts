/**
 * The corpus as tools for agents (Model Context Protocol, the official SDK): search it as the
 * `search` command does, read a transcript (a time range), a page (a section) or a media item's
 * transcript, list the sources, and list recent changes. Read-only: every read runs in a
 * read-only transaction under a `statement_timeout` (src/db/statement-timeout.ts); the one write
 * is the search index's drain before a search, as the CLI does, which a read-only database skips.
 *
 * Every answer is bounded (limits with maxima, texts cut with a note of where to go on) and
 * carries links: a video opens at its second (VIDEO_URL_TEMPLATE), a page at its section. Each
 * tool answers twice: `content` as text for a model, `structuredContent` for a program. Only
 * stored documents and their ids are answered: never a setting, a token or an error's detail.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Queryable } from '../db/connection.ts';
import { readMedia, readPage, readTranscript, transcriptLangs, type TimedChunk } from '../db/documents.ts';
import { latestEventsOf, readEvents, type EventRow } from '../db/events.ts';
import { sourcesWithStats } from '../db/source-stats.ts';
import { readWithTimeout, type Pool } from '../db/statement-timeout.ts';
import { CORPUS_EVENT_TYPES } from '../domain/events.ts';
import { LANG_CODE_RE } from '../domain/langs.ts';
import { mediaMomentUrl } from '../domain/media.ts';
import { pageSections, sectionLink } from '../domain/pages.ts';
import { fillVideoUrl, formatMoment, markSnippet, searchQueryProblem } from '../domain/search.ts';
import type { Logger } from '../log.ts';
import {
  hitLink,
  SEARCH_KINDS,
  SEARCH_MODES,
  countQueryTokens,
  searchCorpusIn,
  SearchModeUnavailableError,
  searchScopeProblem,
  type CorpusHit,
} from '../pipeline/read/search.ts';
import type { EmbeddingsConfig } from '../config.ts';
import { redactUrlsIn, urlWithoutPassword } from '../url-credentials.ts';

/** The server's name in the MCP handshake. */
export const MCP_SERVER_NAME = 'videosite-ingest';

/** Longest one statement of a tool may run before Postgres cancels it, ms. */
export const MCP_STATEMENT_TIMEOUT_MS = 10_000;
/** Hits of one search: default and most. */
export const MCP_SEARCH_HITS_DEFAULT = 10;
export const MCP_SEARCH_HITS_MAX = 50;
/** Timed lines of one `read_transcript` / `read_media` answer, at most. */
export const MCP_TRANSCRIPT_LINES_MAX = 500;
/** Characters of text one answer carries at most (a plain-text transcript, a page). */
export const MCP_TEXT_CHARS_MAX = 40_000;
/** Sections listed with a whole page, at most. */
export const MCP_PAGE_SECTIONS_MAX = 200;
/** Sources listed: default and most. */
export const MCP_SOURCES_DEFAULT = 100;
export const MCP_SOURCES_MAX = 1_000;
/** Events listed: default and most. */
export const MCP_EVENTS_DEFAULT = 50;
export const MCP_EVENTS_MAX = 500;

export interface McpDeps {
  /** the pool: every tool reads in a read-only transaction of its own */
  sql: Pool;
  /** VIDEO_URL_TEMPLATE: without it a video's answers carry no link (the pages' and media's still do) */
  videoUrlTemplate: string | undefined;
  /** the embeddings settings (search by meaning); undefined: off, text search only */
  embeddings?: EmbeddingsConfig | undefined;
  /** brings the search index up to date before a search (the CLI's drain) */
  drainSearchIndex(): Promise<unknown>;
  log: Logger;
  /** package version, told in the handshake */
  version: string;
}

/** A refusal the caller can act on: its message names the field, the value and what is valid. */
class ToolRefusal extends Error {}

const int = (what: string, min: number, max: number) =>
  z
    .number({ error: `${what}: expected a whole number from ${min} to ${max}` })
    .int({ error: `${what}: expected a whole number from ${min} to ${max}` })
    .min(min, { error: `${what}: expected a whole number from ${min} to ${max}` })
    .max(max, { error: `${what}: expected a whole number from ${min} to ${max}` });

const seconds = (what: string) =>
  z
    .number({ error: `${what}: expected seconds from the start (a number at least 0)` })
    .min(0, { error: `${what}: expected seconds from the start (a number at least 0)` });

const lang = z
  .string()
  .regex(LANG_CODE_RE, { error: 'lang: expected a language code such as en, de, pt-BR' })
  .describe('a language code (ISO 639-1: en, de, pt-BR)');

const SEARCH_INPUT = {
  words: z
    .string({ error: 'words: expected the words to search for' })
    .superRefine((v, ctx) => {
      const problem = searchQueryProblem(v);
      if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
    })
    .describe('what to find: words (all of them), "a quoted phrase", a or b, -word to exclude'),
  kind: z
    .enum(SEARCH_KINDS, { error: `kind: expected one of ${SEARCH_KINDS.join(', ')}` })
    .optional()
    .describe('only video transcripts, web pages or media of other platforms; default all'),
  lang: lang.optional().describe('only video transcripts in this language (searched with its own stemming)'),
  channel: z
    .string()
    .min(1, { error: 'channel: expected a channel ID' })
    .optional()
    .describe('only videos of this channel (its ID)'),
  source: int('source', 1, 2_147_483_647).optional().describe('only what this source holds (its ID, see list_sources)'),
  mode: z
    .enum(SEARCH_MODES, { error: `mode: expected one of ${SEARCH_MODES.join(', ')}` })
    .optional()
    .describe(
      'text: the words; semantic: passages nearest in meaning; hybrid: both fused; default hybrid once every passage is embedded, else text',
    ),
  limit: int('limit', 1, MCP_SEARCH_HITS_MAX)
    .optional()
    .describe(`most hits (default ${MCP_SEARCH_HITS_DEFAULT}, at most ${MCP_SEARCH_HITS_MAX})`),
};

const READ_TRANSCRIPT_INPUT = {
  video_id: z
    .string()
    .min(1, { error: 'video_id: expected a video ID' })
    .describe('the video (its ID, as search answers)'),
  lang: lang.optional().describe('the language; default the video’s original transcript'),
  from: seconds('from').optional().describe('only lines from this second on'),
  to: seconds('to').optional().describe('only lines before this second'),
};

const READ_PAGE_INPUT = {
  url: z.url({ error: 'url: expected the page’s URL (http or https)' }).describe('the page, as search answers it'),
  section: z
    .string()
    .min(1, { error: 'section: expected an anchor or a heading' })
    .optional()
    .describe('only this section: its anchor (getting-started) or its heading text; default the whole page'),
};

const READ_MEDIA_INPUT = {
  url: z
    .url({ error: 'url: expected the media item’s URL (http or https)' })
    .describe('the media item, as search answers it'),
  from: seconds('from').optional().describe('only lines from this second on'),
  to: seconds('to').optional().describe('only lines before this second'),
};

const LIST_SOURCES_INPUT = {
  limit: int('limit', 1, MCP_SOURCES_MAX)
    .optional()
    .describe(`most sources, by ID (default ${MCP_SOURCES_DEFAULT}, at most ${MCP_SOURCES_MAX})`),
};

const RECENT_CHANGES_INPUT = {
  since: z.iso
    .datetime({ offset: true, error: 'since: expected an ISO 8601 time such as 2026-01-31T12:00:00Z' })
    .optional()
    .describe('only changes at or after this time (ISO 8601)'),
  after_id: int('after_id', 0, Number.MAX_SAFE_INTEGER)
    .optional()
    .describe(
      'only changes after this event ID, oldest first (a cursor: pass the last ID seen); default the newest first',
    ),
  types: z
    .array(z.enum(CORPUS_EVENT_TYPES, { error: `types: expected any of ${CORPUS_EVENT_TYPES.join(', ')}` }))
    .min(1, { error: `types: expected at least one of ${CORPUS_EVENT_TYPES.join(', ')}` })
    .optional()
    .describe('only these kinds of change; default all'),
  source: int('source', 1, 2_147_483_647).optional().describe('only changes delivered for this source'),
  limit: int('limit', 1, MCP_EVENTS_MAX)
    .optional()
    .describe(`most changes (default ${MCP_EVENTS_DEFAULT}, at most ${MCP_EVENTS_MAX})`),
};

const READ_ONLY = { readOnlyHint: true, openWorldHint: false } as const;

/** The hit as a tool answers it. */
function hitAnswer(h: CorpusHit, template: string | undefined) {
  const link = hitLink(h, template);
  const snippet = markSnippet(h.hit.snippet, '«', '»').replace(/\s+/g, ' ').trim();
  const found = {
    ...(h.distance !== undefined ? { distance: h.distance } : {}),
    ...(h.score !== undefined ? { score: h.score } : {}),
  };
  if (h.kind === 'video') {
    return {
      kind: 'video' as const,
      video_id: h.hit.videoId,
      title: h.hit.title,
      channel: h.hit.channelName ?? h.hit.channelId,
      lang: h.hit.lang,
      seconds: h.hit.seconds === null ? null : Math.floor(h.hit.seconds),
      moment: h.hit.seconds === null ? null : formatMoment(h.hit.seconds),
      snippet,
      url: link ?? null,
      ...found,
    };
  }
  if (h.kind === 'page') {
    return {
      kind: 'page' as const,
      page_url: h.hit.url,
      title: h.hit.name,
      section: h.hit.headings.join(' › '),
      anchor: h.hit.anchor,
      snippet,
      url: link ?? null,
      ...found,
    };
  }
  return {
    kind: 'media' as const,
    media_url: h.hit.url,
    platform: h.hit.platform,
    title: h.hit.title,
    author: h.hit.author,
    seconds: h.hit.seconds === null ? null : Math.floor(h.hit.seconds),
    moment: h.hit.seconds === null ? null : formatMoment(h.hit.seconds),
    snippet,
    url: link ?? null,
    ...found,
  };
}

type HitAnswer = ReturnType<typeof hitAnswer>;

function hitText(h: HitAnswer): string {
  const where =
    h.kind === 'video'
      ? `video ${h.video_id} at ${h.moment ?? 'no timings'} [${h.lang}] ${h.title ?? ''}`
      : h.kind === 'page'
        ? `page ${h.page_url}${h.section ? ` › ${h.section}` : ''}`
        : `media ${h.media_url} at ${h.moment ?? 'title'} [${h.platform}] ${h.title ?? ''}`;
  return `- ${where.trim()}\n  ${h.snippet}${h.url ? `\n  ${h.url}` : ''}`;
}

/** One timed line of a transcript as a tool answers it. */
interface TimedLine {
  seconds: number;
  moment: string;
  text: string;
  url: string | null;
}

/**
 * The chunks starting in [from, to), as lines with their links; cut at MCP_TRANSCRIPT_LINES_MAX
 * with the second to go on from.
 */
function timedLines(
  chunks: readonly TimedChunk[],
  range: { from?: number | undefined; to?: number | undefined },
  link: (seconds: number) => string | null,
): { lines: TimedLine[]; nextFrom: number | null } {
  const lines: TimedLine[] = [];
  for (const c of chunks) {
    if (typeof c.offset !== 'number' || typeof c.text !== 'string') continue;
    const s = c.offset / 1000;
    if (range.from !== undefined && s < range.from) continue;
    if (range.to !== undefined && s >= range.to) continue;
    if (lines.length === MCP_TRANSCRIPT_LINES_MAX) return { lines, nextFrom: Math.floor(s) };
    lines.push({ seconds: Math.floor(s), moment: formatMoment(s), text: c.text, url: link(s) });
  }
  return { lines, nextFrom: null };
}

function linesText(lines: readonly TimedLine[]): string {
  return lines.map((l) => `${l.moment} ${l.text.replace(/\s+/g, ' ').trim()}${l.url ? ` <${l.url}>` : ''}`).join('\n');
}

/** `text` cut to MCP_TEXT_CHARS_MAX, at a line when one is near. */
function bounded(text: string): { text: string; truncated: boolean } {
  if (text.length <= MCP_TEXT_CHARS_MAX) return { text, truncated: false };
  const cut = text.slice(0, MCP_TEXT_CHARS_MAX);
  const at = cut.lastIndexOf('\n');
  return { text: at > MCP_TEXT_CHARS_MAX / 2 ? cut.slice(0, at) : cut, truncated: true };
}

function eventLink(e: EventRow, template: string | undefined): string | null {
  const url = typeof e.data.url === 'string' ? e.data.url : null;
  if (url !== null) return url;
  if (e.videoId !== null && template !== undefined) return fillVideoUrl(template, e.videoId, null);
  return null;
}

function answer(text: string, structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: structured };
}

/** A new server with every tool registered (stdio: one; stateless HTTP: one per request). */
export function createMcpServer(deps: McpDeps): McpServer {
  const server = new McpServer(
    { name: MCP_SERVER_NAME, version: deps.version },
    {
      instructions:
        'Search and read the stored corpus of video transcripts, web pages and media transcripts. ' +
        'Start with search; follow a hit with read_transcript (its video_id and a from/to range around its seconds), ' +
        'read_page (its page_url and anchor) or read_media. Every answer carries links that open the video at the second, or the page at the section.',
    },
  );
  const read = <T>(f: (tx: Queryable) => Promise<T>) => readWithTimeout(deps.sql, MCP_STATEMENT_TIMEOUT_MS, f);

  /** The tool's answer, or its refusal, or (anything else) an error without its detail, logged. */
  const run =
    <A>(tool: string, f: (args: A) => Promise<CallToolResult>) =>
    async (args: A): Promise<CallToolResult> => {
      try {
        return await f(args);
      } catch (e: unknown) {
        if (e instanceof ToolRefusal) return { isError: true, content: [{ type: 'text', text: e.message }] };
        deps.log.error(
          {
            event: 'mcp.tool_failed',
            tool,
            err: { message: redactUrlsIn(e instanceof Error ? e.message : String(e)) },
          },
          'mcp tool failed',
        );
        return {
          isError: true,
          content: [{ type: 'text', text: `${tool} failed: the database did not answer (the server logged why)` }],
        };
      }
    };

  server.registerTool(
    'search',
    {
      title: 'Search the corpus',
      description:
        'Find where words are said in the stored video transcripts, web pages and media, best first: each hit with its moment ' +
        '(seconds from the start), a snippet with the words marked «…» and a link opening the video at that second (or the page at its section). ' +
        'With embeddings on, mode semantic finds passages by meaning (each with its cosine distance) and hybrid fuses both.',
      inputSchema: SEARCH_INPUT,
      annotations: READ_ONLY,
    },
    run('search', async (a) => {
      const scope = searchScopeProblem({ kind: a.kind, lang: a.lang, channelId: a.channel });
      if (scope !== null) throw new ToolRefusal(scope);
      // stored but not yet indexed (no daemon running, or a second behind): as the CLI does
      await deps.drainSearchIndex();
      const found = await read((tx) =>
        searchCorpusIn(
          tx,
          {
            words: a.words,
            mode: a.mode,
            kind: a.kind,
            lang: a.lang,
            channelId: a.channel,
            sourceId: a.source,
            limit: a.limit ?? MCP_SEARCH_HITS_DEFAULT,
          },
          deps.embeddings,
        ),
      ).catch((e: unknown) => {
        if (e instanceof SearchModeUnavailableError) throw new ToolRefusal(`mode: ${e.message}`);
        throw e;
      });
      await countQueryTokens(deps.sql, found, deps.log);
      const answers = found.hits.map((h) => hitAnswer(h, deps.videoUrlTemplate));
      const text = answers.length === 0 ? 'no matches' : answers.map(hitText).join('\n');
      return answer(text, {
        mode: found.mode,
        ...(found.model !== undefined ? { model: found.model } : {}),
        hits: answers,
      });
    }),
  );

  server.registerTool(
    'read_transcript',
    {
      title: 'Read a video transcript',
      description:
        'A video’s stored transcript as timed lines (h:mm:ss, text, a link opening the video at that second), optionally only ' +
        `from/to a second; at most ${MCP_TRANSCRIPT_LINES_MAX} lines an answer (next_from says where to go on).`,
      inputSchema: READ_TRANSCRIPT_INPUT,
      annotations: READ_ONLY,
    },
    run('read_transcript', async (a) => {
      if (a.from !== undefined && a.to !== undefined && a.to <= a.from)
        throw new ToolRefusal(`to: ${a.to} is not after from (${a.from}): expected to > from`);
      const t = await read(async (tx) => {
        const found = await readTranscript(tx, a.video_id, a.lang);
        if (found) return found;
        const langs = await transcriptLangs(tx, a.video_id);
        throw new ToolRefusal(
          langs.length === 0
            ? `video_id: no transcript stored for ${JSON.stringify(a.video_id)}`
            : `lang: no ${JSON.stringify(a.lang)} transcript of ${a.video_id}; stored: ${langs.join(', ')}`,
        );
      });
      const template = deps.videoUrlTemplate;
      const link = (s: number) => (template === undefined ? null : fillVideoUrl(template, t.videoId, s));
      const head = {
        video_id: t.videoId,
        title: t.title,
        lang: t.lang,
        origin: t.origin,
        translated_from: t.translatedFrom,
      };
      if (t.chunks === null) {
        if (a.from !== undefined || a.to !== undefined)
          throw new ToolRefusal(
            `from/to: the ${t.lang} transcript of ${t.videoId} has no timings (delivered as plain text); ask without them`,
          );
        const { text, truncated } = bounded(t.text);
        return answer(`${t.title ?? t.videoId} [${t.lang}] ${link(0) ?? ''}\n${text}${truncated ? '\n[cut]' : ''}`, {
          ...head,
          timed: false,
          url: link(0),
          text,
          truncated,
        });
      }
      const { lines, nextFrom } = timedLines(t.chunks, a, link);
      const more = nextFrom === null ? '' : `\n[more: call again with from=${nextFrom}]`;
      return answer(`${t.title ?? t.videoId} [${t.lang}]\n${linesText(lines)}${more}`, {
        ...head,
        timed: true,
        lines,
        next_from: nextFrom,
      });
    }),
  );

  server.registerTool(
    'read_page',
    {
      title: 'Read a web page',
      description:
        'A stored web page as Markdown, or one section of it (by anchor or heading), with links to its sections. ' +
        `At most ${MCP_TEXT_CHARS_MAX} characters an answer.`,
      inputSchema: READ_PAGE_INPUT,
      annotations: READ_ONLY,
    },
    run('read_page', async (a) => {
      const page = await read((tx) => readPage(tx, a.url));
      if (!page) throw new ToolRefusal(`url: no page stored at ${JSON.stringify(a.url)}`);
      const sections = pageSections(page.content);
      const head = {
        url: page.url,
        title: page.name,
        updated_at: page.updatedAt.toISOString(),
        gone: page.goneAt !== null,
      };
      if (a.section !== undefined) {
        const wanted = a.section.replace(/^#/, '').trim().toLowerCase();
        let chosen = sections.filter((s) => s.anchor === wanted);
        if (chosen.length === 0) chosen = sections.filter((s) => s.headings.at(-1)?.trim().toLowerCase() === wanted);
        if (chosen.length === 0) {
          const anchors = [...new Set(sections.flatMap((s) => (s.anchor === null ? [] : [s.anchor])))];
          throw new ToolRefusal(
            `section: no section ${JSON.stringify(a.section)} in ${page.url}; its anchors: ${anchors.slice(0, 50).join(', ') || '(none: the page has no headings)'}`,
          );
        }
        const anchor = chosen[0]!.anchor;
        const { text, truncated } = bounded(chosen.map((s) => s.text).join('\n\n'));
        const link = sectionLink(page.url, anchor);
        return answer(`${chosen[0]!.headings.join(' › ')}\n${link}\n\n${text}${truncated ? '\n[cut]' : ''}`, {
          ...head,
          section: chosen[0]!.headings.join(' › '),
          anchor,
          link,
          text,
          truncated,
        });
      }
      const toc = [...new Map(sections.filter((s) => s.anchor !== null).map((s) => [s.anchor, s])).values()]
        .slice(0, MCP_PAGE_SECTIONS_MAX)
        .map((s) => ({ anchor: s.anchor, heading: s.headings.join(' › '), link: sectionLink(page.url, s.anchor) }));
      const { text, truncated } = bounded(page.content);
      return answer(
        `${page.name ?? page.url}\n${page.url}\n\n${text}${truncated ? '\n[cut: read a section]' : ''}` +
          (toc.length > 0 ? `\n\nSections:\n${toc.map((s) => `- ${s.heading} <${s.link}>`).join('\n')}` : ''),
        { ...head, text, truncated, sections: toc },
      );
    }),
  );

  server.registerTool(
    'read_media',
    {
      title: 'Read a media item’s transcript',
      description:
        'The stored transcript of a media item (TikTok, Instagram, X, Facebook, a media file) as timed lines, optionally only ' +
        `from/to a second; at most ${MCP_TRANSCRIPT_LINES_MAX} lines an answer.`,
      inputSchema: READ_MEDIA_INPUT,
      annotations: READ_ONLY,
    },
    run('read_media', async (a) => {
      if (a.from !== undefined && a.to !== undefined && a.to <= a.from)
        throw new ToolRefusal(`to: ${a.to} is not after from (${a.from}): expected to > from`);
      const m = await read((tx) => readMedia(tx, a.url));
      if (!m) throw new ToolRefusal(`url: no media item stored at ${JSON.stringify(a.url)}`);
      const head = {
        url: m.url,
        platform: m.platform,
        type: m.type,
        title: m.title,
        author: m.author,
        lang: m.transcriptLang,
      };
      if (m.chunks === null)
        return answer(`${m.url}: no transcript stored (${m.transcriptState})`, {
          ...head,
          transcript_state: m.transcriptState,
          lines: [],
        });
      const { lines, nextFrom } = timedLines(m.chunks, a, (s) => mediaMomentUrl(m.url, s));
      const more = nextFrom === null ? '' : `\n[more: call again with from=${nextFrom}]`;
      // a line's link is written only where it opens the media at the line (a media file)
      const shown = lines.map((l) => ({ ...l, url: l.url === m.url ? null : l.url }));
      return answer(`${m.title ?? m.url} [${m.platform}] <${m.url}>\n${linesText(shown)}${more}`, {
        ...head,
        transcript_state: m.transcriptState,
        lines,
        next_from: nextFrom,
      });
    }),
  );

  server.registerTool(
    'list_sources',
    {
      title: 'List the sources',
      description:
        'The sources kept in sync (channels, playlists, video lists, searches, websites, pages, media), by ID: kind, target, ' +
        'last successful sync and what is stored of each (videos, transcripts, pages, media).',
      inputSchema: LIST_SOURCES_INPUT,
      annotations: READ_ONLY,
    },
    run('list_sources', async (a) => {
      const limit = a.limit ?? MCP_SOURCES_DEFAULT;
      const rows = await read((tx) => sourcesWithStats(tx));
      const sources = rows.slice(0, limit).map((s) => ({
        id: s.id,
        kind: s.kind,
        // a website's URL could carry a password: never answered
        target: urlWithoutPassword(s.ref),
        external_id: s.externalId,
        title: s.title,
        paused: s.paused,
        last_synced_at: s.lastSyncedAt?.toISOString() ?? null,
        last_error_code: s.lastErrorCode,
        videos: s.videos,
        transcripts: s.transcripts,
        pages: s.pages,
        media: s.media,
      }));
      const text =
        sources.length === 0
          ? 'no sources'
          : sources
              .map(
                (s) =>
                  `${s.id} ${s.kind} ${s.target}${s.title ? ` (${s.title})` : ''}: last synced ${s.last_synced_at ?? 'never'}; ` +
                  `${s.videos} videos, ${s.transcripts} transcripts, ${s.pages} pages, ${s.media} media${s.paused ? '; paused' : ''}`,
              )
              .join('\n');
      return answer(text + (rows.length > limit ? `\n[${rows.length - limit} more: raise limit]` : ''), {
        sources,
        total: rows.length,
      });
    }),
  );

  server.registerTool(
    'recent_changes',
    {
      title: 'Recent changes to the corpus',
      description:
        'Videos, transcripts, pages and media added, changed, gone or returned, each with its link: the newest first, ' +
        'or after an event ID oldest first (after_id: a cursor).',
      inputSchema: RECENT_CHANGES_INPUT,
      annotations: READ_ONLY,
    },
    run('recent_changes', async (a) => {
      const limit = a.limit ?? MCP_EVENTS_DEFAULT;
      const types = a.types ?? CORPUS_EVENT_TYPES;
      const since = a.since === undefined ? undefined : new Date(a.since);
      const rows = await read((tx) =>
        a.after_id !== undefined
          ? readEvents(tx, { afterId: a.after_id, types, sourceId: a.source, since, limit })
          : latestEventsOf(tx, { types, since, sourceId: a.source, limit }),
      );
      const changes = rows.map((e) => ({
        id: e.id,
        type: e.type,
        occurred_at: e.occurredAt.toISOString(),
        source_id: e.sourceId,
        video_id: e.videoId,
        lang: typeof e.data.lang === 'string' ? e.data.lang : null,
        url: eventLink(e, deps.videoUrlTemplate),
        data: e.data,
      }));
      const text =
        changes.length === 0
          ? 'no changes'
          : changes
              .map(
                (c) =>
                  `${c.id} ${c.occurred_at} ${c.type} ${c.video_id ?? ''}${c.lang ? ` [${c.lang}]` : ''}${c.url ? ` <${c.url}>` : ''}`,
              )
              .join('\n');
      return answer(text, { changes });
    }),
  );

  return server;
}
