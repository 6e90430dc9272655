/**
 * The room a year of 2 000 sources takes, with and without retention: the 10x database is that
 * year, except that its transcripts are ~1.7 KB where real ones are ~20 KB. Real transcripts are
 * fetched from the simulator (~150 chunks each, as `npm run bench` gets them), stored beside the
 * seeded ones in tables with the same column compression, and the transcript-bearing bytes
 * (transcript items' payloads, `transcripts` rows) are scaled by what they measure.
 */
import type postgres from 'postgres';
import { tableStorage, type TableStorage } from '../../src/db/storage.ts';
import type { ApiClient } from '../../src/api/client.ts';
import {
  HISTORY_RETENTION_DAYS,
  LANG,
  RAW_RETENTION_DAYS,
  REAL_TRANSCRIPT_SAMPLE,
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
}

const MB = 2 ** 20;

/** Stored sizes of real transcripts, as a batch item's payload and as a `transcripts` row. */
async function realTranscriptSizes(
  sql: postgres.Sql,
  api: ApiClient,
  videoIds: string[],
): Promise<Projection['transcriptItem'] & { row: number }> {
  const items: string[] = [];
  const rows: { text: string; chunks: string }[] = [];
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
    rows.push({ text: t.content.map((c) => c.text).join(' '), chunks: JSON.stringify(t.content) });
  }
  if (items.length === 0) throw new Error('the simulator returned no transcript to measure');
  return sql.begin(async (tx) => {
    await tx`create temp table real_items (like batch_items including compression including defaults) on commit drop`;
    await tx`create temp table real_transcripts (like transcripts including compression including defaults) on commit drop`;
    await tx`insert into real_items (job_id, video_id, state, payload) select 'sample', 'v' || n, 'sunk', p::jsonb
      from unnest(${items}::text[]) with ordinality u(p, n)`;
    await tx`insert into real_transcripts (video_id, lang, text, chunks, content_sha256) select 'v' || n, 'en', t, c::jsonb, ''
      from unnest(${rows.map((r) => r.text)}::text[], ${rows.map((r) => r.chunks)}::text[]) with ordinality u(t, c, n)`;
    const [r] = await tx<{ item: number; row: number; raw: number }[]>`
      select (select avg(pg_column_size(payload)) from real_items)::float8 as item,
        (select avg(pg_column_size(text) + pg_column_size(chunks)) from real_transcripts)::float8 as row,
        ${items.reduce((n, s) => n + Buffer.byteLength(s), 0) / items.length}::float8 as raw`;
    return { seeded: 0, real: r!.item, rawJson: r!.raw, row: r!.row };
  });
}

export async function project(
  sql: postgres.Sql,
  api: ApiClient,
  spec: ScaleSpec,
  sampleVideoIds: string[],
): Promise<Projection> {
  const tables = await tableStorage(sql);
  const real = await realTranscriptSizes(sql, api, sampleVideoIds);
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
  const itemExtra = Math.max(0, real.real - s.item) * s.items;
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
    } else if (t.table === 'transcript_windows' || t.table === 'passages') {
      // the search index (windows of migrations/0011, passages since 0025) holds each
      // transcript's text again with its tsvector: its size follows the text, so it is scaled as
      // the transcripts rows are
      without *= windowScale;
      withRetention = without;
    } else if (t.table === 'sync_runs') {
      withRetention = without * historyKept;
    } else if (t.table === 'credit_snapshots') {
      withRetention = without * snapshotsKept;
    }
    return { table: t.table, without, with: withRetention };
  });
  const yearWithout = perTable.reduce((n, t) => n + t.without, 0);
  const yearWith = perTable.reduce((n, t) => n + t.with, 0);
  return {
    tables,
    totalBytes: tables.reduce((n, t) => n + t.totalBytes, 0),
    transcriptItem: { seeded: s.item, real: real.real, rawJson: real.rawJson },
    transcriptRow: { seeded: s.row, real: real.row },
    transcriptItems: s.items,
    transcriptRows: s.rows,
    oldPayloadShare: oldPayloadReal / Math.max(1, payloadReal),
    payloadBytes: payloadReal,
    yearWithout,
    yearWith,
    perTable,
    assumptions: [
      `the ${spec.label} database is the year: ${spec.sources} sources, ${spec.historyDays} days of hourly syncs, first backfills at its start, small batches spread evenly after`,
      `real transcripts: ${Math.round(real.rawJson / 1024)} KB of JSON per item (~150 chunks, measured on the simulator's), stored ${(real.real / 1024).toFixed(1)} KB as a payload and ${(real.row / 1024).toFixed(1)} KB as a transcripts row (lz4 where the schema sets it); ` +
        `the seed's are ${(s.item / 1024).toFixed(1)} KB and ${(s.row / 1024).toFixed(1)} KB: ${Math.round(s.items)} transcript payloads and ${Math.round(s.rows)} transcripts rows scaled (+${Math.round((itemExtra + rowExtra) / MB)} MB); the search index (transcript_windows or passages) scaled by the same ${windowScale.toFixed(1)}x; indexes and other rows as measured`,
      `RAW_RETENTION_DAYS=${RAW_RETENTION_DAYS}: payloads of items settled earlier are dropped (${Math.round((100 * oldPayloadReal) / Math.max(1, payloadReal))}% of payload bytes), the rows and indexes stay; ` +
        `HISTORY_RETENTION_DAYS=${HISTORY_RETENTION_DAYS}: sync_runs keep ${Math.round(historyKept * 100)}%; credit_snapshots past ${SNAPSHOT_THIN_AFTER_DAYS} days one an hour (${Math.round(snapshotsKept * 100)}% kept)`,
      'with retention, the room freed is reused by new rows (autovacuum), so the files stop growing at the retained size rather than shrinking',
    ],
  };
}
