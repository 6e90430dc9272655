/**
 * `migrate`: create the database when it is missing, then apply the drizzle-kit migrations of
 * `migrations/`. Safe when several processes (daemons starting together, a backfill) run it at
 * once: the database creation tolerates losing the race, and the migrations run under a
 * session advisory lock, so each is applied exactly once.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import { z } from 'zod';
import { silentLogger, type Logger } from '../log.ts';
import { clientOptions, type Queryable } from './connection.ts';

/**
 * The committed drizzle-kit migrations, found relative to this file (works from any cwd): src/db/
 * and the build's dist/db/ sit at the same depth, and the package ships migrations/ beside dist/.
 */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../migrations', import.meta.url));

/** Key of the session advisory lock held while migrating ("vsimigr" in ASCII, as an int8). */
export const MIGRATION_LOCK_KEY = 0x7673_696d_6967_72n;

/** Where drizzle's migrator records what it applied (its defaults; the queries below name it). */
const MIGRATIONS_SCHEMA = 'drizzle';
const MIGRATIONS_TABLE = '__drizzle_migrations';

/** The maintenance database every server has, used to CREATE DATABASE. */
const MAINTENANCE_DATABASE = 'postgres';

/** Letters, digits, `_` and `-` only: the name is spliced into CREATE DATABASE. */
const DATABASE_NAME_RE = /^[A-Za-z0-9_-]{1,63}$/;

const PG_INVALID_CATALOG_NAME = '3D000';
const PG_DUPLICATE_DATABASE = '42P04';
const PG_UNIQUE_VIOLATION = '23505';

export class MigrationError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MigrationError';
  }
}

export interface MigrateResult {
  /** true when this call created the database */
  created: boolean;
  /** migrations this call applied (0 when the schema was already current) */
  applied: number;
}

/** The database name of a postgres:// URL, checked to be safe to splice into SQL. */
export function databaseNameOf(url: string): string {
  let name: string;
  try {
    name = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
  } catch (e: unknown) {
    throw new MigrationError('DATABASE_URL: not a valid URL', { cause: e });
  }
  if (!DATABASE_NAME_RE.test(name)) {
    throw new MigrationError(
      `DATABASE_URL: database name ${JSON.stringify(name)} must be 1-63 letters, digits, '_' or '-'`,
    );
  }
  return name;
}

/** The same server and credentials, another database. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(database)}`;
  return u.toString();
}

export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

function pgCode(e: unknown): string | undefined {
  return e instanceof postgres.PostgresError ? e.code : undefined;
}

/** Creates the database of `url` when it does not exist. Returns true when this call created it. */
export async function ensureDatabase(url: string, log: Logger = silentLogger()): Promise<boolean> {
  const name = databaseNameOf(url);
  const probe = postgres(url, clientOptions({ max: 1, log }));
  try {
    await probe`select 1`;
    return false;
  } catch (e: unknown) {
    if (pgCode(e) !== PG_INVALID_CATALOG_NAME) throw e;
  } finally {
    await probe.end({ timeout: 5 });
  }
  const admin = postgres(withDatabase(url, MAINTENANCE_DATABASE), clientOptions({ max: 1, log }));
  try {
    await admin.unsafe(`create database ${quoteIdentifier(name)}`);
    log.info({ event: 'db.created', database: name }, 'database created');
    return true;
  } catch (e: unknown) {
    // Another process created it between our probe and our CREATE: the catalog's unique index
    // or CREATE DATABASE's own check reports it, depending on timing.
    const code = pgCode(e);
    if (code === PG_DUPLICATE_DATABASE || code === PG_UNIQUE_VIOLATION) return false;
    throw e;
  } finally {
    await admin.end({ timeout: 5 });
  }
}

async function appliedCount(sql: postgres.Sql): Promise<number> {
  const [exists] = await sql<{ present: boolean }[]>`
    select to_regclass('drizzle.__drizzle_migrations') is not null as present`;
  if (!exists?.present) return 0;
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`;
  return row?.n ?? 0;
}

/**
 * Creates the database when missing and applies every pending migration. Concurrent callers
 * wait for each other on an advisory lock; exactly one of them applies each migration.
 */
export async function migrateDatabase(url: string, log: Logger = silentLogger()): Promise<MigrateResult> {
  const created = await ensureDatabase(url, log);
  // One connection, so the session lock and the migrations share it; it is not reused afterwards
  // (drizzle's driver rewrites the client's parsers).
  const client = postgres(url, clientOptions({ max: 1, log }));
  try {
    await client`select pg_advisory_lock(${MIGRATION_LOCK_KEY.toString()}::bigint)`;
    try {
      const before = await appliedCount(client);
      await migrate(drizzle(client), {
        migrationsFolder: MIGRATIONS_FOLDER,
        migrationsSchema: MIGRATIONS_SCHEMA,
        migrationsTable: MIGRATIONS_TABLE,
      });
      const applied = (await appliedCount(client)) - before;
      log.info({ event: 'db.migrated', database: databaseNameOf(url), applied, created }, 'migrations applied');
      return { created, applied };
    } finally {
      await client`select pg_advisory_unlock(${MIGRATION_LOCK_KEY.toString()}::bigint)`;
    }
  } finally {
    await client.end({ timeout: 5 });
  }
}

const JournalSchema = z.object({
  entries: z.array(z.object({ tag: z.string(), when: z.number() })),
});

/** The `when` (ms) of every committed migration, from drizzle-kit's journal. */
export function committedMigrations(folder: string = MIGRATIONS_FOLDER): { tag: string; when: number }[] {
  const path = `${folder}/meta/_journal.json`;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e: unknown) {
    throw new MigrationError(`cannot read the migrations journal ${path}`, { cause: e });
  }
  const r = JournalSchema.safeParse(raw);
  if (!r.success) throw new MigrationError(`malformed migrations journal ${path}`, { cause: r.error });
  return r.data.entries;
}

/** True when every committed migration has been applied to the database `sql` points at. */
export async function migrationsCurrent(sql: Queryable): Promise<boolean> {
  const [exists] = await sql<{ present: boolean }[]>`
    select to_regclass('drizzle.__drizzle_migrations') is not null as present`;
  if (!exists?.present) return false;
  // drizzle identifies an applied migration by its journal timestamp (`created_at`)
  const rows = await sql<{ at: string }[]>`select created_at::text as at from drizzle.__drizzle_migrations`;
  const applied = new Set(rows.map((r) => Number(r.at)));
  return committedMigrations().every((m) => applied.has(m.when));
}
