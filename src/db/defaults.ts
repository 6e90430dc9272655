/** The database module's defaults; the configuration table (src/config.ts) takes the settings' defaults from here. */

/**
 * Items per landing statement and per sink transaction. A transcript item is ~20 KB of JSON and
 * several times that as parsed objects, and a chunk's objects live across its statements'
 * round trips: 500-item chunks peaked at ~500 MB RSS per process on a 5000-item transcript
 * batch, 100-item chunks at ~300 MB, at the same speed (benchmark W2, issue #4).
 */
export const LAND_CHUNK_ITEMS = 100;

/**
 * Connections per Postgres pool. The default settings need 21 in a daemon with an admin server
 * (2 syncs × 2 + 4 polls + 2 sinks + reconcile, hold re-check and daily prune 1 each + admin 8;
 * src/domain/connections.ts), 15 in a backfill; startup refuses a pool smaller than what the
 * concurrency settings need. A pool opens connections only as they are needed, so the headroom
 * costs nothing until used.
 */
export const DATABASE_POOL_MAX = 24;

/**
 * Longest wait of one migration statement for a table lock, ms (`SET LOCAL lock_timeout`): a
 * migration behind a long transaction (a poll landing a big chunk, a person's open psql) gives
 * up and retries instead of queueing every later query on that table behind itself.
 */
export const MIGRATION_LOCK_TIMEOUT_MS = 5_000;
/** Retries of the whole migration after a lock timeout (with doubling backoff) before `migrate` fails. */
export const MIGRATION_LOCK_RETRIES = 5;
