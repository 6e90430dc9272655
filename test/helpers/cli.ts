/**
 * Assertions on what a person sees from a CLI process: the exit code, and for a failure a short
 * message on stderr without a stack trace, with stdout left for the command's output only.
 */
import { expect } from 'vitest';
import type { CliResult } from './pipeline.ts';

/** A line of a Node stack trace ("    at fn (file:1:2)"). */
const STACK_LINE = /^\s+at\s/m;

/** Both streams, for messages that show either (and for "appears nowhere" checks). */
export function output(r: CliResult): string {
  return `${r.stdout}\n${r.stderr}`;
}

/** Exit `code`, with the streams in the failure message so a surprise is readable. */
export function expectExit(r: CliResult, code: number): void {
  expect(r.code, `exit code; stdout:\n${r.stdout}\nstderr:\n${r.stderr}`).toBe(code);
}

/**
 * A refusal a person can act on: exit `code`, every pattern on stderr, no stack trace, and
 * nothing on stdout (scripts read stdout; an error there would be parsed as output).
 */
export function expectCleanError(r: CliResult, code: number, ...patterns: (string | RegExp)[]): void {
  expectExit(r, code);
  for (const p of patterns) {
    if (typeof p === 'string') expect(r.stderr).toContain(p);
    else expect(r.stderr).toMatch(p);
  }
  expect(r.stderr).not.toMatch(STACK_LINE);
  expect(r.stdout).toBe('');
}
