/**
 * Server-side HTML without a template engine: a tagged template that escapes every interpolated
 * value unless it is already markup (`SafeHtml`, made only by `html` and `raw`). Titles and
 * errors come from the upstream and from users, so nothing reaches the page unescaped by
 * accident.
 */

export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => ESCAPES[ch]!);
}

function render(v: unknown): string {
  if (v === null || v === undefined || v === false) return '';
  if (v instanceof SafeHtml) return v.value;
  if (Array.isArray(v)) return v.map(render).join('');
  return escapeHtml(String(v));
}

/** Markup with escaped interpolations; arrays are joined, null/undefined/false render nothing. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]!;
  return new SafeHtml(out);
}

/** Trusted markup (built here, never from data). */
export function raw(s: string): SafeHtml {
  return new SafeHtml(s);
}
