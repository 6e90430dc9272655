/**
 * The room a year of 2 000 sources takes, with and without retention: the 10x database is that
 * year, except that its transcripts are ~1.7 KB where real ones are ~20 KB. Real transcripts are
 * fetched from the simulator (~150 chunks each, as `npm run bench` gets them), stored beside the
 * seeded ones in tables with the same column compression, and the transcript-bearing bytes
 * (transcript items' payloads, `transcripts` rows) are scaled by what they measure.
 *
 * What the seed leaves out is projected from the same real transcripts, stored in tables like the
 * real ones (compression and indexes included): one `transcript_versions` row per transcript (the
 * current version), the passages of every transcript and page as the indexer cuts them, and an
 * embedding per passage at EMBEDDING_DIMENSIONS: bytes per vector with its row and HNSW index
 * measured on the seeded `embeddings` (or, where the seed stored none, on a sample stored and
 * indexed like it; estimated only without pgvector). The seed has no media sources: `media` and
 * `media_segments` count as measured (empty).
 */
import type postgres from 'postgres';
import { tableStorage, type TableStorage } from '../../src/db/storage.ts';
import type { ApiClient } from '../../src/api/client.ts';
import { PASSAGE_OVERLAP_TOKENS, PASSAGE_TOKENS } from '../../src/config.ts';
import { pagePassages, transcriptPassages } from '../../src/db/passages.ts';
import { pageSections } from '../../src/domain/pages.ts';
import type { Passage } from '../../src/domain/passages.ts';
import {
  EMBEDDING_DIMENSIONS,
  EMBEDDING_ROW_OVERHEAD_BYTES,
  HISTORY_RETENTION_DAYS,
  HNSW_FILL,
  HNSW_M,
  LANG,
  RAW_RETENTION_DAYS,
  REAL_TRANSCRIPT_SAMPLE,
  SAMPLE_COPIES,
  SNAPSHOT_THIN_AFTER_DAYS,
  type ScaleSpec,
} from './settings.ts';

export interface Projection {
  tables: TableStorage[];
  totalBytes: number;
  /** stored bytes per transcript item payload and per transcripts row: seeded and real */
  transcriptItem: { seeded: number; real: number; rawJson: number };
  transcriptRow: { seeded: number; real: number };
  /** items with a transcript payload; transcripts rows */
  transcriptItems: number;
  transcriptRows: number;
  /** share of payload bytes (after scaling) older than RAW_RETENTION_DAYS */
  oldPayloadShare: number;
  payloadBytes: number;
  yearWithout: number;
  yearWith: number;
  assumptions: string[];
  perTable: { table: string; without: number; with: number }[];
  /** what one stored real transcript takes, bytes, by table (raw item: until RAW_RETENTION_DAYS) */
  perTranscript: { table: string; bytes: number }[];
  /** passages projected: of transcripts and of pages; embeddings at `embeddingDimensions` */
  passages: { perTranscript: number; perPage: number; total: number };
  embeddingDimensions: number;
  /** bytes per vector with its row and HNSW index entry, and how they were had */
  embedding: { bytes: number; type: string; how: string };
}

/** Vectors stored and indexed in a sample table when the seed stored none. */
const EMBEDDING_SAMPLE_ROWS = 5_000;

/**
 * Bytes one embedding at EMBEDDING_DIMENSIONS takes with its row and HNSW index: measured on the
 * seeded `embeddings` table (rows, TOAST and indexes over its rows), else on EMBEDDING_SAMPLE_ROWS
 * vectors stored and indexed in a table like it, else (no pgvector) estimated.
 */
async function embeddingRowBytes(
  sql: postgres.Sql,
  tables: TableStorage[],
): Promise<{ bytes: number; type: string; how: string }> {
  const [col] = await sql<{ type: string | null }[]>`
    select (select format_type(a.atttypid, a.atttypmod) from pg_attribute a
      where a.attrelid = to_regclass('embeddings') and a.attname = 'embedding') as type`;
  const type = col!.type;
  if (type === null) {
    const e = embeddingBytes(EMBEDDING_DIMENSIONS);
    return { bytes: e.row + e.index, type: 'vector', how: 'estimated (no pgvector: no table to measure)' };
  }
  const seeded = tables.find((t) => t.table === 'embeddings');
  if (seeded?.rowsEstimate && seeded.rowsEstimate > 0) {
    return {
      bytes: seeded.totalBytes / seeded.rowsEstimate,
      type,
      how: `measured on the ${Math.round(seeded.rowsEstimate)} seeded rows with their HNSW index`,
    };
  }
  const bytes = await sql.begin(async (tx) => {
    await tx`create temp table sample_embeddings (like embeddings including all) on commit drop`;
    await tx.unsafe(`insert into sample_embeddings (model, sha256, dimensions, embedding, tokens)
      select 'sample', md5(i::text) || md5((-i)::text), ${EMBEDDING_DIMENSIONS},
        l2_normalize((select array_agg(random()::real - 0.5) from generate_series(1, ${EMBEDDING_DIMENSIONS}) where i > 0)::vector)::${type}, 200
      from generate_series(1, ${EMBEDDING_SAMPLE_ROWS}) i`);
    await tx.unsafe(
      `create index on sample_embeddings using hnsw ((embedding::${type}(${EMBEDDING_DIMENSIONS})) ${type}_cosine_ops)`,
    );
    const [r] = await tx<
      { bytes: number }[]
    >`select pg_total_relation_size('sample_embeddings')::float8 / ${EMBEDDING_SAMPLE_ROWS} as bytes`;
    return r!.bytes;
  });
  return {
    bytes,
    type,
    how: `measured on ${EMBEDDING_SAMPLE_ROWS} sample vectors stored and indexed like the real ones`,
  };
}

/** Bytes one embedding takes with its row and its HNSW index entry (see EMBEDDING_ROW_OVERHEAD_BYTES, HNSW_M). */
export function embeddingBytes(dimensions: number): { row: number; index: number } {
  const vector = 4 * dimensions + 8;
  return { row: vector + EMBEDDING_ROW_OVERHEAD_BYTES, index: (vector + 2 * HNSW_M * 6 + 8) / HNSW_FILL };
}

/** Triggers that fill a row's columns as it is written, copied to the sample tables. */
const FIELD_TRIGGERS = ['passages_search_fields'];

/** Bytes per row of `table` once `fill` stored rows in a temporary table like it (its compression and indexes). */
async function storedBytesPerRow(
  tx: postgres.TransactionSql,
  table: string,
  sample: string,
  fill: (temp: string) => Promise<unknown>,
): Promise<number> {
  const temp = `sample_${sample}`;
  await tx.unsafe(`create temp table ${temp} (like ${table} including all) on commit drop`);
  // the columns a trigger fills on every write (passages' configuration and tsvector, 0025)
  const fillers = await tx<{ def: string }[]>`
    select pg_get_triggerdef(t.oid) as def from pg_trigger t
    where t.tgrelid = ${table}::regclass and not t.tgisinternal and t.tgname = any(${FIELD_TRIGGERS}::text[])`;
  for (const f of fillers) await tx.unsafe(f.def.replace(/ ON \S+ /, ` ON ${temp} `));
  await fill(temp);
  const [r] = await tx.unsafe<{ bytes: number }[]>(
    `select pg_total_relation_size('${temp}')::float8 / greatest(1, count(*)) as bytes from ${temp}`,
  );
  return r!.bytes;
}

/** Stores `copies` of each passage (under distinct docs) in `temp`, a table like `passages`. */
async function insertPassages(
  tx: postgres.TransactionSql,
  temp: string,
  kind: string,
  docs: { doc: string; lang: string; passages: (Passage & { headings?: string[]; anchor?: string | null })[] }[],
): Promise<void> {
  const rows = docs.flatMap((d) =>
    d.passages.map((p) => ({
      doc: d.doc,
      lang: d.lang,
      n: p.n,
      text: p.text,
      tokens: p.tokens,
      sha256: p.sha256,
      start_s: p.startS,
      end_s: p.endS,
      first_chunk: p.firstChunk,
      last_chunk: p.lastChunk,
      headings: p.headings ?? null,
      anchor: p.anchor ?? null,
    })),
  );
  // the search fields (migrations/0025) as the trigger on passages sets them
  await tx.unsafe(
    `create trigger search_fields before insert on ${temp} for each row execute function passages_search_fields()`,
  );
  await tx.unsafe(
    `insert into ${temp} (kind, doc, lang, n, text, tokens, sha256, start_s, end_s, first_chunk, last_chunk, headings, anchor)
     select $1, x.doc || '#' || k, x.lang, x.n, x.text, x.tokens, x.sha256, x.start_s, x.end_s, x.first_chunk, x.last_chunk,
       array(select jsonb_array_elements_text(x.headings)), x.anchor
     from jsonb_to_recordset($2::text::jsonb) as x(doc text, lang text, n int, text text, tokens int, sha256 text, start_s float8,
       end_s float8, first_chunk int, last_chunk int, headings jsonb, anchor text)
     cross join generate_series(1, ${SAMPLE_COPIES}) k`,
    [kind, JSON.stringify(rows)],
  );
}

const MB = 2 ** 20;

interface RealSizes {
  /** a transcript item's payload as stored, and its JSON */
  item: number;
  rawJson: number;
  /** a transcripts row's text and chunks as stored (their sum: `row`) */
  row: number;
  text: number;
  chunks: number;
  /** a transcript_versions row with its TOAST and index entries */
  versionRow: number;
  passagesPerTranscript: number;
  /** a transcript's passage row with its index entries */
  passageRow: number;
  passagesPerPage: number;
  pagePassageRow: number;
}

/**
 * Stored sizes of real transcripts: as a batch item's payload, a `transcripts` row, a
 * `transcript_versions` row and the passages the indexer cuts from them; and of the passages of
 * the seeded pages.
 */
async function realSizes(sql: postgres.Sql, api: ApiClient, videoIds: string[]): Promise<RealSizes> {
  const items: string[] = [];
  const rows: { text: string; chunks: string }[] = [];
  const cut: { doc: string; lang: string; passages: Passage[] }[] = [];
  const passageOptions = { size: PASSAGE_TOKENS, overlap: PASSAGE_OVERLAP_TOKENS };
  for (const videoId of videoIds) {
    if (items.length >= REAL_TRANSCRIPT_SAMPLE) break;
    let t;
    try {
      t = await api.getTranscript({ videoId, lang: LANG });
    } catch {
      continue; // private, gone, or without captions
    }
    if (typeof t.content === 'string') continue;
    items.push(JSON.stringify({ videoId, transcript: t }));
    const text = t.content.map((c) => c.text).join(' ');
    rows.push({ text, chunks: JSON.stringify(t.content) });
    cut.push({ doc: videoId, lang: LANG, passages: transcriptPassages({ chunks: t.content, text }, passageOptions) });
  }
  if (items.length === 0) throw new Error('the simulator returned no transcript to measure');
  // the seeded pages' sections, cut as the indexer cuts a page (a sample: the pages are alike)
  const sampled = await sql<{ url: string; content: string }[]>`
    select url, content from pages order by md5(url) limit ${REAL_TRANSCRIPT_SAMPLE}`;
  const pageCut = sampled.map((p) => ({
    doc: p.url,
    lang: '',
    passages: pagePassages(pageSections(p.content), passageOptions),
  }));
  return sql.begin(async (tx) => {
    await tx`create temp table real_items (like batch_items including compression including defaults) on commit drop`;
    await tx`create temp table real_transcripts (like transcripts including compression including defaults) on commit drop`;
    await tx`insert into real_items (job_id, video_id, state, payload) select 'sample', 'v' || n, 'sunk', p::jsonb
      from unnest(${items}::text[]) with ordinality u(p, n)`;
    await tx`insert into real_transcripts (video_id, lang, text, chunks, content_sha256) select 'v' || n, 'en', t, c::jsonb, ''
      from unnest(${rows.map((r) => r.text)}::text[], ${rows.map((r) => r.chunks)}::text[]) with ordinality u(t, c, n)`;
    const [r] = await tx<{ item: number; text: number; chunks: number; raw: number }[]>`
      select (select avg(pg_column_size(payload)) from real_items)::float8 as item,
        (select avg(pg_column_size(text)) from real_transcripts)::float8 as text,
        (select avg(pg_column_size(chunks)) from real_transcripts)::float8 as chunks,
        ${items.reduce((n, s) => n + Buffer.byteLength(s), 0) / items.length}::float8 as raw`;
    // since migrations/0029 the current version's row holds no copy of the text and chunks
    const [once] = await tx<{ rows: boolean }[]>`select to_regclass('transcript_version_rows') is not null as rows`;
    const versions = once!.rows ? 'transcript_version_rows' : 'transcript_versions';
    const copied = once!.rows ? 'null, null' : 'text, chunks';
    const versionRow = await storedBytesPerRow(tx, versions, 'versions', (temp) =>
      tx.unsafe(`insert into ${temp} (video_id, lang, content_sha256, text, chunks, job_id, last_job_id)
        select video_id || '#' || k, lang, md5(text) || md5(chunks::text), ${copied}, 'job-' || video_id, 'job-' || video_id
        from real_transcripts cross join generate_series(1, ${SAMPLE_COPIES}) k`),
    );
    const passageRow = await storedBytesPerRow(tx, 'passages', 'transcript_passages', (temp) =>
      insertPassages(tx, temp, 'transcript', cut),
    );
    const pagePassageRow =
      pageCut.length === 0
        ? 0
        : await storedBytesPerRow(tx, 'passages', 'page_passages', (temp) => insertPassages(tx, temp, 'page', pageCut));
    const count = (docs: { passages: Passage[] }[]) => docs.reduce((n, d) => n + d.passages.length, 0);
    return {
      item: r!.item,
      rawJson: r!.raw,
      row: r!.text + r!.chunks,
      text: r!.text,
      chunks: r!.chunks,
      versionRow,
      passagesPerTranscript: count(cut) / cut.length,
      passageRow,
      passagesPerPage: pageCut.length === 0 ? 0 : count(pageCut) / pageCut.length,
      pagePassageRow,
    };
  });
}

export async function project(
  sql: postgres.Sql,
  api: ApiClient,
  spec: ScaleSpec,
  sampleVideoIds: string[],
): Promise<Projection> {
  const tables = await tableStorage(sql);
  const real = await realSizes(sql, api, sampleVideoIds);
  // seeded sizes from a 2% sample of pages (cheap at any size); counts from the statistics
  const [seeded] = await sql<
    {
      item: number;
      row: number;
      items: number;
      rows: number;
      old_share: number;
      payload: number;
      old_transcript: number;
    }[]
  >`
    with items as (
      select i.payload, b.kind, coalesce(i.sunk_at, i.landed_at) < now() - make_interval(days => ${RAW_RETENTION_DAYS}) as old
      from batch_items i tablesample system (2) join batches b on b.job_id = i.job_id
      where i.payload is not null
    )
    select
      (select avg(pg_column_size(payload)) from items where kind = 'transcript' and payload ? 'transcript')::float8 as item,
      (select avg(pg_column_size(text) + pg_column_size(chunks)) from transcripts tablesample system (2))::float8 as row,
      (select count(*) from items where kind = 'transcript' and payload ? 'transcript')::float8 * 50 as items,
      (select reltuples from pg_class where oid = 'transcripts'::regclass)::float8 as rows,
      (select coalesce(sum(pg_column_size(payload)) filter (where old), 0) / nullif(sum(pg_column_size(payload)), 0) from items)::float8 as old_share,
      (select sum(pg_column_size(payload)) from items)::float8 * 50 as payload,
      (select coalesce(sum(pg_column_size(payload)) filter (where old), 0) from items where kind = 'transcript' and payload ? 'transcript')::float8 * 50 as old_transcript`;
  const s = seeded!;
  const itemExtra = Math.max(0, real.item - s.item) * s.items;
  const rowExtra = Math.max(0, real.row - s.row) * s.rows;
  const windowScale = Math.max(1, real.row / Math.max(1, s.row));
  // payload bytes once transcripts are real, and the share of them past RAW_RETENTION_DAYS
  const payloadReal = s.payload + itemExtra;
  const oldTranscriptShare = s.old_transcript / Math.max(1, s.items * s.item);
  const oldPayloadReal = s.old_share * s.payload + itemExtra * oldTranscriptShare;
  const historyKept = Math.min(1, HISTORY_RETENTION_DAYS / spec.historyDays);
  const snapshots = tables.find((t) => t.table === 'credit_snapshots');
  // a snapshot every few minutes and one per submission; past a week one an hour is kept
  const snapshotsKept = snapshots?.rowsEstimate
    ? Math.min(
        1,
        (snapshots.rowsEstimate * (SNAPSHOT_THIN_AFTER_DAYS / spec.historyDays) +
          24 * (spec.historyDays - SNAPSHOT_THIN_AFTER_DAYS)) /
          snapshots.rowsEstimate,
      )
    : 1;
  const pageRows = tables.find((t) => t.table === 'pages')?.rowsEstimate ?? 0;
  // the seed cuts pages' passages too where they are the pages' search index (migrations/0032):
  // their share of the passages is not scaled as transcripts are
  const [pageShare] = await sql<{ share: number }[]>`
    select coalesce((select count(*) from passages where kind = 'page')::float8
      / nullif((select count(*) from passages), 0), 0)::float8 as share`;
  const passagesTotal = s.rows * real.passagesPerTranscript + pageRows * real.passagesPerPage;
  const passageBytes =
    s.rows * real.passagesPerTranscript * real.passageRow + pageRows * real.passagesPerPage * real.pagePassageRow;
  const embedding = await embeddingRowBytes(sql, tables);
  const embeddingsLabel = `embeddings (${EMBEDDING_DIMENSIONS} dimensions, ${embedding.type}, with HNSW)`;
  const versionsBytes = s.rows * real.versionRow;
  const perTable = tables.map((t) => {
    let without = t.totalBytes;
    let withRetention = t.totalBytes;
    if (t.table === 'batch_items') {
      without += itemExtra;
      // the row, its state, error code, sha256 and size stay; the payload goes
      withRetention = without - oldPayloadReal;
    } else if (t.table === 'transcripts') {
      without += rowExtra;
      withRetention = without;
    } else if (t.table === 'transcript_windows') {
      // the search index before passages (migrations/0011): each transcript's text again with its
      // tsvector; its size follows the text, so it is scaled as the transcripts rows are
      without *= windowScale;
      withRetention = without;
    } else if (t.table === 'passages') {
      // the search index since 0025, and what embeddings are made of: the seed cuts its short
      // transcripts' passages in SQL; scaled as the transcripts rows are, or as cut from real
      // transcripts, whichever is larger
      without = Math.max(without * (1 - pageShare!.share) * windowScale + without * pageShare!.share, passageBytes);
      withRetention = without;
    } else if (t.table === 'transcript_versions' || t.table === 'transcript_version_rows') {
      // the seed writes none (its history triggers are off)
      without = Math.max(without, versionsBytes);
      withRetention = without;
    } else if (t.table === 'embeddings') {
      // one per passage text: the seed's passages are cut from short transcripts
      without = Math.max(without, passagesTotal * embedding.bytes);
      withRetention = without;
      return { table: embeddingsLabel, without, with: withRetention };
    } else if (t.table === 'sync_runs') {
      withRetention = without * historyKept;
    } else if (t.table === 'credit_snapshots') {
      withRetention = without * snapshotsKept;
    }
    return { table: t.table, without, with: withRetention };
  });
  if (!perTable.some((t) => t.table === embeddingsLabel)) {
    const embeddingsTotal = passagesTotal * embedding.bytes;
    perTable.push({ table: embeddingsLabel, without: embeddingsTotal, with: embeddingsTotal });
  }
  perTable.sort((a, b) => b.without - a.without);
  const yearWithout = perTable.reduce((n, t) => n + t.without, 0);
  const yearWith = perTable.reduce((n, t) => n + t.with, 0);
  const transcriptsTable = perTable.find((t) => t.table === 'transcripts')?.without ?? 0;
  const windowsTable = perTable.find((t) => t.table === 'transcript_windows')?.without ?? 0;
  const perRow = (bytes: number) => bytes / Math.max(1, s.rows);
  const perTranscript = [
    { table: 'transcripts: text', bytes: real.text },
    { table: 'transcripts: chunks', bytes: real.chunks },
    { table: 'transcripts: the rest of the row, indexes', bytes: Math.max(0, perRow(transcriptsTable) - real.row) },
    { table: 'transcript_versions (the current version)', bytes: real.versionRow },
    { table: 'transcript_windows (search index)', bytes: perRow(windowsTable) },
    { table: `raw item (batch_items payload, until ${RAW_RETENTION_DAYS} days)`, bytes: real.item },
    { table: 'passages', bytes: real.passagesPerTranscript * real.passageRow },
    { table: embeddingsLabel, bytes: real.passagesPerTranscript * embedding.bytes },
  ];
  return {
    tables,
    totalBytes: tables.reduce((n, t) => n + t.totalBytes, 0),
    transcriptItem: { seeded: s.item, real: real.item, rawJson: real.rawJson },
    transcriptRow: { seeded: s.row, real: real.row },
    transcriptItems: s.items,
    transcriptRows: s.rows,
    oldPayloadShare: oldPayloadReal / Math.max(1, payloadReal),
    payloadBytes: payloadReal,
    yearWithout,
    yearWith,
    perTable,
    perTranscript,
    passages: { perTranscript: real.passagesPerTranscript, perPage: real.passagesPerPage, total: passagesTotal },
    embeddingDimensions: EMBEDDING_DIMENSIONS,
    embedding,
    assumptions: [
      `the ${spec.label} database is the year: ${spec.sources} sources, ${spec.historyDays} days of hourly syncs, first backfills at its start, small batches spread evenly after`,
      `real transcripts: ${Math.round(real.rawJson / 1024)} KB of JSON per item (~150 chunks, measured on the simulator's), stored ${(real.item / 1024).toFixed(1)} KB as a payload and ${(real.row / 1024).toFixed(1)} KB as a transcripts row (lz4 where the schema sets it); ` +
        `the seed's are ${(s.item / 1024).toFixed(1)} KB and ${(s.row / 1024).toFixed(1)} KB: ${Math.round(s.items)} transcript payloads and ${Math.round(s.rows)} transcripts rows scaled (+${Math.round((itemExtra + rowExtra) / MB)} MB); the search index (passages, or transcript_windows before them) scaled by the same ${windowScale.toFixed(1)}x; indexes and other rows as measured`,
      `transcript_versions: one row per transcript, the current version (${(real.versionRow / 1024).toFixed(1)} KB with its TOAST and index entries, real transcripts stored ${SAMPLE_COPIES}x in a table like it); a transcript that changed adds one more`,
      `passages as the indexer cuts them (PASSAGE_TOKENS=${PASSAGE_TOKENS}, PASSAGE_OVERLAP_TOKENS=${PASSAGE_OVERLAP_TOKENS}): ${real.passagesPerTranscript.toFixed(1)} per real transcript at ${Math.round(real.passageRow)} bytes, ` +
        `${real.passagesPerPage.toFixed(1)} per seeded page at ${Math.round(real.pagePassageRow)} bytes (rows and index entries, freshly stored); ${Math.round(passagesTotal)} in all`,
      `embeddings: one per passage text, ${EMBEDDING_DIMENSIONS} dimensions as ${embedding.type} (the default: text-embedding-3-small at EMBEDDINGS_DIMENSIONS_DEFAULT): ` +
        `${Math.round(embedding.bytes)} bytes per vector with its row and HNSW index entry, ${embedding.how}`,
      'media: the seeded year has no media sources; media and media_segments count as measured (empty)',
      `RAW_RETENTION_DAYS=${RAW_RETENTION_DAYS}: payloads of items settled earlier are dropped (${Math.round((100 * oldPayloadReal) / Math.max(1, payloadReal))}% of payload bytes), the rows and indexes stay; ` +
        `HISTORY_RETENTION_DAYS=${HISTORY_RETENTION_DAYS}: sync_runs keep ${Math.round(historyKept * 100)}%; credit_snapshots past ${SNAPSHOT_THIN_AFTER_DAYS} days one an hour (${Math.round(snapshotsKept * 100)}% kept)`,
      'with retention, the room freed is reused by new rows (autovacuum), so the files stop growing at the retained size rather than shrinking',
    ],
  };
}
