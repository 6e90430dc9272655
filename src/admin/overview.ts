/**
 * The overview page (`/`): what a person checks at a glance. A summary of every source and the
 * sources needing attention first (an error, overdue, a bad schedule, never synced), the rest
 * paged (`?page=N`), each with what its videos got per language asked; batches in flight with
 * progress bars; the latest error codes of the page's sources' videos; recent batches; credit
 * usage over time; the storage per table and the latest prune; when web pages are stored, how many
 * and how many are gone.
 * Each source and batch links to its own page (source-page.ts, batch-page.ts), the recent
 * batches to the list of every batch (batches-page.ts); the frame and the hold banners are
 * layout.ts's. Rendered on the server from Postgres on each request, refreshed by the browser
 * every few seconds; no script, no front-end build.
 *
 * Every section is read in its own savepoint of one read-only transaction under a
 * `statement_timeout` (src/db/statement-timeout.ts): a section Postgres cancels is logged and
 * left out, the others are shown. Each reads counters or rows bounded by what the page shows
 * (at 2 000 sources the page lists 50 of them, not 2 000: it was 1.4 MB).
 */
import { pageCounts, type PageCounts } from '../db/admin-pages.ts';
import { batchProgress, type BatchProgress } from '../db/batch-progress.ts';
import { batchCountsByStatus, inFlightJobIds } from '../db/batches.ts';
import { databaseNow, type Queryable } from '../db/connection.ts';
import { creditUsage } from '../db/credit-snapshots.ts';
import { sourceOutcomes, type SourceLanguageCoverage, type SourceOutcomeError } from '../db/video-outcomes.ts';
import { sourcesWithStatsByIds } from '../db/source-stats.ts';
import { isQueryCanceled, readSections, type Pool } from '../db/statement-timeout.ts';
import { tableStorage, type TableStorage } from '../db/storage.ts';
import { latestEvents, type EventRow } from '../db/events.ts';
import { mediaCounts, type MediaCount } from '../db/media.ts';
import { translationTotals } from '../db/translations.ts';
import { MEDIA_TRANSCRIPT_UNSTORED_STATES } from '../domain/media.ts';
import type { TranslationState } from '../domain/sources.ts';
import { PENDING_COUNT_CAP } from '../db/webhooks.ts';
import { describeCoverage } from '../domain/coverage.ts';
import { silentLogger, type Logger } from '../log.ts';
import {
  describePrune,
  readCredits,
  readHolds,
  readItems,
  readLastPrune,
  countRecentBatches,
  readRecentBatches,
  readSourcesPage,
  readWebhooks,
  type CreditsStatus,
  type HoldsStatus,
  type ItemsStatus,
  type PruneStatus,
  type RankedSource,
  type RecentBatch,
  type WebhookStatus,
  type SourcesPage,
  readEmbeddingsStatus,
  type EmbeddingsStatus,
  type EmbeddingsStatusOptions,
} from '../pipeline/read/status.ts';
import { compactBytes, compactNumber, creditChartSvg, type CreditPoint } from './chart.ts';
import { html, type SafeHtml } from './html.ts';
import { BATCHES_PER_PAGE } from './batches-page.ts';
import {
  ago,
  batchName,
  jobLink,
  pageLinks,
  pill,
  progressBar,
  renderPage,
  sourceHref,
  sourceLink,
  statusPill,
  unavailable,
} from './layout.ts';

/** Points of the credit chart at most (snapshots are bucketed in time beyond that). */
export const CREDIT_CHART_MAX_POINTS = 300;
/** How far back the credit chart reaches, in days. */
export const CREDIT_CHART_DAYS = 30;
/** Browser refresh interval of the page, in seconds. */
export const OVERVIEW_REFRESH_S = 10;
/** Sources per page (those needing attention first). */
export const OVERVIEW_SOURCES_PER_PAGE = 50;
/** Batches in flight listed at most (`status --json` lists every one). */
export const OVERVIEW_IN_FLIGHT_SHOWN = 50;
/** Longest one statement of the page may run before Postgres cancels it (its section is left out), ms. */
export const OVERVIEW_STATEMENT_TIMEOUT_MS = 2_000;
/** Recently finished batches listed at most. */
const RECENT_BATCHES_SHOWN = 10;

/** a source as the page lists it; the ranking and the freshness rule live in src/pipeline/read/status.ts, shared with `status` */
export type OverviewSource = RankedSource;

export interface OverviewSources extends SourcesPage {
  /**
   * per source of this page, its videos whose latest outcome (metadata, or a transcript in a
   * language it asks for) carries an errorCode, by kind, language, code and state: what holds now,
   * not every item ever received (a video re-submitted and stored since is not counted)
   */
  errorsBySource: SourceOutcomeError[];
  /** per source of this page that asks for languages, what its videos got in each */
  coverageBySource: SourceLanguageCoverage[];
}

export interface OverviewData {
  /** the database's clock, so ages do not depend on this machine's */
  now: Date;
  holds?: HoldsStatus;
  sources?: OverviewSources;
  inFlight?: { total: number; shown: BatchProgress[] };
  batchesByStatus?: Record<string, number>;
  items?: ItemsStatus;
  credits?: CreditsStatus;
  creditPoints?: CreditPoint[];
  /** batches that ended in the last 24 hours, the latest first (at most RECENT_BATCHES_SHOWN) */
  recent?: RecentBatch[];
  /** every batch that ended in the last 24 hours, counted */
  recentTotal?: number;
  /** the title (or external ID) of each source the batches shown belong to */
  sourceNames?: Record<number, string>;
  storage?: TableStorage[];
  /** null before the first prune */
  lastPrune?: PruneStatus | null;
  /** the newest change events, the newest first */
  changes?: EventRow[];
  webhooks?: WebhookStatus[];
  /** web pages stored and gone (the tile shows only when there is one) */
  pages?: PageCounts;
  /** media items by platform and transcript state (the tile shows only when there is one) */
  media?: MediaCount[];
  /** translations by the state they are shown in (the tile shows only when there is one) */
  translations?: Record<TranslationState, number>;
  /** search by meaning (the tile shows only when EMBEDDINGS_* is set) */
  embeddings?: EmbeddingsStatus;
  /** sections left out of this page: their statement was cancelled (statement_timeout) or failed */
  unavailable: string[];
}

export interface LoadOverviewOptions {
  /** 1-based page of the sources; default 1 */
  page?: number;
  /** per statement, ms; default OVERVIEW_STATEMENT_TIMEOUT_MS */
  timeoutMs?: number;
  /** where a section that could not be read is logged; default: nowhere */
  log?: Logger;
  /** the fingerprint of the configured API key: its holds are the banner, another key's a dim line */
  keyFingerprint?: string | undefined;
  /** EMBEDDINGS_* (unset: no embeddings tile) */
  embeddings?: EmbeddingsStatusOptions | undefined;
}

async function loadSources(q: Queryable, now: Date, page: number): Promise<OverviewSources> {
  const sources = await readSourcesPage(q, now, { page, perPage: OVERVIEW_SOURCES_PER_PAGE });
  // the page's sources only: one probe per video of theirs, whatever the installation's size
  const { errors, coverage } = await sourceOutcomes(
    q,
    sources.rows.map((s) => s.id),
  );
  return { ...sources, errorsBySource: errors, coverageBySource: coverage };
}

async function loadInFlight(q: Queryable): Promise<{ total: number; shown: BatchProgress[] }> {
  const ids = await inFlightJobIds(q);
  return { total: ids.length, shown: await batchProgress(q, ids.slice(0, OVERVIEW_IN_FLIGHT_SHOWN)) };
}

/**
 * Everything the page shows, each section read on its own (see the file's comment); a section
 * that fails is logged (`overview.section_failed`) and named in `unavailable`.
 */
export async function loadOverview(pool: Pool, opts: LoadOverviewOptions = {}): Promise<OverviewData> {
  const timeoutMs = opts.timeoutMs ?? OVERVIEW_STATEMENT_TIMEOUT_MS;
  let now = new Date();
  /** the batches shown, whose sources are named */
  const shown: BatchProgress[] = [];
  const { values, failed } = await readSections(pool, timeoutMs, {
    now: async (q) => (now = await databaseNow(q)),
    holds: (q) => readHolds(q, opts.keyFingerprint),
    sources: (q) => loadSources(q, now, opts.page ?? 1),
    inFlight: async (q) => {
      const r = await loadInFlight(q);
      shown.push(...r.shown);
      return r;
    },
    batchesByStatus: batchCountsByStatus,
    items: readItems,
    credits: readCredits,
    creditPoints: (q) => creditUsage(q, { days: CREDIT_CHART_DAYS, maxPoints: CREDIT_CHART_MAX_POINTS }),
    recent: async (q) => {
      const r = (await readRecentBatches(q)).slice(0, RECENT_BATCHES_SHOWN);
      shown.push(...r);
      return r;
    },
    recentTotal: countRecentBatches,
    sourceNames: async (q) => {
      const ids = [...new Set(shown.map((b) => b.sourceId).filter((id): id is number => id !== null))];
      const rows = await sourcesWithStatsByIds(q, ids);
      return Object.fromEntries(rows.map((s) => [s.id, s.title ?? s.externalId]));
    },
    storage: tableStorage,
    lastPrune: readLastPrune,
    changes: (q) => latestEvents(q, OVERVIEW_CHANGES_SHOWN),
    webhooks: readWebhooks,
    pages: pageCounts,
    media: mediaCounts,
    translations: translationTotals,
    embeddings: (q) => readEmbeddingsStatus(q, opts.embeddings),
  });
  const log = opts.log ?? silentLogger();
  for (const { section, error } of failed) {
    log.warn(
      {
        event: 'overview.section_failed',
        section,
        cancelled: isQueryCanceled(error),
        err: { message: error instanceof Error ? error.message : String(error) },
      },
      'overview section left out',
    );
  }
  const v = values;
  return {
    now,
    holds: v.holds,
    sources: v.sources,
    inFlight: v.inFlight,
    batchesByStatus: v.batchesByStatus,
    items: v.items,
    credits: v.credits,
    creditPoints: v.creditPoints,
    recent: v.recent,
    recentTotal: v.recentTotal,
    sourceNames: v.sourceNames,
    storage: v.storage,
    lastPrune: v.lastPrune,
    changes: v.changes,
    webhooks: v.webhooks,
    pages: v.pages,
    media: v.media,
    translations: v.translations,
    embeddings: v.embeddings,
    unavailable: failed.map((f) => f.section),
  };
}

export interface RenderOverviewOptions {
  /** where bull-board is mounted; default /admin/queues */
  queuesPath?: string;
  /** seconds between browser refreshes; 0 turns it off; default OVERVIEW_REFRESH_S */
  refreshSeconds?: number;
}

/** Change events shown on the overview, the newest first. */
export const OVERVIEW_CHANGES_SHOWN = 15;
/** Characters of an event's data shown (the whole event: `videosite-ingest events --since ID --json`). */
const CHANGE_DATA_SHOWN = 160;

function renderChanges(changes: EventRow[] | undefined, names: ReadonlyMap<number, string>, now: Date): SafeHtml {
  if (changes === undefined) return unavailable('Recent changes');
  if (changes.length === 0)
    return html`<p class="muted">No events yet (batches, syncs and holds write them; <code>videosite-ingest events --follow</code>).</p>`;
  const rows = changes.map((e) => {
    const data = JSON.stringify(e.data);
    return html`<tr data-event-id="${e.id}">
      <td class="num">${e.id}</td><td><code>${e.type}</code></td><td class="small nowrap">${ago(e.occurredAt.toISOString(), now)}</td>
      <td>${e.sourceId === null ? html`<span class="muted">-</span>` : sourceLink(e.sourceId, names)}</td>
      <td class="small"><code>${data.length > CHANGE_DATA_SHOWN ? `${data.slice(0, CHANGE_DATA_SHOWN)}…` : data}</code></td>
    </tr>`;
  });
  return html`<table>
      <thead><tr><th class="num">id</th><th>type</th><th>when</th><th>source</th><th>data</th></tr></thead>
      <tbody>${rows}</tbody>
    </table>
    <p class="small muted">Every event: <code>videosite-ingest events --since ${changes[changes.length - 1]!.id - 1} --json</code></p>`;
}

/** Only the URL's scheme, host and port: a path or query may carry a token (a chat service's hook). */
function urlOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(unreadable URL)';
  }
}

function renderWebhooks(hooks: WebhookStatus[] | undefined, now: Date): SafeHtml {
  if (hooks === undefined) return unavailable('Webhook endpoints');
  if (hooks.length === 0)
    return html`<p class="muted">None. Add one: <code>videosite-ingest webhooks add https://…</code></p>`;
  const rows = hooks.map(
    (w) => html`<tr data-webhook-id="${w.id}">
      <td class="num">${w.id}</td><td><code>${urlOrigin(w.url)}</code>…</td><td>${w.eventTypes?.join(', ') ?? 'all'}</td>
      <td>${
        w.state === 'disabled'
          ? html`${pill('disabled', 'bad')} <span class="small">${w.disabledReason ?? ''} (<code>webhooks enable ${w.id}</code>)</span>`
          : w.state === 'failing'
            ? html`${pill('failing', 'warn')} <span class="small">since ${ago(w.failingSince, now)}</span>`
            : pill('ok', 'ok')
      }</td>
      <td class="num">${w.pending > PENDING_COUNT_CAP ? `>${PENDING_COUNT_CAP}` : w.pending}</td>
      <td class="small nowrap">${w.lastDeliveredAt ? ago(w.lastDeliveredAt, now) : 'never'}</td>
    </tr>`,
  );
  return html`<table>
      <thead><tr><th class="num">id</th><th>endpoint</th><th>events</th><th>state</th><th class="num">pending</th><th>last delivered</th></tr></thead>
      <tbody>${rows}</tbody>
    </table>`;
}

/** What a source's videos asked in each of its languages got, one compact line per language. */
function coverageCell(r: OverviewSource, coverage: Map<number, SourceLanguageCoverage[]>): SafeHtml {
  if (r.langs.length === 0) return html`<span class="muted">default</span>`;
  const lines = coverage.get(r.id) ?? [];
  if (lines.length === 0) return html`<span class="muted">${r.langs.join(', ')}: no videos yet</span>`;
  return html`${lines.map((c) => html`<div class="small nowrap" data-coverage-lang="${c.lang}">${describeCoverage(c)}</div>`)}`;
}

function renderSources(s: OverviewSources, now: Date): SafeHtml {
  if (s.total === 0)
    return html`<p class="muted">No sources yet. Add one: <code>videosite-ingest sources add channel @handle</code></p>`;
  const coverage = new Map<number, SourceLanguageCoverage[]>();
  for (const c of s.coverageBySource) coverage.set(c.sourceId, [...(coverage.get(c.sourceId) ?? []), c]);
  const rows = s.rows.map(
    (r) => html`<tr data-source-id="${r.id}">
      <td class="num">${r.id}</td>
      <td><a href="${sourceHref(r.id)}"><strong>${r.title ?? r.externalId}</strong></a><div class="small muted">${r.kind} · <code>${r.ref}</code></div></td>
      <td class="num">${r.videos}</td><td class="num">${r.transcripts}</td>
      <td class="coverage">${coverageCell(r, coverage)}</td>
      <td>${pill(r.freshness.label, r.freshness.tone)}<div class="small muted">${ago(r.lastSyncedAt, now)}</div></td>
      <td class="small">${r.paused ? 'paused' : (r.cron ?? 'backfill only')}</td>
      <td>${
        r.lastError
          ? html`<div class="error small"><code>${r.lastErrorCode ?? 'error'}</code> ${r.lastError}</div><div class="small muted">${ago(r.lastErrorAt, now)}</div>`
          : html`<span class="muted">none</span>`
      }</td>
    </tr>`,
  );
  const first = (s.page - 1) * OVERVIEW_SOURCES_PER_PAGE + 1;
  return html`<p class="small muted">${s.total} sources: ${
    s.attention > 0
      ? html`<span class="bad-text">${s.attention} need${s.attention === 1 ? 's' : ''} attention</span> (${s.withError} with an error, ${s.overdue} overdue, ${s.neverSynced} never synced), listed first`
      : 'none needs attention'
  } · ${s.paused} paused${s.pages > 1 ? ` · page ${s.page} of ${s.pages} (sources ${first}–${first + s.rows.length - 1})` : ''}</p>
    <table>
      <thead><tr><th class="num">id</th><th>source</th><th class="num">videos</th><th class="num">transcripts</th><th>languages (asked: in it, fell back, none)</th><th>freshness</th><th>schedule</th><th>last error</th></tr></thead>
      <tbody>${rows}</tbody>
    </table>
    ${pageLinks(s.page, s.pages, (n) => `?page=${n}#sources`, 'pages of sources')}`;
}

function renderErrors(s: OverviewSources, names: Map<number, string>): SafeHtml {
  const errors = s.errorsBySource;
  if (errors.length === 0)
    return html`<p class="muted">No video of the sources of this page has an error as its latest outcome.</p>`;
  const codes = [...new Set(errors.map((e) => e.errorCode))].sort();
  // videos per source and code, over kinds, languages and states (the source page splits them)
  const cells = new Map<string, number>();
  for (const e of errors) {
    const key = `${e.sourceId}\u0000${e.errorCode}`;
    cells.set(key, (cells.get(key) ?? 0) + e.videos);
  }
  const rows = [...new Set(errors.map((e) => e.sourceId))].map(
    (id) => html`<tr>
      <td>${sourceLink(id, names)}</td>
      ${codes.map((code) => {
        const n = cells.get(`${id}\u0000${code}`) ?? 0;
        return html`<td class="num">${n > 0 ? n : html`<span class="muted">0</span>`}</td>`;
      })}
    </tr>`,
  );
  return html`<p class="small muted">Videos whose latest outcome carries the code (metadata, or a transcript in a language the source asks for); a video re-submitted and stored since is not counted.</p>
    <table>
      <thead><tr><th>source</th>${codes.map((code) => html`<th class="num">${code}</th>`)}</tr></thead>
      <tbody>${rows}</tbody>
    </table>`;
}

function renderStorage(
  storage: TableStorage[] | undefined,
  lastPrune: PruneStatus | null | undefined,
  now: Date,
): SafeHtml {
  const prune =
    lastPrune === undefined
      ? ''
      : lastPrune === null
        ? html`<p class="small muted">No prune yet: daemons prune once a day (see what it would free: <code>videosite-ingest prune --dry-run</code>).</p>`
        : html`<p class="small${lastPrune.error !== null ? ' bad-text' : ''}" id="last-prune">Last prune ${ago(lastPrune.startedAt, now)}: ${describePrune(lastPrune, compactBytes)}</p>`;
  if (storage === undefined) return html`${unavailable('Storage per table')}${prune}`;
  const total = storage.reduce((n, t) => n + t.totalBytes, 0);
  return html`<p class="small muted">${compactBytes(total)} in ${storage.length} tables (heap, TOAST and indexes; row counts are the planner's estimates).</p>
    <table>
      <thead><tr><th>table</th><th class="num">rows</th><th class="num">total</th><th class="num">TOAST</th><th class="num">indexes</th></tr></thead>
      <tbody>${storage.map(
        (t) => html`<tr data-table="${t.table}"><td><code>${t.table}</code></td>
          <td class="num">${t.rowsEstimate === null ? '–' : compactNumber(t.rowsEstimate)}</td>
          <td class="num">${compactBytes(t.totalBytes)}</td><td class="num">${compactBytes(t.toastBytes)}</td><td class="num">${compactBytes(t.indexBytes)}</td></tr>`,
      )}</tbody>
    </table>
    ${prune}`;
}

type Names = ReadonlyMap<number, string>;

function renderTiles(d: OverviewData): SafeHtml {
  const { now, credits: c, sources } = d;
  const it = d.items?.items;
  const usedPct = c?.maxCredits ? Math.min(100, (100 * (c.usedCredits ?? 0)) / c.maxCredits) : null;
  const storageTotal = d.storage?.reduce((n, t) => n + t.totalBytes, 0);
  return html`<div class="tiles">
    <div class="tile"><div class="k">Sources</div><div class="v">${sources ? sources.total : '–'}</div>
      <div class="s">${
        sources
          ? html`${sources.paused} paused · ${sources.attention > 0 ? html`<span class="bad-text">${sources.attention} need attention</span>` : 'all fine'}`
          : 'not readable'
      }</div></div>
    <div class="tile"><div class="k">Batches in flight</div><div class="v">${d.inFlight ? d.inFlight.total : '–'}</div>
      <div class="s">${
        d.batchesByStatus
          ? Object.keys(d.batchesByStatus).length === 0
            ? 'none yet'
            : Object.entries(d.batchesByStatus).map(
                ([k, v], i) => html`${i > 0 ? ' · ' : ''}<a href="/batches?status=${k}">${k} ${v}</a>`,
              )
          : 'not readable'
      }</div></div>
    <div class="tile"><div class="k" title="each video's latest outcome per kind (metadata, transcript) and language">Stored (latest outcomes)</div><div class="v">${it ? compactNumber(it.sunk) : '–'}</div>
      <div class="s">${it ? `${it.landed} landing · ${it.failed} failed · ${it.retryable} retryable${it.quarantined ? ` · ${it.quarantined} quarantined` : ''}` : 'not readable'}</div></div>
    ${
      d.pages !== undefined && d.pages.stored > 0
        ? html`<div class="tile" id="pages-tile"><div class="k">Web pages</div><div class="v" id="pages-stored">${compactNumber(d.pages.stored)}</div>
      <div class="s"><span id="pages-gone">${d.pages.gone}</span> gone · ${d.pages.stored - d.pages.gone} held by a source</div></div>`
        : ''
    }
    ${mediaTile(d.media)}
    ${translationsTile(d.translations)}
    ${embeddingsTile(d.embeddings)}
    <div class="tile"><div class="k">Credits used</div><div class="v">${c?.usedCredits == null ? '–' : compactNumber(c.usedCredits)}</div>
      <div class="s">${
        c === undefined
          ? 'not readable'
          : c.maxCredits === null
            ? 'no /me snapshot yet'
            : `of ${compactNumber(c.maxCredits)} (${usedPct!.toFixed(1)}%) · plan ${c.plan ?? '?'}`
      }</div></div>
    <div class="tile"><div class="k">Storage</div><div class="v">${storageTotal === undefined ? '–' : compactBytes(storageTotal)}</div>
      <div class="s">${
        d.lastPrune === undefined
          ? 'last prune not readable'
          : d.lastPrune === null
            ? 'never pruned'
            : `last prune ${ago(d.lastPrune.startedAt, now)}`
      }</div></div>
  </div>`;
}

function renderInFlight(inFlight: OverviewData['inFlight'], names: Names, now: Date): SafeHtml {
  if (inFlight === undefined) return unavailable('Batches in flight');
  if (inFlight.total === 0) return html`<p class="muted">No batches in flight.</p>`;
  const rows = inFlight.shown.map(
    (b) => html`<tr data-job-id="${b.jobId}">
      <td>${jobLink(b.jobId)}</td>
      <td>${sourceLink(b.sourceId, names)}</td>
      <td>${batchName(b)}</td>
      <td>${statusPill(b)}</td>
      <td style="width:34%">${progressBar(b)}</td>
      <td class="num">${b.polls}</td>
      <td class="small nowrap">${ago(b.submittedAt, now)}</td>
    </tr>`,
  );
  return html`<table>
      <thead><tr><th>job</th><th>source</th><th>kind</th><th>status</th><th>progress</th><th class="num">polls</th><th>submitted</th></tr></thead>
      <tbody>${rows}</tbody>
    </table>${
      inFlight.total > inFlight.shown.length
        ? html`<p class="small muted">The ${inFlight.shown.length} submitted first of ${inFlight.total} (every one: <code>videosite-ingest status --json</code>).</p>`
        : ''
    }`;
}

function renderRecent(recent: RecentBatch[] | undefined, total: number | undefined, names: Names, now: Date): SafeHtml {
  const more = html`<p class="small"><a href="/batches" id="more-batches">Every batch, the latest first (${BATCHES_PER_PAGE} a page) ›</a></p>`;
  if (recent === undefined) return html`${unavailable('Recent batches')}${more}`;
  if (recent.length === 0) return html`<p class="muted">None.</p>${more}`;
  const rows = recent.map(
    (b) => html`<tr data-job-id="${b.jobId}">
      <td>${jobLink(b.jobId)}</td>
      <td>${sourceLink(b.sourceId, names)}</td>
      <td>${batchName(b)}</td>
      <td>${statusPill(b)}</td>
      <td class="num">${b.total ?? '-'}</td><td class="num">${b.sunk}</td>
      <td class="num">${b.failed}</td><td class="num">${b.retryablePending}</td>
      <td class="small nowrap">${ago(b.completedAt, now)}</td>
    </tr>`,
  );
  const count =
    total !== undefined && total > recent.length
      ? html`<p class="small muted" id="recent-count">The latest ${recent.length} of ${total} (${total - recent.length} more in the list of every batch).</p>`
      : '';
  return html`${count}<table>
      <thead><tr><th>job</th><th>source</th><th>kind</th><th>status</th><th class="num">total</th><th class="num">stored</th><th class="num">failed</th><th class="num" title="retryable items no later batch has re-submitted yet">to re-submit</th><th>finished</th></tr></thead>
      <tbody>${rows}</tbody>
    </table>${more}`;
}

function renderCredits(d: OverviewData): SafeHtml {
  const c = d.credits;
  return html`${d.creditPoints ? creditChartSvg(d.creditPoints) : unavailable('The credit chart')}
    ${c && (d.creditPoints?.length ?? 0) > 0 ? html`<div class="small muted">${c.usedLast24h !== null ? `${c.usedLast24h} used in the last 24 h · ` : ''}estimated cost of all recorded batches ${c.estimatedAllTime}</div>` : ''}`;
}

export function renderOverview(d: OverviewData, opts: RenderOverviewOptions = {}): string {
  const { now, sources } = d;
  const names = new Map<number, string>([
    ...Object.entries(d.sourceNames ?? {}).map(([id, name]): [number, string] => [Number(id), name]),
    ...(sources?.rows ?? []).map((s): [number, string] => [s.id, s.title ?? s.externalId]),
  ]);
  const section = (id: string, title: string, content: SafeHtml) => html`
  <section id="${id}">
    <h2>${title}</h2>
    ${content}
  </section>`;
  const body = html`
  ${renderTiles(d)}
  ${section('sources', 'Sources', sources ? renderSources(sources, now) : unavailable('Sources'))}
  ${section('in-flight', 'Batches in flight', renderInFlight(d.inFlight, names, now))}
  ${section('errors', 'Latest error codes per source', sources ? renderErrors(sources, names) : unavailable('Latest error codes'))}
  ${section('credits', 'Credit usage', renderCredits(d))}
  ${section('recent', 'Batches finished in the last 24 h, the latest first', renderRecent(d.recent, d.recentTotal, names, now))}
  ${section('changes', 'Recent changes', renderChanges(d.changes, names, now))}
  ${section('webhooks', 'Webhook endpoints', renderWebhooks(d.webhooks, now))}
  ${section('storage', 'Storage per table', renderStorage(d.storage, d.lastPrune, now))}`;
  return renderPage({
    title: 'overview',
    now,
    holds: d.holds,
    unavailable: d.unavailable,
    queuesPath: opts.queuesPath,
    refreshSeconds: opts.refreshSeconds ?? OVERVIEW_REFRESH_S,
    body,
  });
}

/** Media stored, their transcripts by state and the platforms they come from; nothing before the first. */
function mediaTile(media: MediaCount[] | undefined) {
  if (media === undefined || media.length === 0) return '';
  const sum = (keep: (c: MediaCount) => boolean) => media.filter(keep).reduce((n, c) => n + c.n, 0);
  const byPlatform = new Map<string, number>();
  for (const c of media) byPlatform.set(c.platform, (byPlatform.get(c.platform) ?? 0) + c.n);
  return html`<div class="tile" id="media-tile"><div class="k">Media</div><div class="v" id="media-stored">${compactNumber(sum(() => true))}</div>
      <div class="s"><span id="media-transcripts">${sum((c) => c.transcriptState === 'stored')}</span> transcripts ·
        <span id="media-empty">${sum((c) => c.transcriptState === 'empty')}</span> no speech ·
        <span id="media-pending">${sum((c) => c.transcriptState === 'pending')}</span> pending ·
        <span id="media-unstored">${sum((c) => MEDIA_TRANSCRIPT_UNSTORED_STATES.includes(c.transcriptState))}</span> not stored</div>
      <div class="s" id="media-platforms">${[...byPlatform].map(([p, n], i) => html`${i > 0 ? ' · ' : ''}${p} ${n}`)}</div></div>`;
}

/** Search by meaning: the model's coverage, its backlog and the day's tokens, or what is missing; nothing while off. */
function embeddingsTile(e: EmbeddingsStatus | undefined) {
  if (e === undefined || e.state === 'off') return '';
  if (e.state !== 'ready') {
    return html`<div class="tile" id="embeddings-tile"><div class="k">Embeddings</div><div class="v">–</div>
      <div class="s bad-text" id="embeddings-state">${e.state === 'not-installed' ? 'pgvector not installed' : 'pgvector not created yet'} (see status)</div></div>`;
  }
  const pct = e.passages === 0 ? 100 : (100 * e.covered) / e.passages;
  return html`<div class="tile" id="embeddings-tile"><div class="k" title="${e.model}">Embeddings</div><div class="v" id="embeddings-coverage">${pct.toFixed(1)}%</div>
      <div class="s"><span id="embeddings-covered">${e.covered}</span>/${e.passages} passages ·
        <span id="embeddings-backlog">${e.backlog}</span> waiting ·
        <span id="embeddings-tokens">${compactNumber(e.tokensToday)}</span>${e.tokensPerDay === null ? '' : ` of ${compactNumber(e.tokensPerDay)}`} tokens today${
          e.refusedToday > 0 ? html` · <span class="bad-text" id="embeddings-refused">budget spent</span>` : ''
        }</div></div>`;
}

/** Translations stored and those to look at (lost answers, refusals); nothing before the first. */
function translationsTile(t: Record<TranslationState, number> | undefined) {
  if (t === undefined || Object.values(t).every((n) => n === 0)) return '';
  return html`<div class="tile" id="translations-tile"><div class="k">Translations</div><div class="v" id="translations-stored">${compactNumber(t.stored)}</div>
      <div class="s"><span id="translations-sending">${t.sending}</span> sending ·
        <span id="translations-unknown" title="the answer was lost, or its process died while sending: it may have been billed; replay --lost releases it">${t.unknown}</span> unknown ·
        <span id="translations-failed">${t.failed}</span> failed ·
        <span id="translations-refused">${t['refused-budget']}</span> refused by the budget</div></div>`;
}
