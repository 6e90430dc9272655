/**
 * `search "words" [--mode text|semantic|hybrid] [--source ID] [--lang xx] [--channel ID] [--limit N] [--json]`:
 * where the words are said (or, by meaning, what is said like them) in the stored transcripts,
 * pages and media (src/pipeline/read/search.ts), best first. `--json` prints one JSON
 * object a line, as `events --json` does; otherwise one block per hit. Exits 0 with hits and 1
 * with none (as grep does: a script can test for a match without parsing), 2 on bad input.
 */
import { InvalidArgumentError, type Command } from 'commander';
import type { MediaSearchHit, PageSearchHit, SearchHit } from '../db/search.ts';
import {
  SEARCH_KINDS,
  SEARCH_MODES,
  countQueryTokens,
  searchCorpusIn,
  SearchModeUnavailableError,
  searchScopeProblem,
  type CorpusHit,
  type SearchKind,
  type SearchMode,
} from '../pipeline/read/search.ts';
import { sectionLink } from '../domain/pages.ts';
import {
  fillVideoUrl,
  formatMoment,
  markSnippet,
  SEARCH_HITS_DEFAULT,
  SEARCH_HITS_MAX,
  searchQueryProblem,
  snippetParts,
} from '../domain/search.ts';
import { terminalJson, terminalSafe } from '../terminal-text.ts';
import { intArg } from './args.ts';
import { createContext } from './context.ts';
import { EXIT_NOT_LANDED } from './exit.ts';
import { LANG_CODE_RE } from '../domain/langs.ts';

function langArg(value: string): string {
  if (!LANG_CODE_RE.test(value))
    throw new InvalidArgumentError(`"${value}" is not a language code (expected ISO 639-1 such as en, de, pt-BR).`);
  return value;
}

function channelArg(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError('expected a channel ID.');
  return value;
}

function wordsArg(value: string): string {
  const problem = searchQueryProblem(value);
  if (problem !== null) throw new InvalidArgumentError(`${problem}.`);
  return value;
}

/** What a JSON line carries beside the hit: the mode, the model in use, a vector hit's distance, a fused hit's score. */
export interface HitExtra {
  mode?: SearchMode;
  model?: string;
  distance?: number;
  score?: number;
}

function extraOf(h: CorpusHit, mode: SearchMode, model: string | undefined): HitExtra {
  return {
    mode,
    ...(model !== undefined ? { model } : {}),
    ...(h.distance !== undefined ? { distance: h.distance } : {}),
    ...(h.score !== undefined ? { score: h.score } : {}),
  };
}

/** One hit as a JSON line: the snippet with its marks as « », and without them. */
export function searchHitJson(h: SearchHit, urlTemplate: string | undefined, extra: HitExtra = {}): string {
  return terminalJson({
    ...extra,
    video_id: h.videoId,
    title: h.title,
    channel_id: h.channelId,
    channel_name: h.channelName,
    lang: h.lang,
    origin: h.origin,
    translated_from: h.translatedFrom,
    moment: h.seconds === null ? null : formatMoment(h.seconds),
    seconds: h.seconds === null ? null : Math.floor(h.seconds),
    snippet: markSnippet(h.snippet, '«', '»'),
    snippet_plain: markSnippet(h.snippet, '', ''),
    rank: h.rank,
    ...(urlTemplate !== undefined ? { url: fillVideoUrl(urlTemplate, h.videoId, h.seconds) } : {}),
  });
}

/** A page hit as a JSON line: its URL, the section it is in and a link to that section. */
export function pageHitJson(h: PageSearchHit, extra: HitExtra = {}): string {
  return terminalJson({
    ...extra,
    kind: 'page',
    url: h.url,
    name: h.name,
    section: h.headings.join(' › '),
    headings: h.headings,
    link: sectionLink(h.url, h.anchor),
    snippet: markSnippet(h.snippet, '«', '»'),
    snippet_plain: markSnippet(h.snippet, '', ''),
    rank: h.rank,
  });
}

/** A media hit as a JSON line: its URL, platform and the moment the words are said. */
export function mediaHitJson(h: MediaSearchHit, extra: HitExtra = {}): string {
  return terminalJson({
    ...extra,
    kind: 'media',
    url: h.url,
    platform: h.platform,
    type: h.type,
    title: h.title,
    author: h.author,
    moment: h.seconds === null ? null : formatMoment(h.seconds),
    seconds: h.seconds === null ? null : Math.floor(h.seconds),
    snippet: markSnippet(h.snippet, '«', '»'),
    snippet_plain: markSnippet(h.snippet, '', ''),
    rank: h.rank,
  });
}

const BOLD = '\x1b[1m';
const RESET = '\x1b[0m';

/**
 * One hit for a person. Titles, names and transcript text come from the upstream: each part goes
 * through `terminalSafe` before the marks (bold on a terminal) are put around the words found.
 */
function hitBlock(h: SearchHit, urlTemplate: string | undefined, tty: boolean): string {
  const moment = h.seconds === null ? 'no timings' : formatMoment(h.seconds);
  const channel = terminalSafe(h.channelName ?? h.channelId ?? '?');
  const [open, close] = tty ? [BOLD, RESET] : ['«', '»'];
  const snippet = snippetParts(h.snippet)
    .map((p) => (p.marked ? `${open}${terminalSafe(p.text)}${close}` : terminalSafe(p.text)))
    .join('');
  const lang = h.translatedFrom !== null ? `${h.lang}, translated from ${h.translatedFrom}` : h.lang;
  const head = `${terminalSafe(h.videoId)} ${moment} [${terminalSafe(lang)}]  ${terminalSafe(h.title ?? '(no title)')} · ${channel}`;
  const lines = [head, `  ${snippet.replace(/\s+/g, ' ').trim()}`];
  if (urlTemplate !== undefined) lines.push(`  ${fillVideoUrl(urlTemplate, h.videoId, h.seconds)}`);
  return lines.join('\n') + '\n';
}

function pageHitBlock(h: PageSearchHit, tty: boolean): string {
  const [open, close] = tty ? [BOLD, RESET] : ['«', '»'];
  const snippet = snippetParts(h.snippet)
    .map((p) => (p.marked ? `${open}${terminalSafe(p.text)}${close}` : terminalSafe(p.text)))
    .join('');
  const section = h.headings.length > 0 ? ` › ${terminalSafe(h.headings.join(' › '))}` : '';
  const head = `${terminalSafe(h.url)} [page]  ${terminalSafe(h.name ?? '(no name)')}${section}`;
  return (
    [head, `  ${snippet.replace(/\s+/g, ' ').trim()}`, `  ${terminalSafe(sectionLink(h.url, h.anchor))}`].join('\n') +
    '\n'
  );
}

function mediaHitBlock(h: MediaSearchHit, tty: boolean): string {
  const [open, close] = tty ? [BOLD, RESET] : ['«', '»'];
  const snippet = snippetParts(h.snippet)
    .map((p) => (p.marked ? `${open}${terminalSafe(p.text)}${close}` : terminalSafe(p.text)))
    .join('');
  const moment = h.seconds === null ? 'title' : formatMoment(h.seconds);
  const head = `${terminalSafe(h.url)} ${moment} [${terminalSafe(h.platform)}]  ${terminalSafe(h.title ?? '(no title)')}${h.author ? ` · ${terminalSafe(h.author)}` : ''}`;
  return [head, `  ${snippet.replace(/\s+/g, ' ').trim()}`].join('\n') + '\n';
}

function kindArg(value: string): SearchKind {
  if (!(SEARCH_KINDS as readonly string[]).includes(value))
    throw new InvalidArgumentError(`"${value}" is not a kind of document (expected ${SEARCH_KINDS.join(', ')}).`);
  return value as SearchKind;
}

function modeArg(value: string): SearchMode {
  if (!(SEARCH_MODES as readonly string[]).includes(value))
    throw new InvalidArgumentError(`"${value}" is not a search mode (expected ${SEARCH_MODES.join(', ')}).`);
  return value as SearchMode;
}

interface SearchOptions {
  mode?: SearchMode;
  kind?: SearchKind;
  source?: number;
  lang?: string;
  channel?: string;
  limit: number;
  json: boolean;
}

export function registerSearchCommand(program: Command): void {
  program
    .command('search')
    .description(
      'find where words are said (or, by meaning, what is said like them) in the stored transcripts, pages and media: moment and snippet, ranked',
    )
    .argument('<words>', 'what to find: words (all of them), "a quoted phrase", a or b, -word to exclude', wordsArg)
    .option(
      '--mode <mode>',
      'text: the words; semantic: passages nearest in meaning (embeddings); hybrid: both, fused by reciprocal rank. Default hybrid once the model in use has embedded every passage, else text',
      modeArg,
    )
    .option('--source <id>', 'only what this source holds (videos it listed, pages it found)', intArg(1, 2_147_483_647))
    .option('--lang <xx>', 'only transcripts in this language (searched with its own stemming)', langArg)
    .option('--channel <id>', 'only videos of this channel', channelArg)
    .option(
      '--kind <kind>',
      'only videos (transcripts), only web pages or only media of other platforms; default all (videos only with --lang or --channel)',
      kindArg,
    )
    .option('--limit <n>', 'most hits printed', intArg(1, SEARCH_HITS_MAX), SEARCH_HITS_DEFAULT)
    .option(
      '--json',
      'one JSON object a line: {"video_id","title","channel_id","channel_name","lang","origin","translated_from","moment","seconds","snippet","snippet_plain","rank"} and "url" when VIDEO_URL_TEMPLATE is set; a page: {"kind":"page","url","name","section","headings","link","snippet","snippet_plain","rank"}; a media item: {"kind":"media","url","platform","type","title","author","moment","seconds","snippet","snippet_plain","rank"}; each also "mode", and by meaning "model", "distance" (cosine, a hit found by meaning) and "score" (hybrid)',
      false,
    )
    .addHelpText(
      'after',
      '\nThe best hits first, one per moment of a video: the moment (h:mm:ss) is where the first chunk holding\n' +
        'the words starts; a page hit names its URL, the section (headings) it is under and a link to it; a media\n' +
        'hit names its URL, its platform and the moment (or "title" for a hit in its title or description).\n' +
        'Snippets mark the words as «…» (bold on a terminal).\n' +
        'By meaning (--mode semantic or hybrid) needs EMBEDDINGS_BASE_URL and pgvector; it uses EMBEDDINGS_MODEL\n' +
        'once that model has embedded every passage, the previous model meanwhile (`status` names it). A hit found\n' +
        'by meaning shows its passage (moment or section) unmarked. Without --mode: hybrid once every passage is\n' +
        'embedded, text until then.\n' +
        'VIDEO_URL_TEMPLATE (e.g. https://videos.example/watch?v={id}&t={seconds}) adds a link to each hit.\n' +
        'Exit status: 0 when something was found, 1 when nothing was (as grep), 2 on bad input or when search by\n' +
        'meaning cannot run (EMBEDDINGS_BASE_URL unset, pgvector missing).\n',
    )
    .action(async (words: string, o: SearchOptions) => {
      const ctx = createContext();
      const scopeProblem = searchScopeProblem({ kind: o.kind, lang: o.lang, channelId: o.channel });
      if (scopeProblem !== null) {
        process.stderr.write(`error: --${scopeProblem.replace(' kind ', ' --kind ')}\n`);
        process.exitCode = 2;
        await ctx.close();
        return;
      }
      const { drainSearchIndexShowingProgress } = await import('./progress.ts');
      const template = ctx.config.videoUrlTemplate;
      try {
        // transcripts stored but not yet indexed (no daemon running, or it is a second behind)
        await drainSearchIndexShowingProgress(
          { sql: ctx.db().sql, passages: ctx.config.pipeline.passages },
          process.stderr,
        );
        let answer;
        try {
          answer = await searchCorpusIn(
            ctx.db().sql,
            {
              words,
              mode: o.mode,
              kind: o.kind,
              sourceId: o.source,
              lang: o.lang,
              channelId: o.channel,
              limit: o.limit,
            },
            ctx.config.embeddings,
          );
        } catch (e: unknown) {
          if (!(e instanceof SearchModeUnavailableError)) throw e;
          process.stderr.write(`error: --mode ${o.mode ?? ''}: ${e.message}\n`);
          process.exitCode = 2;
          return;
        }
        await countQueryTokens(ctx.db().sql, answer, ctx.log);
        const { hits, mode, model } = answer;
        if (hits.length === 0) {
          if (!o.json) process.stderr.write('no matches\n');
          // 1, as grep: the contract's "did not land" code, here "nothing found"
          process.exitCode = EXIT_NOT_LANDED;
          return;
        }
        const tty = process.stdout.isTTY === true;
        process.stdout.write(
          hits
            .map((h) =>
              h.kind === 'media'
                ? o.json
                  ? `${mediaHitJson(h.hit, extraOf(h, mode, model))}\n`
                  : mediaHitBlock(h.hit, tty)
                : h.kind === 'page'
                  ? o.json
                    ? `${pageHitJson(h.hit, extraOf(h, mode, model))}\n`
                    : pageHitBlock(h.hit, tty)
                  : o.json
                    ? `${searchHitJson(h.hit, template, extraOf(h, mode, model))}\n`
                    : hitBlock(h.hit, template, tty),
            )
            .join(''),
        );
      } finally {
        await ctx.close();
      }
    });
}
