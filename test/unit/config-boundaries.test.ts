/**
 * `src/api/`, `src/db/` and `src/queues/` are libraries that take options: none of their files
 * imports `src/config.ts` (not even a type), so the configuration is joined to them in one place
 * (src/api-from-config.ts, src/cli/). Read from the import lines themselves: simple and strict.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CONFIG = join(root, 'src/config.ts');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : /\.(ts|mts|js|mjs)$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

/** Every module specifier of `import … from`, `export … from`, `import '…'` and `import('…')`. */
function specifiersOf(text: string): string[] {
  const re = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"]+)['"]/g;
  return [...text.matchAll(re)].map((m) => m[1]!);
}

/** The files of `dir` that import src/config.ts, with the line that does. */
function configImportsUnder(dir: string): string[] {
  const found: string[] = [];
  for (const file of sourceFiles(join(root, dir))) {
    for (const spec of specifiersOf(readFileSync(file, 'utf8'))) {
      if (!spec.startsWith('.')) continue;
      const target = resolve(dirname(file), spec).replace(/\.js$/, '.ts');
      if (target === CONFIG || target === CONFIG.replace(/\.ts$/, '')) found.push(`${relative(root, file)}: ${spec}`);
    }
  }
  return found;
}

describe('modules that take options do not read the configuration', () => {
  for (const dir of ['src/api', 'src/db', 'src/queues']) {
    it(`no file under ${dir}/ imports src/config.ts`, () => {
      expect(sourceFiles(join(root, dir)).length).toBeGreaterThan(0);
      expect(configImportsUnder(dir)).toEqual([]);
    });
  }

  it('finds such an import where there is one (src/cli/ joins the two)', () => {
    expect(configImportsUnder('src/cli').length).toBeGreaterThan(0);
  });
});
