/**
 * The credit-usage chart of the overview, as inline SVG: used credits over time (area and line)
 * under the plan's allowance (dashed step line). Drawn on the server from credit_snapshots, so
 * the page needs no script and no front-end build.
 */
import { html, raw, type SafeHtml } from './html.ts';

export interface CreditPoint {
  at: Date;
  used: number;
  /** the plan's allowance at that time; null when the snapshot did not say */
  max: number | null;
}

export interface CreditChartOptions {
  /** drawing width in SVG units (the element scales to its container); default 960 */
  width?: number;
  /** drawing height in SVG units; default 220 */
  height?: number;
}

const MARGIN = { left: 60, right: 16, top: 14, bottom: 30 };
/** A chart of one snapshot still spans this much time, in milliseconds, so the point is centred. */
const SINGLE_POINT_SPAN_MS = 3_600_000;
/** Dots are drawn on the line up to this many points; beyond, they would only blur it. */
const MAX_DOTS = 60;

/** 1234 → 1.2k, 2500000 → 2.5M */
export function compactNumber(n: number): string {
  const abs = Math.abs(n);
  const fmt = (v: number, unit: string) => `${Number(v.toFixed(Math.abs(v) < 100 ? 1 : 0))}${unit}`;
  if (abs >= 1e9) return fmt(n / 1e9, 'G');
  if (abs >= 1e6) return fmt(n / 1e6, 'M');
  if (abs >= 1e4) return fmt(n / 1e3, 'k');
  return String(Math.round(n));
}

const BYTE_UNITS = ['kB', 'MB', 'GB', 'TB'];

/** 2048 → 2.0 kB, 8_300_000_000 → 7.7 GB: powers of 1024 and the units of Postgres's pg_size_pretty. */
export function compactBytes(n: number): string {
  if (Math.abs(n) < 1024) return `${Math.round(n)} bytes`;
  let v = n / 1024;
  let unit = 0;
  while (Math.abs(v) >= 1024 && unit < BYTE_UNITS.length - 1) {
    v /= 1024;
    unit++;
  }
  return `${v.toFixed(Math.abs(v) < 10 ? 1 : 0)} ${BYTE_UNITS[unit]}`;
}

/** Gridlines above zero. */
const Y_STEPS = 4;

/** The top of a y axis at or above n whose Y_STEPS steps are round numbers (step 60 → 0, 60, ..., 240). */
export function niceTop(n: number): number {
  // credits are whole: a step is at least 1, and whole
  const rawStep = Math.max(n / Y_STEPS, 1);
  const exp = 10 ** Math.floor(Math.log10(rawStep));
  const step =
    [1, 1.5, 2, 2.5, 3, 4, 5, 6, 7.5, 8, 10].map((m) => m * exp).find((v) => v >= rawStep && Number.isInteger(v)) ??
    10 * exp;
  return step * Y_STEPS;
}

function timeLabel(d: Date, spanMs: number): string {
  const iso = d.toISOString();
  // the coarsest unit that still tells the labels apart
  if (spanMs < 600_000) return `${iso.slice(11, 19)}Z`;
  if (spanMs <= 86_400_000) return `${iso.slice(11, 16)}Z`;
  return iso.slice(5, 10);
}

/**
 * Drawn to the plan's allowance only when usage is within sight of it: on a 1M plan that has
 * used 200, a 0..1M axis would flatten the usage line to nothing.
 */
const ALLOWANCE_IN_VIEW_FACTOR = 1.5;

export function creditChartSvg(points: readonly CreditPoint[], opts: CreditChartOptions = {}): SafeHtml {
  const width = opts.width ?? 960;
  const height = opts.height ?? 220;
  if (points.length === 0) {
    return html`<p class="muted">No credit snapshots yet: one is taken before each sync and after each batch.</p>`;
  }
  const last = points[points.length - 1]!;
  let t0 = points[0]!.at.getTime();
  let t1 = last.at.getTime();
  if (t1 - t0 < 1) {
    t0 -= SINGLE_POINT_SPAN_MS / 2;
    t1 += SINGLE_POINT_SPAN_MS / 2;
  }
  // a reduce, not Math.max(...points): spreading a long series overflows the call stack
  const usedTop = points.reduce((m, p) => Math.max(m, p.used), 0) * 1.1;
  const maxTop = points.reduce((m, p) => Math.max(m, p.max ?? 0), 0);
  const allowanceInView = maxTop > 0 && maxTop <= Math.max(usedTop, 1) * ALLOWANCE_IN_VIEW_FACTOR;
  const top = niceTop(allowanceInView ? Math.max(usedTop, maxTop * 1.05) : usedTop);
  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = height - MARGIN.top - MARGIN.bottom;
  const x = (t: number) => MARGIN.left + ((t - t0) / (t1 - t0)) * plotW;
  const y = (v: number) => MARGIN.top + plotH - (v / top) * plotH;
  const f = (n: number) => n.toFixed(1);

  const grid = Array.from({ length: Y_STEPS + 1 }, (_, i) => i / Y_STEPS).map((k) => {
    const yy = f(y(top * k));
    return raw(
      `<line class="grid" x1="${MARGIN.left}" x2="${width - MARGIN.right}" y1="${yy}" y2="${yy}"/>` +
        `<text class="axis" x="${MARGIN.left - 8}" y="${yy}" text-anchor="end" dominant-baseline="middle">${compactNumber(top * k)}</text>`,
    );
  });
  const span = t1 - t0;
  const tickTimes = [t0, t0 + span / 2, t1];
  const tickLabels = tickTimes.map((t) => timeLabel(new Date(t), span));
  const ticks = tickTimes.map((t, i) =>
    // a label equal to the one before it says nothing new (a span of a few seconds)
    i > 0 && tickLabels[i] === tickLabels[i - 1]
      ? ''
      : raw(
          `<text class="axis" x="${f(x(t))}" y="${height - 8}" text-anchor="${['start', 'middle', 'end'][i]}">${tickLabels[i]}</text>`,
        ),
  );

  const line = points.map((p) => `${f(x(p.at.getTime()))},${f(y(p.used))}`).join(' ');
  const area =
    `M${f(x(points[0]!.at.getTime()))},${f(y(0))} ` +
    points.map((p) => `L${f(x(p.at.getTime()))},${f(y(p.used))}`).join(' ') +
    ` L${f(x(last.at.getTime()))},${f(y(0))} Z`;
  // the allowance as a step line: it holds until the next snapshot says otherwise
  const withMax = allowanceInView ? points.filter((p) => p.max !== null) : [];
  let maxPath = '';
  for (let i = 0; i < withMax.length; i++) {
    const p = withMax[i]!;
    const px = f(x(p.at.getTime()));
    const py = f(y(p.max!));
    maxPath += i === 0 ? `M${px},${py}` : ` H${px} V${py}`;
  }
  if (withMax.length > 0) maxPath += ` H${f(x(t1))}`;
  const dots =
    points.length <= MAX_DOTS
      ? points.map((p) => raw(`<circle class="dot" cx="${f(x(p.at.getTime()))}" cy="${f(y(p.used))}" r="2.5"/>`))
      : [];
  const label = `Credits used over time: ${last.used} of ${last.max ?? 'unknown'} at ${last.at.toISOString()}`;
  const offChart =
    !allowanceInView && last.max !== null
      ? raw(
          `<text class="axis" x="${width - MARGIN.right}" y="${MARGIN.top - 2}" text-anchor="end">plan allowance ${compactNumber(last.max)}: above this scale</text>`,
        )
      : '';

  return html`<svg class="chart" viewBox="0 0 ${width} ${height}" role="img" aria-label="${label}" preserveAspectRatio="xMidYMid meet">
  <title>${label}</title>
  ${grid}
  <path class="area" d="${area}"/>
  <polyline class="used" points="${line}"/>
  ${withMax.length > 0 ? html`<path class="max" d="${maxPath}"/>` : ''}
  ${dots}
  ${ticks}
  ${offChart}
</svg>
<div class="legend"><i></i>used${withMax.length > 0 ? html` <i class="max"></i>plan allowance` : ''}</div>`;
}
