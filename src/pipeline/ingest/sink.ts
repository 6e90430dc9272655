/**
 * The sink: items of one batch left `landed` into `videos` / `transcripts`, a chunk per
 * transaction and one statement per table per chunk. The poller writes the items it parses in
 * the transaction that lands them, so the sink has work only for recovery and replay: items
 * landed by `replay --batch` (sunk items reopened) or `replay --quarantined`, a transcript
 * generated at once (src/pipeline/ingest/generate.ts), or items an older version landed. Chunks are
 * claimed with `FOR UPDATE SKIP LOCKED`, so several sink workers share a batch without writing a
 * row twice, and a worker killed mid-chunk leaves its items landed for the next one. Re-running
 * it changes nothing (upserts write only what changed).
 */
import { batchModeOf } from '../../db/batches.ts';
import { sinkPages } from './crawl.ts';
import { sinkMedia } from './sync-media.ts';
import { writeIsolating } from '../../db/isolate.ts';
import { markQuarantined, markSunk, nextLandedChunk } from '../../db/items.ts';
import { markSinkOutcome } from '../../db/video-sync.ts';
import type { QuarantineReason } from '../../domain/items.ts';
import { addRowCounts, itemRow, noRowCounts, upsertItemRows, type ItemRow, type RowCounts } from './item-rows.ts';
import type { PipelineDeps } from '../deps.ts';
import { reportRows } from './store-items.ts';

export interface SinkResult {
  jobId: string;
  /** items moved landed → sunk */
  sunk: number;
  /** items the sink could not write (kept raw, with the reason) */
  quarantined: number;
  inserted: number;
  updated: number;
  unchanged: number;
  /** true when `signal` stopped it between chunks: items are left landed for the next run */
  interrupted?: boolean;
}

export async function sinkBatch(
  deps: Pick<PipelineDeps, 'sql' | 'log' | 'settings' | 'metrics'>,
  jobId: string,
  opts: { signal?: AbortSignal } = {},
): Promise<SinkResult> {
  const { sql, log, settings } = deps;
  const result: SinkResult = { jobId, sunk: 0, quarantined: 0, inserted: 0, updated: 0, unchanged: 0 };
  const batch = await batchModeOf(sql, jobId);
  if (!batch) return result;
  if (batch.mode === 'crawl' || batch.mode === 'scrape') {
    const pages = await sinkPages(deps, { jobId, sourceId: batch.sourceId }, opts.signal);
    const { interrupted, ...counts } = pages;
    return { ...result, ...counts, ...(interrupted ? { interrupted: true } : {}) };
  }
  if (batch.kind === 'media') {
    // media are stored where they land; a replay's landed items are stored again from raw here
    const media = await sinkMedia(deps, { jobId, sourceId: batch.sourceId, mode: batch.mode });
    return { ...result, ...media };
  }
  const rowBatch = { jobId, kind: batch.kind, mode: batch.mode };

  for (;;) {
    // a shutdown stops between chunks: each chunk is one transaction, so nothing is half-written
    if (opts.signal?.aborted) {
      result.interrupted = true;
      break;
    }
    let chunkCounts: RowCounts | undefined;
    const claimed = await sql.begin(async (tx) => {
      const items = await nextLandedChunk(tx, jobId, settings.sinkChunkSize, { lock: true });
      if (items.length === 0) return 0;

      const rows: { videoId: string; row: ItemRow }[] = [];
      const bad: { videoId: string; reason: string; reasonCode: QuarantineReason }[] = [];
      for (const it of items) {
        // a payload read from the jsonb column: the transcript chunks are copied from there
        const outcome = itemRow(rowBatch, it.videoId, it.payload, {
          payloadLanded: it.payload !== undefined && it.payloadRaw === null,
        });
        if (outcome.table === null)
          bad.push({ videoId: it.videoId, reason: outcome.reason, reasonCode: outcome.reasonCode });
        else rows.push({ videoId: it.videoId, row: outcome });
      }
      // One value Postgres rejects despite the checks above must not hold back the chunk (nor,
      // failing forever, every later chunk of the batch): it is isolated and set aside.
      const counts = noRowCounts();
      const isolated = await writeIsolating(tx, rows, async (sp, part) => {
        const ids = part.map((r) => r.videoId);
        addRowCounts(
          counts,
          await upsertItemRows(
            sp,
            part.map((r) => r.row),
          ),
        );
        result.sunk += await markSunk(sp, jobId, ids);
        await markSinkOutcome(
          sp,
          jobId,
          ids,
          'sunk',
          part.map((r) => (r.row.table === 'transcripts' ? r.row.row.lang : null)),
        );
      });
      for (const r of isolated.rejected) {
        bad.push({
          videoId: r.item.videoId,
          reason: `Postgres cannot store it: ${r.message}`,
          reasonCode: 'unstorable',
        });
      }
      chunkCounts = counts;
      const table = batch.kind === 'video' ? 'videos' : 'transcripts';
      result.inserted += counts[table].inserted;
      result.updated += counts[table].updated;
      result.unchanged += counts[table].unchanged;
      result.quarantined += await markQuarantined(tx, jobId, bad);
      // set aside for a person: never re-submitted automatically
      await markSinkOutcome(
        tx,
        jobId,
        bad.map((b) => b.videoId),
        'quarantined',
      );
      return items.length;
    });
    // reported only now that the chunk has committed (a rolled-back chunk wrote nothing)
    if (chunkCounts) reportRows(deps, chunkCounts);
    if (claimed === 0) break;
  }
  if (result.sunk > 0 || result.quarantined > 0) {
    log.info({ event: 'sink.done', ...result }, 'batch sunk');
  }
  if (result.quarantined > 0) {
    log.warn(
      { event: 'sink.quarantined', jobId, quarantined: result.quarantined },
      'items quarantined by the sink (kept raw with the reason)',
    );
  }
  return result;
}
