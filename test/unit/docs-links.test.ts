import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return markdownFiles(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

const PAGES = [join(ROOT, 'README.md'), join(ROOT, 'ARCHITECTURE.md'), ...markdownFiles(join(ROOT, 'docs'))];

/** `[text](target)` links, code spans and fenced blocks left out. */
function linksOf(text: string): string[] {
  const prose = text.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
}

describe('the documentation', () => {
  it('README.md is at most 170 lines', () => {
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length).toBeLessThanOrEqual(170);
  });

  for (const page of PAGES) {
    const name = relative(ROOT, page);
    it(`${name}: every relative link resolves inside the repository`, () => {
      const text = readFileSync(page, 'utf8');
      const broken: string[] = [];
      for (const link of linksOf(text)) {
        if (/^(https?:|mailto:)/.test(link) || link.startsWith('#')) continue;
        const target = resolve(dirname(page), link.split('#')[0]!);
        if (!target.startsWith(ROOT + '/') || !existsSync(target)) broken.push(link);
      }
      expect(broken, `links in ${name} that point at nothing in the repository`).toEqual([]);
      // the design files the project was built from are not part of it
      expect(text, `${name} names a file outside the repository`).not.toMatch(/\.\.\/shared\b/);
    });
  }
});
