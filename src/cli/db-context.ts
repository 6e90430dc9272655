/**
 * What a command that needs only Postgres opens: the validated configuration, a logger and the
 * database, opened when asked and closed in one call. It imports no client of Redis, the queues
 * or the API, so a command built on it (`status`) starts without loading them;
 * src/cli/context.ts builds the full context on it.
 */
import { loadConfig, type Config } from '../config.ts';
import { createDb, type DbHandle } from '../db/connection.ts';
import { createLogger, loggingFor, type Logger } from '../log.ts';

export interface DbContext {
  config: Config;
  log: Logger;
  db(): DbHandle;
  close(): Promise<void>;
}

export interface DbContextOptions {
  env?: Record<string, string | undefined>;
  /** overrides of the loaded configuration (the demo points the API at its own simulator) */
  override?: (config: Config) => Config;
  log?: Logger;
  /** the daemon: on a terminal it logs at LOG_LEVEL (default info), not warnings only (src/log.ts loggingFor) */
  longRunning?: boolean;
}

export function createDbContext(opts: DbContextOptions = {}): DbContext {
  let config = loadConfig(opts.env);
  if (opts.override) config = opts.override(config);
  const log = opts.log ?? createLogger(loggingFor(config, { longRunning: opts.longRunning ?? false }));
  let db: DbHandle | undefined;
  return {
    config,
    log,
    db() {
      db ??= createDb(config.databaseUrl, { log, max: config.databasePoolMax, prepare: config.databasePrepare });
      return db;
    },
    async close() {
      await db?.close();
    },
  };
}
