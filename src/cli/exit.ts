/**
 * Exit codes of every command (DESIGN.md), and the mapping from an error to its code.
 * 0 success; 1 something did not land; 2 usage or configuration error; 3 upstream refused.
 */
import postgres from 'postgres';
import { ApiError } from '../api/errors.ts';
import { ConfigError } from '../config.ts';
import { DriverUnguardedError } from '../db/driver-guard.ts';
import { MigrationError } from '../db/migrate.ts';
import { SourceExistsError, SourceNotFoundError } from '../db/sources.ts';
import { REFUSED_UPSTREAM_CODES } from '../domain/refusals.ts';
import { CreditsRefusedError } from '../pipeline/ingest/credits.ts';
import { SourceNotFoundUpstreamError, SourceSpecError } from '../pipeline/kinds/adapter.ts';
import { escapeControls } from '../terminal-text.ts';
import { redactUrlsIn } from '../url-credentials.ts';

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

/** Postgres errors that mean "the database is not set up": undefined table, unknown database. */
const NOT_MIGRATED_CODES = new Set(['42P01', '3D000']);

function isNotMigrated(e: unknown): boolean {
  return e instanceof postgres.PostgresError && NOT_MIGRATED_CODES.has(e.code);
}

function isUsage(e: unknown): boolean {
  return (
    e instanceof UsageError ||
    e instanceof ConfigError ||
    e instanceof DriverUnguardedError ||
    e instanceof MigrationError ||
    e instanceof SourceExistsError ||
    e instanceof SourceNotFoundError ||
    e instanceof SourceNotFoundUpstreamError ||
    e instanceof SourceSpecError ||
    isNotMigrated(e) ||
    // a local validation (an ID that does not parse): nothing was sent
    (e instanceof ApiError && e.code === 'invalid-request' && e.status === undefined)
  );
}

export function exitCodeOf(e: unknown): number {
  if (isUsage(e)) return EXIT_USAGE;
  // our own credit guard said no (replay's re-submission): the account cannot pay, as with a 429 quota
  if (e instanceof CreditsRefusedError) return EXIT_UPSTREAM_REFUSED;
  // the account or the key says no: retrying cannot fix it
  if (e instanceof ApiError && REFUSED_UPSTREAM_CODES.includes(e.code)) return EXIT_UPSTREAM_REFUSED;
  return EXIT_NOT_LANDED;
}

/**
 * One line for a person: no stack trace for errors we understand. A message may quote upstream
 * text or a value as given: whatever control characters it still holds are written as escapes,
 * and the password of any URL in it as `***`.
 */
export function describeError(e: unknown): string {
  return escapeControls(redactUrlsIn(errorLine(e)));
}

function errorLine(e: unknown): string {
  if (isNotMigrated(e)) {
    return `error: the database is not set up (${(e as Error).message}); run: videosite-ingest migrate`;
  }
  if (e instanceof ApiError && e.code === 'invalid-request' && e.status === undefined) return `error: ${e.message}`;
  if (isUsage(e)) return `error: ${(e as Error).message}`;
  if (e instanceof Error && 'code' in e && (e as { code?: unknown }).code === 'ECONNREFUSED') {
    return `error: ${e.message} (is the service running? see DATABASE_URL / REDIS_URL)`;
  }
  if (e instanceof ApiError) return `error: ${e.message}${e.details ? ` (${e.details})` : ''}`;
  if (e instanceof Error) return `error: ${e.message}`;
  return `error: ${String(e)}`;
}
