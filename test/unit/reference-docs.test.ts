import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PAGES, ROOT, renderPage } from '../../scripts/docs.ts';

describe('generated reference pages', () => {
  for (const page of PAGES) {
    it(`${page.path} is what \`npm run docs\` writes from ${page.source}`, async () => {
      const committed = readFileSync(join(ROOT, page.path), 'utf8');
      expect(committed, `${page.path} is stale: run \`npm run docs\` and commit it`).toBe(await renderPage(page));
    });
  }

  it('the CLI reference holds every subcommand and option the program defines', async () => {
    const text = readFileSync(join(ROOT, 'docs/reference/cli.md'), 'utf8');
    for (const heading of ['`videosite-ingest sources add`', '`videosite-ingest webhooks rotate-secret`']) {
      expect(text).toContain(heading);
    }
    expect(text).toContain('--max-credits-per-day');
  });
});
