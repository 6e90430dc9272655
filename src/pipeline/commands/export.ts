/**
 * `export` (issue #15): the records of `transcripts` joined to `videos`, streamed from a
 * postgres.js cursor to a JSONL, CSV or Parquet writer, with backpressure (a write that fills the
 * stream's buffer waits for `drain`), so memory stays flat whatever the corpus size (bench/export.ts:
 * peak RSS of the process, 1 000 000 records).
 *
 * A file is written beside its final path and renamed onto it once complete (atomic-file.ts: a
 * random temporary name opened exclusively, a target that is not a regular file refused, its mode
 * kept, fsynced): a failed or interrupted run leaves what was there before, and a cursor moves
 * only after that rename.
 */
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import type { Sql } from '../../db/connection.ts';
import {
  exportPageRecords,
  exportMediaRecords,
  type MediaExportRow,
  exportRecords,
  inExportSnapshot,
  readExportCursor,
  saveExportCursor,
  snapshotLastEventId,
  sourceExists,
  type ExportRow,
  type PageExportRow,
} from '../../db/export.ts';
import { SourceNotFoundError } from '../../db/sources.ts';
import type { Logger } from '../../log.ts';
import {
  describeTarget,
  inspectTarget,
  NotRegularFileError,
  openAtomicFile,
  type AtomicFile,
  type TargetState,
} from './atomic-file.ts';
import {
  exportPassageRecords,
  exportPassageRemovals,
  lastPassageId,
  type PassageExportRow,
  type PassageRemovalRow,
} from '../../db/passages.ts';
import { passageUrl } from '../../domain/passages.ts';
import { parquetPageWriter, parquetPassageWriter, parquetRecordWriter, type PassageRecord } from './parquet-export.ts';

export const EXPORT_FORMATS = ['jsonl', 'parquet', 'csv'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Rows fetched per round trip of the cursor (~5-10 KB each with chunks: a few MB in flight). */
export const EXPORT_CURSOR_ROWS = 500;
/** The progress line is redrawn at most this often, ms. */
const PROGRESS_INTERVAL_MS = 250;

/**
 * A CSV cell starting with one of these is run as a formula by spreadsheets (`=`, `+`, `-`, `@`),
 * or becomes one once a tab or carriage return in front is dropped: a title such as
 * `=HYPERLINK(...)` would act when the file is opened (CSV injection). Such a cell gets a leading
 * `'`, as OWASP advises (https://owasp.org/www-community/attacks/CSV_Injection); the spreadsheet
 * then shows the text. `--csv-raw-formulas` writes them as stored.
 */
export const CSV_FORMULA_LEAD = /^[=+\-@\t\r]/;

/** The record's fields in order (CSV's header), `chunks` last and only with --chunks. */
export const EXPORT_FIELDS = [
  'video_id',
  'title',
  'description',
  'duration_s',
  'channel_id',
  'channel_name',
  'tags',
  'thumbnail',
  'upload_date',
  'view_count',
  'like_count',
  'transcript_languages',
  'lang',
  'text',
  'content_sha256',
  'batch',
  'delivered_at',
  'origin',
  'translated_from',
] as const;

/** The fields of a page record, in order (JSONL records start with `"kind":"page"`). */
export const PAGE_EXPORT_FIELDS = [
  'url',
  'name',
  'description',
  'og_url',
  'content',
  'count_characters',
  'content_sha256',
  'batch',
  'first_seen_at',
  'last_seen_at',
  'updated_at',
  'gone_at',
] as const;

/** The fields of a media record, in order (JSONL records start with `"kind":"media"`). */
export const MEDIA_EXPORT_FIELDS = [
  'url',
  'platform',
  'type',
  'media_id',
  'title',
  'description',
  'author_username',
  'author_display_name',
  'views',
  'likes',
  'comments',
  'shares',
  'duration_s',
  'tags',
  'media',
  'posted_at',
  'transcript_state',
  'transcript_mode',
  'lang',
  'text',
  'content_sha256',
  'batch',
  'first_seen_at',
  'updated_at',
] as const;

/** The kinds of document an export writes: transcripts of videos, web pages, and media of other platforms. */
export const EXPORT_KINDS = ['video', 'page', 'media'] as const;
export type ExportKind = (typeof EXPORT_KINDS)[number];

export interface ExportOptions {
  format: ExportFormat;
  /** which documents: video records first, then page records; default videos only */
  kinds?: readonly ExportKind[] | undefined;
  /** a path, or '-' for stdout */
  out: string;
  sourceId?: number | undefined;
  lang?: string | undefined;
  /** ISO 8601 with a zone */
  since?: string | undefined;
  cursor?: string | undefined;
  chunks: boolean;
  /** CSV: write formula-leading cells as stored (CSV_FORMULA_LEAD); default false: prefixed with `'` */
  csvRawFormulas?: boolean;
  /**
   * write passages (issue #31) instead of documents: of `kinds` (video: transcripts) and `lang`;
   * a cursor then resumes after the last passage written (a re-cut passage comes again)
   */
  passages?: boolean;
  /** VIDEO_URL_TEMPLATE: a transcript passage's link; undefined: null links */
  videoUrlTemplate?: string | undefined;
}

export interface ExportResult {
  records: number;
  bytes: number;
  ms: number;
  /** the event id the output covers (the cursor's new position); with passages, the last passage id */
  lastEventId: number;
  /** where the run started from: the cursor's previous position, or null for a whole export */
  afterEventId: number | null;
}

export interface ExportDeps {
  sql: Sql;
  log: Logger;
  /** where the progress line goes (on a terminal only); default process.stderr */
  progress?: { write(s: string): unknown; isTTY?: boolean };
  /** where `--out -` writes; default process.stdout */
  stdout?: Writable;
  /**
   * aborted on SIGINT/SIGTERM by the command: the temporary file is removed at once (the
   * command then ends the process; the run does not wait for a query in flight)
   */
  interrupted?: AbortSignal;
}

/** A bad `--out` (the message names it): exit 2. */
export class ExportOutputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExportOutputError';
  }
}

// ---------------------------------------------------------------------------------------------
// Output: a byte sink that waits for drain

/** `--out PATH: is a FIFO (named pipe), not a regular file; ...`: nothing was created. */
function notRegularFile(out: string, target: TargetState): ExportOutputError {
  return new ExportOutputError(
    `--out ${out}: is ${describeTarget(target)}, not a regular file; nothing was written (give a file path, or - for stdout)`,
  );
}

/** Refuse a `--out` that exists and is not a regular file, before anything is read or created. */
export async function checkOutputPath(out: string): Promise<void> {
  if (out === '-') return;
  const target = await inspectTarget(out);
  if (target.kind !== 'missing' && target.kind !== 'file') throw notRegularFile(out, target);
}

class Output {
  bytes = 0;
  private failed: Error | undefined;
  private constructor(
    private readonly stream: Writable,
    /** a file: written to a temporary file, put in place by close() */
    private readonly file: AtomicFile | undefined,
  ) {
    stream.on('error', (e: Error) => (this.failed ??= e));
  }

  static async open(out: string, stdout: Writable): Promise<Output> {
    if (out === '-') return new Output(stdout, undefined);
    try {
      const file = await openAtomicFile(out);
      return new Output(file.stream, file);
    } catch (e: unknown) {
      if (e instanceof NotRegularFileError) throw notRegularFile(out, e.target);
      const err = e as NodeJS.ErrnoException;
      throw new ExportOutputError(`--out ${out}: cannot write there (${err.code ?? 'error'}: ${err.message})`);
    }
  }

  async write(chunk: string | Buffer): Promise<void> {
    if (this.failed) throw this.failed;
    this.bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
    if (!this.stream.write(chunk)) await this.drained();
  }

  /** One wait shared by every writer waiting. */
  private drainWait: Promise<void> | undefined;

  private drained(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    this.drainWait ??= (async () => {
      const ac = new AbortController();
      try {
        await Promise.race([
          once(this.stream, 'drain', { signal: ac.signal }),
          once(this.stream, 'error', { signal: ac.signal }).then(([e]) => Promise.reject(e as Error)),
        ]);
      } finally {
        ac.abort();
        this.drainWait = undefined;
      }
    })();
    return this.drainWait;
  }

  /** Flushes and closes; a file is put in place (a target that became a special file meanwhile is refused). */
  async close(): Promise<void> {
    if (this.failed) throw this.failed;
    if (!this.file) {
      // stdout is not ended (the process may still log); everything written has been handed over
      if (this.stream.writableNeedDrain) await this.drained();
      return;
    }
    try {
      await this.file.commit();
    } catch (e: unknown) {
      if (e instanceof NotRegularFileError) throw notRegularFile(this.file.path, e.target);
      throw e;
    }
  }

  /** After a failure: a file's partial copy is removed, the path left as it was. */
  async discard(): Promise<void> {
    await this.file?.discard();
  }

  /** On a signal: the partial copy is removed now, synchronously. */
  discardSync(): void {
    this.file?.discardSync();
  }
}

// ---------------------------------------------------------------------------------------------
// Writers, one per format

interface RecordWriter<R = ExportRow> {
  write(r: R): Promise<void>;
  /** everything written to the output (not closed: the run does that) */
  finish(): Promise<void>;
}

/** `2024-05-01T12:34:56.123456Z`: microseconds kept. */
export function isoMicros(us: number | null): string | null {
  if (us === null) return null;
  const ms = Math.floor(us / 1000);
  return `${new Date(ms).toISOString().slice(0, 23)}${String(us - ms * 1000).padStart(3, '0')}Z`;
}

/** The record with its contract names, values as JSON writes them (`chunks` apart: see the JSONL writer). */
function plain(r: ExportRow) {
  return {
    video_id: r.video_id,
    title: r.title,
    description: r.description,
    duration_s: r.duration_s,
    channel_id: r.channel_id,
    channel_name: r.channel_name,
    tags: r.tags,
    thumbnail: r.thumbnail,
    upload_date: isoMicros(r.upload_date_us),
    view_count: r.view_count,
    like_count: r.like_count,
    transcript_languages: r.transcript_languages,
    lang: r.lang,
    text: r.text,
    content_sha256: r.content_sha256,
    batch: r.batch,
    delivered_at: isoMicros(r.delivered_at_us),
    origin: r.origin,
    translated_from: r.translated_from,
  };
}

/** Records buffered into one write: fewer, larger writes; still a bounded buffer. */
const TEXT_BATCH_BYTES = 256 * 1024;

function textWriter<R = ExportRow>(out: Output, line: (r: R) => string, header?: string): RecordWriter<R> {
  let buf = header ?? '';
  return {
    async write(r) {
      buf += line(r);
      if (buf.length >= TEXT_BATCH_BYTES) {
        const b = buf;
        buf = '';
        await out.write(b);
      }
    },
    async finish() {
      if (buf !== '') await out.write(buf);
      buf = '';
    },
  };
}

function jsonlWriter(out: Output, chunks: boolean): RecordWriter {
  return textWriter(out, (r) => {
    const json = JSON.stringify(plain(r));
    // the stored jsonb's own text, spliced in: parsing and re-serialising every chunk costs more
    // than the rest of the record
    return chunks ? `${json.slice(0, -1)},"chunks":${r.chunks ?? 'null'}}\n` : `${json}\n`;
  });
}

/**
 * RFC 4180 with a header row. A null is an empty unquoted field and every string is quoted, so
 * an empty string (`""`) and a null stay apart (as in Postgres's `COPY ... CSV`); arrays are JSON
 * text (`["a","b"]`). A cell a spreadsheet would run (CSV_FORMULA_LEAD) starts with `'` unless
 * `rawFormulas`.
 */
function csvField(rawFormulas: boolean): (v: unknown) => string {
  return (v) => {
    if (v === null || v === undefined) return '';
    if (typeof v === 'number') return String(v);
    const text = typeof v === 'string' ? v : JSON.stringify(v);
    const s = !rawFormulas && CSV_FORMULA_LEAD.test(text) ? `'${text}` : text;
    return `"${s.replaceAll('"', '""')}"`;
  };
}

function csvWriter(out: Output, rawFormulas: boolean): RecordWriter {
  const field = csvField(rawFormulas);
  return textWriter(out, (r) => `${Object.values(plain(r)).map(field).join(',')}\n`, `${EXPORT_FIELDS.join(',')}\n`);
}

/** A page record with its contract names. */
export function plainPage(r: PageExportRow) {
  return {
    url: r.url,
    name: r.name,
    description: r.description,
    og_url: r.og_url,
    content: r.content,
    count_characters: r.count_characters,
    content_sha256: r.content_sha256,
    batch: r.batch,
    first_seen_at: isoMicros(r.first_seen_at_us),
    last_seen_at: isoMicros(r.last_seen_at_us),
    updated_at: isoMicros(r.updated_at_us),
    gone_at: isoMicros(r.gone_at_us),
  };
}

/** A media record with its contract names. */
export function plainMedia(r: MediaExportRow) {
  return {
    url: r.url,
    platform: r.platform,
    type: r.type,
    media_id: r.media_id,
    title: r.title,
    description: r.description,
    author_username: r.author_username,
    author_display_name: r.author_display_name,
    views: r.views,
    likes: r.likes,
    comments: r.comments,
    shares: r.shares,
    duration_s: r.duration_s,
    tags: r.tags,
    media: r.media,
    posted_at: isoMicros(r.posted_at_us),
    transcript_state: r.transcript_state,
    transcript_mode: r.transcript_mode,
    lang: r.lang,
    text: r.text,
    content_sha256: r.content_sha256,
    batch: r.batch,
    first_seen_at: isoMicros(r.first_seen_at_us),
    updated_at: isoMicros(r.updated_at_us),
  };
}

function mediaWriter(format: ExportFormat, out: Output, rawFormulas: boolean): RecordWriter<MediaExportRow> {
  if (format === 'parquet') throw new ExportOutputError('--kind media is written as jsonl or csv (not parquet yet)');
  if (format === 'csv') {
    const field = csvField(rawFormulas);
    return textWriter<MediaExportRow>(
      out,
      (r) =>
        `${Object.values(plainMedia(r))
          .map((v) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? JSON.stringify(v) : v))
          .map(field)
          .join(',')}\n`,
      `${MEDIA_EXPORT_FIELDS.join(',')}\n`,
    );
  }
  return textWriter<MediaExportRow>(out, (r) => `${JSON.stringify({ kind: 'media', ...plainMedia(r) })}\n`);
}

function pageWriter(
  format: ExportFormat,
  out: Output,
  rawFormulas: boolean,
): Promise<RecordWriter<PageExportRow>> | RecordWriter<PageExportRow> {
  if (format === 'parquet') return parquetPageWriter(out);
  if (format === 'csv') {
    const field = csvField(rawFormulas);
    return textWriter<PageExportRow>(
      out,
      (r) => `${Object.values(plainPage(r)).map(field).join(',')}\n`,
      `${PAGE_EXPORT_FIELDS.join(',')}\n`,
    );
  }
  return textWriter<PageExportRow>(out, (r) => `${JSON.stringify({ kind: 'page', ...plainPage(r) })}\n`);
}

/** A passage as its record: its link made (VIDEO_URL_TEMPLATE for transcripts, `url#anchor` for pages). */
function plainPassage(r: PassageExportRow, videoUrlTemplate: string | undefined): PassageRecord {
  return {
    id: r.id,
    kind: r.kind,
    document: r.doc,
    lang: r.lang,
    n: r.n,
    text: r.text,
    tokens: r.tokens,
    sha256: r.sha256,
    start: r.start_s,
    end: r.end_s,
    headings: r.headings,
    url: passageUrl({ kind: r.kind, doc: r.doc, startS: r.start_s, anchor: r.anchor }, videoUrlTemplate),
    removed: false,
  };
}

/** A passage that went since the cursor's last run: its id and document, nothing else. */
function removedPassage(r: PassageRemovalRow): PassageRecord {
  return {
    id: r.id,
    kind: r.kind,
    document: r.doc,
    lang: r.lang,
    n: null,
    text: null,
    tokens: null,
    sha256: null,
    start: null,
    end: null,
    headings: null,
    url: null,
    removed: true,
  };
}

// ---------------------------------------------------------------------------------------------
// Progress

function progressLine(p: { write(s: string): unknown; isTTY?: boolean }, startedAt: number) {
  if (!p.isTTY) return { update: () => undefined, done: () => undefined };
  let last = 0;
  const draw = (records: number, bytes: number) => {
    const s = Math.max((Date.now() - startedAt) / 1000, 0.001);
    const mb = bytes / 1e6;
    p.write(
      `\r\x1b[Kexport: ${records.toLocaleString('en-US')} records, ${mb.toFixed(1)} MB, ${(mb / s).toFixed(1)} MB/s`,
    );
  };
  return {
    update(records: number, bytes: number) {
      const now = Date.now();
      if (now - last < PROGRESS_INTERVAL_MS) return;
      last = now;
      draw(records, bytes);
    },
    done(records: number, bytes: number) {
      draw(records, bytes);
      p.write('\n');
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The run

export async function runExport(deps: ExportDeps, o: ExportOptions): Promise<ExportResult> {
  const { sql, log } = deps;
  // before anything is read: a bad --out is refused at once
  await checkOutputPath(o.out);
  if (o.sourceId !== undefined && !(await sourceExists(sql, o.sourceId))) throw new SourceNotFoundError(o.sourceId);
  // a passages cursor keeps a passage id, not an event id: its own name space (no cursor name holds ':')
  const cursorName = o.cursor === undefined ? undefined : o.passages ? `passages:${o.cursor}` : o.cursor;
  const afterEventId = cursorName !== undefined ? ((await readExportCursor(sql, cursorName)) ?? null) : null;
  const startedAt = Date.now();
  const out = await Output.open(o.out, deps.stdout ?? process.stdout);
  const onInterrupt = () => out.discardSync();
  deps.interrupted?.addEventListener('abort', onInterrupt, { once: true });
  if (deps.interrupted?.aborted) onInterrupt();
  const progress = progressLine(deps.progress ?? process.stderr, startedAt);
  let records = 0;
  let lastEventId: number;
  try {
    const kinds = o.kinds ?? ['video'];
    if (o.passages) {
      if (o.format === 'csv') throw new ExportOutputError('--passages is written as jsonl or parquet (not csv)');
      lastEventId = await inExportSnapshot(sql, async (tx) => {
        const hi = await lastPassageId(tx);
        const writer =
          o.format === 'parquet'
            ? await parquetPassageWriter(out)
            : textWriter<PassageRecord>(out, (r) => `${JSON.stringify(r)}\n`);
        const passageKinds = o.kinds?.map((k) => (k === 'video' ? 'transcript' : k));
        if (afterEventId !== null) {
          // first what went since the last run, so a consumer's store loses them before the new ones come
          const removals = exportPassageRemovals(tx, {
            kinds: passageKinds,
            lang: o.lang,
            afterId: afterEventId,
            upTo: hi,
          });
          for await (const rows of removals.cursor(EXPORT_CURSOR_ROWS)) {
            for (const r of rows) {
              await writer.write(removedPassage(r));
              records++;
            }
            progress.update(records, out.bytes);
          }
        }
        const query = exportPassageRecords(tx, {
          kinds: passageKinds,
          lang: o.lang,
          afterId: afterEventId ?? undefined,
        });
        for await (const rows of query.cursor(EXPORT_CURSOR_ROWS)) {
          for (const r of rows) {
            if (r.id > hi) continue;
            await writer.write(plainPassage(r, o.videoUrlTemplate));
            records++;
          }
          progress.update(records, out.bytes);
        }
        await writer.finish();
        return hi;
      });
    } else {
      if (o.format !== 'jsonl' && kinds.length > 1) {
        throw new ExportOutputError(
          `--format ${o.format} holds one kind of document per file: choose --kind video, --kind page or --kind media`,
        );
      }
      const selection = { sourceId: o.sourceId, since: o.since, afterEventId: afterEventId ?? undefined };
      lastEventId = await inExportSnapshot(sql, async (tx) => {
        const hi = await snapshotLastEventId(tx);
        if (kinds.includes('video')) {
          const writer =
            o.format === 'parquet'
              ? await parquetRecordWriter(out, o.chunks)
              : o.format === 'csv'
                ? csvWriter(out, o.csvRawFormulas ?? false)
                : jsonlWriter(out, o.chunks);
          const query = exportRecords(tx, { ...selection, lang: o.lang, chunks: o.chunks });
          for await (const rows of query.cursor(EXPORT_CURSOR_ROWS)) {
            for (const r of rows) {
              await writer.write(r);
              records++;
            }
            progress.update(records, out.bytes);
          }
          await writer.finish();
        }
        if (kinds.includes('page')) {
          const writer = await pageWriter(o.format, out, o.csvRawFormulas ?? false);
          for await (const rows of exportPageRecords(tx, selection).cursor(EXPORT_CURSOR_ROWS)) {
            for (const r of rows) {
              await writer.write(r);
              records++;
            }
            progress.update(records, out.bytes);
          }
          await writer.finish();
        }
        if (kinds.includes('media')) {
          const writer = mediaWriter(o.format, out, o.csvRawFormulas ?? false);
          for await (const rows of exportMediaRecords(tx, selection).cursor(EXPORT_CURSOR_ROWS)) {
            for (const r of rows) {
              await writer.write(r);
              records++;
            }
            progress.update(records, out.bytes);
          }
          await writer.finish();
        }
        return hi;
      });
    }
    await out.close();
  } catch (e: unknown) {
    await out.discard();
    throw e;
  } finally {
    deps.interrupted?.removeEventListener('abort', onInterrupt);
  }
  progress.done(records, out.bytes);
  // only now: the output is complete and in place
  if (cursorName !== undefined) await saveExportCursor(sql, cursorName, lastEventId, records);
  const result: ExportResult = { records, bytes: out.bytes, ms: Date.now() - startedAt, lastEventId, afterEventId };
  log.info(
    {
      event: 'export.done',
      format: o.format,
      out: o.out,
      records,
      bytes: out.bytes,
      ms: result.ms,
      cursor: o.cursor ?? null,
      afterEventId,
      lastEventId,
    },
    'export written',
  );
  return result;
}
