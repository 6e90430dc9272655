/**
 * The sink: landed items of one batch into `videos` / `transcripts`, a chunk per transaction and
 * one statement per table per chunk. Chunks are claimed with `FOR UPDATE SKIP LOCKED`, so several
 * sink workers share a batch without writing a row twice, and a worker killed mid-chunk leaves its
 * items landed for the next one. Re-running it changes nothing (upserts write only what changed).
 *
 * An item of a transcript job (mode `generate`) holds the job's result as received (or the
 * Transcript of a synchronous answer), not a batch item: it becomes a transcript of origin
 * `generated`, built exactly as a batch's transcript is.
 */
import { BatchItemSchema, formatIssuePath, type Transcript } from '../api/schemas.ts';
import { batchModeOf } from '../db/batches.ts';
import type { Queryable } from '../db/connection.ts';
import { writeIsolating } from '../db/isolate.ts';
import { markQuarantined, markSunk, nextLandedChunk } from '../db/items.ts';
import { markSinkOutcome } from '../db/video-sync.ts';
import type { QuarantineReason } from '../domain/items.ts';
import { UnstorableValueError } from '../db/storable.ts';
import { DeliveredTranscriptSchema, transcriptRowFromApi, upsertTranscripts, type DeliveredTranscript, type TranscriptRow } from '../db/transcripts.ts';
import { upsertVideos, videoRowFromApi, type UpsertCounts, type VideoRow } from '../db/videos.ts';
import type { PipelineDeps } from './deps.ts';

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
  const generated = batch.mode === 'generate';

  for (;;) {
    // a shutdown stops between chunks: each chunk is one transaction, so nothing is half-written
    if (opts.signal?.aborted) {
      result.interrupted = true;
      break;
    }
    let chunkCounts: UpsertCounts | undefined;
    const claimed = await sql.begin(async (tx) => {
      const items = await nextLandedChunk(tx, jobId, settings.sinkChunkSize, { lock: true });
      if (items.length === 0) return 0;

      const videoRows: VideoRow[] = [];
      const transcriptRows: TranscriptRow[] = [];
      const bad: { videoId: string; reason: string; reasonCode: QuarantineReason }[] = [];
      for (const it of items) {
        try {
          const raw = it.payload;
          if (generated) {
            const delivered = DeliveredTranscriptSchema.safeParse(raw);
            if (!delivered.success) {
              const issue = delivered.error.issues[0];
              bad.push({
                videoId: it.videoId,
                reason: `transcript job result does not hold a transcript at ${issue ? formatIssuePath(issue.path) : '(root)'}: ${issue?.message ?? 'invalid'}`,
                reasonCode: 'schema',
              });
              continue;
            }
            // the fields as received (zod drops keys of chunks the interface does not name)
            const r = raw as DeliveredTranscript;
            transcriptRows.push(
              transcriptRowFromApi(it.videoId, { content: r.content, lang: r.lang, availableLangs: r.availableLangs }, jobId, 'generated'),
            );
            continue;
          }
          const parsed = BatchItemSchema.safeParse(raw);
          if (!parsed.success) {
            const issue = parsed.error.issues[0];
            bad.push({
              videoId: it.videoId,
              reason: `item does not match the interface at ${issue ? formatIssuePath(issue.path) : '(root)'}: ${issue?.message ?? 'invalid'}`,
              reasonCode: 'schema',
            });
            continue;
          }
          if (batch.kind === 'video') {
            if (!parsed.data.video) throw new UnstorableValueError('video', 'landed without video metadata');
            videoRows.push(videoRowFromApi(parsed.data.video, jobId));
          } else {
            if (!parsed.data.transcript) throw new UnstorableValueError('transcript', 'landed without a transcript');
            // validated above; the raw transcript keeps the chunks exactly as delivered (zod
            // would drop keys the interface does not name)
            const rawTranscript = (raw as { transcript: Transcript }).transcript;
            transcriptRows.push(transcriptRowFromApi(it.videoId, rawTranscript, jobId));
          }
        } catch (e: unknown) {
          if (e instanceof UnstorableValueError) {
            bad.push({ videoId: it.videoId, reason: e.message, reasonCode: 'unstorable' });
            continue;
          }
          throw e;
        }
      }
      // One value Postgres rejects despite the checks above must not hold back the chunk (nor,
      // failing forever, every later chunk of the batch): it is isolated and set aside.
      const counts: UpsertCounts = { inserted: 0, updated: 0, unchanged: 0 };
      const write = async (sp: Queryable, ids: string[], upsert: () => Promise<UpsertCounts>) => {
        const c = await upsert();
        counts.inserted += c.inserted;
        counts.updated += c.updated;
        counts.unchanged += c.unchanged;
        result.sunk += await markSunk(sp, jobId, ids);
        await markSinkOutcome(sp, jobId, ids, 'sunk');
      };
      const isolated =
        batch.kind === 'video'
          ? await writeIsolating(tx, videoRows, (sp, rows) => write(sp, rows.map((r) => r.id), () => upsertVideos(sp, rows)))
          : await writeIsolating(tx, transcriptRows, (sp, rows) => write(sp, rows.map((r) => r.videoId), () => upsertTranscripts(sp, rows)));
      for (const r of isolated.rejected) {
        const videoId = 'id' in r.item ? r.item.id : r.item.videoId;
        bad.push({ videoId, reason: `Postgres cannot store it: ${r.message}`, reasonCode: 'unstorable' });
      }
      chunkCounts = counts;
      result.inserted += counts.inserted;
      result.updated += counts.updated;
      result.unchanged += counts.unchanged;
      result.quarantined += await markQuarantined(tx, jobId, bad);
      // set aside for a person: never re-submitted automatically
      await markSinkOutcome(tx, jobId, bad.map((b) => b.videoId), 'quarantined');
      return items.length;
    });
    // reported only now that the chunk has committed (a rolled-back chunk wrote nothing)
    if (chunkCounts) deps.metrics?.rowsUpserted(batch.kind === 'video' ? 'videos' : 'transcripts', chunkCounts);
    if (claimed === 0) break;
  }
  if (result.sunk > 0 || result.quarantined > 0) {
    log.info({ event: 'sink.done', ...result }, 'batch sunk');
  }
  if (result.quarantined > 0) {
    log.warn({ event: 'sink.quarantined', jobId, quarantined: result.quarantined }, 'items quarantined by the sink (kept raw with the reason)');
  }
  return result;
}
