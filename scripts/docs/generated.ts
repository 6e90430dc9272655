/**
 * Pages with a generated part: the text between `<!-- BEGIN GENERATED -->` and
 * `<!-- END GENERATED -->` is written from a definition in the code (a setting, a command, a
 * table); the rest of the page is written by hand and kept. One helper for every such page: it
 * writes them (`npm run docs`) and tells which are stale (the unit test, `npm run docs -- --check`).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BEGIN_MARKER = '<!-- BEGIN GENERATED -->';
export const END_MARKER = '<!-- END GENERATED -->';
/** The command that rewrites every generated page. */
export const REGENERATE_COMMAND = 'npm run docs';

/** The repository's root (this file is scripts/docs/generated.ts). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface GeneratedPage {
  /** repository-relative path, e.g. `docs/reference/configuration.md` */
  path: string;
  /** where the generated text comes from, named in the page, e.g. `SETTINGS in src/config.ts` */
  source: string;
  /** the generated Markdown, without the markers */
  render(): string;
  /** the hand-written page around the markers when the file does not exist yet */
  skeleton: string;
}

/** The notice every generated part starts with: that it is generated, from what, and how to regenerate. */
export function generatedNotice(source: string): string {
  return (
    `<!-- Generated from ${source} by \`${REGENERATE_COMMAND}\`: edit there, not here. -->\n\n` +
    `_This part is generated from ${source}; after changing it, run \`${REGENERATE_COMMAND}\`._`
  );
}

/** `text` with its generated part replaced by `body` (the markers kept); a page without both markers is an error. */
export function replaceGenerated(text: string, body: string, path = 'page'): string {
  const begin = text.indexOf(BEGIN_MARKER);
  const end = text.indexOf(END_MARKER, begin + BEGIN_MARKER.length);
  if (begin < 0 || end < 0) {
    throw new Error(`${path}: expected a ${BEGIN_MARKER} line and, after it, an ${END_MARKER} line`);
  }
  return `${text.slice(0, begin + BEGIN_MARKER.length)}\n${body.trimEnd()}\n${text.slice(end)}`;
}

/** What the page should hold: the file as it is (or its skeleton), the generated part rewritten. */
export function expectedText(page: GeneratedPage): string {
  const file = join(REPO_ROOT, page.path);
  const current = existsSync(file) ? readFileSync(file, 'utf8') : page.skeleton;
  return replaceGenerated(current, `${generatedNotice(page.source)}\n\n${page.render()}`, page.path);
}

/** The pages whose file differs from what `writePages` would write. */
export function stalePages(pages: readonly GeneratedPage[]): string[] {
  return pages
    .filter((p) => {
      const file = join(REPO_ROOT, p.path);
      return !existsSync(file) || readFileSync(file, 'utf8') !== expectedText(p);
    })
    .map((p) => p.path);
}

/** Write every stale page; returns the paths written. */
export function writePages(pages: readonly GeneratedPage[]): string[] {
  const stale = stalePages(pages);
  for (const page of pages.filter((p) => stale.includes(p.path))) {
    writeFileSync(join(REPO_ROOT, page.path), expectedText(page));
  }
  return stale;
}

/** A Markdown table; `|` and line breaks inside a cell are escaped. */
export function markdownTable(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
  const line = (cells: readonly string[]) => `| ${cells.map(cell).join(' | ')} |`;
  return [line(head), `|${head.map(() => '---').join('|')}|`, ...rows.map(line)].join('\n');
}
