#!/usr/bin/env -S node --max-old-space-size=1024 --max-semi-space-size=2
// Runs the compiled JavaScript of dist/ (`npm run build`, which every `npm install`, `npm ci` and
// `npm pack` runs through `prepare`): `--help` in ~0.13 s and 47 MB instead of ~2.4 s and 120 MB
// with tsx compiling the sources at every start (bench/startup.ts on a busy 2-core machine; bare
// node: 0.05 s, 38 MB). In a checkout where a file under src/ is newer than the build
// (dist/.build-stamp), it runs the sources through tsx instead, so an edited source is never
// shadowed by stale JavaScript; looking costs 3-5 ms there (a stat per file and folder, 143 of
// them). An installed package has no src/: it runs dist/.
// The heap limit is far above what a process needs (its live heap is ~40-100 MB), but below the
// size at which V8 lets garbage grow the heap to 4x the live set before collecting: on a big
// host, polling and sinking a 5000-item transcript batch peaked at ~330-400 MB RSS per process
// without it, ~220-270 MB with it, for ~10% more CPU (benchmark W1/W2, issue #4).
// A 2 MB young generation (V8's default grows it to 16 MB per semi-space) keeps ~38 MB less
// garbage in flight: peak RSS 160-186 MB per process in W1/W2 instead of 204-225 MB, same CPU
// (issue #12). Run as `node bin/videosite-ingest.js`, pass the same with
// NODE_OPTIONS="--max-old-space-size=1024 --max-semi-space-size=2".
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../src', import.meta.url));
const STAMP = fileURLToPath(new URL('../dist/.build-stamp', import.meta.url));

/**
 * The newest mtime under `dir`, ms: of its files and of its folders (deleting or renaming a source
 * changes only its folder's). A file that vanishes while this looks (an editor's save) is skipped:
 * its folder changed too.
 */
function newestMtimeMs(dir) {
  let newest = statSync(dir).mtimeMs;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const mtimeMs = entry.isDirectory()
      ? newestMtimeMs(path)
      : (statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? 0);
    if (mtimeMs > newest) newest = mtimeMs;
  }
  return newest;
}

/** Whether dist/ holds the current program: built after the last change to anything under src/. */
function builtIsCurrent() {
  // an installed package ships dist/ and no sources
  if (statSync(SRC, { throwIfNoEntry: false }) === undefined) return true;
  const built = statSync(STAMP, { throwIfNoEntry: false });
  if (built === undefined) return false;
  // strictly older: the stamp holds the build's start rounded down to a second (scripts/build.mjs)
  return newestMtimeMs(SRC) < built.mtimeMs;
}

if (builtIsCurrent()) {
  const { main } = await import('../dist/cli/main.js');
  await main(process.argv);
} else {
  let tsx;
  try {
    tsx = await import('tsx/esm/api');
  } catch (e) {
    if (e.code !== 'ERR_MODULE_NOT_FOUND') throw e;
    process.stderr.write(
      'error: dist/ is missing or older than src/, and tsx is not installed: run `npm install` (it builds dist/)\n',
    );
    process.exit(2);
  }
  tsx.register();
  const { main } = await import('../src/cli/main.ts');
  await main(process.argv);
}
