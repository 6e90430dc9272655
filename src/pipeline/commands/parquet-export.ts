/**
 * The Parquet writer of `export`: records gathered into columns, one row group at a time, each
 * encoded by hyparquet-writer's `ParquetWriter` (its public interface only) and handed to the
 * output before the next is gathered, so memory holds one row group and the footer's metadata,
 * whatever the number of records.
 */
import type { ByteWriter as ByteWriterClass, ParquetWriter as ParquetWriterClass } from 'hyparquet-writer';
import type { ExportRow, PageExportRow } from '../../db/export.ts';
import { EXPORT_FIELDS } from './export.ts';

/** A Parquet row group ends after this many records ... */
export const PARQUET_ROW_GROUP_MAX_ROWS = 10_000;
/**
 * ... or once its texts, descriptions and chunks reach this many bytes (string lengths, an
 * estimate), whichever comes first: a row group is held in memory as values, then as encoded and
 * compressed pages, so long transcripts must not make one grow with them.
 */
export const PARQUET_ROW_GROUP_MAX_BYTES = 6 * 1024 * 1024;
/** Target size of a data page, bytes (hyparquet-writer's default). */
const PARQUET_PAGE_BYTES = 1024 * 1024;

/** Where the file's bytes go; the promise is its backpressure (resolved once drained). */
export interface ByteSink {
  write(bytes: Buffer): Promise<void>;
}

export interface ParquetRecordWriter {
  write(r: ExportRow): Promise<void>;
  /** the footer written to the sink (the sink is not closed) */
  finish(): Promise<void>;
}

type SchemaElement = ConstructorParameters<typeof ParquetWriterClass>[0]['schema'][number];

interface StoredChunk {
  text: string;
  offset: number;
  duration: number;
  lang?: string;
}

const utf8 = (name: string, optional: boolean): SchemaElement => ({
  name,
  type: 'BYTE_ARRAY',
  converted_type: 'UTF8',
  repetition_type: optional ? 'OPTIONAL' : 'REQUIRED',
});
const plainType = (name: string, type: 'DOUBLE' | 'INT64' | 'BOOLEAN', optional: boolean): SchemaElement => ({
  name,
  type,
  repetition_type: optional ? 'OPTIONAL' : 'REQUIRED',
});
const timestampMicros = (name: string, optional: boolean): SchemaElement => ({
  name,
  type: 'INT64',
  // the converted type, not the logical one with isAdjustedToUTC: readers show a plain
  // TIMESTAMP (UTC by our contract), as the export always wrote
  converted_type: 'TIMESTAMP_MICROS',
  repetition_type: optional ? 'OPTIONAL' : 'REQUIRED',
});
/** The three-level LIST of the Parquet spec: `name` (optional) > `list` (repeated) > `element` (required). */
const list = (name: string, element: SchemaElement[]): SchemaElement[] => [
  { name, repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  ...element,
];

/**
 * Standard Parquet types only (UTF8, INT64, DOUBLE, TIMESTAMP_MICROS in UTC, three-level LISTs),
 * data pages v1 and Snappy: what DuckDB, Spark, pandas/pyarrow and Polars read without a hint.
 * The flat list hyparquet-writer takes, depth first.
 */
export function parquetSchema(chunks: boolean): SchemaElement[] {
  const columns: SchemaElement[][] = [
    [utf8('video_id', false)],
    [utf8('title', true)],
    [utf8('description', true)],
    [plainType('duration_s', 'DOUBLE', true)],
    [utf8('channel_id', true)],
    [utf8('channel_name', true)],
    list('tags', [utf8('element', false)]),
    [utf8('thumbnail', true)],
    [timestampMicros('upload_date', true)],
    [plainType('view_count', 'INT64', true)],
    [plainType('like_count', 'INT64', true)],
    list('transcript_languages', [utf8('element', false)]),
    [utf8('lang', false)],
    [utf8('text', false)],
    [utf8('content_sha256', false)],
    [utf8('batch', true)],
    [timestampMicros('delivered_at', false)],
    [utf8('origin', false)],
    [utf8('translated_from', true)],
  ];
  if (chunks)
    // src/api/schemas.ts TranscriptChunkSchema: offset and duration in ms
    columns.push(
      list('chunks', [
        { name: 'element', repetition_type: 'REQUIRED', num_children: 4 },
        utf8('text', false),
        plainType('offset', 'DOUBLE', false),
        plainType('duration', 'DOUBLE', false),
        utf8('lang', true),
      ]),
    );
  return [{ name: 'root', num_children: columns.length }, ...columns.flat()];
}

/** The columns of the video records, in order. */
function columnNames(chunks: boolean): string[] {
  return [...EXPORT_FIELDS, ...(chunks ? ['chunks'] : [])];
}

const int64 = (n: number | null) => (n === null ? null : BigInt(n));

/** hyparquet-writer's ParquetWriter with `schema`, its bytes handed to `sink` a row group at a time. */
async function parquetFileWriter(sink: ByteSink, schema: SchemaElement[]): Promise<ParquetWriterClass> {
  // loaded only here: the other commands need none of it
  const { ByteWriter, ParquetWriter } = await import('hyparquet-writer');

  /**
   * hyparquet-writer's in-memory writer, emptied into the sink at each `flush`, which its
   * ParquetWriter calls after every row group (and `finish` after the footer), awaiting the
   * promise before it encodes more: the sink's backpressure reaches the encoder.
   */
  class SinkWriter extends (ByteWriter as typeof ByteWriterClass) {
    flush(): Promise<void> {
      // a copy: the stream may still hold the chunk when this buffer is reused for the next group
      const bytes = Buffer.from(this.getBytes());
      this.index = 0;
      return bytes.length === 0 ? Promise.resolve() : sink.write(bytes);
    }

    // @ts-expect-error ByteWriter declares finish(): void; the Writer interface it implements allows a promise
    finish(): Promise<void> {
      return this.flush();
    }
  }

  return new ParquetWriter({
    writer: new SinkWriter(1024 * 1024),
    schema,
    codec: 'SNAPPY',
    // no min/max statistics: every row group's would be kept until the footer (the texts' whole),
    // and readers lose only row-group pruning
    statistics: false,
  });
}

export async function parquetRecordWriter(sink: ByteSink, chunks: boolean): Promise<ParquetRecordWriter> {
  const writer = await parquetFileWriter(sink, parquetSchema(chunks));
  const groups = rowGroups(writer, columnNames(chunks));

  return {
    async write(r) {
      const c = groups.columns();
      c.video_id!.push(r.video_id);
      c.title!.push(r.title);
      c.description!.push(r.description);
      c.duration_s!.push(r.duration_s);
      c.channel_id!.push(r.channel_id);
      c.channel_name!.push(r.channel_name);
      c.tags!.push(r.tags);
      c.thumbnail!.push(r.thumbnail);
      c.upload_date!.push(int64(r.upload_date_us));
      c.view_count!.push(int64(r.view_count));
      c.like_count!.push(int64(r.like_count));
      c.transcript_languages!.push(r.transcript_languages);
      c.lang!.push(r.lang);
      c.text!.push(r.text);
      c.content_sha256!.push(r.content_sha256);
      c.batch!.push(r.batch);
      c.delivered_at!.push(BigInt(r.delivered_at_us));
      c.origin!.push(r.origin);
      c.translated_from!.push(r.translated_from);
      if (chunks) c.chunks!.push(r.chunks ? (JSON.parse(r.chunks) as StoredChunk[]) : null);
      await groups.added(r.text.length + (r.chunks?.length ?? 0) + (r.description?.length ?? 0));
    },
    finish: () => groups.finish(),
  };
}

/**
 * Columns gathered one row group at a time: `columns()` are the group's values, `added(bytes)`
 * counts a row and hands the group to `writer` once it holds PARQUET_ROW_GROUP_MAX_ROWS rows or
 * PARQUET_ROW_GROUP_MAX_BYTES of text; `finish` writes the last group and the footer.
 */
function rowGroups(writer: ParquetWriterClass, names: readonly string[]) {
  const empty = (): Record<string, unknown[]> => Object.fromEntries(names.map((n) => [n, []]));
  let columns = empty();
  let rows = 0;
  let bytes = 0;
  const flush = async () => {
    if (rows === 0) return;
    const columnData = Object.entries(columns).map(([name, data]) => ({
      name,
      data,
      // no offset index: its entries for every page would be kept in memory until the footer
      offsetIndex: false,
    }));
    const n = rows;
    columns = empty();
    rows = 0;
    bytes = 0;
    await writer.write({ columnData, rowGroupSize: n, pageSize: PARQUET_PAGE_BYTES });
  };
  return {
    columns: () => columns,
    async added(rowBytes: number) {
      rows++;
      bytes += rowBytes;
      if (rows >= PARQUET_ROW_GROUP_MAX_ROWS || bytes >= PARQUET_ROW_GROUP_MAX_BYTES) await flush();
    },
    async finish() {
      await flush();
      await writer.finish();
    },
  };
}

/** The page records' columns (src/pipeline/commands/export.ts PAGE_EXPORT_FIELDS), in order. */
function parquetPageSchema(): SchemaElement[] {
  const columns: SchemaElement[] = [
    utf8('url', false),
    utf8('name', true),
    utf8('description', true),
    utf8('og_url', true),
    utf8('content', false),
    plainType('count_characters', 'INT64', true),
    utf8('content_sha256', false),
    utf8('batch', true),
    timestampMicros('first_seen_at', false),
    timestampMicros('last_seen_at', false),
    timestampMicros('updated_at', false),
    timestampMicros('gone_at', true),
  ];
  return [{ name: 'root', num_children: columns.length }, ...columns];
}

/** Page records as Parquet, a row group at a time (bounded as the video records' are). */
export async function parquetPageWriter(
  sink: ByteSink,
): Promise<{ write(r: PageExportRow): Promise<void>; finish(): Promise<void> }> {
  const writer = await parquetFileWriter(sink, parquetPageSchema());
  const groups = rowGroups(
    writer,
    parquetPageSchema()
      .slice(1)
      .map((c) => c.name),
  );
  return {
    async write(r) {
      const c = groups.columns();
      c.url!.push(r.url);
      c.name!.push(r.name);
      c.description!.push(r.description);
      c.og_url!.push(r.og_url);
      c.content!.push(r.content);
      c.count_characters!.push(int64(r.count_characters));
      c.content_sha256!.push(r.content_sha256);
      c.batch!.push(r.batch);
      c.first_seen_at!.push(BigInt(r.first_seen_at_us));
      c.last_seen_at!.push(BigInt(r.last_seen_at_us));
      c.updated_at!.push(BigInt(r.updated_at_us));
      c.gone_at!.push(int64(r.gone_at_us));
      await groups.added(r.content.length + (r.description?.length ?? 0));
    },
    finish: () => groups.finish(),
  };
}

/** A passage record as written (src/pipeline/commands/export.ts `plainPassage`). */
export interface PassageRecord {
  id: number;
  kind: string;
  document: string;
  lang: string;
  /** null only in a removal */
  n: number | null;
  text: string | null;
  tokens: number | null;
  sha256: string | null;
  start: number | null;
  end: number | null;
  headings: string[] | null;
  url: string | null;
  /** the passage went since the cursor's last run (its document re-cut or deleted) */
  removed: boolean;
}

function parquetPassageSchema(): SchemaElement[] {
  const columns: SchemaElement[] = [
    plainType('id', 'INT64', false),
    utf8('kind', false),
    utf8('document', false),
    utf8('lang', false),
    plainType('n', 'INT64', true),
    utf8('text', true),
    plainType('tokens', 'INT64', true),
    utf8('sha256', true),
    plainType('start', 'DOUBLE', true),
    plainType('end', 'DOUBLE', true),
    ...list('headings', [utf8('element', false)]),
    utf8('url', true),
    plainType('removed', 'BOOLEAN', false),
  ];
  // 13 top-level columns: headings' `list` and `element` are its children
  return [{ name: 'root', num_children: columns.length - 2 }, ...columns];
}

/** Passage records as Parquet, a row group at a time (bounded as the video records' are). */
export async function parquetPassageWriter(
  sink: ByteSink,
): Promise<{ write(r: PassageRecord): Promise<void>; finish(): Promise<void> }> {
  const writer = await parquetFileWriter(sink, parquetPassageSchema());
  // the top-level columns (a LIST's inner `list` and `element` are not columns of their own)
  const names = [
    'id',
    'kind',
    'document',
    'lang',
    'n',
    'text',
    'tokens',
    'sha256',
    'start',
    'end',
    'headings',
    'url',
    'removed',
  ];
  const groups = rowGroups(writer, names);
  return {
    async write(r) {
      const c = groups.columns();
      c.id!.push(BigInt(r.id));
      c.kind!.push(r.kind);
      c.document!.push(r.document);
      c.lang!.push(r.lang);
      c.n!.push(r.n === null ? null : BigInt(r.n));
      c.text!.push(r.text);
      c.tokens!.push(r.tokens === null ? null : BigInt(r.tokens));
      c.sha256!.push(r.sha256);
      c.start!.push(r.start);
      c.end!.push(r.end);
      c.headings!.push(r.headings);
      c.url!.push(r.url);
      c.removed!.push(r.removed);
      await groups.added(r.text?.length ?? 0);
    },
    finish: () => groups.finish(),
  };
}
