/**
 * How a value that fails a schema is named in a message (a quarantined item's reason, a refused
 * poll, an error): the failing field's path and what was wrong with it. No schema is loaded here, so
 * modules that only report (src/db/pages.ts, which `status` loads) can use it.
 */
import type { z } from 'zod';

/** `a.b[2].c` for an issue path, as error messages name the failing field. */
export function formatIssuePath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out === '' ? String(p) : `.${String(p)}`;
  }
  return out === '' ? '(root)' : out;
}

/** `<path>: <message>` of a failed parse's first issue (`(root): invalid` when it has none). */
export function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  return `${issue ? formatIssuePath(issue.path) : '(root)'}: ${issue?.message ?? 'invalid'}`;
}
