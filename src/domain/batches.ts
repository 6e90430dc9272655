/**
 * Batch states and how an upstream answer's head maps onto them. Defined once; queries, the
 * schema's checks and partial indexes, reconcile and status all use these lists.
 *
 * The upstream evolves: a head whose status this interface version does not list is recorded as
 * received (`batches.upstream_status`) and the batch stays in flight, polled with backoff, until
 * it reports a known terminal status or grows older than `BATCH_MAX_AGE_MS`.
 */
import { z } from 'zod';

/** `page`: a crawl's or a sync's scrapes' web pages (src/domain/pages.ts); `media`: media items of a media list, keyed by URL (src/domain/media.ts) */
export const BATCH_KINDS = ['video', 'transcript', 'page', 'media'] as const;
export type BatchKind = (typeof BATCH_KINDS)[number];

export const BATCH_STATUSES = ['submitted', 'queued', 'active', 'completed', 'failed', 'expired'] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];
/** Statuses of a batch still in flight (polled; at most one per source, kind and lang). */
export const BATCH_IN_FLIGHT_STATUSES = ['submitted', 'queued', 'active'] as const satisfies readonly BatchStatus[];
export const BATCH_TERMINAL_STATUSES = ['completed', 'failed', 'expired'] as const satisfies readonly BatchStatus[];

export function isTerminalStatus(status: BatchStatus): boolean {
  return (BATCH_TERMINAL_STATUSES as readonly BatchStatus[]).includes(status);
}

/** Why a batch ended without the upstream saying so (`batches.error_code`). */
export const LOCAL_BATCH_END_CODES = {
  /** 404 `not-found` confirmed over BATCH_NOT_FOUND_CONFIRM_MS: the API no longer knows the job */
  notFound: 'not-found',
  /** in flight longer than BATCH_MAX_AGE_MS */
  maxAge: 'max-age',
  /** polling failed for a reason retrying cannot fix (the reason is in `batches.reason`) */
  pollFailed: 'poll-failed',
  /**
   * a transcript job answered 404 `not-found`, confirmed over BATCH_NOT_FOUND_CONFIRM_MS: the API
   * gave its job ID, and keeps a job's result 1 hour after the job ends, then forgets it; this
   * one's result was not read within its hour
   */
  resultExpired: 'result-expired',
} as const;

/**
 * The head of a batch answer, read liberally: any status string, any errorCode, unknown fields
 * ignored, stats optional. Only the values we act on are typed.
 */
export const LiberalBatchHeadSchema = z.object({
  status: z.string(),
  errorCode: z.string().nullable().optional(),
  stats: z.object({ total: z.number(), succeeded: z.number(), failed: z.number() }).partial().nullable().optional(),
  completedAt: z.string().nullable().optional(),
});
export type LiberalBatchHead = z.infer<typeof LiberalBatchHeadSchema>;

export interface HeadReading {
  /** what `batches.status` becomes; null: unchanged (an unknown status keeps the batch in flight) */
  status: BatchStatus | null;
  /** the status as received, when this interface version does not list it */
  unknownStatus: string | null;
  terminal: boolean;
}

const UPSTREAM_STATUSES: Readonly<Record<string, BatchStatus>> = {
  queued: 'queued',
  active: 'active',
  completed: 'completed',
  failed: 'failed',
};

/** What a head says about the batch. `job-expired` wins over any status. */
export function readHead(head: LiberalBatchHead): HeadReading {
  if (head.errorCode === 'job-expired') return { status: 'expired', unknownStatus: null, terminal: true };
  const status = UPSTREAM_STATUSES[head.status];
  if (status === undefined) return { status: null, unknownStatus: head.status, terminal: false };
  return { status, unknownStatus: null, terminal: isTerminalStatus(status) };
}

/** A timestamp from the head that Postgres can store, else null (a bad date never blocks a poll). */
export function storableDate(value: string | null | undefined): Date | null {
  if (typeof value !== 'string') return null;
  const d = new Date(value);
  const t = d.getTime();
  // timestamptz holds 4713 BC .. 294276 AD; stay well inside with years 1..9999
  if (!Number.isFinite(t) || d.getUTCFullYear() < 1 || d.getUTCFullYear() > 9999) return null;
  return d;
}
