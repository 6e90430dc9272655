/**
 * The facts `status` shows: sources and their freshness, batches in flight with progress, item
 * error counts, credits, the storage per table and the latest prune. Read-only. Every read is
 * bounded by what it shows, not by the history kept: item and per-source counts come from the
 * counters the triggers of migrations/0005 keep (`item_counts`, `batch_item_counts`,
 * `source_stats`), table sizes from the catalog. The overview (src/admin/overview.ts) reads the
 * same sections, each on its own.
 */
import { batchProgress, type BatchProgress } from '../db/batch-progress.ts';
import { batchCountsByStatus, creditsEstimatedTotal, inFlightJobIds, recentlyEndedJobIds } from '../db/batches.ts';
import type { Queryable } from '../db/connection.ts';
import { firstCreditSnapshotWithin, latestCreditSnapshot } from '../db/credit-snapshots.ts';
import { itemErrorCodeCounts, itemStateCounts, type ItemErrorCount } from '../db/item-counts.ts';
import { latestPruneRun } from '../db/prune-runs.ts';
import { quarantineCounts } from '../db/quarantine.ts';
import { sourcesWithStats, type SourceWithStats } from '../db/source-stats.ts';
import { tableStorage, type TableStorage } from '../db/storage.ts';
import { lostSubmissions } from '../db/submissions.ts';
import { activeHolds, describeHold, recentHoldEvents } from '../db/upstream-holds.ts';

/** A source as `status` shows it (times as ISO 8601). */
export type SourceStatus = Omit<SourceWithStats, 'lastSyncedAt' | 'lastErrorAt'> & {
  lastSyncedAt: string | null;
  lastErrorAt: string | null;
};

export interface HoldsStatus {
  /** account-level refusals (key, plan, credits): scheduled work makes no API call while one stands */
  upstreamHolds: { code: string; scope: string; reason: string; since: string; message: string }[];
  /** the latest holds set and lifted, newest first (a hold a daemon lifted by itself shows here) */
  holdEvents: { code: string; event: string; reason: string | null; at: string }[];
  /** batch POSTs whose answer was lost after the account was charged: not re-submitted until `replay --lost` */
  lostSubmissions: { id: number; sourceId: number | null; kind: string; lang: string | null; creditsEstimated: number; at: string; detail: string | null }[];
}

export interface ItemsStatus {
  /** item error codes over all batches, with the item states they left */
  itemErrors: ItemErrorCount[];
  items: { landed: number; sunk: number; failed: number; retryable: number; retryablePending: number; quarantined: number; processing: number };
  /**
   * quarantined items (kept raw, never re-submitted automatically) by `reason_code`: every
   * QUARANTINE_REASONS code, zeros included, and 'unknown' for rows without one
   */
  quarantined: { total: number; byReason: Record<string, number> };
}

export interface CreditsStatus {
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
}

/** The latest prune that could free anything (not a dry run). */
export interface PruneStatus {
  id: number;
  /** 'daily' (a daemon's job) or 'cli' */
  trigger: string;
  startedAt: string;
  /** null while it runs (or when its process died before the end) */
  finishedAt: string | null;
  /** per table: rows affected and bytes freed; null until it finishes */
  freed: Record<string, { rows: number; bytes: number }> | null;
  error: string | null;
}

export interface StatusReport extends HoldsStatus, ItemsStatus {
  generatedAt: string;
  sources: SourceStatus[];
  inFlight: BatchProgress[];
  /** batches that ended in the last 24 hours */
  recent: BatchProgress[];
  batchesByStatus: Record<string, number>;
  credits: CreditsStatus;
  /** every table of the schema, largest first: heap + TOAST + indexes, TOAST and indexes alone, in bytes */
  storage: TableStorage[];
  /** null before the first prune */
  lastPrune: PruneStatus | null;
}

const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);

/** Hold events `status` shows. */
export const STATUS_HOLD_EVENTS = 5;
const DAY_MS = 24 * 3_600_000;
/** How far back `recent` reaches, ms. */
const STATUS_RECENT_MS = DAY_MS;
/** Recently ended batches listed at most. */
export const STATUS_RECENT_BATCHES = 50;

export async function readHolds(sql: Queryable): Promise<HoldsStatus> {
  const holds = await activeHolds(sql);
  const events = await recentHoldEvents(sql, STATUS_HOLD_EVENTS);
  const lost = await lostSubmissions(sql);
  return {
    upstreamHolds: holds.map((h) => ({ code: h.code, scope: h.scope, reason: h.reason, since: h.since.toISOString(), message: describeHold(h) })),
    holdEvents: events.map((e) => ({ code: e.code, event: e.event, reason: e.reason, at: e.at.toISOString() })),
    lostSubmissions: lost.map((l) => ({
      id: l.id, sourceId: l.sourceId, kind: l.kind, lang: l.lang, creditsEstimated: l.creditsEstimated, at: l.createdAt.toISOString(), detail: l.detail,
    })),
  };
}

export function toSourceStatus(s: SourceWithStats): SourceStatus {
  return {
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
  };
}

/** Batches that ended within the last 24 hours, the latest first, with their progress. */
export async function readRecentBatches(sql: Queryable): Promise<BatchProgress[]> {
  return batchProgress(sql, await recentlyEndedJobIds(sql, STATUS_RECENT_MS, STATUS_RECENT_BATCHES));
}

export async function readItems(sql: Queryable): Promise<ItemsStatus> {
  const itemErrors = await itemErrorCodeCounts(sql);
  const { byState, retryablePending } = await itemStateCounts(sql);
  const byReason = await quarantineCounts(sql);
  return {
    itemErrors,
    items: {
      landed: byState.landed,
      sunk: byState.sunk,
      failed: byState.failed,
      retryable: byState.retryable,
      retryablePending,
      quarantined: byState.quarantined,
      processing: byState.processing,
    },
    quarantined: { total: Object.values(byReason).reduce((n, c) => n + c, 0), byReason },
  };
}

export async function readCredits(sql: Queryable): Promise<CreditsStatus> {
  const snap = await latestCreditSnapshot(sql);
  const dayAgo = await firstCreditSnapshotWithin(sql, DAY_MS);
  const estimatedAllTime = await creditsEstimatedTotal(sql);
  return {
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
  };
}

export async function readLastPrune(sql: Queryable): Promise<PruneStatus | null> {
  const run = await latestPruneRun(sql);
  if (!run) return null;
  return {
    id: run.id,
    trigger: run.trigger,
    startedAt: run.startedAt.toISOString(),
    finishedAt: iso(run.finishedAt),
    freed: run.freed,
    error: run.error,
  };
}

/**
 * One line for a person: what the latest prune freed (or that it runs, or failed), without the
 * time, which each presenter shows its own way. Bytes are formatted by `bytes`.
 */
export function describePrune(p: PruneStatus, bytes: (n: number) => string): string {
  if (p.error !== null) return `${p.trigger} prune failed: ${p.error}`;
  if (p.finishedAt === null || p.freed === null) return `${p.trigger} prune running (or stopped with its process)`;
  const parts = Object.entries(p.freed)
    .filter(([, f]) => f.rows > 0)
    .map(([table, f]) => `${table} ${f.rows} row(s), ${bytes(f.bytes)}`);
  const total = Object.values(p.freed).reduce((n, f) => n + f.bytes, 0);
  return parts.length === 0 ? `${p.trigger} prune: nothing to free` : `${p.trigger} prune freed ${bytes(total)}: ${parts.join('; ')}`;
}

export async function collectStatus(sql: Queryable): Promise<StatusReport> {
  const sources = await sourcesWithStats(sql);
  const inFlight = await batchProgress(sql, await inFlightJobIds(sql));
  const recent = await readRecentBatches(sql);
  const batchesByStatus = await batchCountsByStatus(sql);
  const items = await readItems(sql);
  const credits = await readCredits(sql);
  const holds = await readHolds(sql);
  const storage = await tableStorage(sql);
  const lastPrune = await readLastPrune(sql);
  return {
    generatedAt: new Date().toISOString(),
    ...holds,
    sources: sources.map(toSourceStatus),
    inFlight,
    recent,
    batchesByStatus,
    ...items,
    credits,
    storage,
    lastPrune,
  };
}
