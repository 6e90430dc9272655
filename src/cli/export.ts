/**
 * `export --format jsonl|parquet|csv --out PATH|- [--source ID] [--lang xx] [--since TIME]
 * [--cursor NAME] [--chunks] [--csv-raw-formulas] [--kind video|page]` (issues #15, #29): one record per (video,
 * transcript language) and one per web page; the run itself is src/pipeline/commands/export.ts. With `--out -` stdout carries
 * the data only; with a path it gets one summary line. On a terminal, stderr shows a progress line.
 *
 * SIGINT or SIGTERM while a file is written removes its temporary copy (the file at `--out` is
 * left as it was, the cursor where it was), then ends the process by the same signal.
 *
 * `--cursor` and `--since` are refused together: both choose which records to write, one by the
 * events a named cursor has not covered yet, the other by time, and a run that did both would
 * move the cursor past changes it did not write.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { isSubtitleFormat, SUBTITLE_FORMATS, type SubtitleFormat } from '../domain/subtitles.ts';
import {
  EXPORT_FORMATS,
  EXPORT_KINDS,
  ExportOutputError,
  type ExportKind,
  runExport,
  type ExportFormat,
} from '../pipeline/commands/export.ts';
import { INSTANT_FORMS, intArg, parseInstant } from './args.ts';
import { createContext } from './context.ts';
import { exportSubtitles } from './export-subtitles.ts';
import { UsageError } from './exit.ts';

/** The record formats, then the subtitle formats (one file per video and language: src/cli/export-subtitles.ts). */
const FORMATS = [...EXPORT_FORMATS, ...SUBTITLE_FORMATS] as const;
type Format = ExportFormat | SubtitleFormat;

/** A transcript language as sources take it (src/cli/sources.ts). */
const LANG_RE = /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$/;
/** A cursor's name: what a person types and a script keeps. */
const CURSOR_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

function formatArg(value: string): Format {
  if (!(FORMATS as readonly string[]).includes(value))
    throw new InvalidArgumentError(`expected one of ${FORMATS.join(', ')}.`);
  return value as Format;
}

function kindArg(value: string): ExportKind {
  if (!(EXPORT_KINDS as readonly string[]).includes(value))
    throw new InvalidArgumentError(`expected one of ${EXPORT_KINDS.join(', ')}.`);
  return value as ExportKind;
}

function langArg(value: string): string {
  if (!LANG_RE.test(value)) throw new InvalidArgumentError('expected a language code such as en, de, pt-BR.');
  return value;
}

function cursorArg(value: string): string {
  if (!CURSOR_NAME_RE.test(value))
    throw new InvalidArgumentError('expected a name of letters, digits, ".", "_" or "-" (at most 100 characters).');
  return value;
}

/** The instant, as Postgres reads it exactly (microseconds kept). */
export function sinceArg(value: string): string {
  return parseInstant(value).iso;
}

interface ExportCliOptions {
  format: Format;
  kind?: ExportKind;
  out: string;
  source?: number;
  lang?: string;
  since?: string;
  cursor?: string;
  chunks: boolean;
  csvRawFormulas: boolean;
  passages: boolean;
}

const INTERRUPTING_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/**
 * Until `stop()`: on SIGINT/SIGTERM, abort `interrupted` (the run removes its temporary file,
 * synchronously), say so, and end the process by that signal, as if it had not been caught.
 */
function onInterrupt(out: string): { interrupted: AbortSignal; stop(): void } {
  const ac = new AbortController();
  const handlers = INTERRUPTING_SIGNALS.map((signal) => {
    const handler = () => {
      ac.abort(signal);
      process.stderr.write(`export interrupted (${signal}): nothing written, ${out} left as it was\n`);
      stop();
      process.kill(process.pid, signal);
    };
    process.once(signal, handler);
    return [signal, handler] as const;
  });
  const stop = () => {
    for (const [signal, handler] of handlers) process.off(signal, handler);
  };
  return { interrupted: ac.signal, stop };
}

export function registerExportCommand(program: Command): void {
  program
    .command('export')
    .description(
      'write the corpus (one record per video and transcript language, one per web page) as JSONL, CSV or Parquet, or subtitle files (SRT, WebVTT), whole or since a cursor',
    )
    .requiredOption('--format <format>', `${FORMATS.join(', ')}`, formatArg)
    .requiredOption(
      '--out <path>',
      'the file to write (replaced once complete), or - for stdout; srt, vtt: the directory to write into (created if missing)',
    )
    .option(
      '--kind <kind>',
      'video (transcript records), page (web page records) or media (media of other platforms, with their transcripts); default: all in JSONL (videos, pages, then media), video in CSV and Parquet (one kind per file); srt, vtt: video only',
      kindArg,
    )
    .option('--source <id>', 'only what this source holds (videos it listed, pages it found)', intArg(1, 2_147_483_647))
    .option('--lang <lang>', 'only transcripts in this language (videos only)', langArg)
    .option(
      '--since <time>',
      `only records whose transcript or video changed at or after this time: ${INSTANT_FORMS}`,
      sinceArg,
    )
    .option(
      '--cursor <name>',
      'only what changed since the last run with this name (the first writes everything); the name is kept in Postgres',
      cursorArg,
    )
    .option(
      '--passages',
      'write passages instead (token-aware windows for embedding models, with their moment and link; jsonl or parquet; --kind video, page or media, --lang, --cursor)',
      false,
    )
    .option('--chunks', 'add the timed chunks (JSONL: an array; Parquet: a list of structs; not with csv)', false)
    .option(
      '--csv-raw-formulas',
      "CSV: write cells that start with = + - @, a tab or a carriage return as stored (by default they start with ')",
      false,
    )
    .addHelpText(
      'after',
      '\nFields: video_id, title, description, duration_s, channel_id, channel_name, tags, thumbnail, upload_date,\n' +
        'view_count, like_count, transcript_languages, lang, text, content_sha256, batch (the job that delivered it),\n' +
        'delivered_at, origin (captions, generated or translation), translated_from (a translation: the language of\n' +
        'the transcript it was translated from); timestamps UTC. A page: url, name, description, og_url, content (Markdown), count_characters,\n' +
        'content_sha256, batch, first_seen_at, last_seen_at, updated_at, gone_at (JSONL: "kind":"page" first). A media item:\n' +
        'url, platform, type, media_id, title, description, author_username, author_display_name, views, likes,\n' +
        'comments, shares, duration_s, tags, media, posted_at, transcript_state (none, stored, empty: no speech, ...),\n' +
        'transcript_mode, lang, text, content_sha256, batch, first_seen_at, updated_at (JSONL: "kind":"media" first).\n' +
        'CSV: a null is an empty field, a string is always quoted, arrays are JSON.\n' +
        "CSV: a cell starting with =, +, -, @, a tab or a carriage return gets a leading ' so that a spreadsheet\n" +
        'shows it as text instead of running it as a formula (CSV injection); --csv-raw-formulas keeps it as stored.\n' +
        '--out: the file is written beside it under a random name and put in place once complete; an existing\n' +
        'file keeps its mode; a symlink, FIFO, device or other special file is refused (exit 2). --cursor and --since\n' +
        'cannot be combined.\n' +
        '--passages: one record per passage: id (kept while its text is unchanged), kind (transcript, page or media),\n' +
        'document (the video id, page URL or media URL), lang, n (its position), text, tokens (cl100k_base), sha256,\n' +
        'start and end (seconds; null without timings and for pages), headings (pages), url (VIDEO_URL_TEMPLATE at its\n' +
        'start second, null when unset; a page: URL#anchor; a media item: its URL, a media file at #t=<second>),\n' +
        "removed (false). With --cursor, a later run writes the passages cut since (a changed document's new passages;\n" +
        'unchanged ones are not written again), after a record for each passage written before that went since (its\n' +
        'document changed or was deleted): its id, kind, document and lang, "removed": true, the other fields null;\n' +
        'delete it from your store. Removals are kept HISTORY_RETENTION_DAYS (`prune`): a cursor not run for longer\n' +
        'misses older ones. Without --cursor no removal is written.\n' +
        'srt, vtt: one file per video and language, <videoId>.<lang>.srt (or .vtt), from the timed chunks, each\n' +
        'replaced once complete; a plain-text transcript (no timed chunks) gets none and is counted on stderr.\n',
    )
    .action(async (o: ExportCliOptions) => {
      if (
        o.passages &&
        (o.since !== undefined ||
          o.chunks ||
          o.source !== undefined ||
          o.format === 'csv' ||
          isSubtitleFormat(o.format))
      ) {
        const what =
          o.since !== undefined
            ? '--since'
            : o.chunks
              ? '--chunks'
              : o.source !== undefined
                ? '--source'
                : `--format ${o.format}`;
        throw new UsageError(
          `--passages cannot be used with ${what}: it takes --format jsonl or parquet, --kind, --lang and --cursor`,
        );
      }
      if (o.chunks && o.format === 'csv') {
        throw new UsageError(
          '--chunks cannot be used with --format csv (a list of timed chunks has no CSV column; use jsonl or parquet)',
        );
      }
      if (o.csvRawFormulas && o.format !== 'csv') {
        throw new UsageError(`--csv-raw-formulas applies to --format csv only (not ${o.format})`);
      }
      if (o.cursor !== undefined && o.since !== undefined) {
        throw new UsageError(
          `--cursor ${o.cursor} and --since ${o.since} cannot be combined: a cursor writes what changed since its last run, --since what changed since a time; give one`,
        );
      }
      if (
        (o.kind === 'page' || o.kind === 'media') &&
        (o.lang !== undefined || o.chunks || isSubtitleFormat(o.format))
      ) {
        throw new UsageError(
          `${isSubtitleFormat(o.format) ? `--format ${o.format}` : `--${o.lang !== undefined ? 'lang' : 'chunks'}`} applies to video records, not to --kind ${o.kind}`,
        );
      }
      if (isSubtitleFormat(o.format)) return exportSubtitles({ ...o, format: o.format });
      if (o.passages) return exportPassages(o);
      const kinds: ExportKind[] =
        o.kind !== undefined
          ? [o.kind]
          : o.format === 'jsonl' && o.lang === undefined
            ? ['video', 'page', 'media']
            : ['video'];
      const ctx = createContext();
      // stdout has no temporary file to remove: the default action is right there
      const signals = o.out === '-' ? undefined : onInterrupt(o.out);
      try {
        const r = await runExport(
          { sql: ctx.db().sql, log: ctx.log, interrupted: signals?.interrupted },
          {
            format: o.format,
            kinds,
            out: o.out,
            sourceId: o.source,
            lang: o.lang,
            since: o.since,
            cursor: o.cursor,
            chunks: o.chunks,
            csvRawFormulas: o.csvRawFormulas,
          },
        ).catch((e: unknown) => {
          throw e instanceof ExportOutputError ? new UsageError(e.message) : e;
        });
        // one record per transcript: say how many stored videos that leaves out, instead of silently
        const { videosWithoutTranscript, pageCount } = await import('../db/export.ts');
        const whole = o.cursor === undefined && o.since === undefined;
        const left =
          whole && kinds.includes('video')
            ? await videosWithoutTranscript(ctx.db().sql, { sourceId: o.source, lang: o.lang })
            : 0;
        const pagesLeft = whole && !kinds.includes('page') ? await pageCount(ctx.db().sql, { sourceId: o.source }) : 0;
        if (pagesLeft > 0) {
          process.stderr.write(
            `${pagesLeft} stored web page(s) are not in the export (${o.kind === 'video' ? '--kind video' : `--format ${o.format} holds one kind per file`}); --kind page writes them\n`,
          );
        }
        if (left > 0) {
          process.stderr.write(
            `${left} stored video(s) have no transcript${o.lang ? ` in ${o.lang}` : ''} and are not in the export ` +
              '(one record per transcript); status shows what each language got\n',
          );
        }
        if (o.out !== '-') {
          const from =
            o.cursor === undefined
              ? ''
              : r.afterEventId === null
                ? `; cursor ${o.cursor} created at event ${r.lastEventId}`
                : `; cursor ${o.cursor} moved from event ${r.afterEventId} to ${r.lastEventId}`;
          process.stdout.write(
            `wrote ${r.records} records (${(r.bytes / 1e6).toFixed(1)} MB) to ${o.out} in ${(r.ms / 1000).toFixed(1)} s${from}\n`,
          );
        }
      } finally {
        signals?.stop();
        await ctx.close();
      }
    });
}

/** `export --passages`: one record per passage (issue #31), through runExport. */
async function exportPassages(o: ExportCliOptions): Promise<void> {
  const ctx = createContext();
  const signals = o.out === '-' ? undefined : onInterrupt(o.out);
  try {
    const r = await runExport(
      { sql: ctx.db().sql, log: ctx.log, interrupted: signals?.interrupted },
      {
        format: o.format as ExportFormat,
        kinds: o.kind !== undefined ? [o.kind] : undefined,
        out: o.out,
        lang: o.lang,
        cursor: o.cursor,
        chunks: false,
        passages: true,
        videoUrlTemplate: ctx.config.videoUrlTemplate,
      },
    ).catch((e: unknown) => {
      throw e instanceof ExportOutputError ? new UsageError(e.message) : e;
    });
    if (o.out !== '-') {
      const from =
        o.cursor === undefined
          ? ''
          : r.afterEventId === null
            ? `; cursor ${o.cursor} created at passage ${r.lastEventId}`
            : `; cursor ${o.cursor} moved from passage ${r.afterEventId} to ${r.lastEventId}`;
      process.stdout.write(
        `wrote ${r.records} passages (${(r.bytes / 1e6).toFixed(1)} MB) to ${o.out} in ${(r.ms / 1000).toFixed(1)} s${from}\n`,
      );
    }
  } finally {
    signals?.stop();
    await ctx.close();
  }
}
