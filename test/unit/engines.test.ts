/**
 * `npm ci` warns (EBADENGINE) for every installed package whose `engines.node` does not admit the
 * running Node; the lock records each package's `engines`, so the check needs no install. A
 * package built for another platform (`os`/`cpu`) is not installed here, so it is not checked.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// npm's own range semantics: semver is in the lock (a dependency of our dependencies)
const semver = createRequire(import.meta.url)('semver') as {
  satisfies(version: string, range: string, options?: { includePrerelease?: boolean }): boolean;
};

interface LockedPackage {
  version?: string;
  engines?: { node?: string };
  os?: string[];
  cpu?: string[];
}

/** `os: ['linux']`, `['!win32']`: whether npm would install it on this platform. */
function installsHere(allowed: string[] | undefined, current: string): boolean {
  if (!allowed || allowed.length === 0) return true;
  if (allowed.includes(`!${current}`)) return false;
  const positive = allowed.filter((x) => !x.startsWith('!'));
  return positive.length === 0 || positive.includes(current);
}

/** The lock's packages whose `engines.node` this Node does not satisfy, as `name@version requires range`. */
function unsupportedEngines(lockText: string, nodeVersion: string): string[] {
  const lock = JSON.parse(lockText) as { packages: Record<string, LockedPackage> };
  return Object.entries(lock.packages)
    .filter(([path]) => path !== '')
    .filter(([, p]) => installsHere(p.os, process.platform) && installsHere(p.cpu, process.arch))
    .filter(([, p]) => p.engines?.node !== undefined && !semver.satisfies(nodeVersion, p.engines.node))
    .map(
      ([path, p]) => `${path.replace(/^.*node_modules\//, '')}@${p.version ?? '?'} requires node ${p.engines!.node}`,
    );
}

describe('package-lock.json', () => {
  it(`installs with no EBADENGINE warning on this Node (${process.version})`, () => {
    const lock = readFileSync(join(import.meta.dirname, '..', '..', 'package-lock.json'), 'utf8');
    expect(unsupportedEngines(lock, process.version)).toEqual([]);
  });

  it('names a package whose engines.node excludes this Node', () => {
    const lock = JSON.stringify({
      packages: {
        '': { engines: { node: '>=1' } },
        'node_modules/a': { version: '1.0.0', engines: { node: '>=20' } },
        'node_modules/b/node_modules/c': { version: '2.0.0', engines: { node: '>= 22' } },
        'node_modules/d': { version: '3.0.0', engines: { node: '>= 99' }, os: ['!' + process.platform] },
      },
    });
    expect(unsupportedEngines(lock, 'v20.20.2')).toEqual(['c@2.0.0 requires node >= 22']);
  });
});
