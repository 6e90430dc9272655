/**
 * The facts `status` shows: sources and their freshness, batches in flight with progress, item
 * error counts, and credits. Read-only; one query per section.
 */
import { batchProgress, type BatchProgress } from '../db/batch-progress.ts';
import { batchCountsByStatus, creditsEstimatedTotal, inFlightJobIds, recentlyEndedJobIds } from '../db/batches.ts';
import type { Queryable } from '../db/connection.ts';
import { firstCreditSnapshotWithin, latestCreditSnapshot } from '../db/credit-snapshots.ts';
import { itemCounts, itemErrorCounts } from '../db/items.ts';
import { quarantineCounts } from '../db/quarantine.ts';
import { sourcesWithCounts, type SourceWithCounts } from '../db/sources.ts';
import { lostSubmissions } from '../db/submissions.ts';
import { activeHolds, describeHold, recentHoldEvents } from '../db/upstream-holds.ts';

/** A source as `status` shows it (times as ISO 8601). */
export type SourceStatus = Omit<SourceWithCounts, 'lastSyncedAt' | 'lastErrorAt'> & {
  lastSyncedAt: string | null;
  lastErrorAt: string | null;
};

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
const DAY_MS = 24 * 3_600_000;
/** How far back `recent` reaches, ms. */
const STATUS_RECENT_MS = DAY_MS;
/** Recently ended batches listed at most. */
const STATUS_RECENT_BATCHES = 50;

export async function collectStatus(sql: Queryable): Promise<StatusReport> {
  const sources = await sourcesWithCounts(sql);
  const inFlight = await batchProgress(sql, await inFlightJobIds(sql));
  const recent = await batchProgress(sql, await recentlyEndedJobIds(sql, STATUS_RECENT_MS, STATUS_RECENT_BATCHES));
  const byStatus = await batchCountsByStatus(sql);
  const itemErrors = await itemErrorCounts(sql);
  const items = await itemCounts(sql);
  const snap = await latestCreditSnapshot(sql);
  const dayAgo = await firstCreditSnapshotWithin(sql, DAY_MS);
  const estimatedAllTime = await creditsEstimatedTotal(sql);
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
      externalId: s.externalId,
      title: s.title,
      paused: s.paused,
      cron: s.cron,
      maxVideos: s.maxVideos,
      langs: s.langs,
      lastSyncedAt: iso(s.lastSyncedAt),
      videos: s.videos,
      transcripts: s.transcripts,
      lastError: s.lastError,
      lastErrorCode: s.lastErrorCode,
      lastErrorAt: iso(s.lastErrorAt),
    })),
    inFlight,
    recent,
    batchesByStatus: byStatus,
    itemErrors,
    items: {
      landed: items.byState.landed,
      sunk: items.byState.sunk,
      failed: items.byState.failed,
      retryable: items.byState.retryable,
      retryablePending: items.retryablePending,
      quarantined: items.byState.quarantined,
      processing: items.byState.processing,
    },
    quarantined: { total: Object.values(byReason).reduce((n, c) => n + c, 0), byReason },
    credits: {
      plan: snap?.plan ?? null,
      organizationId: snap?.organizationId ?? null,
      maxCredits: snap?.maxCredits ?? null,
      usedCredits: snap?.usedCredits ?? null,
      remaining: snap && snap.maxCredits !== null && snap.usedCredits !== null ? snap.maxCredits - snap.usedCredits : null,
      takenAt: iso(snap?.takenAt),
      estimatedAllTime,
      // negative when a new billing period started in between: unknown then
      usedLast24h:
        snap && dayAgo && snap.usedCredits !== null && dayAgo.usedCredits !== null && snap.usedCredits >= dayAgo.usedCredits
          ? snap.usedCredits - dayAgo.usedCredits
          : null,
    },
  };
}
