/**
 * The start-up check that the postgres.js driver this process loads carries the crash guards of
 * scripts/patch-postgres.mjs (a write on a connection that died mid-transaction would otherwise
 * throw from a timer, and a connection that died while reading the array types would reject a
 * promise nobody holds: either kills the process). An install that skipped the patch (install scripts
 * not run, another copy hoisted, a version drift) is refused with what to do, instead of running
 * a daemon that dies at the first Postgres restart.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** The lines scripts/patch-postgres.mjs writes into each file it patches, one per patch (test/unit/driver-guard.test.ts keeps them equal). */
export const DRIVER_GUARD_MARK = '/* patched by videosite-ingest scripts/patch-postgres.mjs */';
export const DRIVER_TYPES_MARK = '/* patched by videosite-ingest scripts/patch-postgres.mjs: fetchArrayTypes */';
const DRIVER_MARKS = [DRIVER_GUARD_MARK, DRIVER_TYPES_MARK];

/** The driver's files the process may load: the ESM build (`import`) and the CommonJS one. */
const GUARDED_FILES = ['src/connection.js', 'cjs/src/connection.js'];

export class DriverUnguardedError extends Error {
  constructor(
    readonly driverRoot: string,
    readonly files: string[],
  ) {
    super(
      `the postgres.js driver at ${driverRoot} lacks the crash guards (${files.join(', ')}): a Postgres restart would kill this process. ` +
        'Reinstall videosite-ingest from its package (it carries a patched driver), or in a checkout run: node scripts/patch-postgres.mjs',
    );
    this.name = 'DriverUnguardedError';
  }
}

/** The folder of the `postgres` package that `from` (a module URL) loads. */
export function driverRoot(from: string = import.meta.url): string {
  let dir = dirname(createRequire(from).resolve('postgres'));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: unknown }).name === 'postgres')
      return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the postgres package this module loads');
    dir = up;
  }
}

let checked: string | undefined;

/** Throws DriverUnguardedError when a driver file lacks a guard; checks once per process. */
export function assertDriverGuarded(root: string = driverRoot()): void {
  if (checked === root) return;
  const missing = GUARDED_FILES.filter((rel) => {
    const file = join(root, rel);
    if (!existsSync(file)) return true;
    const text = readFileSync(file, 'utf8');
    return DRIVER_MARKS.some((mark) => !text.includes(mark));
  });
  if (missing.length > 0) throw new DriverUnguardedError(root, missing);
  checked = root;
}
