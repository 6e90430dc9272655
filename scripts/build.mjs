#!/usr/bin/env node
// `npm run build` (run by `prepare`, so `npm ci`, `npm install` and `npm pack` build it): compiles
// src/ to dist/ (tsconfig.build.json), from scratch so a deleted source leaves no module behind,
// then writes dist/.build-stamp with the time the build STARTED. bin/videosite-ingest.js runs
// dist/ only when no file under src/ is newer than that stamp, so a source edited during or after
// the build is never shadowed by stale JavaScript: the command runs the sources through tsx then.
import { spawnSync } from 'node:child_process';
import { closeSync, openSync, rmSync, utimesSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const stamp = join(dist, '.build-stamp');

let tsc;
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
} catch {
  process.stderr.write(
    'build: typescript is not installed (an install with --omit=dev?): dist/ needs the dev dependencies; ' +
      'install with them, or with --ignore-scripts and copy a built dist/\n',
  );
  process.exit(1);
}

// rounded down to a whole second, and bin/ wants every source strictly older than the stamp:
// an edit made during the build counts as newer even where the filesystem keeps whole seconds
const startedS = Math.floor(Date.now() / 1000);
rmSync(dist, { recursive: true, force: true });
const r = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { cwd: root, stdio: 'inherit' });
if (r.status !== 0) {
  process.stderr.write(`build: tsc -p tsconfig.build.json exited with ${r.status ?? r.signal}\n`);
  process.exit(1);
}
closeSync(openSync(stamp, 'w'));
utimesSync(stamp, startedS, startedS);
