/**
 * The connection to Postgres: one postgres.js pool per process, every statement a tagged template
 * in a repository, every transaction `sql.begin(tx => ...)` (the repositories accept `tx`).
 * drizzle is a development tool here (the schema in schema.ts, from which drizzle-kit writes the
 * migrations, and the row types), never a second pool.
 */
import postgres from 'postgres';
import { assertDriverGuarded } from './driver-guard.ts';
import { DATABASE_POOL_MAX } from './defaults.ts';
import type { Logger } from '../log.ts';

/** Close a connection idle this long, in seconds (0: never). */
export const DB_IDLE_TIMEOUT_S = 60;
/** Give up connecting after this long, in seconds. */
export const DB_CONNECT_TIMEOUT_S = 10;

/**
 * int8 (count(*), bigint columns) as a JS number instead of postgres.js's default string. Every
 * bigint we store came from a JSON number and is checked to be a safe integer on the way in.
 */
const int8AsNumber = {
  to: 20,
  from: [20],
  serialize: (x: number) => String(x),
  parse: (x: string) => Number(x),
} satisfies postgres.PostgresType<number>;

const TYPES = { int8: int8AsNumber };

/** The raw postgres.js client (timestamptz as Date, jsonb parsed, int8 as number). */
export type Sql = postgres.Sql<{ int8: number }>;
/**
 * Anything a repository can run a statement on: the client, a transaction, a reserved
 * connection, whatever its custom types (the repositories read no int8 or date they rely on).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Queryable = postgres.Sql<any> | postgres.TransactionSql<any> | postgres.ReservedSql<any>;

export interface CreateDbOptions {
  /**
   * connections in the pool; default DATABASE_POOL_MAX (24). Commands
   * pass the configured DATABASE_POOL_MAX, checked at startup against their concurrency
   * (src/domain/connections.ts).
   */
  max?: number;
  /** server notices go to `log.debug`; default: dropped */
  log?: Logger;
  /** overrides where server notices go; default: `log.debug`, or dropped without `log` */
  onnotice?: (notice: postgres.Notice) => void;
  /** seconds an idle connection is kept; default DB_IDLE_TIMEOUT_S (60) */
  idleTimeoutS?: number;
  /** seconds to wait for a connection; default DB_CONNECT_TIMEOUT_S (10) */
  connectTimeoutS?: number;
  /**
   * named prepared statements, reused per connection; default true. false (DATABASE_PREPARE)
   * behind a transaction-pooling PgBouncer: each transaction may run on another server
   * connection, where the statement was never prepared.
   */
  prepare?: boolean;
}

export interface DbHandle {
  sql: Sql;
  /** Ends the pool, letting running queries finish (at most 5 s). */
  close(): Promise<void>;
}

/** postgres.js options shared by every client we open. */
export function clientOptions(opts: CreateDbOptions = {}) {
  // every client is built from these: a driver without the crash guard would die at the first
  // Postgres restart, so it is refused before any connection
  assertDriverGuarded();
  const log = opts.log;
  const onnotice =
    opts.onnotice ??
    // postgres.js prints notices (e.g. CREATE ... IF NOT EXISTS) with console.log by default,
    // which would pollute stdout, where only a command's output belongs.
    (log
      ? (n: postgres.Notice) => log.debug({ event: 'db.notice', code: n.code, notice: n.message }, 'postgres notice')
      : () => {});
  return {
    max: opts.max ?? DATABASE_POOL_MAX,
    idle_timeout: opts.idleTimeoutS ?? DB_IDLE_TIMEOUT_S,
    connect_timeout: opts.connectTimeoutS ?? DB_CONNECT_TIMEOUT_S,
    prepare: opts.prepare ?? true,
    onnotice,
    connection: { application_name: 'videosite-ingest' },
  };
}

const CLOSE_TIMEOUT_S = 5;

export function createDb(url: string, opts: CreateDbOptions = {}): DbHandle {
  const options = clientOptions(opts);
  const sql = postgres(url, { ...options, types: TYPES }) as Sql;
  return {
    sql,
    async close() {
      await sql.end({ timeout: CLOSE_TIMEOUT_S });
    },
  };
}

/** postgres.js / socket error codes meaning the server connection is gone. */
const CONNECTION_LOST_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  '57P01', // admin_shutdown (the server is shutting down)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, recovering)
]);

export function isConnectionLost(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && CONNECTION_LOST_CODES.has(code);
}

/** One round trip: throws when the server does not answer. */
export async function ping(sql: Queryable): Promise<void> {
  await sql`select 1`;
}

/** The database's clock (ages shown to people do not depend on this machine's). */
export async function databaseNow(sql: Queryable): Promise<Date> {
  const [row] = await sql<{ now: Date }[]>`select now() as now`;
  return row?.now ?? new Date();
}
