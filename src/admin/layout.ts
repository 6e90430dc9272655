/**
 * The frame every admin page shares (header, styles, banners) and the small pieces the pages
 * have in common: times, pills, page links, progress bars, links to a source, a batch, an item.
 * Pages are rendered on the server and need no script; every value goes through `html`, which
 * escapes it (titles, errors and raw items come from the upstream and from users).
 */
import { erroredItems, type BatchProgress } from '../db/batch-progress.ts';
import type { Freshness, HoldsStatus } from '../pipeline/read/status.ts';
import { html, raw, type SafeHtml } from './html.ts';

/** Where bull-board is mounted (server.ts mounts it there). */
export const DEFAULT_QUEUES_PATH = '/admin/queues';

/**
 * The Content-Security-Policy of every page: no script at all, inline styles and the chart's
 * data: images only, never framed. A payload that slipped through escaping still could not run.
 */
export const PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'";

export const sourceHref = (id: number): string => `/sources/${id}`;
export const batchHref = (jobId: string): string => `/batches/${encodeURIComponent(jobId)}`;
export const itemHref = (jobId: string, videoId: string): string =>
  `${batchHref(jobId)}/items/${encodeURIComponent(videoId)}`;

/** 42 s ago, 5 min ago, 3 h ago, 2 d ago; a time ahead reads "in 5 min" */
export function ago(iso: string | Date | null, now: Date): string {
  if (iso === null) return 'never';
  const t = typeof iso === 'string' ? Date.parse(iso) : iso.getTime();
  const delta = Math.round((now.getTime() - t) / 1000);
  const s = Math.abs(delta);
  if (s < 5) return 'just now';
  const span =
    s < 120
      ? `${s} s`
      : s < 7_200
        ? `${Math.round(s / 60)} min`
        : s < 172_800
          ? `${Math.round(s / 3_600)} h`
          : `${Math.round(s / 86_400)} d`;
  return delta >= 0 ? `${span} ago` : `in ${span}`;
}

/** 2026-03-10 12:00:05Z */
export function utc(t: string | Date): string {
  return (typeof t === 'string' ? t : t.toISOString()).slice(0, 19).replace('T', ' ') + 'Z';
}

/** A time as UTC with how long ago (or ahead) it is; "never" for none. */
export function when(t: string | Date | null, now: Date, none = 'never'): SafeHtml {
  if (t === null) return html`<span class="muted">${none}</span>`;
  const iso = typeof t === 'string' ? t : t.toISOString();
  return html`<time datetime="${iso}">${utc(iso)}</time> <span class="muted small">(${ago(iso, now)})</span>`;
}

export function pill(text: string, tone: Freshness['tone']): SafeHtml {
  return html`<span class="pill ${tone}">${text}</span>`;
}

/** The tone of a batch status: in flight is neutral, completed good, the other ends bad. */
export function statusPill(b: Pick<BatchProgress, 'status' | 'errorCode'>): SafeHtml {
  const tone =
    b.status === 'completed'
      ? 'ok'
      : b.status === 'failed' || b.status === 'expired'
        ? 'bad'
        : b.status === 'active'
          ? 'ok'
          : 'muted';
  return pill(b.status + (b.errorCode ? ` (${b.errorCode})` : ''), tone);
}

export function batchName(b: Pick<BatchProgress, 'kind' | 'lang'>): string {
  return b.kind + (b.lang ? ` ${b.lang}` : '');
}

/** `#3 Title`, linked to the source's page; a batch whose source was removed says so. */
export function sourceLink(id: number | null, names: ReadonlyMap<number, string>): SafeHtml {
  if (id === null) return html`<span class="muted">(removed source)</span>`;
  return html`<a href="${sourceHref(id)}"><span class="nowrap">#${id}</span> ${names.get(id) ?? ''}</a>`;
}

export function jobLink(jobId: string): SafeHtml {
  return html`<a href="${batchHref(jobId)}"><code>${jobId}</code></a>`;
}

/** The batch's items finished upstream, stored and in error, as a bar. */
export function progressBar(b: BatchProgress): SafeHtml {
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

/** What a section shows when Postgres did not answer for it. */
export function unavailable(what: string): SafeHtml {
  return html`<p class="bad-text">${what} not shown: the query did not answer in time (cancelled; see the daemon log).</p>`;
}

/**
 * Links to the other pages of a list: first, previous, a few around this one, next, last.
 * `href(n)` builds a page's address (keeping the page's other parameters).
 */
export function pageLinks(page: number, pages: number, href: (n: number) => string, label: string): SafeHtml {
  if (pages <= 1) return html``;
  const link = (n: number, text: string | number = n) => html`<a href="${href(n)}">${text}</a>`;
  const around = [];
  for (let n = Math.max(1, page - 3); n <= Math.min(pages, page + 3); n++) {
    around.push(n === page ? html`<span class="current" aria-current="page">${n}</span>` : link(n));
  }
  return html`<nav class="pages" aria-label="${label}">
    ${page > 1 ? html`${link(1, '« first')}${link(page - 1, '‹ previous')}` : ''}
    ${around}
    ${page < pages ? html`${link(page + 1, 'next ›')}${link(pages, 'last »')}` : ''}
  </nav>`;
}

/**
 * What holds the pipeline, on every page: each upstream hold (its code, when it was set, and
 * the line `status` prints), and batch POSTs whose answer was lost.
 */
export function holdBanners(holds: HoldsStatus | undefined, now: Date): SafeHtml[] {
  if (holds === undefined) return [];
  return [
    ...holds.upstreamHolds.map(
      (h) =>
        html`<div class="banner" role="alert" data-hold="${h.code}"><strong>On hold (${h.code})</strong> <span class="small">set ${ago(h.since, now)}</span>: ${h.message}</div>`,
    ),
    ...(holds.otherKeyHolds ?? []).map(
      (h) =>
        html`<p class="small muted" data-other-key-hold="${h.code}">Another API key than the configured one (fingerprint ${h.keyFingerprint ?? '-'}) was refused (${h.code}) ${ago(h.lastSeenAt, now)}; nothing using the configured key is held. To forget it: <code>videosite-ingest holds clear --key-fingerprint ${h.keyFingerprint ?? ''}</code></p>`,
    ),
    ...holds.lostSubmissions.map(
      (
        l,
      ) => html`<div class="banner" role="alert"><strong>Lost answer:</strong> source ${l.sourceId ?? '-'} ${l.kind}${l.lang ? ` ${l.lang}` : ''}
        (~${l.creditsEstimated} credits, ${ago(l.at, now)}): probably created upstream, not re-submitted; to re-submit: <code>videosite-ingest replay --lost --yes</code></div>`,
    ),
  ];
}

const STYLE = raw(`
:root { --ok:#2e7d32; --warn:#b26a00; --bad:#c62828; --muted:#6b7280; --line:#e5e7eb; --accent:#1d4ed8; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif; color:#111827; background:#f6f7f9; }
a { color:var(--accent); text-decoration:none; } a:hover { text-decoration:underline; }
header { background:#111827; color:#fff; padding:12px 24px; display:flex; align-items:baseline; gap:24px; flex-wrap:wrap; }
header h1 { font-size:18px; margin:0; font-weight:600; } header h1 a { color:#fff; }
header nav a { color:#c7d2fe; margin-right:16px; text-decoration:none; }
header nav a:hover { text-decoration:underline; }
header .meta { margin-left:auto; color:#9ca3af; font-size:12px; }
header form.search input { width:260px; padding:4px 8px; border-radius:6px; border:1px solid #374151; background:#1f2937; color:#fff; }
mark { background:#fef08a; padding:0 1px; }
main { padding:20px 24px 40px; max-width:1280px; margin:0 auto; }
.crumbs { font-size:13px; color:var(--muted); margin:0 0 6px; } .crumbs a { margin-right:4px; }
h2.page { font-size:20px; margin:0 0 16px; overflow-wrap:anywhere; } h2.page code { font-size:16px; }
section { background:#fff; border:1px solid var(--line); border-radius:8px; padding:16px 18px; margin-bottom:18px; }
section h2 { font-size:15px; margin:0 0 12px; }
.banner { background:#fdecea; border:1px solid #f5c2c0; color:var(--bad); border-radius:8px; padding:10px 14px; margin-bottom:14px; }
.tiles { display:grid; grid-template-columns:repeat(auto-fit,minmax(200px,1fr)); gap:14px; margin-bottom:18px; }
.tile { background:#fff; border:1px solid var(--line); border-radius:8px; padding:12px 16px; }
.tile .k { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.04em; }
.tile .v { font-size:24px; font-weight:600; margin-top:2px; }
.tile .s { color:var(--muted); font-size:12px; }
dl.facts { display:grid; grid-template-columns:max-content 1fr; gap:6px 18px; margin:0; }
dl.facts dt { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.03em; padding-top:2px; }
dl.facts dd { margin:0; overflow-wrap:anywhere; }
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
.ids { display:flex; flex-wrap:wrap; gap:4px 12px; }
.pages { margin:10px 0 0; font-size:13px; } .pages a, .pages span { margin-right:10px; }
.pages .current { font-weight:600; }
.filters a, .filters span { margin-right:12px; font-size:13px; } .filters .current { font-weight:600; }
code { font:12px ui-monospace,SFMono-Regular,Menlo,monospace; }
pre.payload { font:12px/1.5 ui-monospace,SFMono-Regular,Menlo,monospace; background:#f8fafc; border:1px solid var(--line); border-radius:6px;
  padding:12px; margin:0; white-space:pre-wrap; overflow-wrap:anywhere; }
.chart { width:100%; height:auto; display:block; }
.chart .grid { stroke:var(--line); stroke-width:1; } .chart .axis { fill:var(--muted); font-size:11px; }
.chart .area { fill:#dbeafe; } .chart .used { fill:none; stroke:var(--accent); stroke-width:2; }
.chart .max { fill:none; stroke:var(--bad); stroke-width:1.5; stroke-dasharray:6 4; } .chart .dot { fill:var(--accent); }
.legend { font-size:12px; color:var(--muted); margin:6px 0 2px; }
.legend i { display:inline-block; width:18px; height:0; border-top:2px solid var(--accent); vertical-align:middle; margin:0 4px 0 12px; }
.legend i.max { border-top:2px dashed var(--bad); }
`);

export interface PageFrame {
  /** the document's title after "videosite-ingest · " */
  title: string;
  /** the database's clock */
  now: Date;
  /** undefined: not readable (then named in `unavailable`) */
  holds: HoldsStatus | undefined;
  /** sections left out: their statement was cancelled (statement_timeout) or failed */
  unavailable: readonly string[];
  /** where bull-board is mounted; default DEFAULT_QUEUES_PATH */
  queuesPath?: string;
  /** seconds between browser refreshes; 0 or absent: none */
  refreshSeconds?: number;
  /** links above the heading, the page itself last (unlinked) */
  crumbs?: readonly { label: string | SafeHtml; href?: string }[];
  /** the words in the header's search box (the search page shows what it searched) */
  query?: string;
  body: SafeHtml;
}

/** A whole page: head, header, banners (holds, sections left out), then the body. */
export function renderPage(f: PageFrame): string {
  const refresh = f.refreshSeconds ?? 0;
  const banners = [
    ...holdBanners(f.holds, f.now),
    ...(f.unavailable.length > 0
      ? [
          html`<div class="banner" role="status">Not shown: ${f.unavailable.join(', ')} (the database did not answer in time; see the daemon log).</div>`,
        ]
      : []),
  ];
  const crumbs = f.crumbs?.length
    ? html`<nav class="crumbs" aria-label="breadcrumbs">${f.crumbs.map((c, i) =>
        c.href === undefined
          ? html`<span>${c.label}</span>`
          : html`<a href="${c.href}">${c.label}</a>${i < f.crumbs!.length - 1 ? ' › ' : ''}`,
      )}</nav>`
    : '';
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${refresh > 0 ? html`<meta http-equiv="refresh" content="${refresh}">` : ''}
<title>videosite-ingest · ${f.title}</title>
<style>${STYLE}</style>
</head>
<body>
<header>
  <h1><a href="/">videosite-ingest</a></h1>
  <nav><a href="/">Overview</a><a href="/batches">Batches</a><a href="${f.queuesPath ?? DEFAULT_QUEUES_PATH}">Queues</a><a href="/metrics">Metrics</a><a href="/readyz">Readiness</a></nav>
  <form class="search" action="/search" method="get" role="search"><input type="search" name="q" value="${f.query ?? ''}" placeholder="Search transcripts and pages" aria-label="search transcripts and pages"></form>
  <span class="meta">as of ${utc(f.now)}${refresh > 0 ? ` · refreshes every ${refresh} s` : ''}</span>
</header>
<main>
  ${banners}
  ${crumbs}
  ${f.body}
</main>
</body>
</html>
`.value;
}

/** The page of something that does not exist (answered with 404). */
export function notFoundBody(what: string, hint: SafeHtml): SafeHtml {
  return html`<h2 class="page">Not found</h2>
  <section id="not-found"><p>${what} does not exist.</p><p class="small muted">${hint}</p></section>`;
}
