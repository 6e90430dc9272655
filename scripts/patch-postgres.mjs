#!/usr/bin/env node
// Patches postgres.js 3.4.9 (pinned exactly in package.json; run by `postinstall` and `prepack`;
// idempotent; removable once upstream ships fixes). Two defects, each an uncaught error that
// kills the whole process when Postgres restarts; each patch writes its own mark, so a driver
// patched by an older version of this script gets the patches it lacks.
//
// 1. nextWrite (porsager/postgres#1154, #1208; fixes proposed in #1168, #1209): when a server
//    connection dies during a transaction, `sql.begin` sends ROLLBACK on the dead connection; the
//    small write is deferred with setImmediate, and by the time it runs `closed()` has set `socket`
//    to null, so `socket.write` throws a TypeError from a timer callback. The fault suite's
//    Postgres SIGKILL (test/faults/06) hit it on every run. The patch makes a write on a closed
//    connection fail its queries with CONNECTION_CLOSED (a catchable error; our job then retries),
//    and clears the deferred-write state when the connection closes, so a reconnected connection
//    does not keep a stale timer that would stop its writes from ever being flushed.
// 2. fetchArrayTypes (porsager/postgres#1192, #1205, #1223, all open): the first statement of every
//    new connection reads the array types, and `ReadyForQuery` drops that async call's promise. A
//    connection that dies (or is refused) during it rejects the promise with nobody listening: an
//    unhandled rejection. Scenario 06 hit it on a busy machine (the daemon died reconnecting). The
//    error is already delivered where it belongs (the waiting query fails, or the connection
//    reconnects and fetches the types again), so the patch only attaches the missing handler.
//
// Every way of installing gets the patched driver: a checkout's `npm ci` runs this script; the
// packed tarball carries the patched copy itself (`bundleDependencies`, patched by `prepack`),
// so an install that runs no scripts, or hoists another `postgres`, still uses it. At start-up
// src/db/driver-guard.ts refuses to run on a driver without both patches. A driver file that does
// not look like the one the patches were written for fails this script (exit 1), loudly.
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
const TYPES_MARK = '/* patched by videosite-ingest scripts/patch-postgres.mjs: fetchArrayTypes */';

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
const TYPES_FROM = '        return fetchArrayTypes()\n';
const TYPES_TO = `        ${TYPES_MARK}\n        return fetchArrayTypes().catch(() => undefined)\n`;

/** Each patch: its mark, whether a file can take it, and the change. */
const PATCHES = [
  {
    name: 'the nextWrite guard (porsager/postgres#1208)',
    mark: MARK,
    applies: (text) => text.includes(GUARD_FROM) && text.includes(CLEAR_FROM),
    apply: (text) => text.replace(GUARD_FROM, GUARD_TO).split(CLEAR_FROM).join(CLEAR_TO),
  },
  {
    name: 'the fetchArrayTypes handler (porsager/postgres#1192)',
    mark: TYPES_MARK,
    applies: (text) => text.split(TYPES_FROM).length === 2,
    apply: (text) => text.replace(TYPES_FROM, TYPES_TO),
  },
];

const applied = [];
const failed = [];
for (const rel of ['src/connection.js', 'cjs/src/connection.js', 'cf/src/connection.js']) {
  const file = join(root, rel);
  if (!existsSync(file)) {
    failed.push(`${rel} is missing`);
    continue;
  }
  const before = readFileSync(file, 'utf8');
  let text = before;
  for (const patch of PATCHES) {
    if (text.includes(patch.mark)) continue;
    if (!patch.applies(text)) {
      failed.push(`${rel} does not look like postgres.js 3.4.9 for ${patch.name}`);
      continue;
    }
    text = patch.apply(text);
    applied.push(`${patch.name} in ${rel}`);
  }
  if (text !== before) writeFileSync(file, text);
}
if (failed.length > 0) {
  process.stderr.write(
    `patch-postgres: the crash guards do not apply to ${root}: ${failed.join('; ')}. ` +
      'Check whether upstream fixed porsager/postgres#1208 and #1192, and update the pinned version and this patch.\n',
  );
  process.exit(1);
}
if (applied.length > 0) process.stderr.write(`patch-postgres: applied ${applied.join(', ')}\n`);
