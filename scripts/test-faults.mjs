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
// lane's output lines are prefixed with `[lane N]`.
//
// The lanes' output interleaves, so the suite ends with one summary (`summarize`): every failed
// scenario, file and test name, with its assertion message and the expected and received values,
// whatever lane ran it; a file whose rig failed to start and an error outside any test; the
// passed/failed count and the time of each lane and in total. Each lane's vitest writes them with
// a reporter of ours (scripts/fault-lane-reporter.mjs) to a JSON file, beside the default output.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
  '32-web-crawls': 20,
  '33-media-jobs': 15,
  // measured alone on the quiet 2-core machine (25 s); a lane's share runs slower
  '34-translation-budget': 30,
  // measured alone on a busy machine (load 11), 169 s; most of it two waits of a minute
  '35-embeddings': 170,
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

const reportDir = mkdtempSync(join(tmpdir(), 'vsi-faults-report-'));
const reporterArgs = ['--reporter=default', `--reporter=${join(root, 'scripts/fault-lane-reporter.mjs')}`];

/**
 * Run vitest, its report written to `reportFile`; with a label, prefix each line of its output so
 * the lanes can be told apart.
 */
function run(vitestArgs, label, reportFile) {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [vitest, 'run', '--config', 'vitest.faults.config.ts', ...reporterArgs, ...vitestArgs],
      {
        cwd: root,
        stdio: label === undefined ? 'inherit' : ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, FAULTS_REPORT_FILE: reportFile },
      },
    );
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

/** A lane's report, or undefined when its vitest wrote none (it crashed or was killed). */
function readReport(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

/** An assertion error as the summary prints it: message, expected and received, the test's line. */
function describeError(e, indent) {
  const lines = [e.message.split('\n')[0]];
  if (e.expected !== undefined || e.actual !== undefined) {
    lines.push(`expected: ${String(e.expected).replace(/\s*\n\s*/g, ' ')}`);
    lines.push(`received: ${String(e.actual).replace(/\s*\n\s*/g, ' ')}`);
  }
  if (e.at) lines.push(`at ${e.at}`);
  return lines.map((l) => `${indent}${l}\n`).join('');
}

/** The one summary of every lane: failures by name, counts per lane and in total. Returns the exit code. */
function summarize(lanes) {
  let out = '\n=== fault suite summary ===\n';
  const total = { passed: 0, failed: 0, skipped: 0, seconds: 0 };
  const failures = [];
  const laneLines = [];
  for (const lane of lanes) {
    const count = { passed: 0, failed: 0, skipped: 0 };
    if (lane.report === undefined) {
      failures.push(`${lane.label}: vitest wrote no report (exit ${lane.code}); see the lane's output above\n`);
    } else if (lane.report.reason === 'running' || lane.report.reason === 'interrupted') {
      failures.push(
        `${lane.label}: ended before its last file (exit ${lane.code}); the files it finished are counted below\n`,
      );
    }
    for (const f of lane.report?.files ?? []) {
      for (const t of f.tests) {
        if (t.state === 'passed') count.passed += 1;
        else if (t.state === 'failed') count.failed += 1;
        else count.skipped += 1;
        if (t.state === 'failed') {
          failures.push(
            `FAIL ${f.file} > ${t.name} (${lane.label}, ${t.seconds} s)\n` +
              t.errors.map((e) => describeError(e, '    ')).join(''),
          );
        }
      }
      if (f.errors.length > 0 || (f.state === 'failed' && !f.tests.some((t) => t.state === 'failed'))) {
        failures.push(
          `FAIL ${f.file} (${lane.label}): the file failed outside its tests (a hook, its rig)\n` +
            f.errors.map((e) => describeError(e, '    ')).join(''),
        );
      }
    }
    for (const e of lane.report?.unhandledErrors ?? []) {
      failures.push(`ERROR outside any test (${lane.label})\n${describeError(e, '    ')}`);
    }
    const ok = lane.code === 0 && count.failed === 0 && lane.report !== undefined;
    laneLines.push(
      `${lane.label}: ${ok ? 'passed' : `FAILED (exit ${lane.code})`}: ${count.passed} passed, ${count.failed} failed` +
        `${count.skipped > 0 ? `, ${count.skipped} skipped` : ''}, ${lane.seconds} s; ` +
        `files: ${(lane.report?.files ?? []).map((f) => `${f.file.slice('test/faults/'.length, f.file.indexOf('-', 'test/faults/'.length))}=${f.seconds}s`).join(' ')}\n`,
    );
    total.passed += count.passed;
    total.failed += count.failed;
    total.skipped += count.skipped;
    total.seconds = Math.max(total.seconds, lane.seconds);
  }
  out += failures.length === 0 ? 'no failures\n' : failures.join('');
  out += laneLines.join('');
  const failed = failures.length > 0 || lanes.some((l) => l.code !== 0);
  out +=
    `total: ${failed ? 'FAILED' : 'passed'}: ${total.passed} passed, ${total.failed} failed` +
    `${total.skipped > 0 ? `, ${total.skipped} skipped` : ''}, ${total.seconds} s\n`;
  process.stdout.write(out);
  return failed ? (lanes.find((l) => l.code !== 0)?.code ?? 1) : 0;
}

const plan =
  lanes === 1
    ? [{ files: [] }]
    : deal(
        readdirSync(join(root, 'test/faults'))
          .filter((f) => f.endsWith('.test.ts'))
          .map((f) => `test/faults/${f}`),
        lanes,
      );
if (lanes > 1) {
  plan.forEach((l, i) =>
    process.stdout.write(
      `lane ${i + 1}: ${l.files.length} files, ~${l.seconds} s: ${l.files.map((f) => f.slice('test/faults/'.length, f.indexOf('-', 'test/faults/'.length))).join(' ')}\n`,
    ),
  );
}
const results = await Promise.all(
  plan.map(async (l, i) => {
    const reportFile = join(reportDir, `lane-${i + 1}.json`);
    const r = await run([...args, ...l.files], lanes === 1 ? undefined : `lane ${i + 1}`, reportFile);
    return { ...r, label: `lane ${i + 1}`, report: readReport(reportFile) };
  }),
);
rmSync(reportDir, { recursive: true, force: true });
process.exit(summarize(results));
