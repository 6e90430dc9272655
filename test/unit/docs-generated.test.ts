/**
 * The generated reference pages match what `npm run docs` would write from the code: a setting
 * added, renamed or re-documented without regenerating fails here, naming the command.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENV_VARIABLES } from '../../src/config.ts';
import { PAGES } from '../../scripts/docs/pages.ts';
import {
  END_MARKER,
  expectedText,
  REGENERATE_COMMAND,
  replaceGenerated,
  REPO_ROOT,
} from '../../scripts/docs/generated.ts';

describe('generated docs', () => {
  for (const page of PAGES) {
    it(`${page.path} is up to date`, () => {
      const committed = readFileSync(join(REPO_ROOT, page.path), 'utf8');
      expect(committed, `${page.path} is stale: run \`${REGENERATE_COMMAND}\` and commit it`).toBe(expectedText(page));
    });
  }

  it('the configuration reference names every variable the configuration reads', () => {
    const text = readFileSync(join(REPO_ROOT, 'docs/reference/configuration.md'), 'utf8');
    for (const name of ENV_VARIABLES) expect(text).toContain(`| \`${name}\` |`);
  });

  it('regenerating keeps what is outside the markers and rewrites what is inside', () => {
    const page = PAGES[0]!;
    const text = expectedText(page);
    const handEdited = `Hand-written prose.\n\n${text}`;
    expect(replaceGenerated(handEdited, 'x')).toMatch(/^Hand-written prose\./);
    const inside = text.replace(END_MARKER, `| \`EXTRA\` | none |  | edited by hand |\n${END_MARKER}`);
    expect(replaceGenerated(inside, 'body')).not.toContain('EXTRA');
  });
});
