/**
 * Exit codes of every command (DESIGN.md), and the mapping from an error to its code.
 * 0 success; 1 something did not land; 2 usage or configuration error; 3 upstream refused.
 */
import { ConfigError } from '../config.ts';
import { ApiError } from '../api/errors.ts';

export const EXIT_OK = 0;
export const EXIT_NOT_LANDED = 1;
export const EXIT_USAGE = 2;
export const EXIT_UPSTREAM_REFUSED = 3;

/** A bad argument found after parsing (a combination commander cannot check). */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** Upstream codes that mean "the account or the key says no": retrying cannot fix them. */
const REFUSED_CODES = new Set(['unauthorized', 'upgrade-required', 'forbidden', 'limit-exceeded']);

export function exitCodeOf(e: unknown): number {
  if (e instanceof UsageError || e instanceof ConfigError) return EXIT_USAGE;
  if (e instanceof ApiError && REFUSED_CODES.has(e.code)) return EXIT_UPSTREAM_REFUSED;
  return EXIT_NOT_LANDED;
}

/** One line for a person: no stack trace for errors we understand. */
export function describeError(e: unknown): string {
  if (e instanceof UsageError || e instanceof ConfigError) return `error: ${e.message}`;
  if (e instanceof ApiError) return `error: ${e.message}${e.details ? ` (${e.details})` : ''}`;
  if (e instanceof Error) return `error: ${e.message}`;
  return `error: ${String(e)}`;
}
