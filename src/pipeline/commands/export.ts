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
import type { WriteStream } from 'node:fs';
import { createRequire } from 'node:module';
import type { Writable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Sql } from '../../db/connection.ts';
import {
  exportRecords,
  inExportSnapshot,
  readExportCursor,
  saveExportCursor,
  snapshotLastEventId,
  sourceExists,
  type ExportRow,
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

export const EXPORT_FORMATS = ['jsonl', 'parquet', 'csv'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Rows fetched per round trip of the cursor (~5-10 KB each with chunks: a few MB in flight). */
export const EXPORT_CURSOR_ROWS = 500;
/** A Parquet row group ends after this many records ... */
export const PARQUET_ROW_GROUP_MAX_ROWS = 10_000;
/**
 * ... or once its texts and chunks reach this many bytes (string lengths, an estimate), whichever
 * comes first: parquetjs holds a whole row group in memory several times over (values as Buffers,
 * pages, compressed pages, the body), so long transcripts must not make one grow with them; but
 * the footer costs memory per group: parquetjs serialises it through thrift's TBufferedTransport,
 * which keeps a small Buffer for every field written until the end, so the peak of a large
 * export is at its footer and grows with the number of groups. bench/export.ts, ~5.6 KB a record
 * with chunks, 100 000 records: 6 MB groups peak at 182 MB RSS and use 54 s of CPU without
 * fullCollector; 3 MB groups with it, 165 MB and 41 s. But 1 000 000 records in 3 MB groups
 * (~1 700) peaked at 258 MB with it; in 6 MB groups, at 237 MB without it and 194 MB with it,
 * and 176 MB once the footer was serialised into one buffer (useLeanThriftSerializer).
 */
export const PARQUET_ROW_GROUP_MAX_BYTES = 6 * 1024 * 1024;
/**
 * Rows per Parquet data page. parquetjs grows a page's repetition and definition levels by
 * concatenating a Buffer per run, quadratic in the runs: the chunks' levels change at every
 * record, and at its default (8192) a 25 000-record export took 25 s; at 100, 17 s.
 */
export const PARQUET_PAGE_ROWS = 100;
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
] as const;

export interface ExportOptions {
  format: ExportFormat;
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
}

export interface ExportResult {
  records: number;
  bytes: number;
  ms: number;
  /** the event id the output covers (the cursor's new position) */
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

  /** One wait shared by every writer waiting (parquetjs issues a footer's sections without waiting for each). */
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

interface RecordWriter {
  write(r: ExportRow): Promise<void>;
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
  };
}

/** Records buffered into one write: fewer, larger writes; still a bounded buffer. */
const TEXT_BATCH_BYTES = 256 * 1024;

function textWriter(out: Output, line: (r: ExportRow) => string, header?: string): RecordWriter {
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
function csvWriter(out: Output, rawFormulas: boolean): RecordWriter {
  const field = (v: unknown): string => {
    if (v === null || v === undefined) return '';
    if (typeof v === 'number') return String(v);
    const text = typeof v === 'string' ? v : JSON.stringify(v);
    const s = !rawFormulas && CSV_FORMULA_LEAD.test(text) ? `'${text}` : text;
    return `"${s.replaceAll('"', '""')}"`;
  };
  return textWriter(out, (r) => `${Object.values(plain(r)).map(field).join(',')}\n`, `${EXPORT_FIELDS.join(',')}\n`);
}

type Parquet = (typeof import('@dsnp/parquetjs'))['default'];

/**
 * Standard Parquet types only (UTF8, INT64, DOUBLE, TIMESTAMP_MICROS in UTC, three-level LISTs),
 * data pages v1 and Snappy: what DuckDB, Spark, pandas/pyarrow and Polars read without a hint.
 */
function parquetSchema(parquet: Parquet, chunks: boolean): InstanceType<Parquet['ParquetSchema']> {
  const F = parquet.ParquetFieldBuilder;
  // No min/max statistics on any column: parquetjs keeps every row group's until the footer, as
  // small Buffers that each pin an 8 KB slab of Buffer's pool. With them (numbers and the sort key
  // only), peak RSS grew with the row groups written: 287 MB after ~1 700 of them (bench/export.ts,
  // 1 000 000 records). Readers lose row-group pruning, not correctness.
  const noStats = { statistics: false as const };
  const str = (optional: boolean) => ({ type: 'UTF8' as const, optional, compression: 'SNAPPY' as const, ...noStats });
  const key = () => str(false);
  const num = (type: 'DOUBLE' | 'INT64' | 'TIMESTAMP_MICROS', optional: boolean) => ({ type, optional, ...noStats });
  return new parquet.ParquetSchema({
    video_id: key(),
    title: str(true),
    description: str(true),
    duration_s: num('DOUBLE', true),
    channel_id: str(true),
    channel_name: str(true),
    tags: F.createListField('UTF8', true, { optional: false, statistics: false }),
    thumbnail: str(true),
    upload_date: num('TIMESTAMP_MICROS', true),
    view_count: num('INT64', true),
    like_count: num('INT64', true),
    transcript_languages: F.createListField('UTF8', true, { optional: false, statistics: false }),
    lang: key(),
    text: str(false),
    content_sha256: str(false),
    batch: str(true),
    delivered_at: num('TIMESTAMP_MICROS', false),
    ...(chunks
      ? {
          // src/api/schemas.ts TranscriptChunkSchema: offset and duration in ms
          chunks: F.createStructListField(
            { text: str(false), offset: num('DOUBLE', false), duration: num('DOUBLE', false), lang: str(true) },
            true,
          ),
        }
      : {}),
  });
}

interface StoredChunk {
  text: string;
  offset: number;
  duration: number;
  lang?: string;
}

/**
 * parquetjs keeps every written row group's metadata for the footer, each 64-bit field a
 * node-int64 object with its own 8-byte ArrayBuffer (~110 per row group here). Replaced by plain
 * numbers (thrift's compact protocol, which writes the footer, takes either; offsets stay far below
 * 2^53) they cost little: without this, peak RSS grew with the row groups written, past 200 MB
 * halfway through a 1 000 000-record export (bench/export.ts).
 */
function compactInt64s(o: unknown): unknown {
  if (o === null || typeof o !== 'object' || ArrayBuffer.isView(o)) return o;
  const x = o as Record<string, unknown>;
  if (Buffer.isBuffer(x.buffer) && typeof x.offset === 'number' && Object.keys(x).length === 2)
    return (o as { valueOf(): number }).valueOf();
  for (const k of Object.keys(x)) x[k] = compactInt64s(x[k]);
  return o;
}

const list = <T>(xs: readonly T[] | null) => (xs === null ? null : { list: xs.map((element) => ({ element })) });

/**
 * A full garbage collection, run after each Parquet row group. Encoding one makes tens of MB of
 * short-lived Buffers (parquetjs copies every value into its page, every page into the column
 * chunk, and the row group's body once per column); left to V8, they are freed once external
 * memory has grown ~64 MB past its last mark-compact (process.memoryUsage().external swung between
 * 25 and 65 MB during an export), and the process's peak RSS is where that lands. A
 * collection per group keeps each group's garbage from adding to the next's; 100 000 records used less
 * CPU with it, not more (user 35 s vs 42 s, system 6 s vs 12 s: PARQUET_ROW_GROUP_MAX_BYTES).
 * `gc` is exposed here rather than by `--expose-gc` on every command line (bin/'s shebang).
 */
function fullCollector(): () => void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  return () => gc();
}

/**
 * A thrift transport that writes into one growing Buffer. parquetjs serialises thrift structs
 * (page headers, and the footer: every row group's metadata) through thrift's TBufferedTransport,
 * which keeps each field's bytes as a Buffer of its own (TCompactProtocol allocates one per field)
 * until the struct is done. For the footer of a large export that is hundreds of thousands of
 * small Buffers alive at once: the process's peak RSS was at the footer, and grew with the number
 * of row groups (bench/export.ts, 100 000 records: 180-260 MB at the footer against ~125 MB while
 * streaming). Here each field's Buffer is garbage as soon as it is copied.
 */
class GrowingTransport {
  private buf = Buffer.allocUnsafe(64 * 1024);
  private len = 0;

  write(b: Buffer | string): void {
    const bytes = typeof b === 'string' ? Buffer.from(b, 'utf8') : b;
    if (this.len + bytes.length > this.buf.length) {
      const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + bytes.length));
      this.buf.copy(next, 0, 0, this.len);
      this.buf = next;
    }
    bytes.copy(this.buf, this.len);
    this.len += bytes.length;
  }

  flush(): void {}

  bytes(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.len));
  }
}

/**
 * parquetjs's `serializeThrift` (dist/lib/util.js, @dsnp/parquetjs 1.8.8), with GrowingTransport
 * in place of TBufferedTransport: the same protocol (TCompactProtocol of the thrift version
 * parquetjs depends on), so the same bytes. The writer calls it through the module's exports,
 * which is where it is replaced, once. test/integration/export.test.ts reads the files back with
 * DuckDB.
 */
let leanThrift = false;
function useLeanThriftSerializer(): void {
  if (leanThrift) return;
  const require = createRequire(import.meta.url);
  const fromParquet = createRequire(require.resolve('@dsnp/parquetjs'));
  const util = fromParquet('./lib/util.js') as { serializeThrift: (obj: unknown) => Buffer };
  const thrift = fromParquet('thrift') as { TCompactProtocol: new (t: GrowingTransport) => unknown };
  const WRITE = Symbol.for('write');
  util.serializeThrift = (obj: unknown): Buffer => {
    const transport = new GrowingTransport();
    (obj as Record<symbol, (p: unknown) => void>)[WRITE]!(new thrift.TCompactProtocol(transport));
    return transport.bytes();
  };
  leanThrift = true;
}

async function parquetWriter(out: Output, chunks: boolean): Promise<RecordWriter> {
  const maxRows = PARQUET_ROW_GROUP_MAX_ROWS;
  const collectGarbage = fullCollector();
  // loaded only here: it takes longer to load than the rest of the command
  const parquet = (await import('@dsnp/parquetjs')).default;
  useLeanThriftSerializer();
  const w = await parquet.ParquetWriter.openStream(
    parquetSchema(parquet, chunks),
    // parquetjs waits for each write's callback: the Output's drain is its backpressure; the
    // Output is closed by the run, not by parquetjs
    {
      write: (buf: Buffer, cb: (err?: Error | null) => void) => {
        out.write(buf).then(() => cb(null), cb);
        return true;
      },
      end: (cb: () => void) => cb(),
    } as unknown as WriteStream,
    {
      useDataPageV2: false,
      rowGroupSize: maxRows,
      pageSize: PARQUET_PAGE_ROWS,
      // no page index: parquetjs would keep every page's location and bounds in memory to the end
      // (peak RSS of a 50 000-record export: 194 MB with it, 171 MB without)
      pageIndex: false,
    },
  );
  let rows = 0;
  let bytes = 0;
  let compacted = 0;
  return {
    async write(r) {
      const stored = chunks && r.chunks ? (JSON.parse(r.chunks) as StoredChunk[]) : null;
      const size = r.text.length + (r.chunks?.length ?? 0) + (r.description?.length ?? 0);
      // the row group ends with this row once it holds enough bytes (parquetjs counts rows only)
      if (bytes + size >= PARQUET_ROW_GROUP_MAX_BYTES) w.setRowGroupSize(rows + 1);
      const p = plain(r);
      await w.appendRow({
        ...p,
        tags: list(r.tags),
        transcript_languages: list(r.transcript_languages),
        upload_date: r.upload_date_us,
        delivered_at: r.delivered_at_us,
        ...(chunks ? { chunks: stored === null ? null : list(stored) } : {}),
      });
      rows++;
      bytes += size;
      if (rows >= w.rowGroupSize) {
        rows = 0;
        bytes = 0;
        w.setRowGroupSize(maxRows);
        collectGarbage();
      }
      const groups = w.envelopeWriter?.rowGroups ?? [];
      while (compacted < groups.length) compactInt64s(groups[compacted++]);
    },
    async finish() {
      await w.close();
    },
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
  const afterEventId = o.cursor !== undefined ? ((await readExportCursor(sql, o.cursor)) ?? null) : null;
  const startedAt = Date.now();
  const out = await Output.open(o.out, deps.stdout ?? process.stdout);
  const onInterrupt = () => out.discardSync();
  deps.interrupted?.addEventListener('abort', onInterrupt, { once: true });
  if (deps.interrupted?.aborted) onInterrupt();
  const progress = progressLine(deps.progress ?? process.stderr, startedAt);
  let records = 0;
  let lastEventId: number;
  try {
    const writer =
      o.format === 'parquet'
        ? await parquetWriter(out, o.chunks)
        : o.format === 'csv'
          ? csvWriter(out, o.csvRawFormulas ?? false)
          : jsonlWriter(out, o.chunks);
    lastEventId = await inExportSnapshot(sql, async (tx) => {
      const hi = await snapshotLastEventId(tx);
      const query = exportRecords(tx, {
        sourceId: o.sourceId,
        lang: o.lang,
        since: o.since,
        afterEventId: afterEventId ?? undefined,
        chunks: o.chunks,
      });
      for await (const rows of query.cursor(EXPORT_CURSOR_ROWS)) {
        for (const r of rows) {
          await writer.write(r);
          records++;
        }
        progress.update(records, out.bytes);
      }
      return hi;
    });
    await writer.finish();
    await out.close();
  } catch (e: unknown) {
    await out.discard();
    throw e;
  } finally {
    deps.interrupted?.removeEventListener('abort', onInterrupt);
  }
  progress.done(records, out.bytes);
  // only now: the output is complete and in place
  if (o.cursor !== undefined) await saveExportCursor(sql, o.cursor, lastEventId, records);
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
