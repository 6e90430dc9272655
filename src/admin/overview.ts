/**
 * The overview page (`/`): what a person checks at a glance. A summary of every source and the
 * sources needing attention first (an error, overdue, a bad schedule, never synced), the rest
 * paged (`?page=N`); batches in flight with progress bars; item error codes of the page's
 * sources; recent batches; credit usage over time; the storage per table and the latest prune.
 * Rendered on the server from Postgres on each request, refreshed by the browser every few
 * seconds; no script, no front-end build.
 *
 * Every section is read in its own savepoint of one read-only transaction under a
 * `statement_timeout` (src/db/statement-timeout.ts): a section Postgres cancels is logged and
 * left out, the others are shown. Each reads counters or rows bounded by what the page shows
 * (at 2 000 sources the page lists 50 of them, not 2 000: it was 1.4 MB).
 */
import { batchProgress, erroredItems, type BatchProgress } from '../db/batch-progress.ts';
import { batchCountsByStatus, inFlightJobIds } from '../db/batches.ts';
import { databaseNow, type Queryable } from '../db/connection.ts';
import { creditUsage } from '../db/credit-snapshots.ts';
import { itemErrorsBySource, type SourceErrorCount } from '../db/item-counts.ts';
import { sourcesWithStatsByIds } from '../db/source-stats.ts';
import { isQueryCanceled, readSections, type Pool } from '../db/statement-timeout.ts';
import { tableStorage, type TableStorage } from '../db/storage.ts';
import { ITEM_ERROR_STATES } from '../domain/items.ts';
import { silentLogger, type Logger } from '../log.ts';
import {
  describePrune,
  readCredits,
  readHolds,
  readItems,
  readLastPrune,
  readRecentBatches,
  readSourcesPage,
  type CreditsStatus,
  type Freshness,
  type HoldsStatus,
  type ItemsStatus,
  type PruneStatus,
  type RankedSource,
  type SourcesPage,
} from '../pipeline/status.ts';
import { compactBytes, compactNumber, creditChartSvg, type CreditPoint } from './chart.ts';
import { html, raw, type SafeHtml } from './html.ts';

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
/** The item error codes per source count the items of batches submitted within this many days. */
export const OVERVIEW_ERRORS_DAYS = 7;
/** Longest one statement of the page may run before Postgres cancels it (its section is left out), ms. */
export const OVERVIEW_STATEMENT_TIMEOUT_MS = 2_000;
/** Recently finished batches listed at most. */
const RECENT_BATCHES_SHOWN = 10;
const DAY_MS = 86_400_000;

/** 42 s ago, 5 min ago, 3 h ago, 2 d ago */
export function ago(iso: string | null, now: Date): string {
  if (iso === null) return 'never';
  const s = Math.max(0, Math.round((now.getTime() - Date.parse(iso)) / 1000));
  if (s < 5) return 'just now';
  if (s < 120) return `${s} s ago`;
  if (s < 7_200) return `${Math.round(s / 60)} min ago`;
  if (s < 172_800) return `${Math.round(s / 3_600)} h ago`;
  return `${Math.round(s / 86_400)} d ago`;
}

/** a source as the page lists it; the ranking and the freshness rule live in src/pipeline/status.ts, shared with `status` */
export type OverviewSource = RankedSource;

export interface OverviewSources extends SourcesPage {
  /** failed/retryable/quarantined items per source of this page and errorCode (batches of the last OVERVIEW_ERRORS_DAYS) */
  errorsBySource: SourceErrorCount[];
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
  /** batches that ended in the last 24 hours, the latest first */
  recent?: BatchProgress[];
  /** the title (or external ID) of each source the batches shown belong to */
  sourceNames?: Record<number, string>;
  storage?: TableStorage[];
  /** null before the first prune */
  lastPrune?: PruneStatus | null;
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
}

async function loadSources(q: Queryable, now: Date, page: number): Promise<OverviewSources> {
  const sources = await readSourcesPage(q, now, { page, perPage: OVERVIEW_SOURCES_PER_PAGE });
  const errorsBySource = await itemErrorsBySource(q, {
    sourceIds: sources.rows.map((s) => s.id),
    states: ITEM_ERROR_STATES,
    since: new Date(now.getTime() - OVERVIEW_ERRORS_DAYS * DAY_MS),
  });
  return { ...sources, errorsBySource };
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
    holds: readHolds,
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
    sourceNames: async (q) => {
      const ids = [...new Set(shown.map((b) => b.sourceId).filter((id): id is number => id !== null))];
      const rows = await sourcesWithStatsByIds(q, ids);
      return Object.fromEntries(rows.map((s) => [s.id, s.title ?? s.externalId]));
    },
    storage: tableStorage,
    lastPrune: readLastPrune,
  });
  const log = opts.log ?? silentLogger();
  for (const { section, error } of failed) {
    log.warn(
      { event: 'overview.section_failed', section, cancelled: isQueryCanceled(error), err: { message: error instanceof Error ? error.message : String(error) } },
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
    sourceNames: v.sourceNames,
    storage: v.storage,
    lastPrune: v.lastPrune,
    unavailable: failed.map((f) => f.section),
  };
}

function pill(text: string, tone: Freshness['tone']): SafeHtml {
  return html`<span class="pill ${tone}">${text}</span>`;
}

function batchName(b: BatchProgress): string {
  return b.kind + (b.lang ? ` ${b.lang}` : '');
}

function progressBar(b: BatchProgress): SafeHtml {
  if (b.total === null) {
    return html`<div class="bar" role="progressbar" aria-label="batch ${b.jobId}" aria-valuemin="0" aria-valuetext="waiting for the first poll"></div>
      <div class="small muted">waiting for the first poll</div>`;
  }
  const total = Math.max(0, b.total);
  const finished = Math.min(total, b.finished);
  const errors = Math.min(finished, erroredItems(b));
  const pct = (n: number) => (total === 0 ? 0 : (100 * n) / total);
  const okPct = pct(finished - errors).toFixed(2);
  const errPct = pct(errors).toFixed(2);
  return html`<div class="bar" role="progressbar" aria-label="batch ${b.jobId}" aria-valuemin="0" aria-valuemax="${total}" aria-valuenow="${finished}">
      <span class="ok" style="width:${okPct}%"></span><span class="err" style="width:${errPct}%"></span>
    </div>
    <div class="small">${finished} / ${total} finished (${Math.floor(pct(finished))}%)${errors > 0 ? html` · <span class="bad-text">${errors} error${errors === 1 ? '' : 's'}</span>` : ''}
      · ${b.landed + b.sunk} landed</div>`;
}

function sourceLabel(id: number | null, names: Map<number, string>): SafeHtml {
  if (id === null) return html`<span class="muted">(removed source)</span>`;
  return html`<span class="nowrap">#${id}</span> ${names.get(id) ?? ''}`;
}

/** What a section shows when Postgres did not answer for it. */
function unavailable(what: string): SafeHtml {
  return html`<p class="bad-text">${what} not shown: the query did not answer in time (cancelled; see the daemon log).</p>`;
}

const STYLE = raw(`
:root { --ok:#2e7d32; --warn:#b26a00; --bad:#c62828; --muted:#6b7280; --line:#e5e7eb; --accent:#1d4ed8; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif; color:#111827; background:#f6f7f9; }
header { background:#111827; color:#fff; padding:12px 24px; display:flex; align-items:baseline; gap:24px; flex-wrap:wrap; }
header h1 { font-size:18px; margin:0; font-weight:600; }
header nav a { color:#c7d2fe; margin-right:16px; text-decoration:none; }
header nav a:hover { text-decoration:underline; }
header .meta { margin-left:auto; color:#9ca3af; font-size:12px; }
main { padding:20px 24px 40px; max-width:1280px; margin:0 auto; }
section { background:#fff; border:1px solid var(--line); border-radius:8px; padding:16px 18px; margin-bottom:18px; }
section h2 { font-size:15px; margin:0 0 12px; }
.banner { background:#fdecea; border:1px solid #f5c2c0; color:var(--bad); border-radius:8px; padding:10px 14px; margin-bottom:14px; }
.tiles { display:grid; grid-template-columns:repeat(auto-fit,minmax(200px,1fr)); gap:14px; margin-bottom:18px; }
.tile { background:#fff; border:1px solid var(--line); border-radius:8px; padding:12px 16px; }
.tile .k { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.04em; }
.tile .v { font-size:24px; font-weight:600; margin-top:2px; }
.tile .s { color:var(--muted); font-size:12px; }
table { width:100%; border-collapse:collapse; }
th, td { text-align:left; padding:7px 10px; border-bottom:1px solid var(--line); vertical-align:top; }
th { font-size:12px; color:var(--muted); font-weight:600; text-transform:uppercase; letter-spacing:.03em; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
tr:last-child td { border-bottom:none; }
.pill { display:inline-block; padding:1px 8px; border-radius:999px; font-size:12px; font-weight:600; white-space:nowrap; }
.pill.ok { background:#e8f5e9; color:var(--ok); } .pill.warn { background:#fff4e5; color:var(--warn); }
.pill.bad { background:#fdecea; color:var(--bad); } .pill.muted { background:#f3f4f6; color:var(--muted); }
.bar { height:12px; width:100%; min-width:180px; background:#eef0f3; border-radius:6px; overflow:hidden; display:flex; }
.bar .ok { background:var(--ok); } .bar .err { background:var(--bad); }
.small { font-size:12px; } .muted { color:var(--muted); } .bad-text { color:var(--bad); } .nowrap { white-space:nowrap; }
.error { color:var(--bad); max-width:420px; overflow-wrap:anywhere; }
.pages { margin:10px 0 0; font-size:13px; } .pages a, .pages span { margin-right:10px; }
.pages a { color:var(--accent); text-decoration:none; } .pages a:hover { text-decoration:underline; }
.pages .current { font-weight:600; }
code { font:12px ui-monospace,SFMono-Regular,Menlo,monospace; }
.chart { width:100%; height:auto; display:block; }
.chart .grid { stroke:var(--line); stroke-width:1; } .chart .axis { fill:var(--muted); font-size:11px; }
.chart .area { fill:#dbeafe; } .chart .used { fill:none; stroke:var(--accent); stroke-width:2; }
.chart .max { fill:none; stroke:var(--bad); stroke-width:1.5; stroke-dasharray:6 4; } .chart .dot { fill:var(--accent); }
.legend { font-size:12px; color:var(--muted); margin:6px 0 2px; }
.legend i { display:inline-block; width:18px; height:0; border-top:2px solid var(--accent); vertical-align:middle; margin:0 4px 0 12px; }
.legend i.max { border-top:2px dashed var(--bad); }
`);

export interface RenderOverviewOptions {
  /** where bull-board is mounted; default /admin/queues */
  queuesPath?: string;
  /** seconds between browser refreshes; 0 turns it off; default OVERVIEW_REFRESH_S */
  refreshSeconds?: number;
}

/** Links to the other pages of sources: first, previous, a few around this one, next, last. */
function pageLinks(page: number, pages: number): SafeHtml {
  if (pages <= 1) return html``;
  const link = (n: number, label: string | number = n) => html`<a href="?page=${n}#sources">${label}</a>`;
  const around = [];
  for (let n = Math.max(1, page - 3); n <= Math.min(pages, page + 3); n++) {
    around.push(n === page ? html`<span class="current" aria-current="page">${n}</span>` : link(n));
  }
  return html`<nav class="pages" aria-label="pages of sources">
    ${page > 1 ? html`${link(1, '« first')}${link(page - 1, '‹ previous')}` : ''}
    ${around}
    ${page < pages ? html`${link(page + 1, 'next ›')}${link(pages, 'last »')}` : ''}
  </nav>`;
}

function renderSources(s: OverviewSources, now: Date): SafeHtml {
  if (s.total === 0) return html`<p class="muted">No sources yet. Add one: <code>videosite-ingest sources add channel @handle</code></p>`;
  const rows = s.rows.map(
    (r) => html`<tr data-source-id="${r.id}">
      <td class="num">${r.id}</td>
      <td><strong>${r.title ?? r.externalId}</strong><div class="small muted">${r.kind} · <code>${r.ref}</code></div></td>
      <td class="num">${r.videos}</td><td class="num">${r.transcripts}</td>
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
      <thead><tr><th class="num">id</th><th>source</th><th class="num">videos</th><th class="num">transcripts</th><th>freshness</th><th>schedule</th><th>last error</th></tr></thead>
      <tbody>${rows}</tbody>
    </table>
    ${pageLinks(s.page, s.pages)}`;
}

function renderErrors(s: OverviewSources, names: Map<number, string>): SafeHtml {
  const errors = s.errorsBySource;
  if (errors.length === 0) return html`<p class="muted">No item errors in the last ${OVERVIEW_ERRORS_DAYS} days for the sources of this page.</p>`;
  const codes = [...new Set(errors.map((e) => e.errorCode))].sort();
  const cells = new Map(errors.map((e) => [`${e.sourceId}\u0000${e.errorCode}`, e.items]));
  const rows = [...new Set(errors.map((e) => e.sourceId))].map(
    (id) => html`<tr>
      <td>${sourceLabel(id, names)}</td>
      ${codes.map((code) => {
        const n = cells.get(`${id}\u0000${code}`) ?? 0;
        return html`<td class="num">${n > 0 ? n : html`<span class="muted">0</span>`}</td>`;
      })}
    </tr>`,
  );
  return html`<table>
      <thead><tr><th>source</th>${codes.map((code) => html`<th class="num">${code}</th>`)}</tr></thead>
      <tbody>${rows}</tbody>
    </table>`;
}

function renderStorage(storage: TableStorage[] | undefined, lastPrune: PruneStatus | null | undefined, now: Date): SafeHtml {
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

export function renderOverview(d: OverviewData, opts: RenderOverviewOptions = {}): string {
  const { now } = d;
  const queuesPath = opts.queuesPath ?? '/admin/queues';
  const refresh = opts.refreshSeconds ?? OVERVIEW_REFRESH_S;
  const sources = d.sources;
  const names = new Map<number, string>([
    ...Object.entries(d.sourceNames ?? {}).map(([id, name]): [number, string] => [Number(id), name]),
    ...(sources?.rows ?? []).map((s): [number, string] => [s.id, s.title ?? s.externalId]),
  ]);
  const c = d.credits;
  const it = d.items?.items;

  const inFlightRows = (d.inFlight?.shown ?? []).map(
    (b) => html`<tr data-job-id="${b.jobId}">
      <td><code>${b.jobId}</code></td>
      <td>${sourceLabel(b.sourceId, names)}</td>
      <td>${batchName(b)}</td>
      <td>${pill(b.status, b.status === 'active' ? 'ok' : 'muted')}</td>
      <td style="width:34%">${progressBar(b)}</td>
      <td class="num">${b.polls}</td>
      <td class="small nowrap">${ago(b.submittedAt, now)}</td>
    </tr>`,
  );

  const recent = (d.recent ?? []).map(
    (b) => html`<tr>
      <td><code>${b.jobId}</code></td>
      <td>${sourceLabel(b.sourceId, names)}</td>
      <td>${batchName(b)}</td>
      <td>${pill(b.status + (b.errorCode ? ` (${b.errorCode})` : ''), b.status === 'completed' ? 'ok' : 'bad')}</td>
      <td class="num">${b.total ?? '-'}</td><td class="num">${b.sunk}</td>
      <td class="num">${b.failed}</td><td class="num">${b.retryable}</td>
      <td class="small nowrap">${ago(b.completedAt, now)}</td>
    </tr>`,
  );

  const usedPct = c?.maxCredits ? Math.min(100, (100 * (c.usedCredits ?? 0)) / c.maxCredits) : null;
  const storageTotal = d.storage?.reduce((n, t) => n + t.totalBytes, 0);
  const banners = [
    ...(d.holds?.upstreamHolds ?? []).map((h) => html`<div class="banner" role="alert"><strong>On hold:</strong> ${h.message}</div>`),
    ...(d.holds?.lostSubmissions ?? []).map(
      (l) => html`<div class="banner" role="alert"><strong>Lost answer:</strong> source ${l.sourceId ?? '-'} ${l.kind}${l.lang ? ` ${l.lang}` : ''}
        (~${l.creditsEstimated} credits, ${ago(l.at, now)}): probably created upstream, not re-submitted; to re-submit: <code>videosite-ingest replay --lost --yes</code></div>`,
    ),
    ...(d.unavailable.length > 0
      ? [html`<div class="banner" role="status">Not shown: ${d.unavailable.join(', ')} (the database did not answer in time; see the daemon log).</div>`]
      : []),
  ];

  const page = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${refresh > 0 ? html`<meta http-equiv="refresh" content="${refresh}">` : ''}
<title>videosite-ingest · overview</title>
<style>${STYLE}</style>
</head>
<body>
<header>
  <h1>videosite-ingest</h1>
  <nav><a href="/">Overview</a><a href="${queuesPath}">Queues</a><a href="/metrics">Metrics</a><a href="/readyz">Readiness</a></nav>
  <span class="meta">as of ${now.toISOString().slice(0, 19).replace('T', ' ')}Z${refresh > 0 ? ` · refreshes every ${refresh} s` : ''}</span>
</header>
<main>
  ${banners}
  <div class="tiles">
    <div class="tile"><div class="k">Sources</div><div class="v">${sources ? sources.total : '–'}</div>
      <div class="s">${
        sources
          ? html`${sources.paused} paused · ${sources.attention > 0 ? html`<span class="bad-text">${sources.attention} need attention</span>` : 'all fine'}`
          : 'not readable'
      }</div></div>
    <div class="tile"><div class="k">Batches in flight</div><div class="v">${d.inFlight ? d.inFlight.total : '–'}</div>
      <div class="s">${d.batchesByStatus ? Object.entries(d.batchesByStatus).map(([k, v]) => `${k} ${v}`).join(' · ') || 'none yet' : 'not readable'}</div></div>
    <div class="tile"><div class="k">Items stored</div><div class="v">${it ? compactNumber(it.sunk) : '–'}</div>
      <div class="s">${it ? `${it.landed} landing · ${it.failed} failed · ${it.retryable} retryable${it.quarantined ? ` · ${it.quarantined} quarantined` : ''}` : 'not readable'}</div></div>
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
        d.lastPrune === undefined ? 'last prune not readable' : d.lastPrune === null ? 'never pruned' : `last prune ${ago(d.lastPrune.startedAt, now)}`
      }</div></div>
  </div>

  <section id="sources">
    <h2>Sources</h2>
    ${sources ? renderSources(sources, now) : unavailable('Sources')}
  </section>

  <section id="in-flight">
    <h2>Batches in flight</h2>
    ${
      d.inFlight === undefined
        ? unavailable('Batches in flight')
        : d.inFlight.total === 0
          ? html`<p class="muted">No batches in flight.</p>`
          : html`<table>
      <thead><tr><th>job</th><th>source</th><th>kind</th><th>status</th><th>progress</th><th class="num">polls</th><th>submitted</th></tr></thead>
      <tbody>${inFlightRows}</tbody>
    </table>${
      d.inFlight.total > d.inFlight.shown.length
        ? html`<p class="small muted">The ${d.inFlight.shown.length} submitted first of ${d.inFlight.total} (every one: <code>videosite-ingest status --json</code>).</p>`
        : ''
    }`
    }
  </section>

  <section id="errors">
    <h2>Item error codes per source</h2>
    ${sources ? renderErrors(sources, names) : unavailable('Item error codes')}
  </section>

  <section id="credits">
    <h2>Credit usage</h2>
    ${d.creditPoints ? creditChartSvg(d.creditPoints) : unavailable('The credit chart')}
    ${c && (d.creditPoints?.length ?? 0) > 0 ? html`<div class="small muted">${c.usedLast24h !== null ? `${c.usedLast24h} used in the last 24 h · ` : ''}estimated cost of all recorded batches ${c.estimatedAllTime}</div>` : ''}
  </section>

  <section id="recent">
    <h2>Batches finished in the last 24 h</h2>
    ${
      d.recent === undefined
        ? unavailable('Recent batches')
        : recent.length === 0
          ? html`<p class="muted">None.</p>`
          : html`<table>
      <thead><tr><th>job</th><th>source</th><th>kind</th><th>status</th><th class="num">total</th><th class="num">stored</th><th class="num">failed</th><th class="num">retryable</th><th>finished</th></tr></thead>
      <tbody>${recent}</tbody>
    </table>`
    }
  </section>

  <section id="storage">
    <h2>Storage per table</h2>
    ${renderStorage(d.storage, d.lastPrune, now)}
  </section>
</main>
</body>
</html>
`;
  return page.value;
}
