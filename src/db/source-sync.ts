/**
 * What a source's sync reads and records about the source itself: the outcome on its `sources`
 * row, and which of its kinds and languages still have a batch in flight.
 */
import { BATCH_IN_FLIGHT_STATUSES, type BatchKind } from '../domain/batches.ts';
import type { Queryable } from './connection.ts';

/** The sync got through: `last_synced_at` moves and the source's error is cleared. */
export async function markSourceSynced(sql: Queryable, sourceId: number): Promise<void> {
  await sql`
    update sources set last_synced_at = now(), last_error = null, last_error_code = null, updated_at = now()
    where id = ${sourceId}`;
}

/** The source's error as `status` shows it: `code` is an API error code, `credits` or `answer-lost`. */
export async function markSourceError(
  sql: Queryable,
  sourceId: number,
  code: string,
  message: string | null,
  at: Date | null = null,
): Promise<void> {
  await sql`
    update sources set last_error = ${message}, last_error_code = ${code}, last_error_at = coalesce(${at}, now())
    where id = ${sourceId}`;
}

/** The kinds and languages of this source's batches still in flight. */
export async function inFlightBatchKeys(
  sql: Queryable,
  sourceId: number,
): Promise<{ kind: BatchKind; lang: string | null }[]> {
  return sql<{ kind: BatchKind; lang: string | null }[]>`
    select distinct kind, lang from batches
    where source_id = ${sourceId} and mode = 'batch' and status = any(${BATCH_IN_FLIGHT_STATUSES as unknown as string[]}::text[])`;
}
