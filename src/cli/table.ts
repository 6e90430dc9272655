/** Plain text tables for stdout: columns padded to their widest cell, no colours. */
export function renderTable(headers: string[], rows: (string | number | null | undefined)[][]): string {
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined ? '-' : String(c))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)));
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
