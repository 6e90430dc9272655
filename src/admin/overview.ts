/**
 * The overview page (`/`): what a person checks at a glance. Sources with their freshness and
 * last error, batches in flight with progress bars, item error codes per source, recent batches,
 * and credit usage over time. Rendered on the server from Postgres on each request (a handful
 * of queries), refreshed by the browser every few seconds; no script, no front-end build.
 */
import { CronExpressionParser } from 'cron-parser';
import { erroredItems, type BatchProgress } from '../db/batch-progress.ts';
import { ITEM_ERROR_STATES } from '../domain/items.ts';
import { databaseNow, type Queryable } from '../db/connection.ts';
import { creditUsage } from '../db/credit-snapshots.ts';
import { itemErrorsBySource } from '../db/items.ts';
import { collectStatus, type SourceStatus, type StatusReport } from '../pipeline/status.ts';
import { creditChartSvg, compactNumber, type CreditPoint } from './chart.ts';
import { html, raw, type SafeHtml } from './html.ts';

/** Points of the credit chart at most (snapshots are bucketed in time beyond that). */
export const CREDIT_CHART_MAX_POINTS = 300;
/** How far back the credit chart reaches, in days. */
export const CREDIT_CHART_DAYS = 30;
/** A scheduled source counts as overdue once its last cron time is this far past without a sync, in ms. */
export const OVERDUE_GRACE_MS = 10 * 60_000;
/** Browser refresh interval of the page, in seconds. */
export const OVERVIEW_REFRESH_S = 10;
/** Recently finished batches listed at most. */
const RECENT_BATCHES_SHOWN = 10;

export interface OverviewData {
  status: StatusReport;
  /** failed/retryable/quarantined items per source and errorCode */
  errorsBySource: { sourceId: number | null; errorCode: string; items: number }[];
  credits: CreditPoint[];
  /** the database's clock, so ages do not depend on this machine's */
  now: Date;
}

export async function loadOverview(sql: Queryable): Promise<OverviewData> {
  const status = await collectStatus(sql);
  const errorsBySource = await itemErrorsBySource(sql, ITEM_ERROR_STATES);
  const credits = await creditUsage(sql, { days: CREDIT_CHART_DAYS, maxPoints: CREDIT_CHART_MAX_POINTS });
  return { status, errorsBySource, credits, now: await databaseNow(sql) };
}

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

export type Freshness = { label: string; tone: 'ok' | 'warn' | 'bad' | 'muted' };

/** Is the source as fresh as its schedule promises? */
export function freshnessOf(s: Pick<SourceStatus, 'paused' | 'cron' | 'lastSyncedAt'>, now: Date): Freshness {
  if (s.paused) return { label: 'paused', tone: 'muted' };
  if (s.lastSyncedAt === null) return { label: 'never synced', tone: 'warn' };
  if (s.cron === null) return { label: 'backfill only', tone: 'muted' };
  let due: Date;
  try {
    due = CronExpressionParser.parse(s.cron, { tz: 'UTC', currentDate: now }).prev().toDate();
  } catch {
    return { label: 'bad schedule', tone: 'bad' };
  }
  const synced = Date.parse(s.lastSyncedAt);
  if (synced < due.getTime() && now.getTime() - due.getTime() > OVERDUE_GRACE_MS) {
    return { label: 'overdue', tone: 'bad' };
  }
  return { label: 'fresh', tone: 'ok' };
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

function sourceLabel(id: number | null, byId: Map<number, SourceStatus>): SafeHtml {
  if (id === null) return html`<span class="muted">(removed source)</span>`;
  const s = byId.get(id);
  return html`<span class="nowrap">#${id}</span> ${s ? (s.title ?? s.externalId) : ''}`;
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

export function renderOverview(d: OverviewData, opts: RenderOverviewOptions = {}): string {
  const { status: r, now } = d;
  const queuesPath = opts.queuesPath ?? '/admin/queues';
  const refresh = opts.refreshSeconds ?? OVERVIEW_REFRESH_S;
  const byId = new Map(r.sources.map((s) => [s.id, s]));
  const c = r.credits;
  const it = r.items;

  const sourcesRows = r.sources.map((s) => {
    const f = freshnessOf(s, now);
    return html`<tr data-source-id="${s.id}">
      <td class="num">${s.id}</td>
      <td><strong>${s.title ?? s.externalId}</strong><div class="small muted">${s.kind} · <code>${s.ref}</code></div></td>
      <td class="num">${s.videos}</td><td class="num">${s.transcripts}</td>
      <td>${pill(f.label, f.tone)}<div class="small muted">${ago(s.lastSyncedAt, now)}</div></td>
      <td class="small">${s.paused ? 'paused' : (s.cron ?? 'backfill only')}</td>
      <td>${
        s.lastError
          ? html`<div class="error small"><code>${s.lastErrorCode ?? 'error'}</code> ${s.lastError}</div><div class="small muted">${ago(s.lastErrorAt, now)}</div>`
          : html`<span class="muted">none</span>`
      }</td>
    </tr>`;
  });

  const inFlightRows = r.inFlight.map(
    (b) => html`<tr data-job-id="${b.jobId}">
      <td><code>${b.jobId}</code></td>
      <td>${sourceLabel(b.sourceId, byId)}</td>
      <td>${batchName(b)}</td>
      <td>${pill(b.status, b.status === 'active' ? 'ok' : 'muted')}</td>
      <td style="width:34%">${progressBar(b)}</td>
      <td class="num">${b.polls}</td>
      <td class="small nowrap">${ago(b.submittedAt, now)}</td>
    </tr>`,
  );

  const codes = [...new Set(d.errorsBySource.map((e) => e.errorCode))].sort();
  const errorSources = [...new Set(d.errorsBySource.map((e) => e.sourceId))];
  const errorCell = (sourceId: number | null, code: string) =>
    d.errorsBySource.find((e) => e.sourceId === sourceId && e.errorCode === code)?.items ?? 0;
  const errorRows = errorSources.map(
    (id) => html`<tr>
      <td>${sourceLabel(id, byId)}</td>
      ${codes.map((code) => {
        const n = errorCell(id, code);
        return html`<td class="num">${n > 0 ? n : html`<span class="muted">0</span>`}</td>`;
      })}
    </tr>`,
  );

  const recent = r.recent.slice(0, RECENT_BATCHES_SHOWN).map(
    (b) => html`<tr>
      <td><code>${b.jobId}</code></td>
      <td>${sourceLabel(b.sourceId, byId)}</td>
      <td>${batchName(b)}</td>
      <td>${pill(b.status + (b.errorCode ? ` (${b.errorCode})` : ''), b.status === 'completed' ? 'ok' : 'bad')}</td>
      <td class="num">${b.total ?? '-'}</td><td class="num">${b.sunk}</td>
      <td class="num">${b.failed}</td><td class="num">${b.retryable}</td>
      <td class="small nowrap">${ago(b.completedAt, now)}</td>
    </tr>`,
  );

  const usedPct = c.maxCredits ? Math.min(100, (100 * (c.usedCredits ?? 0)) / c.maxCredits) : null;
  const paused = r.sources.filter((s) => s.paused).length;
  const withErrors = r.sources.filter((s) => s.lastError).length;

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
  <div class="tiles">
    <div class="tile"><div class="k">Sources</div><div class="v">${r.sources.length}</div>
      <div class="s">${paused} paused · ${withErrors > 0 ? html`<span class="bad-text">${withErrors} with an error</span>` : 'no errors'}</div></div>
    <div class="tile"><div class="k">Batches in flight</div><div class="v">${r.inFlight.length}</div>
      <div class="s">${Object.entries(r.batchesByStatus).map(([k, v]) => `${k} ${v}`).join(' · ') || 'none yet'}</div></div>
    <div class="tile"><div class="k">Items stored</div><div class="v">${compactNumber(it.sunk)}</div>
      <div class="s">${it.landed} landing · ${it.failed} failed · ${it.retryable} retryable${it.quarantined ? ` · ${it.quarantined} quarantined` : ''}</div></div>
    <div class="tile"><div class="k">Credits used</div><div class="v">${c.usedCredits === null ? '–' : compactNumber(c.usedCredits)}</div>
      <div class="s">${
        c.maxCredits === null
          ? 'no /me snapshot yet'
          : `of ${compactNumber(c.maxCredits)} (${usedPct!.toFixed(1)}%) · plan ${c.plan ?? '?'}`
      }</div></div>
  </div>

  <section id="sources">
    <h2>Sources</h2>
    ${
      r.sources.length === 0
        ? html`<p class="muted">No sources yet. Add one: <code>videosite-ingest sources add channel @handle</code></p>`
        : html`<table>
      <thead><tr><th class="num">id</th><th>source</th><th class="num">videos</th><th class="num">transcripts</th><th>freshness</th><th>schedule</th><th>last error</th></tr></thead>
      <tbody>${sourcesRows}</tbody>
    </table>`
    }
  </section>

  <section id="in-flight">
    <h2>Batches in flight</h2>
    ${
      r.inFlight.length === 0
        ? html`<p class="muted">No batches in flight.</p>`
        : html`<table>
      <thead><tr><th>job</th><th>source</th><th>kind</th><th>status</th><th>progress</th><th class="num">polls</th><th>submitted</th></tr></thead>
      <tbody>${inFlightRows}</tbody>
    </table>`
    }
  </section>

  <section id="errors">
    <h2>Item error codes per source</h2>
    ${
      errorRows.length === 0
        ? html`<p class="muted">No item errors recorded.</p>`
        : html`<table>
      <thead><tr><th>source</th>${codes.map((code) => html`<th class="num">${code}</th>`)}</tr></thead>
      <tbody>${errorRows}</tbody>
    </table>`
    }
  </section>

  <section id="credits">
    <h2>Credit usage</h2>
    ${creditChartSvg(d.credits)}
    ${d.credits.length > 0 ? html`<div class="small muted">${c.usedLast24h !== null ? `${c.usedLast24h} used in the last 24 h · ` : ''}estimated cost of all recorded batches ${c.estimatedAllTime}</div>` : ''}
  </section>

  <section id="recent">
    <h2>Batches finished in the last 24 h</h2>
    ${
      recent.length === 0
        ? html`<p class="muted">None.</p>`
        : html`<table>
      <thead><tr><th>job</th><th>source</th><th>kind</th><th>status</th><th class="num">total</th><th class="num">stored</th><th class="num">failed</th><th class="num">retryable</th><th>finished</th></tr></thead>
      <tbody>${recent}</tbody>
    </table>`
    }
  </section>
</main>
</body>
</html>
`;
  return page.value;
}
