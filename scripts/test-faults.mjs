#!/usr/bin/env node
// `npm run test:faults [-- FILE...]`: the fault suite (vitest.faults.config.ts) in two lanes side
// by side, each lane one vitest process running its files one at a time. A scenario mostly waits
// (an outage of 30 or 60 s, a process starting, a poll interval) on servers of its own, so two at
// once share the 2 cores; the scenarios' figures hold so, also with other tests or a benchmark
// beside them. One file at a time the suite took 24.5 min of a CI run; in two lanes the
// measured durations (LANE_SECONDS) come to about 14 min per lane, and two runs on a machine
// busy with other test runs too (load average 7-11) took 19-23 min per lane.
//
// The files are dealt to the lanes by their measured duration, longest first, each to the lane
// with the fewest seconds so far: `vitest --shard` splits by file count, and its halves differed
// by minutes. FAULTS_SHARDS=N sets the number of lanes (1: the whole suite in one process, one
// file at a time); files named on the command line run in one process, one at a time. Each
// lane's output lines are prefixed with `[lane N]`; each lane's time is printed at the end.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Seconds per fault file, as vitest reported them in a run of two halves side by side on the
 * 2-core machine (29: estimated from a later run). What matters is their proportions; a file not
 * listed counts as DEFAULT_SECONDS until it is measured and added here.
 */
const LANE_SECONDS = {
  '00-redis-settings': 13,
  '01-02-sink-sigkill': 150,
  '03-sigterm': 77,
  '04-redis-restart-empty': 19,
  '05-redis-unreachable': 75,
  '06-postgres-sigkill': 44,
  '07-replay-batch': 11,
  '08-bad-items': 25,
  '09-rate-limit': 40,
  '10-upstream-errors': 52,
  '11-account-refusals': 84,
  '12-expiry': 29,
  '13-upstream-hangs': 34,
  '14-three-daemons': 51,
  '15-secret-scan': 75,
  '16-bad-input': 106,
  '17-overlapping-sources': 68,
  '18-item-drift': 40,
  '19-unknown-batch-status': 56,
  '20-poison-values': 19,
  '21-download-faults': 74,
  '22-transient-refusals': 77,
  '23-billing-renewal': 27,
  '24-prune-under-load': 48,
  '25-credits-three-daemons': 38,
  '26-webhook-outage': 121,
  '27-redis-cluster': 33,
  '28-redis-failover': 33,
  '29-pgbouncer': 50,
  '30-postgres-read-only': 63,
  '31-rolling-upgrade': 50,
};
const DEFAULT_SECONDS = 60;

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// the package's bin (its exports map does not list the file itself)
const vitestPackage = createRequire(import.meta.url).resolve('vitest/package.json');
const vitest = join(dirname(vitestPackage), createRequire(import.meta.url)('vitest/package.json').bin.vitest);
const args = process.argv.slice(2);
const named = args.some((a) => !a.startsWith('-'));
const lanes = named ? 1 : Number(process.env.FAULTS_SHARDS ?? 2);
if (!Number.isInteger(lanes) || lanes < 1 || lanes > 8) {
  process.stderr.write(
    `FAULTS_SHARDS: invalid value ${JSON.stringify(process.env.FAULTS_SHARDS)}: expected a whole number from 1 to 8\n`,
  );
  process.exit(2);
}

/** Longest first, each file to the lane with the fewest seconds so far. */
function deal(files, n) {
  const weight = (f) => LANE_SECONDS[f.slice('test/faults/'.length, -'.test.ts'.length)] ?? DEFAULT_SECONDS;
  const out = Array.from({ length: n }, () => ({ files: [], seconds: 0 }));
  for (const f of [...files].sort((a, b) => weight(b) - weight(a) || a.localeCompare(b))) {
    const lane = out.reduce((min, l) => (l.seconds < min.seconds ? l : min));
    lane.files.push(f);
    lane.seconds += weight(f);
  }
  return out;
}

/** Run vitest; with a label, prefix each line of its output so the lanes can be told apart. */
function run(vitestArgs, label) {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [vitest, 'run', '--config', 'vitest.faults.config.ts', ...vitestArgs], {
      cwd: root,
      stdio: label === undefined ? 'inherit' : ['ignore', 'pipe', 'pipe'],
    });
    if (label !== undefined) {
      for (const [stream, out] of [
        [child.stdout, process.stdout],
        [child.stderr, process.stderr],
      ]) {
        let partial = '';
        stream.on('data', (d) => {
          const parts = (partial + d.toString()).split('\n');
          partial = parts.pop() ?? '';
          for (const p of parts) out.write(`[${label}] ${p}\n`);
        });
        stream.on('end', () => partial !== '' && out.write(`[${label}] ${partial}\n`));
      }
    }
    child.on('close', (code, signal) =>
      resolve({ code: code ?? (signal ? 1 : 0), seconds: Math.round((Date.now() - started) / 1000) }),
    );
  });
}

if (lanes === 1) {
  const { code } = await run(args);
  process.exit(code);
}

const files = readdirSync(join(root, 'test/faults'))
  .filter((f) => f.endsWith('.test.ts'))
  .map((f) => `test/faults/${f}`);
const plan = deal(files, lanes);
plan.forEach((l, i) =>
  process.stdout.write(
    `lane ${i + 1}: ${l.files.length} files, ~${l.seconds} s: ${l.files.map((f) => f.slice('test/faults/'.length, f.indexOf('-', 'test/faults/'.length))).join(' ')}\n`,
  ),
);
const results = await Promise.all(plan.map((l, i) => run([...args, ...l.files], `lane ${i + 1}`)));
results.forEach((r, i) =>
  process.stdout.write(`lane ${i + 1}: ${r.code === 0 ? 'passed' : `failed (exit ${r.code})`} in ${r.seconds} s\n`),
);
process.exit(results.find((r) => r.code !== 0)?.code ?? 0);
