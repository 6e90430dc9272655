/** The figures of `npm run bench:scale` as text: the operations table, the storm, the sizes and the projection. */
import type { OpFigure } from './ops.ts';
import type { Projection } from './projection.ts';
import { TARGET_RATIO } from './settings.ts';
import type { StormFigures } from './storm.ts';

export interface ScaleRun {
  label: string;
  database: string;
  seedS: number;
  vacuumS: number;
  seedStepsS: Record<string, number>;
  counterProblems: string[];
  ops: OpFigure[];
}

export interface ScaleResults {
  root: string;
  startedAt: string;
  machine: Record<string, unknown>;
  small: ScaleRun;
  large: ScaleRun;
  projection?: Projection;
  storm?: StormFigures;
  totalS: number;
}

const ms = (x: number | undefined) =>
  x === undefined ? '-' : x >= 100 ? String(Math.round(x)) : x >= 1 ? x.toFixed(1) : x.toFixed(2);
const gb = (bytes: number) => `${(bytes / 2 ** 30).toFixed(2)} GB`;
const mb = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MB`;

export interface Verdict {
  ratio: number | undefined;
  verdict: 'PASS' | 'FAIL' | '-' | 'info';
}

export function verdictOf(small: OpFigure | undefined, large: OpFigure): Verdict {
  if (small?.ms === undefined || large.ms === undefined)
    return { ratio: undefined, verdict: large.failure || small?.failure ? 'FAIL' : '-' };
  const ratio = large.ms / Math.max(small.ms, 0.001);
  if (!large.judged) return { ratio, verdict: 'info' };
  return { ratio, verdict: ratio <= TARGET_RATIO && !large.failure && !small.failure ? 'PASS' : 'FAIL' };
}

export function renderOps(r: ScaleResults): string {
  const head =
    `| operation | ${r.small.label} ms | ${r.large.label} ms | ratio | target <= ${TARGET_RATIO} | ${r.large.label}: what it returned |\n` +
    '|---|---:|---:|---:|---|---|\n';
  const rows = r.large.ops.map((l) => {
    const s = r.small.ops.find((o) => o.key === l.key);
    const v = verdictOf(s, l);
    const failure = [
      s?.failure ? `${r.small.label}: ${s.failure}` : '',
      l.failure ? `${r.large.label}: ${l.failure}` : '',
    ]
      .filter(Boolean)
      .join('; ');
    return `| ${l.label} | ${ms(s?.ms)} | ${ms(l.ms)} | ${v.ratio === undefined ? '-' : v.ratio.toFixed(2)} | ${v.verdict} | ${[l.note, failure].filter(Boolean).join('; ')} |`;
  });
  return head + rows.join('\n') + '\n';
}

export function renderSeeding(r: ScaleResults): string {
  return (
    [r.small, r.large]
      .map(
        (s) =>
          `Seeded ${s.label} (${s.database}) in ${s.seedS.toFixed(1)} s, then VACUUM ANALYZE ${s.vacuumS.toFixed(1)} s; slowest steps: ` +
          Object.entries(s.seedStepsS)
            .sort((a, b) => b[1] - a[1])
            .slice(0, 4)
            .map(([k, v]) => `${k} ${v.toFixed(1)} s`)
            .join(', ') +
          (s.counterProblems.length > 0 ? `\n  COUNTERS DISAGREE: ${s.counterProblems.join('; ')}` : ''),
      )
      .join('\n') + '\n'
  );
}

export function renderStorm(s: StormFigures): string {
  const outcomes = Object.entries(s.outcomes)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  return (
    `Storm: ${s.sources} sources on one cron minute (${s.firedAt}), one daemon --role scheduler: ` +
    `${s.finished}/${s.sources} sync runs finished (${outcomes || 'none'}); first started ${s.firstStartS ?? '-'} s after the minute, ` +
    `last finished ${s.durationS ?? '-'} s after it; ${s.errorLines} error lines, ${s.failedJobs} failed jobs, ` +
    `${s.troubleLines.length} pool/timeout lines; peak RSS ${s.peakRssMb} MB; daemon exit ${s.exitCode ?? 'n/a'}\n` +
    `${s.ok ? 'PASS' : 'FAIL'}  storm completes with 0 errors and no pool exhaustion (log: ${s.logPath})\n` +
    (s.firstError ? `  first error: ${s.firstError}\n` : '') +
    s.troubleLines.map((l) => `  ${l}\n`).join('')
  );
}

export function renderProjection(p: Projection, label: string): string {
  const rows = p.tables
    .filter((t) => t.totalBytes >= 2 ** 20)
    .map((t) => {
      const heap = t.totalBytes - t.toastBytes - t.indexBytes;
      return `| ${t.table} | ${t.rowsEstimate === null ? '-' : Math.round(t.rowsEstimate)} | ${mb(t.totalBytes)} | ${mb(heap)} | ${mb(t.toastBytes)} | ${mb(t.indexBytes)} | ${t.rowsEstimate ? Math.round(t.totalBytes / t.rowsEstimate) : '-'} |`;
    });
  const proj = p.perTable
    .filter((t) => t.without >= 2 ** 20)
    .map((t) => `| ${t.table} | ${gb(t.without)} | ${gb(t.with)} |`);
  const perTranscript = p.perTranscript.reduce((n, t) => n + t.bytes, 0);
  const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
  return (
    `Table sizes at ${label} (tableStorage; tables under 1 MB left out), ${gb(p.totalBytes)} in all:\n\n` +
    '| table | rows | total | heap | toast | indexes | bytes/row |\n|---|---:|---:|---:|---:|---:|---:|\n' +
    rows.join('\n') +
    `\n\nA year of 2 000 sources with real ~20 KB transcripts: ${gb(p.yearWithout)} without retention, ${gb(p.yearWith)} with it\n\n` +
    '| table | without retention | with retention |\n|---|---:|---:|\n' +
    proj.join('\n') +
    `\n| **total** | **${gb(p.yearWithout)}** | **${gb(p.yearWith)}** |\n\n` +
    `Bytes per stored transcript (real ~20 KB ones; ${p.passages.perTranscript.toFixed(1)} passages each), by table:\n\n` +
    '| table | per transcript |\n|---|---:|\n' +
    p.perTranscript.map((t) => `| ${t.table} | ${kb(t.bytes)} |`).join('\n') +
    `\n| **total** | **${kb(perTranscript)}** |\n\nAssumptions:\n` +
    p.assumptions.map((a) => `- ${a}\n`).join('')
  );
}
