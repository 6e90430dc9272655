/**
 * What a delivered item becomes in `videos` / `transcripts`: its row, or why it cannot be stored
 * (the item is then set aside, quarantined with that reason, never blocking its neighbours). One
 * definition for the two writers: the poller, which writes the items it has just parsed in the
 * transaction that lands them, and the sink, which writes items left `landed` (a replay, a
 * requalified quarantined item, items landed by an older version).
 *
 * An item of a transcript job (mode `generate`) holds the job's result as received (or the
 * Transcript of a synchronous answer), not a batch item: it becomes a transcript of origin
 * `generated`, built exactly as a batch's transcript is.
 */
import { firstIssue } from '../../api/issues.ts';
import { BatchItemSchema, type BatchItem, type Transcript } from '../../api/schemas.ts';
import type { Queryable } from '../../db/connection.ts';
import { UnstorableValueError } from '../../db/storable.ts';
import {
  DeliveredTranscriptSchema,
  transcriptRowFromApi,
  upsertTranscripts,
  type DeliveredTranscript,
  type TranscriptRow,
} from '../../db/transcripts.ts';
import { upsertVideos, videoRowFromApi, type UpsertCounts, type VideoRow } from '../../db/videos.ts';
import type { BatchKind } from '../../domain/batches.ts';
import type { QuarantineReason } from '../../domain/items.ts';
import type { BatchMode } from '../../domain/sources.ts';

export type ItemRow = { table: 'videos'; row: VideoRow } | { table: 'transcripts'; row: TranscriptRow };
export type ItemRowOutcome = ItemRow | { table: null; reason: string; reasonCode: QuarantineReason };

export interface RowBatch {
  jobId: string;
  kind: BatchKind;
  mode: BatchMode;
}

/** Where a transcript's content sits in the raw item, per batch mode. */
const CONTENT_PATH: Record<BatchMode, readonly string[]> = {
  batch: ['transcript', 'content'],
  generate: ['content'],
  // pages are stored by src/pipeline/ingest/crawl.ts, never through these rows
  crawl: [],
  scrape: [],
  // media are stored by src/db/media.ts, never through these rows
  media: [],
};

/**
 * The row of one delivered item.
 *
 * @param raw the item as received (parsed, not stripped: chunks keep every field the API sent)
 * @param opts.validated `BatchItemSchema`'s parse of `raw`, when the caller has it already
 * @param opts.payloadLanded whether `raw` is the jsonb `payload` of its `batch_items` row, written
 *   in the caller's transaction before the row: transcript chunks are then copied from there by
 *   Postgres instead of being sent again
 */
export function itemRow(
  batch: RowBatch,
  videoId: string,
  raw: unknown,
  opts: { validated?: BatchItem | undefined; payloadLanded: boolean },
): ItemRowOutcome {
  const landed = opts.payloadLanded ? { path: CONTENT_PATH[batch.mode] } : undefined;
  try {
    if (batch.mode === 'generate') {
      const delivered = DeliveredTranscriptSchema.safeParse(raw);
      if (!delivered.success) {
        return {
          table: null,
          reason: `transcript job result does not hold a transcript at ${firstIssue(delivered.error)}`,
          reasonCode: 'schema',
        };
      }
      // the fields as received (zod drops keys of chunks the interface does not name)
      const r = raw as DeliveredTranscript;
      return {
        table: 'transcripts',
        row: transcriptRowFromApi(
          videoId,
          { content: r.content, lang: r.lang, availableLangs: r.availableLangs },
          batch.jobId,
          'generated',
          landed,
        ),
      };
    }
    let item = opts.validated;
    if (item === undefined) {
      const parsed = BatchItemSchema.safeParse(raw);
      if (!parsed.success) {
        return {
          table: null,
          reason: `item does not match the interface at ${firstIssue(parsed.error)}`,
          reasonCode: 'schema',
        };
      }
      item = parsed.data;
    }
    if (batch.kind === 'video') {
      if (!item.video) throw new UnstorableValueError('video', 'landed without video metadata');
      return { table: 'videos', row: videoRowFromApi(item.video, batch.jobId) };
    }
    if (!item.transcript) throw new UnstorableValueError('transcript', 'landed without a transcript');
    // validated above; the raw transcript keeps the chunks exactly as delivered (zod would drop
    // keys the interface does not name)
    return {
      table: 'transcripts',
      row: transcriptRowFromApi(
        videoId,
        (raw as { transcript: Transcript }).transcript,
        batch.jobId,
        'captions',
        landed,
      ),
    };
  } catch (e: unknown) {
    if (e instanceof UnstorableValueError) return { table: null, reason: e.message, reasonCode: 'unstorable' };
    throw e;
  }
}

export interface RowCounts {
  videos: UpsertCounts;
  transcripts: UpsertCounts;
}

const none = (): UpsertCounts => ({ inserted: 0, updated: 0, unchanged: 0 });

export function noRowCounts(): RowCounts {
  return { videos: none(), transcripts: none() };
}

export function addRowCounts(into: RowCounts, more: RowCounts): void {
  for (const table of ['videos', 'transcripts'] as const) {
    into[table].inserted += more[table].inserted;
    into[table].updated += more[table].updated;
    into[table].unchanged += more[table].unchanged;
  }
}

/** Upsert the rows, one statement per table (a batch has rows of one table only). */
export async function upsertItemRows(sql: Queryable, rows: readonly ItemRow[]): Promise<RowCounts> {
  const videos: VideoRow[] = [];
  const transcripts: TranscriptRow[] = [];
  for (const r of rows) {
    if (r.table === 'videos') videos.push(r.row);
    else transcripts.push(r.row);
  }
  return {
    videos: videos.length > 0 ? await upsertVideos(sql, videos) : none(),
    transcripts: transcripts.length > 0 ? await upsertTranscripts(sql, transcripts) : none(),
  };
}
