#!/usr/bin/env node
// Patches postgres.js 3.4.x (run by `postinstall`; idempotent; removable once upstream ships a fix).
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
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', 'postgres');
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
for (const rel of ['src/connection.js', 'cjs/src/connection.js', 'cf/src/connection.js']) {
  const file = join(root, rel);
  if (!existsSync(file)) continue;
  let text = readFileSync(file, 'utf8');
  if (text.includes(MARK)) continue;
  if (!text.includes(GUARD_FROM)) {
    process.stderr.write(`patch-postgres: ${rel} does not look like postgres.js 3.4.x; not patched (check whether upstream fixed #1208)\n`);
    continue;
  }
  text = text.replace(GUARD_FROM, GUARD_TO).split(CLEAR_FROM).join(CLEAR_TO);
  writeFileSync(file, text);
  patched++;
}
if (patched > 0) process.stderr.write(`patch-postgres: guarded nextWrite in ${patched} file(s) of postgres.js\n`);
