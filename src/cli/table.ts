import { terminalSafe } from '../terminal-text.ts';

/**
 * Plain text tables for stdout: columns padded to their widest cell, no colours. Every cell goes
 * through `terminalSafe` (one line, no control sequence), since cells carry upstream text.
 */
export function renderTable(headers: string[], rows: (string | number | null | undefined)[][]): string {
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined ? '-' : terminalSafe(String(c)))));
  // a loop, not Math.max(...column): spreading a long column overflows the call stack
  const widths = headers.map((h) => h.length);
  for (const r of cells) {
    for (let i = 0; i < widths.length; i++) widths[i] = Math.max(widths[i]!, (r[i] ?? '').length);
  }
  const line = (r: string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...cells.map(line)].join('\n') + '\n';
}

/** `2026-11-22T05:06:00.000Z` → `2026-11-22 05:06:00Z`; null → `never`. */
export function shortTime(iso: string | null): string {
  return iso === null ? 'never' : `${iso.slice(0, 19).replace('T', ' ')}Z`;
}
