/**
 * Writes the generated parts of the docs (`npm run docs`); with `--check`, writes nothing and
 * exits 1 naming the stale pages. The pages are listed in scripts/docs/pages.ts.
 */
import { REGENERATE_COMMAND, stalePages, writePages } from './docs/generated.ts';
import { PAGES } from './docs/pages.ts';

if (process.argv.includes('--check')) {
  const stale = stalePages(PAGES);
  for (const path of stale) console.error(`${path} is stale: run ${REGENERATE_COMMAND}`);
  process.exitCode = stale.length === 0 ? 0 : 1;
} else {
  const written = writePages(PAGES);
  console.log(written.length === 0 ? 'docs: up to date' : `docs: wrote ${written.join(', ')}`);
}
