/**
 * `migrate`: create the database when it is missing, then apply the drizzle-kit migrations of
 * `migrations/`. Safe when several processes (daemons starting together, a backfill) run it at
 * once: the database creation tolerates losing the race, and the migrations run in one
 * transaction under a transaction-scoped advisory lock, so each is applied exactly once, also
 * through a transaction-pooling PgBouncer (a session lock would be taken on one server
 * connection and released on another).
 *
 * Each statement waits at most `lockTimeoutMs` for a table lock: behind a long transaction the
 * migration gives up (rolling everything back) and tries again after a doubling backoff, then
 * fails naming the long transactions, instead of waiting without end while every later query
 * on that table queues behind it.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { z } from 'zod';
import { isMarkedBackwardCompatible, type NewerMigration } from '../domain/schema-compat.ts';
import { silentLogger, type Logger } from '../log.ts';
import { clientOptions, type Queryable } from './connection.ts';
import { MIGRATION_LOCK_RETRIES, MIGRATION_LOCK_TIMEOUT_MS } from './defaults.ts';
import { isLockTimeout } from './pg-errors.ts';

/**
 * The committed drizzle-kit migrations, found relative to this file (works from any cwd): src/db/
 * and the build's dist/db/ sit at the same depth, and the package ships migrations/ beside dist/.
 */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../migrations', import.meta.url));

/** Key of the transaction advisory lock held while migrating ("vsimigr" in ASCII, as an int8). */
export const MIGRATION_LOCK_KEY = 0x7673_696d_6967_72n;

/**
 * Where drizzle's migrator records what it applied (its defaults; the queries below name it). We
 * apply the files ourselves (drizzle-orm 0.45 `dialect.migrate` reads the last applied migration
 * outside its transaction and gives no hook to lock inside it), in drizzle's table format, with
 * drizzle's own reader of the files (same hashes, same statement splitting).
 */
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
export async function ensureDatabase(url: string, log: Logger = silentLogger(), prepare = true): Promise<boolean> {
  const name = databaseNameOf(url);
  const probe = postgres(url, clientOptions({ max: 1, log, prepare }));
  try {
    await probe`select 1`;
    return false;
  } catch (e: unknown) {
    if (pgCode(e) !== PG_INVALID_CATALOG_NAME) throw e;
  } finally {
    await probe.end({ timeout: 5 });
  }
  const admin = postgres(withDatabase(url, MAINTENANCE_DATABASE), clientOptions({ max: 1, log, prepare }));
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

export interface MigrateOptions {
  /** longest wait of one statement for a lock, ms; default MIGRATION_LOCK_TIMEOUT_MS */
  lockTimeoutMs?: number;
  /** retries after a lock timeout; default MIGRATION_LOCK_RETRIES */
  lockRetries?: number;
  /** first backoff after a lock timeout, doubling, ms; default MIGRATION_RETRY_BASE_DELAY_MS */
  retryBaseDelayMs?: number;
  /** default MIGRATIONS_FOLDER (the build's own); tests play a newer build with a copy plus one more */
  migrationsFolder?: string;
  /** prepared statements (DATABASE_PREPARE); false behind a transaction-pooling PgBouncer; default true */
  prepare?: boolean;
}

/** First wait after a lock timeout, ms; doubles on each retry, capped at MIGRATION_RETRY_MAX_DELAY_MS. */
export const MIGRATION_RETRY_BASE_DELAY_MS = 1_000;
export const MIGRATION_RETRY_MAX_DELAY_MS = 30_000;
/** A transaction open longer than this is named as a likely blocker when a migration times out. */
const LONG_TRANSACTION_S = 1;

/** One transaction: lock, read what is applied, apply the rest, record compatibility. */
async function applyPending(
  client: postgres.Sql,
  folder: string,
  lockTimeoutMs: number,
  current: { tag?: string },
): Promise<number> {
  // imported here, not at the top: `status` reads the journal through this module and applies nothing
  const { readMigrationFiles } = await import('drizzle-orm/migrator');
  const files = readMigrationFiles({ migrationsFolder: folder });
  const journal = committedMigrations(folder);
  return (await client.begin(async (tx) => {
    // the lock between migrators first, with no timeout: another process applying the same
    // migrations is a wait that ends (its own statements have the lock timeout)
    await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK_KEY.toString()}::bigint)`;
    await tx`select set_config('lock_timeout', ${String(lockTimeoutMs)}, true)`;
    await tx.unsafe(`create schema if not exists ${quoteIdentifier(MIGRATIONS_SCHEMA)}`);
    await tx.unsafe(
      `create table if not exists ${quoteIdentifier(MIGRATIONS_SCHEMA)}.${quoteIdentifier(MIGRATIONS_TABLE)} (id serial primary key, hash text not null, created_at bigint)`,
    );
    const [last] = await tx<
      { at: string | null }[]
    >`select max(created_at)::text as at from drizzle.__drizzle_migrations`;
    // as drizzle: everything newer than the newest applied (a newer build's migrations, applied
    // before ours, leave ours alone)
    const lastAt = last?.at == null ? undefined : Number(last.at);
    let applied = 0;
    for (const [i, m] of files.entries()) {
      if (lastAt !== undefined && m.folderMillis <= lastAt) continue;
      current.tag = journal[i]?.tag;
      for (const stmt of m.sql) await tx.unsafe(stmt);
      await tx`insert into drizzle.__drizzle_migrations (hash, created_at) values (${m.hash}, ${m.folderMillis})`;
      applied++;
    }
    current.tag = undefined;
    // a build older than the schema adds the rows it knows but leaves the newer build's as they are
    const olderBuild = lastAt !== undefined && lastAt > (journal[journal.length - 1]?.when ?? 0);
    await recordCompatibility(tx, folder, journal, olderBuild);
    return applied;
  })) as number;
}

/**
 * Every journal migration's tag, timestamp and compatibility mark, into schema_compat (0012), so
 * that builds without the file can judge it. Idempotent; a mark added to a file later updates it
 * (from a build at least as new as the schema only).
 */
async function recordCompatibility(
  tx: Queryable,
  folder: string,
  journal: { tag: string; when: number }[],
  olderBuild: boolean,
): Promise<void> {
  const [exists] = await tx<{ present: boolean }[]>`select to_regclass('public.schema_compat') is not null as present`;
  if (!exists?.present) return;
  const rows = journal.map((m) => ({
    tag: m.tag,
    created_at: String(m.when),
    backward_compatible: isMarkedBackwardCompatible(readFileSync(`${folder}/${m.tag}.sql`, 'utf8')),
  }));
  if (olderBuild) {
    await tx`insert into schema_compat ${tx(rows, 'tag', 'created_at', 'backward_compatible')} on conflict (tag) do nothing`;
    return;
  }
  await tx`
    insert into schema_compat ${tx(rows, 'tag', 'created_at', 'backward_compatible')}
    on conflict (tag) do update set created_at = excluded.created_at, backward_compatible = excluded.backward_compatible
    where (schema_compat.created_at, schema_compat.backward_compatible) is distinct from (excluded.created_at, excluded.backward_compatible)`;
}

/** Transactions open for a while in this database, other than ours: what a migration waits behind. */
async function longTransactions(
  client: postgres.Sql,
): Promise<{ pid: number; application: string; state: string; openForS: number }[]> {
  return client<{ pid: number; application: string; state: string; openForS: number }[]>`
    select pid, coalesce(nullif(application_name, ''), '?') as application, coalesce(state, '?') as state,
           floor(extract(epoch from now() - xact_start))::int as "openForS"
      from pg_stat_activity
     where datname = current_database() and pid <> pg_backend_pid() and xact_start < now() - make_interval(secs => ${LONG_TRANSACTION_S})
     order by xact_start limit 5`;
}

function describeBlockers(b: { pid: number; application: string; state: string; openForS: number }[]): string {
  if (b.length === 0) return 'no long transaction seen now (a burst of short ones, or one that has just ended)';
  return b.map((t) => `pid ${t.pid} (${t.application}, ${t.state}, transaction open ${t.openForS} s)`).join('; ');
}

/**
 * Creates the database when missing and applies every pending migration. Concurrent callers
 * wait for each other on a transaction advisory lock; exactly one of them applies each migration.
 * A lock timeout is retried `lockRetries` times with backoff, then a MigrationError names the
 * migration and the transactions it waited behind.
 */
export async function migrateDatabase(
  url: string,
  log: Logger = silentLogger(),
  opts: MigrateOptions = {},
): Promise<MigrateResult> {
  const lockTimeoutMs = opts.lockTimeoutMs ?? MIGRATION_LOCK_TIMEOUT_MS;
  const lockRetries = opts.lockRetries ?? MIGRATION_LOCK_RETRIES;
  const baseDelayMs = opts.retryBaseDelayMs ?? MIGRATION_RETRY_BASE_DELAY_MS;
  const created = await ensureDatabase(url, log, opts.prepare);
  const client = postgres(url, clientOptions({ max: 1, log, prepare: opts.prepare }));
  try {
    for (let attempt = 1; ; attempt++) {
      const current: { tag?: string } = {};
      try {
        const applied = await applyPending(client, opts.migrationsFolder ?? MIGRATIONS_FOLDER, lockTimeoutMs, current);
        log.info({ event: 'db.migrated', database: databaseNameOf(url), applied, created }, 'migrations applied');
        return { created, applied };
      } catch (e: unknown) {
        if (!isLockTimeout(e)) throw e;
        const blockers = await longTransactions(client).catch(() => []);
        const what = current.tag === undefined ? 'the migrations table' : `migration ${current.tag}`;
        if (attempt > lockRetries) {
          throw new MigrationError(
            `${what} could not take a lock within MIGRATION_LOCK_TIMEOUT_MS=${lockTimeoutMs} ms, ${attempt} time(s); nothing was applied. ` +
              `Waiting behind: ${describeBlockers(blockers)}. End or wait for those transactions, then run migrate again.`,
            { cause: e },
          );
        }
        const retryInMs = Math.min(baseDelayMs * 2 ** (attempt - 1), MIGRATION_RETRY_MAX_DELAY_MS);
        log.warn(
          { event: 'db.migrate_lock_timeout', migration: current.tag, attempt, retryInMs, lockTimeoutMs, blockers },
          'migration waited too long for a lock: rolled back, retrying after a backoff',
        );
        await new Promise((r) => setTimeout(r, retryInMs));
      }
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

/** The newest migration this build carries (the journal's last entry). */
export function newestBuiltMigration(): { tag: string; when: number } {
  const all = committedMigrations();
  const last = all[all.length - 1];
  if (!last) throw new MigrationError(`the migrations journal in ${MIGRATIONS_FOLDER} lists no migration`);
  return last;
}

/**
 * Migrations applied to the database that are newer than this build's newest (a newer build
 * migrated), with what schema_compat says of each. Empty before the first migration.
 */
export async function newerMigrations(
  sql: Queryable,
  newestWhen: number = newestBuiltMigration().when,
): Promise<NewerMigration[]> {
  const [exists] = await sql<{ migrations: boolean; compat: boolean }[]>`
    select to_regclass('drizzle.__drizzle_migrations') is not null as migrations,
           to_regclass('public.schema_compat') is not null as compat`;
  if (!exists?.migrations) return [];
  const rows = exists.compat
    ? await sql<{ at: string; tag: string | null; compatible: boolean | null }[]>`
        select m.created_at::text as at, c.tag, c.backward_compatible as compatible
          from drizzle.__drizzle_migrations m left join schema_compat c on c.created_at = m.created_at
         where m.created_at > ${String(newestWhen)}::bigint order by m.created_at`
    : await sql<{ at: string; tag: null; compatible: null }[]>`
        select created_at::text as at, null as tag, null as compatible
          from drizzle.__drizzle_migrations where created_at > ${String(newestWhen)}::bigint order by created_at`;
  return rows.map((r) => ({ createdAt: Number(r.at), tag: r.tag, compatible: r.compatible === true }));
}
