#!/usr/bin/env node
// `npm run test:faults [-- FILE...]`: the fault suite (vitest.faults.config.ts), one file at a
// time. FAULTS_SHARDS=2 runs it in two halves side by side (vitest --shard), each half one file
// at a time: a scenario mostly waits (an outage of 30 or 60 s, a process starting, a poll
// interval) on servers of its own, and the suite took 16 min that way instead of 24.5. It is not
// the default: in one of two such runs scenarios 23 and 27 failed on their timings (a Redis
// Cluster failover and a hold racing its sync run under the other half's load), and CI must not
// depend on that. With files named it runs them in one process.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

// the package's bin (its exports map does not list the file itself)
const vitestPackage = createRequire(import.meta.url).resolve('vitest/package.json');
const vitest = join(dirname(vitestPackage), createRequire(import.meta.url)('vitest/package.json').bin.vitest);
const args = process.argv.slice(2);
const shards = args.some((a) => !a.startsWith('-')) ? 1 : Number(process.env.FAULTS_SHARDS ?? 1);
if (!Number.isInteger(shards) || shards < 1 || shards > 8) {
  process.stderr.write(`FAULTS_SHARDS: invalid value ${JSON.stringify(process.env.FAULTS_SHARDS)}: expected a whole number from 1 to 8\n`);
  process.exit(2);
}

function run(shardArgs) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [vitest, 'run', '--config', 'vitest.faults.config.ts', ...shardArgs, ...args], { stdio: 'inherit' });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

const codes = await Promise.all(
  shards === 1 ? [run([])] : Array.from({ length: shards }, (_, i) => run([`--shard=${i + 1}/${shards}`])),
);
process.exit(codes.find((c) => c !== 0) ?? 0);
