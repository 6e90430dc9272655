/**
 * The facts `status` shows: sources and their freshness (and, for those shown, what their videos
 * got per language asked), batches in flight with progress, each video's latest outcome per kind
 * and language with its error codes, every item ever received (history), credits, the storage
 * per table and the latest prune. Read-only. Every read is bounded by what it shows, not by the
 * history kept: the counts come from the counters the triggers of migrations/0005 and 0008 keep
 * (`item_counts`, `batch_item_counts`, `source_stats`, `video_outcome_counts`), a shown source's
 * coverage from its own videos, table sizes from the catalog; the sources are counted and ranked
 * in Postgres and only the page shown is read (`readSourcesPage`). The overview
 * (src/admin/overview.ts) reads the same sections, each on its own.
 */
import { searchModel } from './search-model.ts';
import { STATUS_SOURCES_SHOWN, type PruneStatus } from './status-report.ts';
import { pageTotals, type PageTotals } from '../../db/pages.ts';
import { mediaTotals, type MediaTotals } from '../../db/media.ts';
import { CronExpressionParser } from 'cron-parser';
import { batchProgress, retryablePendingByBatch, type BatchProgress } from '../../db/batch-progress.ts';
import {
  batchCountsByStatus,
  creditsEstimatedTotal,
  inFlightJobIds,
  recentlyEndedCount,
  recentlyEndedJobIds,
} from '../../db/batches.ts';
import { databaseNow, type Queryable } from '../../db/connection.ts';
import {
  billedBetween,
  billedByDay,
  billedBySource,
  type BilledDay,
  type BilledSource,
} from '../../db/credit-charges.ts';
import { firstCreditSnapshotWithin, latestCreditSnapshot } from '../../db/credit-snapshots.ts';
import { itemErrorCodeCounts, itemStateCounts, type ItemErrorCount } from '../../db/item-counts.ts';
import {
  languageCoverage,
  outcomeCounts,
  outcomeErrorCounts,
  sourceLanguageCoverage,
  totalOutcomes,
  type OutcomeCounts,
} from '../../db/video-outcomes.ts';
import { goneCounts } from '../../db/videos.ts';
import type { LanguageCoverage } from '../../domain/coverage.ts';
import type { BatchKind } from '../../domain/batches.ts';
import { latestPruneRun } from '../../db/prune-runs.ts';
import { quarantineCounts } from '../../db/quarantine.ts';
import {
  countSyncedBefore,
  sourceBuckets,
  sourcesInGroups,
  type SourceGroupRef,
  type SourceWithStats,
  type SyncedSide,
} from '../../db/source-stats.ts';
import { tableStorage, type TableStorage } from '../../db/storage.ts';
import { listEndpoints, PENDING_COUNT_CAP } from '../../db/webhooks.ts';
import type { ItemState } from '../../domain/items.ts';
import { lostSubmissions } from '../../db/submissions.ts';
import { activeHolds, describeHold, recentHoldEvents, type UpstreamHoldRow } from '../../db/upstream-holds.ts';
import { newestBuiltMigration } from '../../db/migrate.ts';
import { migrationLabel, schemaStopReason, type SchemaVerdict } from '../../domain/schema-compat.ts';
import { readSchemaVerdict } from '../services/schema-gate.ts';
import { passageCount } from '../../db/passages.ts';
import {
  readEmbeddingsFacts,
  readEmbeddingsStoreState,
  type EmbeddingsFacts,
  type ModelSpace,
} from '../../db/embeddings.ts';
import { searchBacklog } from '../../db/search.ts';
import {
  budgetRefusals,
  translatedMinutes,
  translationCandidates,
  translateSettings,
  translationCounts,
  type TranslationCounts,
} from '../../db/translations.ts';

export { describePrune, STATUS_SOURCES_SHOWN, type PruneStatus } from './status-report.ts';

/** A source as `status` shows it (times as ISO 8601). */
export type SourceStatus = Omit<SourceWithStats, 'lastSyncedAt' | 'lastErrorAt'> & {
  lastSyncedAt: string | null;
  lastErrorAt: string | null;
  /** per language the source asks for, what its videos got (status: the sources shown only) */
  coverage?: LanguageCoverage[];
  /** a source with `--translate` (status: the sources shown only) */
  translations?: SourceTranslations;
};

/** What `status` shows of a `--translate` source's translations. */
export interface SourceTranslations extends TranslationCounts {
  langs: string[];
  maxMinutes: number | null;
  /** started minutes its translations used so far (what `--max-translate-minutes` counts) */
  usedMinutes: number;
  /** translations due now that it has not bought (within its budget or not) */
  backlog: number;
  /** the latest budget refusals, newest first: why each was left unbought */
  latestRefused: { videoId: string; lang: string; minutes: number; detail: string | null; at: string }[];
}

/** Budget refusals `status` lists per source. */
export const STATUS_TRANSLATION_REFUSALS_SHOWN = 5;

export interface HoldsStatus {
  /** account-level refusals (key, plan, credits): scheduled work makes no API call while one stands */
  upstreamHolds: {
    code: string;
    scope: string;
    reason: string;
    since: string;
    message: string;
    /** the refused key's fingerprint (src/api/key-fingerprint.ts): only processes using that key are held; null: every key (a hold older than 0007) */
    keyFingerprint: string | null;
  }[];
  /**
   * holds recorded for another API key than the configured one, seen within OTHER_KEY_HOLDS_SHOWN_MS:
   * no process using the configured key is held by them (a mistyped key, a key since replaced)
   */
  otherKeyHolds?: { code: string; since: string; lastSeenAt: string; message: string; keyFingerprint: string | null }[];
  /** the latest holds set and lifted, newest first (a hold a daemon lifted by itself shows here) */
  holdEvents: { code: string; event: string; reason: string | null; at: string; keyFingerprint: string | null }[];
  /** batch POSTs whose answer was lost after the account was charged: not re-submitted until `replay --lost` */
  lostSubmissions: {
    id: number;
    sourceId: number | null;
    kind: string;
    lang: string | null;
    creditsEstimated: number;
    at: string;
    detail: string | null;
  }[];
}

/** Videos by the state their latest item left them in, of one kind and language or summed. */
export interface OutcomeTotals {
  landed: number;
  sunk: number;
  failed: number;
  retryable: number;
  retryablePending: number;
  quarantined: number;
  processing: number;
}

/** A latest error code: videos whose latest item of that kind and language carried it. */
export interface LatestErrorCount {
  kind: BatchKind;
  /** '' for metadata and the default transcript language */
  lang: string;
  errorCode: string;
  /** the state the code left the videos in */
  state: ItemState;
  /** videos (named `items` as before: one latest item per video, kind and language) */
  items: number;
}

export interface ItemsStatus {
  /**
   * Now: each video's latest outcome per kind and language (`video_outcome_counts`), summed;
   * a video re-submitted leaves its old outcome behind. `retryablePending` equals `retryable`:
   * a re-submission makes the video in flight again.
   */
  items: OutcomeTotals;
  /** now: error codes of the videos' latest items, by kind, language and state */
  itemErrors: LatestErrorCount[];
  /** now, per kind and language */
  outcomes: (Omit<OutcomeCounts, 'byState' | 'none'> & OutcomeTotals)[];
  /** per language asked for, what the videos got: in it, in another (fallback), or none */
  languageCoverage: LanguageCoverage[];
  /** every batch item ever received (history): items per state and error code */
  history: {
    items: OutcomeTotals;
    itemErrors: ItemErrorCount[];
  };
  /**
   * quarantined items (kept raw, never re-submitted automatically) by `reason_code`: every
   * QUARANTINE_REASONS code, zeros included, and 'unknown' for rows without one
   */
  quarantined: { total: number; byReason: Record<string, number> };
  /** stored videos a later batch reported `not-found` or `forbidden` (rows kept, `videos.gone_at`), by reason */
  gone: { total: number; byReason: Record<string, number> };
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
  /**
   * credits billed (`x-billable-requests` of each answer, `credit_charges`) between the same two
   * /me readings as `usedLast24h`: the two agree when every charge of the account went through
   * this installation and every answer carried the header
   */
  billedLast24h: number | null;
  /** what was billed per UTC day, newest first (the last BILLED_DAYS_SHOWN days with charges) */
  billedByDay: BilledDay[];
  /** what was billed per source today (UTC), most first; `sourceId` null: requests of no source */
  billedTodayBySource: BilledSource[];
}

/** Days of billed credits `status` shows. */
export const BILLED_DAYS_SHOWN = 7;
/** Sources `status` lists by billed credits today. */
export const BILLED_SOURCES_SHOWN = 10;

/** A webhook endpoint's health as `status` and the overview show it (never its secret). */
export interface WebhookStatus {
  id: number;
  url: string;
  /** null: every type */
  eventTypes: string[] | null;
  state: 'ok' | 'failing' | 'disabled';
  /** matching events not delivered yet, counted up to PENDING_COUNT_CAP (more: PENDING_COUNT_CAP + 1) */
  pending: number;
  lastDeliveredAt: string | null;
  failingSince: string | null;
  nextAttemptAt: string | null;
  disabledAt: string | null;
  disabledReason: string | null;
}

/** Every source, counted by what it needs (a source may count in several of withError, overdue, neverSynced). */
export interface SourcesSummary {
  total: number;
  paused: number;
  withError: number;
  overdue: number;
  neverSynced: number;
  /** sources with an error, overdue, with a bad schedule or never synced: listed first */
  attention: number;
}

export interface StatusReport extends HoldsStatus, ItemsStatus {
  generatedAt: string;
  /** the sources shown: those needing attention first, then by ID; at most STATUS_SOURCES_SHOWN unless every one was asked for */
  sources: SourceStatus[];
  /** every source counted, and how many of them `sources` holds */
  sourcesSummary: SourcesSummary & { shown: number };
  inFlight: BatchProgress[];
  /** batches that ended in the last 24 hours, the latest first (at most STATUS_RECENT_BATCHES) */
  recent: RecentBatch[];
  /** every batch that ended in the last 24 hours, counted (`recent` lists the latest of them) */
  recentTotal: number;
  batchesByStatus: Record<string, number>;
  credits: CreditsStatus;
  /** every table of the schema, largest first: heap + TOAST + indexes, TOAST and indexes alone, in bytes */
  storage: TableStorage[];
  /** null before the first prune */
  lastPrune: PruneStatus | null;
  /** the webhook endpoints (docs/corpus.md "Change events and webhooks") */
  webhooks: WebhookStatus[];
  /** rolling upgrades: this build's newest migration and the applied ones newer than it */
  schema: SchemaStatus;
  /** documents waiting for their passages, the search index (src/pipeline/services/search-index.ts), in all and by kind; passages stored */
  searchIndex: {
    pending: number;
    pendingByKind: Record<string, number>;
    oldestQueuedAt: string | null;
    passages: number;
  };
  /** web pages stored, of them gone (no source finds them any more), and their distinct versions */
  pages: PageTotals;
  /** media items of other platforms stored, and their transcripts by state */
  media: MediaTotals;
  /** search by meaning (issue #32): off, pgvector missing, or the configured model's coverage */
  embeddings: EmbeddingsStatus;
}

/**
 * The embeddings as `status` shows them: `off` (EMBEDDINGS_BASE_URL unset), the vectors' table
 * missing (`not-installed`: the server lacks pgvector; `not-created`: an embedder creates it at
 * start), or the configured model's facts with the daily budget (null: none).
 */
export type EmbeddingsStatus =
  | { state: 'off' | 'not-installed' | 'not-created' }
  | ({
      state: 'ready';
      tokensPerDay: number | null;
      /** the model search by meaning uses (src/pipeline/read/search-model.ts), and whether it covers every passage */
      search: { model: string; covers: boolean };
    } & EmbeddingsFacts);

/** What `status` needs of EMBEDDINGS_*: the model, its dimensions, the budget. */
export type EmbeddingsStatusOptions = ModelSpace & { tokensPerDay?: number | undefined };

export async function readEmbeddingsStatus(
  sql: Queryable,
  opts: EmbeddingsStatusOptions | undefined,
): Promise<EmbeddingsStatus> {
  if (opts === undefined) return { state: 'off' };
  const state = await readEmbeddingsStoreState(sql);
  if (state !== 'ready') return { state };
  const facts = await readEmbeddingsFacts(sql, opts);
  const m = await searchModel(sql, opts);
  const search = m.state === 'ready' ? { model: m.model, covers: m.covers } : { model: opts.model, covers: false };
  return { state, tokensPerDay: opts.tokensPerDay ?? null, search, ...facts };
}

export interface SchemaStatus {
  /** the newest migration this build carries */
  built: string;
  /** `current`, or newer migrations that are all compatible (daemons of this build go on), or not (they schedule nothing) */
  state: SchemaVerdict['state'];
  /** applied migrations newer than this build, oldest first */
  newer: { tag: string; createdAt: number; backwardCompatible: boolean }[];
  /** why daemons of this build schedule nothing, when they do not */
  reason: string | null;
}

export async function readSchemaStatus(sql: Queryable): Promise<SchemaStatus> {
  const v = await readSchemaVerdict(sql);
  return {
    built: newestBuiltMigration().tag,
    state: v.state,
    newer: v.newer.map((m) => ({ tag: migrationLabel(m), createdAt: m.createdAt, backwardCompatible: m.compatible })),
    reason: schemaStopReason(v) ?? null,
  };
}

const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);

/** Hold events `status` shows. */
export const STATUS_HOLD_EVENTS = 5;
const DAY_MS = 24 * 3_600_000;
/** How far back `recent` reaches, ms. */
const STATUS_RECENT_MS = DAY_MS;
/** Recently ended batches listed at most. */
export const STATUS_RECENT_BATCHES = 50;
/** A scheduled source counts as overdue once its last cron time is this far past without a sync, in ms. */
export const OVERDUE_GRACE_MS = 10 * 60_000;

/** How long a hold of another key than the configured one is still mentioned, ms. */
export const OTHER_KEY_HOLDS_SHOWN_MS = DAY_MS;

/**
 * The holds as `status` and the pages show them. With `keyFingerprint` (the configured API key's),
 * only the holds that stop a process using that key are holds (as /readyz and /metrics say); those
 * of another key are listed apart while recent, then not at all (`holds clear` removes them).
 */
export async function readHolds(sql: Queryable, keyFingerprint?: string): Promise<HoldsStatus> {
  const all = await activeHolds(sql);
  const applies = (h: UpstreamHoldRow) =>
    keyFingerprint === undefined || h.keyFingerprint === null || h.keyFingerprint === keyFingerprint;
  const holds = all.filter(applies);
  const now = await databaseNow(sql);
  const others = all.filter((h) => !applies(h) && now.getTime() - h.lastSeenAt.getTime() <= OTHER_KEY_HOLDS_SHOWN_MS);
  const events = await recentHoldEvents(sql, STATUS_HOLD_EVENTS);
  const lost = await lostSubmissions(sql);
  return {
    upstreamHolds: holds.map((h) => ({
      code: h.code,
      scope: h.scope,
      reason: h.reason,
      since: h.since.toISOString(),
      message: describeHold(h),
      keyFingerprint: h.keyFingerprint,
    })),
    otherKeyHolds: others.map((h) => ({
      code: h.code,
      since: h.since.toISOString(),
      lastSeenAt: h.lastSeenAt.toISOString(),
      message: describeHold(h),
      keyFingerprint: h.keyFingerprint,
    })),
    holdEvents: events.map((e) => ({
      code: e.code,
      event: e.event,
      reason: e.reason,
      at: e.at.toISOString(),
      keyFingerprint: e.keyFingerprint,
    })),
    lostSubmissions: lost.map((l) => ({
      id: l.id,
      sourceId: l.sourceId,
      kind: l.kind,
      lang: l.lang,
      creditsEstimated: l.creditsEstimated,
      at: l.createdAt.toISOString(),
      detail: l.detail,
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
    pages: s.pages,
    media: s.media,
    lastError: s.lastError,
    lastErrorCode: s.lastErrorCode,
    lastErrorAt: iso(s.lastErrorAt),
  };
}

export type Freshness = { label: string; tone: 'ok' | 'warn' | 'bad' | 'muted' };

/** The latest time a cron expression fired at or before `now` (UTC); undefined for a bad expression. */
function lastCronTime(cron: string, now: Date): Date | undefined {
  try {
    return CronExpressionParser.parse(cron, { tz: 'UTC', currentDate: now }).prev().toDate();
  } catch {
    return undefined;
  }
}

/**
 * `lastCronTime` remembered per expression for one `now`: parsing costs ~0.15-0.25 ms, 0.3-0.5 s
 * for 2 000 sources, while sources mostly share a few schedules.
 */
function cronTimesAt(now: Date): (cron: string) => Date | undefined {
  const known = new Map<string, Date | undefined>();
  return (cron) => {
    if (!known.has(cron)) known.set(cron, lastCronTime(cron, now));
    return known.get(cron);
  };
}

/**
 * Is the source as fresh as its schedule promises? A source whose latest sync or batch failed
 * (`hasError`: its `last_error`, cleared by the next good sync) is not called fresh.
 */
export function freshnessOf(
  s: Pick<SourceStatus, 'paused' | 'cron' | 'lastSyncedAt'> & { hasError?: boolean },
  now: Date,
  lastDue: (cron: string) => Date | undefined = (cron) => lastCronTime(cron, now),
): Freshness {
  const f = scheduleFreshness(s, now, lastDue);
  return s.hasError && (f.label === 'fresh' || f.label === 'backfill only') ? { label: 'failing', tone: 'bad' } : f;
}

function scheduleFreshness(
  s: Pick<SourceStatus, 'paused' | 'cron' | 'lastSyncedAt'>,
  now: Date,
  lastDue: (cron: string) => Date | undefined,
): Freshness {
  if (s.paused) return { label: 'paused', tone: 'muted' };
  if (s.lastSyncedAt === null) return { label: 'never synced', tone: 'warn' };
  if (s.cron === null) return { label: 'backfill only', tone: 'muted' };
  const due = lastDue(s.cron);
  if (due === undefined) return { label: 'bad schedule', tone: 'bad' };
  const synced = Date.parse(s.lastSyncedAt);
  if (synced < due.getTime() && now.getTime() - due.getTime() > OVERDUE_GRACE_MS) {
    return { label: 'overdue', tone: 'bad' };
  }
  return { label: 'fresh', tone: 'ok' };
}

/** 0: needs a person now (an error, overdue, a bad schedule); 1: not yet synced; 2: fine. */
function attentionRank(hasError: boolean, f: Freshness): number {
  if (hasError || f.tone === 'bad') return 0;
  return f.tone === 'warn' ? 1 : 2;
}

/** A source of a page, with its freshness at the time of the read. */
export type RankedSource = SourceStatus & { freshness: Freshness };

export interface SourcesPage extends SourcesSummary {
  /** 1-based; a page past the last shows the last */
  page: number;
  pages: number;
  /** the sources of this page, those needing attention first, then by ID */
  rows: RankedSource[];
}

export interface SourcesPageOptions {
  /** 1-based; default 1 */
  page?: number;
  /** sources per page; 'all': every source on one page */
  perPage: number | 'all';
}

/**
 * Every source ranked by the attention it needs (an error, overdue or a bad schedule first, then
 * never synced, then the rest, each by ID), counted, and one page of them read with their counts.
 * `now` is the clock freshness is judged by (the database's, so it does not depend on this
 * machine's).
 *
 * Sources alike in schedule, pause, error and side of the schedule's latest due time are judged
 * alike by `freshnessOf`, the one rule: Postgres counts them by bucket in one plain pass
 * (`sourceBuckets`), each group is judged once here, and the page is read rank by rank, walking
 * the primary key of each rank's groups only as far as the page reaches. Ranked in Postgres
 * over every source instead (a key per row, sorted), this read took 3x longer at 2 000 sources
 * than at 200 (bench:scale: 4.9 -> 14.6 ms).
 */
export async function readSourcesPage(q: Queryable, now: Date, opts: SourcesPageOptions): Promise<SourcesPage> {
  const lastDue = cronTimesAt(now);
  const groups: (SourceGroupRef & { sources: number; freshness: Freshness; rank: number })[] = [];
  for (const b of await sourceBuckets(q)) {
    const dueAt = b.cron === null ? null : (lastDue(b.cron) ?? null);
    const synced = b.sources - b.neverSynced;
    // a bucket's synced sources before and since the due time: usually all on one side
    let before = 0;
    if (dueAt !== null && synced > 0 && b.oldestSync !== null && b.oldestSync < dueAt) {
      before = b.newestSync !== null && b.newestSync < dueAt ? synced : await countSyncedBefore(q, b, dueAt);
    }
    const sides: [SyncedSide, number, string | null][] = [
      ['never', b.neverSynced, null],
      ['before', before, dueAt ? new Date(dueAt.getTime() - 1).toISOString() : null],
      ['after', synced - before, dueAt?.toISOString() ?? b.newestSync?.toISOString() ?? null],
    ];
    for (const [side, sources, lastSyncedAt] of sides) {
      if (sources === 0) continue;
      const freshness = freshnessOf(
        { paused: b.paused, cron: b.cron, lastSyncedAt, hasError: b.hasError },
        now,
        lastDue,
      );
      groups.push({
        cron: b.cron,
        paused: b.paused,
        hasError: b.hasError,
        side,
        dueAt,
        sources,
        freshness,
        rank: attentionRank(b.hasError, freshness),
      });
    }
  }
  const count = (pick: (g: (typeof groups)[number]) => boolean) =>
    groups.reduce((n, g) => n + (pick(g) ? g.sources : 0), 0);
  const total = count(() => true);
  const perPage = opts.perPage === 'all' ? Math.max(1, total) : opts.perPage;
  const pages = Math.max(1, Math.ceil(total / perPage));
  const page = Math.min(Math.max(1, opts.page ?? 1), pages);
  // the page's window over the ranks, each rank's sources by ID
  const rows: SourceWithStats[] = [];
  let skip = (page - 1) * perPage;
  for (const rank of [0, 1, 2]) {
    const inRank = groups.filter((g) => g.rank === rank);
    const n = inRank.reduce((k, g) => k + g.sources, 0);
    if (skip >= n) {
      skip -= n;
      continue;
    }
    rows.push(...(await sourcesInGroups(q, inRank, { limit: perPage - rows.length, offset: skip })));
    skip = 0;
    if (rows.length >= perPage) break;
  }
  return {
    total,
    paused: count((g) => g.paused),
    withError: count((g) => g.hasError),
    overdue: count((g) => g.freshness.label === 'overdue'),
    neverSynced: count((g) => g.freshness.label === 'never synced'),
    attention: count((g) => g.rank < 2),
    page,
    pages,
    // each row judged by the same rule (a source changed since the counts is judged as it is now)
    rows: rows.map((s) => {
      const row = toSourceStatus(s);
      return { ...row, freshness: freshnessOf({ ...row, hasError: row.lastError !== null }, now, lastDue) };
    }),
  };
}

/**
 * The sources `status` shows by default, with their counts: the first STATUS_SOURCES_SHOWN by
 * attention (what bench:scale measures as "the per-source counts status reads").
 */
export async function readStatusSources(sql: Queryable): Promise<SourceStatus[]> {
  const { rows } = await readSourcesPage(sql, await databaseNow(sql), { perPage: STATUS_SOURCES_SHOWN });
  return rows.map(withoutFreshness);
}

/** A row as `status` prints it: its order and the summary say which need attention. */
function withoutFreshness({ freshness: _, ...row }: RankedSource): SourceStatus {
  return row;
}

/** A batch that ended recently: its progress, and its retryable items still to re-submit. */
export type RecentBatch = BatchProgress & { retryablePending: number };

/** Batches that ended within the last 24 hours, the latest first, with their progress. */
export async function readRecentBatches(sql: Queryable): Promise<RecentBatch[]> {
  const ids = await recentlyEndedJobIds(sql, STATUS_RECENT_MS, STATUS_RECENT_BATCHES);
  // batchProgress reads in submission order; the list is the latest ended first
  const rank = new Map(ids.map((id, i) => [id, i]));
  const batches = (await batchProgress(sql, ids)).sort((a, b) => rank.get(a.jobId)! - rank.get(b.jobId)!);
  const pending = await retryablePendingByBatch(
    sql,
    batches.filter((b) => b.retryable > 0).map((b) => b.jobId),
  );
  return batches.map((b) => ({ ...b, retryablePending: pending.get(b.jobId) ?? 0 }));
}

/** Every batch that ended within the last 24 hours, counted. */
export function countRecentBatches(sql: Queryable): Promise<number> {
  return recentlyEndedCount(sql, STATUS_RECENT_MS);
}

function totalsOf(byState: Record<ItemState, number>, retryablePending: number): OutcomeTotals {
  return {
    landed: byState.landed,
    sunk: byState.sunk,
    failed: byState.failed,
    retryable: byState.retryable,
    retryablePending,
    quarantined: byState.quarantined,
    processing: byState.processing,
  };
}

/** What the items came to: now (each video's latest outcome), per language asked, and history. */
export async function readItems(sql: Queryable): Promise<ItemsStatus> {
  const outcomes = await outcomeCounts(sql);
  const latestErrors = await outcomeErrorCounts(sql);
  const coverage = await languageCoverage(sql);
  const historyErrors = await itemErrorCodeCounts(sql);
  const history = await itemStateCounts(sql);
  const byReason = await quarantineCounts(sql);
  const gone = await goneCounts(sql);
  const now = totalOutcomes(outcomes);
  return {
    items: totalsOf(now, now.retryable),
    itemErrors: latestErrors.map((e) => ({
      kind: e.kind,
      lang: e.lang,
      errorCode: e.errorCode,
      state: e.state,
      items: e.videos,
    })),
    outcomes: outcomes.map((o) => ({ kind: o.kind, lang: o.lang, ...totalsOf(o.byState, o.byState.retryable) })),
    languageCoverage: coverage,
    history: { items: totalsOf(history.byState, history.retryablePending), itemErrors: historyErrors },
    quarantined: { total: Object.values(byReason).reduce((n, c) => n + c, 0), byReason },
    gone: { total: Object.values(gone).reduce((n, c) => n + c, 0), byReason: gone },
  };
}

/**
 * The sources' rows with their language coverage ([] for a source asking for the default
 * language): one probe per video of these sources, so only the sources shown are read.
 */
export async function withCoverage(sql: Queryable, rows: SourceStatus[]): Promise<SourceStatus[]> {
  const asking = rows.filter((r) => r.langs.length > 0).map((r) => r.id);
  const bySource = new Map<number, LanguageCoverage[]>();
  for (const { sourceId, ...c } of await sourceLanguageCoverage(sql, asking))
    bySource.set(sourceId, [...(bySource.get(sourceId) ?? []), c]);
  return rows.map((r) => ({ ...r, coverage: bySource.get(r.id) ?? [] }));
}

/** The rows of `--translate` sources with their translations' counts, backlog and latest refusals. */
export async function withTranslations(sql: Queryable, rows: SourceStatus[]): Promise<SourceStatus[]> {
  const out: SourceStatus[] = [];
  // a source deleted since the page was read has no settings: shown without translations
  const settings = new Map(
    (
      await translateSettings(
        sql,
        rows.map((r) => r.id),
      )
    ).map((t) => [t.sourceId, t]),
  );
  for (const r of rows) {
    const source = settings.get(r.id);
    if (source === undefined) {
      out.push(r);
      continue;
    }
    let backlog = 0;
    for (const lang of source.translateLangs)
      backlog += (await translationCandidates(sql, { sourceId: source.sourceId, lang, refresh: false })).length;
    const refusals = await budgetRefusals(sql, source.sourceId, STATUS_TRANSLATION_REFUSALS_SHOWN);
    out.push({
      ...r,
      translations: {
        langs: source.translateLangs,
        maxMinutes: source.maxTranslateMinutes,
        usedMinutes: await translatedMinutes(sql, source.sourceId),
        ...(await translationCounts(sql, source.sourceId)),
        backlog,
        latestRefused: refusals.map((x) => ({ ...x, at: x.at.toISOString() })),
      },
    });
  }
  return out;
}

export async function readCredits(sql: Queryable): Promise<CreditsStatus> {
  const snap = await latestCreditSnapshot(sql);
  const dayAgo = await firstCreditSnapshotWithin(sql, DAY_MS);
  const estimatedAllTime = await creditsEstimatedTotal(sql);
  const usedLast24h =
    snap && dayAgo && snap.usedCredits !== null && dayAgo.usedCredits !== null && snap.usedCredits >= dayAgo.usedCredits
      ? snap.usedCredits - dayAgo.usedCredits
      : null;
  const byDay = await billedByDay(sql, BILLED_DAYS_SHOWN);
  const today = new Date().toISOString().slice(0, 10);
  return {
    plan: snap?.plan ?? null,
    organizationId: snap?.organizationId ?? null,
    maxCredits: snap?.maxCredits ?? null,
    usedCredits: snap?.usedCredits ?? null,
    remaining:
      snap && snap.maxCredits !== null && snap.usedCredits !== null ? snap.maxCredits - snap.usedCredits : null,
    takenAt: iso(snap?.takenAt),
    estimatedAllTime,
    // negative when a new billing period started in between: unknown then
    usedLast24h,
    billedLast24h:
      usedLast24h !== null && dayAgo && snap ? await billedBetween(sql, dayAgo.takenAt, snap.takenAt) : null,
    billedByDay: byDay,
    billedTodayBySource: await billedBySource(sql, new Date(`${today}T00:00:00Z`), BILLED_SOURCES_SHOWN),
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

/** Webhook endpoints with their health; pending counts stop at PENDING_COUNT_CAP + 1. */
export async function readWebhooks(sql: Queryable): Promise<WebhookStatus[]> {
  return (await listEndpoints(sql)).map((e) => ({
    id: e.id,
    url: e.url,
    eventTypes: e.eventTypes,
    state: !e.enabled ? 'disabled' : e.failingSince !== null ? 'failing' : 'ok',
    pending: Math.min(e.pending, PENDING_COUNT_CAP + 1),
    lastDeliveredAt: iso(e.lastDeliveredAt),
    failingSince: iso(e.failingSince),
    nextAttemptAt: iso(e.nextAttemptAt),
    disabledAt: iso(e.disabledAt),
    disabledReason: e.disabledReason,
  }));
}

export interface CollectStatusOptions {
  /** every source instead of the first STATUS_SOURCES_SHOWN; default false */
  allSources?: boolean;
  /** the configured API key's fingerprint: its holds are holds, another key's are listed apart */
  keyFingerprint?: string | undefined;
  /** EMBEDDINGS_* (undefined: embeddings off) */
  embeddings?: EmbeddingsStatusOptions | undefined;
}

export async function collectStatus(sql: Queryable, opts: CollectStatusOptions = {}): Promise<StatusReport> {
  const page = await readSourcesPage(sql, await databaseNow(sql), {
    perPage: opts.allSources ? 'all' : STATUS_SOURCES_SHOWN,
  });
  const inFlight = await batchProgress(sql, await inFlightJobIds(sql));
  const recent = await readRecentBatches(sql);
  const recentTotal = await countRecentBatches(sql);
  const batchesByStatus = await batchCountsByStatus(sql);
  const items = await readItems(sql);
  const credits = await readCredits(sql);
  const holds = await readHolds(sql, opts.keyFingerprint);
  const storage = await tableStorage(sql);
  const lastPrune = await readLastPrune(sql);
  const webhooks = await readWebhooks(sql);
  const schema = await readSchemaStatus(sql);
  const backlog = await searchBacklog(sql);
  const passages = await passageCount(sql);
  const pages = await pageTotals(sql);
  const media = await mediaTotals(sql);
  const embeddings = await readEmbeddingsStatus(sql, opts.embeddings);
  return {
    generatedAt: new Date().toISOString(),
    ...holds,
    sources: await withTranslations(sql, await withCoverage(sql, page.rows.map(withoutFreshness))),
    sourcesSummary: {
      total: page.total,
      paused: page.paused,
      withError: page.withError,
      overdue: page.overdue,
      neverSynced: page.neverSynced,
      attention: page.attention,
      shown: page.rows.length,
    },
    inFlight,
    recent,
    recentTotal,
    batchesByStatus,
    ...items,
    credits,
    storage,
    lastPrune,
    webhooks,
    schema,
    searchIndex: {
      pending: backlog.pending,
      pendingByKind: backlog.pendingByKind,
      oldestQueuedAt: iso(backlog.oldestQueuedAt),
      passages,
    },
    pages,
    media,
    embeddings,
  };
}
