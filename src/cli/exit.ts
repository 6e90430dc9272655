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
import { redactUrl, redactUrlsIn } from '../url-credentials.ts';

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
export function describeError(e: unknown, services?: ServiceUrls): string {
  return escapeControls(redactUrlsIn(errorLine(e, services)));
}

/** The services a command connects to, as configured: a refused connection is matched to one of them. */
export interface ServiceUrls {
  databaseUrl: string;
  redisUrl: string;
}

/** Socket and driver codes of a connection that could not be opened. */
const CONNECT_FAILED_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ETIMEDOUT', 'CONNECT_TIMEOUT']);

const DEFAULT_PORTS: Record<string, string> = {
  'postgres:': '5432',
  'postgresql:': '5432',
  'redis:': '6379',
  'rediss:': '6379',
};

/** host:port of a service URL (its scheme's default port when it names none). */
function hostPort(url: string): { host: string; port: string } | undefined {
  try {
    const u = new URL(url);
    return { host: u.hostname.replace(/^\[|\]$/g, ''), port: u.port || (DEFAULT_PORTS[u.protocol] ?? '') };
  } catch {
    return undefined;
  }
}

/**
 * The setting behind a connection that could not be opened: the one on the error's port (a name
 * such as localhost comes back as an address, so the host decides only between equal ports), or
 * on its host name when it has no port (a name that does not resolve). None when unsure.
 */
function failedService(e: unknown, services: ServiceUrls): { setting: string; url: string; at: string } | undefined {
  const err = e as { address?: unknown; port?: unknown; hostname?: unknown };
  const host = typeof err.address === 'string' ? err.address : typeof err.hostname === 'string' ? err.hostname : '';
  const port = err.port === undefined ? undefined : String(err.port);
  const candidates = (
    [
      ['DATABASE_URL', services.databaseUrl],
      ['REDIS_URL', services.redisUrl],
    ] as const
  ).flatMap(([setting, url]) => {
    const hp = hostPort(url);
    return hp ? [{ setting, url, ...hp }] : [];
  });
  const onPort =
    port === undefined ? candidates.filter((c) => c.host === host) : candidates.filter((c) => c.port === port);
  const found = onPort.length === 1 ? onPort[0] : onPort.find((c) => c.host === host);
  if (!found) return undefined;
  return { setting: found.setting, url: redactUrl(found.url), at: `${host || found.host}:${port ?? found.port}` };
}

function errorLine(e: unknown, services?: ServiceUrls): string {
  if (isNotMigrated(e)) {
    return `error: the database is not set up (${(e as Error).message}); run: videosite-ingest migrate`;
  }
  if (e instanceof ApiError && e.code === 'invalid-request' && e.status === undefined) return `error: ${e.message}`;
  if (isUsage(e)) return `error: ${(e as Error).message}`;
  const code = e instanceof Error && 'code' in e ? (e as { code?: unknown }).code : undefined;
  if (typeof code === 'string' && CONNECT_FAILED_CODES.has(code)) {
    const failed = services && failedService(e, services);
    if (failed) {
      const name = failed.setting === 'DATABASE_URL' ? 'Postgres' : 'Redis';
      return `error: cannot connect to ${name} at ${failed.at} (${failed.setting}=${failed.url}): ${(e as Error).message}; is it running?`;
    }
    return `error: ${(e as Error).message} (is the service running? see DATABASE_URL / REDIS_URL)`;
  }
  if (e instanceof ApiError) return `error: ${e.message}${e.details ? ` (${e.details})` : ''}`;
  if (e instanceof Error) return `error: ${e.message}`;
  return `error: ${String(e)}`;
}
