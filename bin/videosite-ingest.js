#!/usr/bin/env -S node --max-old-space-size=1024 --max-semi-space-size=2
// Runs the TypeScript sources directly through tsx, so there is no build step to forget.
// The heap limit is far above what a process needs (its live heap is ~40-100 MB), but below the
// size at which V8 lets garbage grow the heap to 4x the live set before collecting: on a big
// host, polling and sinking a 5000-item transcript batch peaked at ~330-400 MB RSS per process
// without it, ~220-270 MB with it, for ~10% more CPU (benchmark W1/W2, issue #4).
// A 2 MB young generation (V8's default grows it to 16 MB per semi-space) keeps ~38 MB less
// garbage in flight: peak RSS 160-186 MB per process in W1/W2 instead of 204-225 MB, same CPU
// (issue #12). Run as `node bin/videosite-ingest.js`, pass the same with
// NODE_OPTIONS="--max-old-space-size=1024 --max-semi-space-size=2".
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
await main(process.argv);
