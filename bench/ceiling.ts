/**
 * The ceiling: the final rows of W1 (read back from the pipeline's tables, so the data is the
 * same) written straight from memory into empty tables of a fresh database with the same schema,
 * i.e. what Postgres on this machine takes with nothing else in the way. Several statement forms
 * are timed, each on emptied tables in one transaction, then the search index built for what it
 * wrote; COPY straight into the tables is the ceiling W1 is measured against.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import postgres from 'postgres';
import type { Queryable } from '../src/db/connection.ts';
import { indexQueuedTranscripts } from '../src/db/passages.ts';
import { loadConfig } from '../src/config.ts';
import { LAND_CHUNK_MAX_CHARS } from '../src/pipeline/ingest/poll-batch.ts';
import { SEARCH_INDEX_CHUNK } from '../src/pipeline/services/search-index.ts';

interface VideoRecord {
  id: string;
  title: string | null;
  description: string | null;
  duration_s: number | null;
  channel_id: string | null;
  channel_name: string | null;
  tags: string[] | null;
  thumbnail: string | null;
  /** timestamptz as Postgres printed it */
  upload_date: string | null;
  view_count: number | null;
  like_count: number | null;
  transcript_languages: string[] | null;
  last_job_id: string | null;
}

interface TranscriptRecord {
  video_id: string;
  lang: string;
  text: string;
  /** jsonb as text */
  chunks: string | null;
  available_langs: string[] | null;
  content_sha256: string;
  text_only: boolean | null;
  last_job_id: string | null;
}

export interface FinalRows {
  videos: VideoRecord[];
  transcripts: TranscriptRecord[];
}

export interface CeilingMethod {
  method: string;
  wallS: number;
  rowsPerS: number;
  transcriptMbPerS: number;
  /** of `wallS`, building the search index of what it wrote (cutting the passages) */
  indexS: number;
}

export interface CeilingFigures {
  rows: { videos: number; transcripts: number; total: number };
  transcriptMb: number;
  methods: CeilingMethod[];
  /** COPY straight into the tables: the ceiling */
  copy: CeilingMethod;
  /**
   * Not a ceiling: the Postgres work the pipeline's design needs at the least, from memory, on
   * one connection: land every item raw in batch_items and upsert its row in the same
   * transaction (the poller; a transcript's chunks copied from the landed item), in the same
   * statement forms and chunk sizes.
   */
  designFloor: CeilingMethod;
  /**
   * The search indexer alone over W1's transcripts, every one queued again: passages cut (with
   * the tokenizer, in Node) and search windows rebuilt, in transactions of SEARCH_INDEX_CHUNK.
   */
  passages: { transcripts: number; cut: number; wallS: number; passagesPerS: number };
}

const VIDEO_COLUMNS = [
  'id',
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
  'last_job_id',
] as const;
const TRANSCRIPT_COLUMNS = [
  'video_id',
  'lang',
  'text',
  'chunks',
  'available_langs',
  'content_sha256',
  'text_only',
  'last_job_id',
] as const;
/** Rows per statement of the multi-row forms (what the sink uses). */
const CHUNK_ROWS = 500;

const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;
/** Items per statement of the design floor (the pipeline's LAND_CHUNK_ITEMS); see `landChunks`. */
const PIPELINE_CHUNK_ROWS = 100;

export async function loadFinalRows(sql: Queryable, jobIds: string[]): Promise<FinalRows> {
  const videos = await sql<VideoRecord[]>`
    select id, title, description, duration_s, channel_id, channel_name, tags, thumbnail,
      upload_date::text as upload_date, view_count, like_count, transcript_languages, last_job_id
    from videos where last_job_id = any(${jobIds}::text[]) order by id`;
  const transcripts = await sql<TranscriptRecord[]>`
    select video_id, lang, text, chunks::text as chunks, available_langs, content_sha256, text_only, last_job_id
    from transcripts where last_job_id = any(${jobIds}::text[]) order by video_id, lang`;
  return { videos: [...videos], transcripts: [...transcripts] };
}

/** A CSV field: NULL unquoted and empty, everything else quoted. */
function csv(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'boolean') return v ? 't' : 'f';
  if (typeof v === 'number') return String(v);
  if (Array.isArray(v)) return csv(`{${v.map((e) => `"${String(e).replace(/[\\"]/g, (c) => `\\${c}`)}"`).join(',')}}`);
  return `"${String(v).replace(/"/g, '""')}"`;
}

function* csvLines<T extends object>(rows: readonly T[], columns: readonly (keyof T)[]): Generator<string> {
  let buf = '';
  for (const r of rows) {
    buf += `${columns.map((c) => csv(r[c])).join(',')}\n`;
    if (buf.length >= 1 << 20) {
      yield buf;
      buf = '';
    }
  }
  if (buf) yield buf;
}

async function copyInto<T extends object>(
  tx: postgres.TransactionSql,
  table: string,
  rows: readonly T[],
  columns: readonly (keyof T & string)[],
): Promise<void> {
  const stream = await tx`copy ${tx(table)} (${tx([...columns] as string[])}) from stdin with (format csv)`.writable();
  await pipeline(Readable.from(csvLines(rows, columns)), stream);
}

const VIDEO_UPSERT_SET = `title = excluded.title, description = excluded.description, duration_s = excluded.duration_s,
  channel_id = excluded.channel_id, channel_name = excluded.channel_name, tags = excluded.tags,
  thumbnail = excluded.thumbnail, upload_date = excluded.upload_date, view_count = excluded.view_count,
  like_count = excluded.like_count, transcript_languages = excluded.transcript_languages,
  last_job_id = excluded.last_job_id, updated_at = now()`;
const TRANSCRIPT_UPSERT_SET = `text = excluded.text, chunks = excluded.chunks, available_langs = excluded.available_langs,
  content_sha256 = excluded.content_sha256, text_only = excluded.text_only, last_job_id = excluded.last_job_id,
  updated_at = now()`;

type Method = (tx: postgres.TransactionSql, rows: FinalRows) => Promise<void>;

/** The sink's form: one jsonb_to_recordset upsert per `CHUNK_ROWS` videos. */
async function upsertVideosJson(tx: postgres.TransactionSql, videos: readonly VideoRecord[]): Promise<void> {
  for (let i = 0; i < videos.length; i += CHUNK_ROWS) {
    const json = JSON.stringify(videos.slice(i, i + CHUNK_ROWS));
    await tx.unsafe(
      `insert into videos (${VIDEO_COLUMNS.join(', ')})
       select ${VIDEO_COLUMNS.join(', ')} from jsonb_to_recordset($1::text::jsonb) as r(
         id text, title text, description text, duration_s double precision, channel_id text, channel_name text,
         tags text[], thumbnail text, upload_date timestamptz, view_count bigint, like_count bigint,
         transcript_languages text[], last_job_id text)
       on conflict (id) do update set ${VIDEO_UPSERT_SET}`,
      [json],
    );
  }
}

/** The sink's form for transcripts: chunks travel as JSON inside the JSON, as the sink sends them. */
async function upsertTranscriptsJson(
  tx: postgres.TransactionSql,
  transcripts: readonly TranscriptRecord[],
): Promise<void> {
  for (let i = 0; i < transcripts.length; i += CHUNK_ROWS) {
    const json = `[${transcripts
      .slice(i, i + CHUNK_ROWS)
      .map(({ chunks, ...rest }) => `{"chunks":${chunks ?? 'null'},${JSON.stringify(rest).slice(1)}`)
      .join(',')}]`;
    await tx.unsafe(
      `insert into transcripts (${TRANSCRIPT_COLUMNS.join(', ')})
       select ${TRANSCRIPT_COLUMNS.join(', ')} from jsonb_to_recordset($1::text::jsonb) as r(
         video_id text, lang text, text text, chunks jsonb, available_langs text[], content_sha256 text,
         text_only boolean, last_job_id text)
       on conflict (video_id, lang) do update set ${TRANSCRIPT_UPSERT_SET}`,
      [json],
    );
  }
}

/** The COPY method, the ceiling. */
const COPY_METHOD = 'COPY straight into the tables';

const METHODS: Record<string, Method> = {
  /** the sink's form: one jsonb_to_recordset upsert per 500 rows */
  'jsonb_to_recordset upsert (500-row statements)': async (tx, rows) => {
    await upsertVideosJson(tx, rows.videos);
    await upsertTranscriptsJson(tx, rows.transcripts);
  },
  /** COPY into a staging table, then one INSERT ... SELECT ... ON CONFLICT per table */
  'COPY into staging + upsert': async (tx, rows) => {
    await tx.unsafe('create temp table videos_stage (like videos including defaults) on commit drop');
    await tx.unsafe('create temp table transcripts_stage (like transcripts including defaults) on commit drop');
    await copyInto(tx, 'videos_stage', rows.videos, VIDEO_COLUMNS);
    await copyInto(tx, 'transcripts_stage', rows.transcripts, TRANSCRIPT_COLUMNS);
    await tx.unsafe(
      `insert into videos (${VIDEO_COLUMNS.join(', ')}) select ${VIDEO_COLUMNS.join(', ')} from videos_stage
       on conflict (id) do update set ${VIDEO_UPSERT_SET}`,
    );
    await tx.unsafe(
      `insert into transcripts (${TRANSCRIPT_COLUMNS.join(', ')}) select ${TRANSCRIPT_COLUMNS.join(', ')} from transcripts_stage
       on conflict (video_id, lang) do update set ${TRANSCRIPT_UPSERT_SET}`,
    );
  },
  /** COPY straight into the (empty) tables: no upsert possible, the absolute floor */
  [COPY_METHOD]: async (tx, rows) => {
    await copyInto(tx, 'videos', rows.videos, VIDEO_COLUMNS);
    await copyInto(tx, 'transcripts', rows.transcripts, TRANSCRIPT_COLUMNS);
  },
};

/** The raw batch items those rows came from, as the API delivers them (close enough in size and shape). */
function rawItems(rows: FinalRows): { kind: 'video' | 'transcript'; videoId: string; raw: string }[] {
  const out: { kind: 'video' | 'transcript'; videoId: string; raw: string }[] = [];
  for (const v of rows.videos) {
    const video = {
      id: v.id,
      title: v.title,
      description: v.description,
      duration: v.duration_s,
      channel: { id: v.channel_id, name: v.channel_name },
      tags: v.tags,
      thumbnail: v.thumbnail,
      uploadDate: v.upload_date,
      viewCount: v.view_count,
      likeCount: v.like_count,
      transcriptLanguages: v.transcript_languages,
    };
    out.push({ kind: 'video', videoId: v.id, raw: JSON.stringify({ videoId: v.id, video, errorCode: null }) });
  }
  for (const t of rows.transcripts) {
    const content = t.chunks ?? JSON.stringify(t.text);
    out.push({
      kind: 'transcript',
      videoId: t.video_id,
      raw: `{"videoId":${JSON.stringify(t.video_id)},"transcript":{"content":${content},"lang":${JSON.stringify(t.lang)},"availableLangs":${JSON.stringify(t.available_langs)}},"errorCode":null}`,
    });
  }
  return out;
}

/** The items cut as the poller cuts them: PIPELINE_CHUNK_ROWS items, or fewer as their text reaches LAND_CHUNK_MAX_CHARS. */
function* landChunks<T extends { raw: string }>(items: readonly T[]): Generator<T[]> {
  let chunk: T[] = [];
  let chars = 0;
  for (const it of items) {
    chunk.push(it);
    chars += it.raw.length;
    if (chunk.length >= PIPELINE_CHUNK_ROWS || chars >= LAND_CHUNK_MAX_CHARS) {
      yield chunk;
      chunk = [];
      chars = 0;
    }
  }
  if (chunk.length > 0) yield chunk;
}

async function designFloor(tx: postgres.TransactionSql, rows: FinalRows): Promise<void> {
  const items = rawItems(rows);
  const transcriptsById = new Map(rows.transcripts.map((t) => [t.video_id, t]));
  const videosById = new Map(rows.videos.map((v) => [v.id, v]));
  for (const kind of ['video', 'transcript'] as const) {
    const jobId = `floor-${kind}`;
    await tx`insert into batches (job_id, kind, status, credits_estimated, request) values (${jobId}, ${kind}, 'completed', 0, '{}'::jsonb)`;
    for (const chunk of landChunks(items.filter((i) => i.kind === kind))) {
      // the poller's transaction: land the raw items (sunk at once), then their rows
      const json = `[${chunk.map((it) => `{"video_id":${JSON.stringify(it.videoId)},"payload":${it.raw}}`).join(',')}]`;
      await tx.unsafe(
        `insert into batch_items (job_id, video_id, state, payload, landed_at, sunk_at)
         select $1, video_id, 'sunk', payload, now(), now() from jsonb_to_recordset($2::text::jsonb) as r(video_id text, payload jsonb)`,
        [jobId, json],
      );
      if (kind === 'video') {
        await upsertVideosJson(
          tx,
          chunk.map((it) => videosById.get(it.videoId)!),
        );
        continue;
      }
      // chunks copied from the landed item, the rest sent
      const meta = JSON.stringify(
        chunk.map((it) => {
          const { chunks, ...rest } = transcriptsById.get(it.videoId)!;
          return { ...rest, from_payload: chunks !== null };
        }),
      );
      await tx.unsafe(
        `insert into transcripts (${TRANSCRIPT_COLUMNS.join(', ')})
         select r.video_id, r.lang, r.text, case when r.from_payload then i.payload #> '{transcript,content}' end,
           r.available_langs, r.content_sha256, r.text_only, r.last_job_id
         from jsonb_to_recordset($1::text::jsonb) as r(
           video_id text, lang text, text text, from_payload boolean, available_langs text[], content_sha256 text,
           text_only boolean, last_job_id text)
         join batch_items i on i.job_id = $2 and i.video_id = r.video_id
         on conflict (video_id, lang) do update set ${TRANSCRIPT_UPSERT_SET}`,
        [meta, jobId],
      );
    }
  }
}

/**
 * The search windows of every queued transcript, built as the pipeline's indexer builds them
 * (migrations/0015: storing a transcript queues it; `search_index_pending()` builds its windows
 * in transactions of SEARCH_INDEX_CHUNK): part of every method's time, so the ceiling does the
 * same work as W1, whose backfill ends when what it stored is indexed.
 */
async function buildSearchIndex(sql: postgres.Sql): Promise<void> {
  while ((await indexQueuedTranscripts(sql, SEARCH_INDEX_CHUNK, loadConfig().pipeline.passages)).transcripts > 0);
}

/**
 * @param opts.copyOnly only the COPY ceiling and the design floor (no other statement form, no
 *   passages cut again): `bench --only w1`, whose ratios need no more
 */
export async function runCeiling(
  dbUrl: string,
  rows: FinalRows,
  opts: { copyOnly?: boolean } = {},
): Promise<CeilingFigures> {
  const sql = postgres(dbUrl, { max: 1, onnotice: () => {} });
  try {
    const total = rows.videos.length + rows.transcripts.length;
    const transcriptMb = rows.transcripts.reduce((n, t) => n + Buffer.byteLength(t.chunks ?? t.text), 0) / 1e6;
    const methods: CeilingMethod[] = [];
    for (const [method, write] of Object.entries(METHODS)) {
      if (opts.copyOnly === true && method !== COPY_METHOD) continue;
      await sql`truncate videos, transcripts`;
      const t0 = performance.now();
      await sql.begin((tx) => write(tx, rows));
      const i0 = performance.now();
      await buildSearchIndex(sql);
      const wallS = (performance.now() - t0) / 1000;
      const indexS = (performance.now() - i0) / 1000;
      const [check] = await sql<{ v: number; t: number }[]>`
        select (select count(*)::int from videos) as v, (select count(*)::int from transcripts) as t`;
      if (check!.v !== rows.videos.length || check!.t !== rows.transcripts.length) {
        throw new Error(
          `ceiling (${method}): wrote ${check!.v}/${check!.t} rows, expected ${rows.videos.length}/${rows.transcripts.length}`,
        );
      }
      methods.push({
        method,
        wallS: round(wallS),
        rowsPerS: round(total / wallS),
        transcriptMbPerS: round(transcriptMb / wallS),
        indexS: round(indexS),
      });
    }
    const copy = methods.find((m) => m.method === COPY_METHOD)!;
    // what is stored is the last method's: cut every transcript's passages again from nothing
    if (opts.copyOnly !== true) {
      await sql`delete from passages`;
      await sql`insert into search_index_queue (video_id, lang) select video_id, lang from transcripts on conflict do nothing`;
    }
    const p0 = performance.now();
    let cut = 0;
    let indexed = 0;
    while (opts.copyOnly !== true) {
      const r = await indexQueuedTranscripts(sql, SEARCH_INDEX_CHUNK, loadConfig().pipeline.passages);
      if (r.transcripts === 0) break;
      cut += r.passagesCut;
      indexed += r.transcripts;
    }
    const passagesS = (performance.now() - p0) / 1000;
    // cascade: tables that reference batches (the per-batch item counters) are emptied with it
    await sql`truncate videos, transcripts, batch_items, batches cascade`;
    const t0 = performance.now();
    await sql.begin((tx) => designFloor(tx, rows));
    const i0 = performance.now();
    await buildSearchIndex(sql);
    const floorS = (performance.now() - t0) / 1000;
    const floorIndexS = (performance.now() - i0) / 1000;
    return {
      rows: { videos: rows.videos.length, transcripts: rows.transcripts.length, total },
      transcriptMb: round(transcriptMb),
      methods,
      copy,
      designFloor: {
        method:
          "design floor: land raw + upsert in one transaction, chunks from the landed copy (the poller's chunk sizes)",
        wallS: round(floorS),
        rowsPerS: round(total / floorS),
        transcriptMbPerS: round(transcriptMb / floorS),
        indexS: round(floorIndexS),
      },
      passages: { transcripts: indexed, cut, wallS: round(passagesS), passagesPerS: round(cut / passagesS) },
    };
  } finally {
    await sql.end({ timeout: 5 });
  }
}
