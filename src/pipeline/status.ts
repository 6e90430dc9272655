/**
 * The facts `status` shows: sources and their freshness, batches in flight with progress, item
 * error counts, and credits. Read-only; one query per section.
 */
import type { Queryable } from '../db/connection.ts';
import { activeHolds, describeHold, recentHoldEvents } from '../db/upstream-holds.ts';
import { quarantineCounts } from '../db/quarantine.ts';
import { lostSubmissions } from '../db/submissions.ts';
import { batchProgress, type BatchProgress } from './backfill.ts';
import { BATCH_IN_FLIGHT_STATUSES, BATCH_TERMINAL_STATUSES } from '../domain/batches.ts';

/** `BATCH_IN_FLIGHT_STATUSES` as a query parameter. */
const IN_FLIGHT = BATCH_IN_FLIGHT_STATUSES as unknown as string[];
/** `BATCH_TERMINAL_STATUSES` as a query parameter. */
const TERMINAL = BATCH_TERMINAL_STATUSES as unknown as string[];

export interface SourceStatus {
  id: number;
  kind: string;
  ref: string;
  externalId: string;
  title: string | null;
  paused: boolean;
  cron: string | null;
  maxVideos: number;
  langs: string[];
  lastSyncedAt: string | null;
  videos: number;
  transcripts: number;
  lastError: string | null;
  lastErrorCode: string | null;
  lastErrorAt: string | null;
}

export interface StatusReport {
  generatedAt: string;
  /** account-level refusals (key, plan, credits): scheduled work makes no API call while one stands */
  upstreamHolds: { code: string; scope: string; reason: string; since: string; message: string }[];
  /** the latest holds set and lifted, newest first (a hold a daemon lifted by itself shows here) */
  holdEvents: { code: string; event: string; reason: string | null; at: string }[];
  /** batch POSTs whose answer was lost after the account was charged: not re-submitted until `replay --lost` */
  lostSubmissions: { id: number; sourceId: number | null; kind: string; lang: string | null; creditsEstimated: number; at: string; detail: string | null }[];
  sources: SourceStatus[];
  inFlight: BatchProgress[];
  /** batches that ended in the last 24 hours */
  recent: BatchProgress[];
  batchesByStatus: Record<string, number>;
  /** item error codes over all batches, with the item states they left */
  itemErrors: { errorCode: string; state: string; items: number }[];
  items: { landed: number; sunk: number; failed: number; retryable: number; retryablePending: number; quarantined: number; processing: number };
  /**
   * quarantined items (kept raw, never re-submitted automatically) by `reason_code`: every
   * QUARANTINE_REASONS code, zeros included, and 'unknown' for rows without one
   */
  quarantined: { total: number; byReason: Record<string, number> };
  credits: {
    plan: string | null;
    organizationId: string | null;
    maxCredits: number | null;
    usedCredits: number | null;
    remaining: number | null;
    takenAt: string | null;
    /** estimated cost of every batch recorded */
    estimatedAllTime: number;
    /** used credits when the first snapshot of the last 24 h was taken, for a daily rate */
    usedLast24h: number | null;
  };
}

const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);

/** Hold events `status` shows. */
export const STATUS_HOLD_EVENTS = 5;

export async function collectStatus(sql: Queryable): Promise<StatusReport> {
  const sources = await sql<
    {
      id: number; kind: string; ref: string; external_id: string; title: string | null; paused: boolean;
      cron: string | null; max_videos: number; langs: string[]; last_synced_at: Date | null;
      videos: number; transcripts: number; last_error: string | null; last_error_code: string | null; last_error_at: Date | null;
    }[]
  >`
    select s.id, s.kind, s.ref, s.external_id, s.title, s.paused, s.cron, s.max_videos, s.langs,
      s.last_synced_at, s.last_error, s.last_error_code, s.last_error_at,
      (select count(*) from source_videos sv join videos v on v.id = sv.video_id where sv.source_id = s.id)::int as videos,
      (select count(*) from source_videos sv join transcripts t on t.video_id = sv.video_id where sv.source_id = s.id)::int as transcripts
    from sources s order by s.id`;

  const inFlightIds = await sql<{ job_id: string }[]>`
    select job_id from batches where status = any(${IN_FLIGHT}::text[]) order by submitted_at`;
  const recentIds = await sql<{ job_id: string }[]>`
    select job_id from batches
    where status = any(${TERMINAL}::text[]) and terminal_at > now() - interval '24 hours'
    order by terminal_at desc limit 50`;
  const inFlight = await batchProgress(sql, inFlightIds.map((r) => r.job_id));
  const recent = await batchProgress(sql, recentIds.map((r) => r.job_id));

  const byStatus = await sql<{ status: string; n: number }[]>`
    select status, count(*)::int as n from batches group by status`;

  const itemErrors = await sql<{ error_code: string; state: string; items: number }[]>`
    select error_code, state, count(*)::int as items from batch_items
    where error_code is not null group by error_code, state order by items desc, error_code`;

  const [items] = await sql<
    { landed: number; sunk: number; failed: number; retryable: number; retryable_pending: number; quarantined: number; processing: number }[]
  >`
    select
      count(*) filter (where state = 'landed')::int as landed,
      count(*) filter (where state = 'sunk')::int as sunk,
      count(*) filter (where state = 'failed')::int as failed,
      count(*) filter (where state = 'retryable')::int as retryable,
      count(*) filter (where state = 'retryable' and resubmitted_in is null)::int as retryable_pending,
      count(*) filter (where state = 'quarantined')::int as quarantined,
      count(*) filter (where state = 'processing')::int as processing
    from batch_items`;

  const [snap] = await sql<
    { plan: string | null; organization_id: string | null; max_credits: number | null; used_credits: number | null; taken_at: Date }[]
  >`select plan, organization_id, max_credits, used_credits, taken_at from credit_snapshots order by taken_at desc, id desc limit 1`;
  const [dayAgo] = await sql<{ used_credits: number | null }[]>`
    select used_credits from credit_snapshots where taken_at > now() - interval '24 hours' order by taken_at, id limit 1`;
  const [est] = await sql<{ total: number }[]>`select coalesce(sum(credits_estimated), 0)::bigint as total from batches`;
  const byReason = await quarantineCounts(sql);

  const holds = await activeHolds(sql);
  const holdEvents = await recentHoldEvents(sql, STATUS_HOLD_EVENTS);
  const lost = await lostSubmissions(sql);
  return {
    generatedAt: new Date().toISOString(),
    upstreamHolds: holds.map((h) => ({ code: h.code, scope: h.scope, reason: h.reason, since: h.since.toISOString(), message: describeHold(h) })),
    holdEvents: holdEvents.map((e) => ({ code: e.code, event: e.event, reason: e.reason, at: e.at.toISOString() })),
    lostSubmissions: lost.map((l) => ({
      id: l.id, sourceId: l.sourceId, kind: l.kind, lang: l.lang, creditsEstimated: l.creditsEstimated, at: l.createdAt.toISOString(), detail: l.detail,
    })),
    sources: sources.map((s) => ({
      id: s.id,
      kind: s.kind,
      ref: s.ref,
      externalId: s.external_id,
      title: s.title,
      paused: s.paused,
      cron: s.cron,
      maxVideos: s.max_videos,
      langs: s.langs,
      lastSyncedAt: iso(s.last_synced_at),
      videos: s.videos,
      transcripts: s.transcripts,
      lastError: s.last_error,
      lastErrorCode: s.last_error_code,
      lastErrorAt: iso(s.last_error_at),
    })),
    inFlight,
    recent,
    batchesByStatus: Object.fromEntries(byStatus.map((r) => [r.status, r.n])),
    itemErrors: itemErrors.map((r) => ({ errorCode: r.error_code, state: r.state, items: r.items })),
    items: {
      landed: items?.landed ?? 0,
      sunk: items?.sunk ?? 0,
      failed: items?.failed ?? 0,
      retryable: items?.retryable ?? 0,
      retryablePending: items?.retryable_pending ?? 0,
      quarantined: items?.quarantined ?? 0,
      processing: items?.processing ?? 0,
    },
    quarantined: { total: Object.values(byReason).reduce((n, c) => n + c, 0), byReason },
    credits: {
      plan: snap?.plan ?? null,
      organizationId: snap?.organization_id ?? null,
      maxCredits: snap?.max_credits ?? null,
      usedCredits: snap?.used_credits ?? null,
      remaining: snap && snap.max_credits !== null && snap.used_credits !== null ? snap.max_credits - snap.used_credits : null,
      takenAt: iso(snap?.taken_at),
      estimatedAllTime: est?.total ?? 0,
      // negative when a new billing period started in between: unknown then
      usedLast24h:
        snap && dayAgo && snap.used_credits !== null && dayAgo.used_credits !== null && snap.used_credits >= dayAgo.used_credits
          ? snap.used_credits - dayAgo.used_credits
          : null,
    },
  };
}
