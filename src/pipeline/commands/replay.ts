/**
 * Replay, the admin's repair tool.
 *
 * - `resinkBatch`: re-run the database writes of one batch from its landed raw items. No API
 *   call, no credit: the raw copy in `batch_items` is the source of truth.
 * - `resinkQuarantined`: read quarantined items again from their raw copy with today's rules
 *   (after an upgrade that understands them) and sink the ones that now land. No API call either.
 * - `planResubmission` / `resubmit`: re-submit retryable items (failed with a retryable code,
 *   unfinished at expiry, results gone) as new batches, each item once. This costs credits, so the
 *   plan is shown first and the caller asks for consent.
 */
import {
  batchesWithQuarantined,
  quarantinedItems,
  requalifyQuarantined,
  settleRequalified,
  QUARANTINE_COUNT_LABELS,
  UNKNOWN_QUARANTINE_REASON,
  type QuarantinedBatch,
  type QuarantinedItem,
  type QuarantineFilter,
  type Requalified,
} from '../../db/quarantine.ts';
import { batchExists, inFlightBatchOf } from '../../db/batches.ts';
import { reopenSunk } from '../../db/items.ts';
import { lockStoredItems } from '../../db/prune.ts';
import { retryableGroups } from '../../db/resubmissions.ts';
import type { BatchKind } from '../../db/schema.ts';
import { lostSubmissions, markSubmission, type SubmissionRow } from '../../db/submissions.ts';
import type { ItemOutcome, ItemState } from '../../domain/items.ts';
import { classifyRawItem } from '../../domain/raw-items.ts';
import { mediaPastRetryCap, releaseMediaForRetry, type MediaPastCap } from '../../db/media.ts';
import { mediaRowFromApi } from '../ingest/media-rows.ts';
import { MEDIA_MODE_DEFAULT, mediaTranscriptCredits, type MediaMode } from '../../domain/media.ts';
import { isMediaTranscriptItem } from '../ingest/sync-media.ts';
import { lostTranslations, releaseTranslations, type LostTranslation } from '../../db/translations.ts';
import type { PipelineDeps } from '../deps.ts';
import { reserveCredits } from '../ingest/credits.ts';
import { syncSource, type SyncResult } from '../ingest/sync-source.ts';
import { submitBatch } from '../ingest/submit.ts';
import { sinkBatch, type SinkResult } from '../ingest/sink.ts';

/** `replay --batch` found stored items whose raw copy retention dropped: it changed nothing. */
export interface PrunedBatch {
  /** the batch's stored items */
  stored: number;
  /** of those, items without a raw copy */
  pruned: number;
  firstPrunedAt: Date;
  lastPrunedAt: Date;
}

export type ResinkBatchResult = SinkResult & {
  found: boolean;
  items: number;
  /** set when the batch's raw items were pruned: nothing was re-sunk */
  pruned?: PrunedBatch;
};

/**
 * `replay --batch`: the batch's stored items go back to landed and the sink stores them again
 * from their raw copies. A batch with any stored item whose raw copy RAW_RETENTION_DAYS has
 * pruned is refused as a whole (`pruned` set, nothing changed): re-sinking only the rest would
 * report a repair that skipped rows. The check and the re-opening are one transaction holding
 * the items, so prune cannot drop a payload in between (re-opened items are landed, which prune
 * never touches).
 */
export async function resinkBatch(
  deps: Pick<PipelineDeps, 'sql' | 'log' | 'settings'>,
  jobId: string,
): Promise<ResinkBatchResult> {
  const none = { jobId, sunk: 0, quarantined: 0, inserted: 0, updated: 0, unchanged: 0 };
  if (!(await batchExists(deps.sql, jobId))) return { ...none, found: false, items: 0 };
  const opened = await deps.sql.begin(async (tx) => {
    const held = await lockStoredItems(tx, jobId);
    if (held.pruned > 0) {
      const pruned: PrunedBatch = {
        stored: held.stored,
        pruned: held.pruned,
        firstPrunedAt: held.firstPrunedAt!,
        lastPrunedAt: held.lastPrunedAt!,
      };
      return { reopened: 0, pruned };
    }
    return { reopened: await reopenSunk(tx, jobId), pruned: undefined };
  });
  if (opened.pruned) return { ...none, found: true, items: 0, pruned: opened.pruned };
  const r = await sinkBatch(deps, jobId);
  return { ...r, found: true, items: opened.reopened };
}

/** Why a quarantined item is left alone: reading its raw copy again cannot change its outcome. */
export const QUARANTINE_SKIPS = {
  duplicate: 'a repeated copy of an item in the same answer (the first copy is the item)',
  'too-large': 'only the first bytes of the item were kept',
  unparsable: 'the raw copy is not JSON',
  'other-id': "the row's video_id is not the raw item's videoId",
} as const;
export type QuarantineSkip = keyof typeof QUARANTINE_SKIPS;

/** What became (or, in a dry run, would become) of a quarantined item. */
export type QuarantineOutcome = 'stored' | 'failed' | 'retryable' | 'quarantined' | 'skipped';

export interface QuarantineReplayOptions extends QuarantineFilter {
  /** classify only; change nothing */
  dryRun: boolean;
}

export interface QuarantineReplayReport {
  dryRun: boolean;
  /** with a jobId filter: whether that batch is recorded */
  found: boolean;
  /** quarantined items looked at, skipped ones included */
  items: number;
  /** the items looked at, by the reason_code they had ('unknown' when null) */
  byReason: Record<string, number>;
  /**
   * by outcome: 'stored' is sunk into videos/transcripts (in a dry run: would land and go to the
   * sink, which may still set aside a value Postgres cannot store)
   */
  outcomes: Record<QuarantineOutcome, number>;
  /** items read again that stay quarantined, by their (new) reason_code (skipped ones not included) */
  stillQuarantined: Record<string, number>;
  skipped: Partial<Record<QuarantineSkip, number>>;
  /** from reason (before) to outcome, for a dry run's table */
  transitions: { reason: string; outcome: string; items: number }[];
  /** rows the sink wrote */
  rows: { inserted: number; updated: number; unchanged: number };
  /** items that landed but another sink process holds: it stores them */
  pending: number;
}

/** Quarantined items read per transaction. */
export const QUARANTINE_PAGE_ITEMS = 500;

const reasonLabel = (code: string | null | undefined): string => code ?? UNKNOWN_QUARANTINE_REASON;

/** QUARANTINE_COUNT_LABELS order; a code this version does not list comes last. */
function reasonRank(reason: string): number {
  const i = QUARANTINE_COUNT_LABELS.indexOf(reason);
  return i === -1 ? QUARANTINE_COUNT_LABELS.length : i;
}

function inReasonOrder(counts: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(counts).sort(([a], [b]) => reasonRank(a) - reasonRank(b) || a.localeCompare(b)),
  );
}

function inc<K extends string>(counts: Partial<Record<K, number>>, key: K, n = 1): void {
  counts[key] = (counts[key] ?? 0) + n;
}

/** The raw item of a row, or why it cannot be read again. */
function rawOf(row: QuarantinedItem): { raw: unknown } | { skip: QuarantineSkip } {
  if (row.reasonCode === 'duplicate' || row.videoId.includes('#')) return { skip: 'duplicate' };
  if (row.reasonCode === 'too-large') return { skip: 'too-large' };
  let raw: unknown = row.payload;
  if (raw === null || raw === undefined) {
    if (row.payloadRaw === null) return { skip: 'unparsable' };
    try {
      raw = JSON.parse(row.payloadRaw) as unknown;
    } catch {
      return { skip: 'unparsable' };
    }
  }
  // a row kept under another key (a videoId Postgres text cannot hold) must not be sunk under it
  const id = (raw as { videoId?: unknown } | null)?.videoId;
  if (typeof id === 'string' && id !== row.videoId) return { skip: 'other-id' };
  return { raw };
}

/**
 * What reading a quarantined item again with today's rules makes of it: its new state (landed
 * for the sink, failed, retryable, or still quarantined with the new reason), or why it is
 * left alone. Pure; exported for its unit test.
 */
export function requalify(
  row: QuarantinedItem,
  kind: BatchKind,
  mode?: string,
): { skip: QuarantineSkip } | Requalified {
  const r = rawOf(row);
  if ('skip' in r) return r;
  const outcome = kind === 'media' ? classifyMediaItem(row.videoId, r.raw, mode) : classifyRawItem(r.raw, kind);
  if (outcome.state === 'landed' || outcome.state === 'failed' || outcome.state === 'retryable') {
    return { videoId: row.videoId, state: outcome.state, errorCode: outcome.errorCode, reason: null, reasonCode: null };
  }
  // still set aside ('processing' cannot come from a finished item's copy: keep it aside too)
  const code = outcome.state === 'quarantined' ? (outcome.reasonCode ?? null) : row.reasonCode;
  const why = outcome.state === 'quarantined' ? (outcome.reason ?? row.reason) : row.reason;
  return { videoId: row.videoId, state: 'quarantined', errorCode: outcome.errorCode, reason: why, reasonCode: code };
}

/**
 * A media batch's raw item read with today's rules: its key is the media URL and its raw copy the
 * `/metadata` answer (not a batch item), so it lands when it makes a media row; a transcript's
 * item lands as it is (any content is stored, an empty one as no speech).
 */
function classifyMediaItem(key: string, raw: unknown, mode: string | undefined): ItemOutcome {
  // a transcript job's item (mode generate) or a transcript answered at once
  if (mode === 'generate' || isMediaTranscriptItem(key)) return { state: 'landed', errorCode: null };
  const built = mediaRowFromApi(key, raw);
  if ('row' in built) return { state: 'landed', errorCode: null };
  return { state: 'quarantined', errorCode: null, reason: built.reason, reasonCode: built.reasonCode };
}

/** The report of a quarantine replay as it is counted, item by item. */
interface ReplayTally {
  report: QuarantineReplayReport;
  /** an item read again (`reason`: its reason_code before) and what it became; a landed one is counted once sunk */
  requalified(reason: string, r: { skip: QuarantineSkip } | Requalified): void;
  /** a re-landed item's end after the sink: stored, quarantined again, or pending (another sink holds it) */
  settled(reason: string, item: { state: ItemState; reasonCode: string | null }): void;
  /** the report, its counts in a stable order */
  finish(): QuarantineReplayReport;
}

function replayTally(dryRun: boolean): ReplayTally {
  const report: QuarantineReplayReport = {
    dryRun,
    found: true,
    items: 0,
    byReason: {},
    outcomes: { stored: 0, failed: 0, retryable: 0, quarantined: 0, skipped: 0 },
    stillQuarantined: {},
    skipped: {},
    transitions: [],
    rows: { inserted: 0, updated: 0, unchanged: 0 },
    pending: 0,
  };
  const transitions = new Map<string, { reason: string; outcome: string; items: number }>();
  const note = (reason: string, outcome: QuarantineOutcome, detail?: string): void => {
    const label = detail ? `${outcome} (${detail})` : outcome;
    const key = `${reason}\u0000${label}`;
    const t = transitions.get(key) ?? { reason, outcome: label, items: 0 };
    t.items++;
    transitions.set(key, t);
  };
  const stillQuarantined = (reason: string, code: string | null): void => {
    report.outcomes.quarantined++;
    inc(report.stillQuarantined, reasonLabel(code));
    note(reason, 'quarantined', reasonLabel(code));
  };
  return {
    report,
    requalified: (reason, r) => {
      report.items++;
      inc(report.byReason, reason);
      if ('skip' in r) {
        report.outcomes.skipped++;
        inc(report.skipped, r.skip);
        note(reason, 'skipped', r.skip);
      } else if (r.state === 'failed' || r.state === 'retryable') {
        report.outcomes[r.state]++;
        note(reason, r.state, r.errorCode ?? undefined);
      } else if (r.state === 'quarantined') {
        stillQuarantined(reason, r.reasonCode);
      }
    },
    settled: (reason, item) => {
      if (item.state === 'sunk') {
        report.outcomes.stored++;
        note(reason, 'stored');
      } else if (item.state === 'quarantined') {
        stillQuarantined(reason, item.reasonCode);
      } else {
        // landed and locked by a concurrent sink, which stores it
        report.pending++;
      }
    },
    finish: () => {
      // in a stable order, whatever order the items came in: the reasons as listed, then the outcomes
      report.byReason = inReasonOrder(report.byReason);
      report.stillQuarantined = inReasonOrder(report.stillQuarantined);
      report.skipped = Object.fromEntries(
        (Object.keys(QUARANTINE_SKIPS) as QuarantineSkip[])
          .filter((k) => report.skipped[k] !== undefined)
          .map((k) => [k, report.skipped[k]]),
      );
      report.transitions = [...transitions.values()].sort(
        (a, b) => reasonRank(a.reason) - reasonRank(b.reason) || a.outcome.localeCompare(b.outcome),
      );
      return report;
    },
  };
}

/**
 * `replay --quarantined`: every quarantined item (of `jobId`, of batches since `since`) is read
 * again from its raw copy and classified with today's rules. Items that now land are sunk with
 * the ordinary sink; failed and retryable ones take that state (a retryable one is then
 * re-submitted by the next sync, within RETRY_ATTEMPTS_MAX); the rest stay quarantined with the
 * new reason. Duplicate copies, too-large prefixes and unparsable text are skipped. No API call.
 */
export async function resinkQuarantined(
  deps: Pick<PipelineDeps, 'sql' | 'log' | 'settings' | 'metrics'>,
  o: QuarantineReplayOptions,
): Promise<QuarantineReplayReport> {
  const { sql, log } = deps;
  const tally = replayTally(o.dryRun);
  if (o.jobId !== undefined && !(await batchExists(sql, o.jobId))) return { ...tally.report, found: false };
  for (const batch of await batchesWithQuarantined(sql, o)) {
    const relanded = await requalifyBatch(deps, batch, o.dryRun, tally);
    if (relanded.size === 0) continue;
    if (o.dryRun) {
      // what would land goes to the sink, counted as stored
      for (const reason of relanded.values()) tally.settled(reason, { state: 'sunk', reasonCode: null });
      continue;
    }
    const sunk = await sinkBatch(deps, batch.jobId);
    tally.report.rows.inserted += sunk.inserted;
    tally.report.rows.updated += sunk.updated;
    tally.report.rows.unchanged += sunk.unchanged;
    for (const item of await settleRequalified(sql, batch, [...relanded.keys()])) {
      tally.settled(relanded.get(item.videoId)!, item);
    }
  }
  const report = tally.finish();
  if (!o.dryRun && report.items > 0) {
    log.info(
      { event: 'replay.resunk', items: report.items, ...report.outcomes, pending: report.pending, ...report.rows },
      'quarantined items re-sunk from raw',
    );
  }
  return report;
}

/**
 * Reads one batch's quarantined items again, a page per transaction, and (unless a dry run)
 * gives each its new state. Returns the items that now land, with their reason before.
 */
async function requalifyBatch(
  deps: Pick<PipelineDeps, 'sql' | 'settings'>,
  batch: QuarantinedBatch,
  dryRun: boolean,
  tally: ReplayTally,
): Promise<Map<string, string>> {
  const relanded = new Map<string, string>();
  let after: string | undefined;
  for (;;) {
    // one transaction per page: the rows are locked while classified, so two replays (or a
    // replay and a poll) never give one item two outcomes
    const page = await deps.sql.begin(async (tx) => {
      const rows = await quarantinedItems(tx, batch.jobId, QUARANTINE_PAGE_ITEMS, {
        afterVideoId: after,
        lock: !dryRun,
      });
      const changes: Requalified[] = [];
      for (const row of rows) {
        const reason = reasonLabel(row.reasonCode);
        const r = requalify(row, batch.kind, batch.mode);
        tally.requalified(reason, r);
        if ('skip' in r) continue;
        changes.push(r);
        if (r.state === 'landed') relanded.set(row.videoId, reason);
      }
      if (!dryRun) await requalifyQuarantined(tx, batch, changes, deps.settings.transcriptRecheckMs);
      return rows;
    });
    if (page.length < QUARANTINE_PAGE_ITEMS) return relanded;
    after = page[page.length - 1]!.videoId;
  }
}

/**
 * Whether everything read again ended where it belongs (stored, or failed with an answer): false
 * when an item stays quarantined or is left retryable. Skipped items do not count: reading them
 * again cannot change them.
 */
export function quarantineReplayLanded(r: QuarantineReplayReport): boolean {
  return r.outcomes.quarantined === 0 && r.outcomes.retryable === 0;
}

export interface ResubmitGroup {
  sourceId: number | null;
  kind: BatchKind;
  lang: string | null;
  textOnly: boolean;
  videoIds: string[];
  /** the batches the items come from */
  fromJobIds: string[];
  /** 1 + videos per batch of at most batchSize */
  credits: number;
  /** a batch of the same source, kind and language is still in flight: wait for it */
  blockedBy: string | null;
}

export interface PlanOptions {
  /** only items of expired batches */
  expiredOnly: boolean;
  /** only batches submitted at or after */
  since?: Date | undefined;
}

export async function planResubmission(
  deps: Pick<PipelineDeps, 'sql' | 'settings'>,
  o: PlanOptions,
): Promise<ResubmitGroup[]> {
  const { sql, settings } = deps;
  const groups: ResubmitGroup[] = [];
  for (const r of await retryableGroups(sql, o)) {
    const chunks = Math.ceil(r.videoIds.length / settings.batchSize);
    groups.push({
      sourceId: r.sourceId,
      kind: r.kind,
      lang: r.lang,
      textOnly: r.textOnly ?? false,
      videoIds: r.videoIds,
      fromJobIds: r.jobIds,
      credits: chunks + r.videoIds.length,
      blockedBy: await inFlightBatchOf(sql, r),
    });
  }
  return groups;
}

/**
 * Submit the groups not blocked by an in-flight batch, after a credit check. `submitBatch` marks
 * each item with the batch that re-submits it, so it is never re-submitted twice. Only the first chunk of a
 * group goes now when the group exceeds one batch (one in-flight batch per source, kind, lang).
 */
export async function resubmit(
  deps: PipelineDeps,
  groups: ResubmitGroup[],
): Promise<{ jobIds: string[]; videos: number }> {
  const ready = groups.filter((g) => g.blockedBy === null);
  const chunks = ready.map((g) => ({ ...g, videoIds: g.videoIds.slice(0, deps.settings.batchSize) }));
  const needed = chunks.reduce((n, g) => n + 1 + g.videoIds.length, 0);
  // through the guard every process shares: a daemon syncing at the same moment must see these
  // credits as taken (and a daily budget counts them), or both could spend the same credits
  const check = await reserveCredits(deps, {
    sourceId: null,
    estimate: needed,
    what: 'this re-submission',
    reason: 'before-replay',
  });
  if (check.refused) throw check.refused;
  const { hold } = check;

  const jobIds: string[] = [];
  let videos = 0;
  try {
    for (const g of chunks) {
      // a reservation that expired while this ran was no longer counted: send nothing more on it
      if (!(await hold.renew())) break;
      const request =
        g.kind === 'video'
          ? { videoIds: g.videoIds }
          : {
              videoIds: g.videoIds,
              ...(g.lang !== null ? { lang: g.lang } : {}),
              ...(g.textOnly ? { text: true } : {}),
            };
      const submitted = await submitBatch(deps, {
        sourceId: g.sourceId,
        kind: g.kind,
        lang: g.lang,
        request,
        credits: 1 + g.videoIds.length,
        textOnly: g.textOnly,
        replayOf: g.fromJobIds[0] ?? null,
        hold,
      });
      if (submitted === null) continue;
      jobIds.push(submitted.jobId);
      videos += submitted.videos;
    }
  } finally {
    await hold.release();
  }
  return { jobIds, videos };
}

/** Batch POSTs whose answer was lost after the account was charged (see batch_submissions). */
export function planLostResubmission(deps: Pick<PipelineDeps, 'sql'>): Promise<SubmissionRow[]> {
  return lostSubmissions(deps.sql);
}

/** A media transcript past the retry cap, with what buying it once more costs. */
export interface MediaRetryPlan extends MediaPastCap {
  credits: number;
}

/** `replay --failed` / `--expired` of media: transcripts no sync buys again any more (past RETRY_ATTEMPTS_MAX). */
export async function planMediaRetry(
  deps: Pick<PipelineDeps, 'sql' | 'settings'>,
  o: { expiredOnly: boolean },
): Promise<MediaRetryPlan[]> {
  const rows = await mediaPastRetryCap(deps.sql, {
    retryAttemptsMax: deps.settings.retryAttemptsMax,
    expiredOnly: o.expiredOnly,
  });
  return rows.map((r) => ({
    ...r,
    credits: mediaTranscriptCredits((r.mode ?? MEDIA_MODE_DEFAULT) as MediaMode, r.durationS),
  }));
}

/** A person agreed: each is left one purchase under the cap, for its source's next sync. Returns how many. */
export function releaseMediaRetry(
  deps: Pick<PipelineDeps, 'sql' | 'settings'>,
  media: readonly MediaPastCap[],
): Promise<number> {
  return releaseMediaForRetry(
    deps.sql,
    media.map((m) => m.url),
    deps.settings.retryAttemptsMax,
  );
}

/** Translations whose answer was lost, or whose process died while sending (`replay --lost`). */
export function planLostTranslations(deps: Pick<PipelineDeps, 'sql'>): Promise<LostTranslation[]> {
  return lostTranslations(deps.sql);
}

/**
 * A person agreed to pay again for batches whose answer was lost, and for translations that may
 * have been billed: release them (their sources' kinds and languages may be submitted again, each
 * translation bought once more) and sync those sources now. Returns the syncs.
 */
export async function releaseLost(
  deps: PipelineDeps,
  lost: SubmissionRow[],
  translations: readonly LostTranslation[] = [],
): Promise<SyncResult[]> {
  const at = new Date().toISOString();
  for (const l of lost) {
    await markSubmission(deps.sql, l.id, 'released', {
      detail: `${l.detail ?? ''} | released by replay --lost at ${at}`,
    });
  }
  await releaseTranslations(
    deps.sql,
    translations.map((t) => t.id),
    `released by replay --lost at ${at}`,
  );
  const sources = [
    ...new Set([...lost, ...translations].map((l) => l.sourceId).filter((id): id is number => id !== null)),
  ];
  const syncs: SyncResult[] = [];
  for (const id of sources) syncs.push(await syncSource(deps, id, { trigger: 'manual' }));
  return syncs;
}
