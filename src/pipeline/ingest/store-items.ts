/**
 * Storing delivered items where they are parsed: one transaction lands a chunk of items raw in
 * `batch_items` and writes their `videos` / `transcripts` rows, recording them `sunk` at once, with
 * the per-video summary (`video_sync`) and source membership. The poller (a chunk of a batch
 * answer) and the transcript-job poll (its one item) store through here; nothing reads the raw
 * copy back. What Postgres rejects (the raw copy or the row) is isolated, never blocking its
 * neighbours, and lands quarantined with Postgres's words.
 *
 * Idempotent by the data: an item lands only while its row is unfinished (`processing` or
 * absent), and only the items this statement landed get their row written, so a chunk landed
 * again (a repeated poll, a stalled job run twice) writes nothing; the upserts write only what
 * changed, and a transcript's content hash decides whether it changed.
 */
import type { BatchItem } from '../../api/schemas.ts';
import type { Queryable } from '../../db/connection.ts';
import { writeIsolating, type Transaction } from '../../db/isolate.ts';
import {
  landRecords,
  setAsideRecord,
  toLandRecord,
  type LandItem,
  type LandRecord,
  type LandResult,
} from '../../db/items.ts';
import { addSourceVideos } from '../../db/source-videos.ts';
import { recordOutcomes } from '../../db/video-sync.ts';
import { markGone } from '../../db/videos.ts';
import type { BatchKind } from '../../domain/batches.ts';
import { isGoneCode } from '../../domain/items.ts';
import type { PipelineDeps } from '../deps.ts';
import {
  addRowCounts,
  itemRow,
  noRowCounts,
  upsertItemRows,
  type ItemRow,
  type RowBatch,
  type RowCounts,
} from './item-rows.ts';

/** An item ready to store: its record, and the row to write when it was delivered. */
export interface PreparedItem {
  record: LandRecord;
  row?: ItemRow;
}

/** The batch the items belong to. */
export interface StoreBatch {
  jobId: string;
  kind: BatchKind;
  lang: string | null;
  sourceId: number | null;
}

/**
 * The item cut to what its transaction writes, so that nothing parsed is kept while a chunk
 * fills up: the record holds the received text, the row the columns (a transcript's chunks are
 * copied by Postgres from the landed payload). A delivered item its row cannot be built from (a
 * value Postgres cannot hold, no result) lands quarantined with the reason instead.
 *
 * @param validated `BatchItemSchema`'s parse of the item, when the caller classified it with it
 */
export function prepareItem(batch: RowBatch, item: LandItem, validated?: BatchItem): PreparedItem {
  const record = toLandRecord(item);
  if (record.state !== 'landed') return { record };
  const outcome = itemRow(batch, record.videoId, item.payload, { validated, payloadLanded: record.json !== null });
  if (outcome.table === null)
    return { record: { ...record, state: 'quarantined', reason: outcome.reason, reasonCode: outcome.reasonCode } };
  return { record: { ...record, state: 'sunk' }, row: outcome };
}

/** `items` in one transaction of their own; the rows are counted in the metrics once it committed. */
export async function storeChunk(
  deps: Pick<PipelineDeps, 'sql' | 'settings' | 'metrics'>,
  batch: StoreBatch,
  items: readonly PreparedItem[],
): Promise<LandResult['rows']> {
  const stored = await deps.sql.begin((tx) => storePrepared(tx, batch, items, deps.settings));
  reportRows(deps, stored.counts);
  return stored.rows;
}

/**
 * `items` in the caller's transaction, each part in a savepoint: a part Postgres rejects is
 * bisected down to the items it refuses, which land again as quarantined (their text in
 * payload_raw). Returns the item rows that changed (with their state) and the rows written.
 */
export async function storePrepared(
  tx: Transaction,
  batch: StoreBatch,
  items: readonly PreparedItem[],
  settings: Pick<PipelineDeps['settings'], 'transcriptRecheckMs' | 'landChunkSize'>,
): Promise<{ rows: LandResult['rows']; counts: RowCounts }> {
  const counts = noRowCounts();
  const { results, rejected } = await writeIsolating(tx, items, (sp, part) => storeItems(sp, batch, part, settings));
  const rows = results.flatMap((r) => r.rows);
  for (const r of results) addRowCounts(counts, r.counts);
  if (rejected.length > 0) {
    const setAside = rejected.map(({ item, message }) => ({ record: setAsideRecord(item.record, message) }));
    rows.push(...(await storeItems(tx, batch, setAside, settings)).rows);
  }
  return { rows, counts };
}

/**
 * Land items (only unfinished rows change), write the rows of those that landed `sunk` now, then
 * the per-video summary, stored videos reported gone, and source membership.
 */
async function storeItems(
  tx: Queryable,
  batch: StoreBatch,
  items: readonly PreparedItem[],
  settings: Pick<PipelineDeps['settings'], 'transcriptRecheckMs' | 'landChunkSize'>,
): Promise<{ rows: LandResult['rows']; counts: RowCounts }> {
  const { rows } = await landRecords(
    tx,
    batch.jobId,
    items.map((p) => p.record),
    settings.landChunkSize,
  );
  // only what this statement landed: an item landed before (another poll, an older version) is
  // the sink's, and a row is only ever written from the landed copy of its item
  const sunk = new Set(rows.filter((r) => r.state === 'sunk').map((r) => r.videoId));
  const counts = await upsertItemRows(
    tx,
    items.flatMap((p) => (p.row && sunk.has(p.record.videoId) ? [p.row] : [])),
  );
  // a repeated copy (`id#n`) or a key kept in its JSON form is not the video itself
  const videos = rows.filter((r) => !r.videoId.includes('#') && !r.videoId.startsWith('"'));
  // the language each stored transcript came in (the interface falls back to another one)
  const langOf = new Map(
    items.flatMap((p) => (p.row?.table === 'transcripts' ? [[p.record.videoId, p.row.row.lang] as const] : [])),
  );
  const outcomes = videos.map((r) =>
    r.state === 'sunk' && langOf.has(r.videoId) ? { ...r, deliveredLang: langOf.get(r.videoId) } : r,
  );
  await recordOutcomes(
    tx,
    { jobId: batch.jobId, kind: batch.kind, lang: batch.lang },
    outcomes,
    settings.transcriptRecheckMs,
  );
  // a stored video a batch now reports not-found or forbidden keeps its rows, marked gone
  await markGone(
    tx,
    batch.jobId,
    videos.flatMap((r) =>
      r.state === 'failed' && isGoneCode(r.errorCode) ? [{ videoId: r.videoId, reason: r.errorCode }] : [],
    ),
  );
  if (batch.sourceId !== null)
    await addSourceVideos(
      tx,
      batch.sourceId,
      videos.map((r) => r.videoId),
    );
  return { rows, counts };
}

/** Rows written by a committed transaction, for the daemon's counters. */
export function reportRows(deps: Pick<PipelineDeps, 'metrics'>, counts: RowCounts): void {
  for (const table of ['videos', 'transcripts'] as const) {
    const c = counts[table];
    if (c.inserted + c.updated + c.unchanged > 0) deps.metrics?.rowsUpserted(table, c);
  }
}
