#!/usr/bin/env node
// Patches postgres.js 3.4.9 (pinned exactly in package.json; run by `postinstall` and `prepack`;
// idempotent; removable once upstream ships a fix).
//
// The defect (porsager/postgres#1154, #1208; fixes proposed in #1168, #1209): when a server
// connection dies during a transaction, `sql.begin` sends ROLLBACK on the dead connection; the
// small write is deferred with setImmediate, and by the time it runs `closed()` has set `socket`
// to null, so `socket.write` throws a TypeError from a timer callback: an uncaught exception
// that kills the whole process. The fault suite's Postgres SIGKILL (test/faults/06) hits it on
// every run: the daemon died instead of reconnecting.
//
// The patch makes a write on a closed connection fail its queries with CONNECTION_CLOSED (a
// catchable error; our job then retries), and clears the deferred-write state when the
// connection closes, so a reconnected connection does not keep a stale timer that would stop
// its writes from ever being flushed.
//
// Every way of installing gets the patched driver: a checkout's `npm ci` runs this script; the
// packed tarball carries the patched copy itself (`bundleDependencies`, patched by `prepack`),
// so an install that runs no scripts, or hoists another `postgres`, still uses it. At start-up
// src/db/driver-guard.ts refuses to run on a driver without the patch. A driver file that does
// not look like the one the patch was written for fails this script (exit 1), loudly.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** The folder of the `postgres` package this package loads, wherever the install put it (its own node_modules, or hoisted). */
function driverRoot() {
  // its exports map lists no package.json: walk up from its entry point
  let dir = dirname(createRequire(import.meta.url).resolve('postgres'));
  while (
    !existsSync(join(dir, 'package.json')) ||
    JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name !== 'postgres'
  ) {
    const up = dirname(dir);
    if (up === dir) throw new Error('patch-postgres: cannot find the postgres package');
    dir = up;
  }
  return dir;
}
const root = driverRoot();
const MARK = '/* patched by videosite-ingest scripts/patch-postgres.mjs */';

const GUARD_FROM = `  function nextWrite(fn) {
    const x = socket.write(chunk, fn)`;
const GUARD_TO = `  function nextWrite(fn) {
    ${MARK}
    if (!socket) {
      nextWriteTimer !== null && clearImmediate(nextWriteTimer)
      chunk = nextWriteTimer = null
      error(Errors.connection('CONNECTION_CLOSED', options))
      return false
    }
    const x = socket.write(chunk, fn)`;
const CLEAR_FROM = '    clearImmediate(nextWriteTimer)\n';
const CLEAR_TO = '    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null\n';

let patched = 0;
const failed = [];
for (const rel of ['src/connection.js', 'cjs/src/connection.js', 'cf/src/connection.js']) {
  const file = join(root, rel);
  if (!existsSync(file)) {
    failed.push(`${rel} is missing`);
    continue;
  }
  let text = readFileSync(file, 'utf8');
  if (text.includes(MARK)) continue;
  if (!text.includes(GUARD_FROM) || !text.includes(CLEAR_FROM)) {
    failed.push(`${rel} does not look like postgres.js 3.4.9`);
    continue;
  }
  text = text.replace(GUARD_FROM, GUARD_TO).split(CLEAR_FROM).join(CLEAR_TO);
  writeFileSync(file, text);
  patched++;
}
if (failed.length > 0) {
  process.stderr.write(
    `patch-postgres: the crash guard does not apply to ${root}: ${failed.join('; ')}. ` +
      'Check whether upstream fixed porsager/postgres#1208 and update the pinned version and this patch.\n',
  );
  process.exit(1);
}
if (patched > 0) process.stderr.write(`patch-postgres: guarded nextWrite in ${patched} file(s) of postgres.js\n`);
