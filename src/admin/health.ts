/**
 * Readiness: can this process do its work right now? Postgres answers, Redis answers, the
 * database has every committed migration, and (given the process's key) no upstream hold applies
 * to its API key: a daemon whose key is refused runs but does nothing, and says so here from its
 * start (`upstream: 'held'`, `holds`, `reason: 'upstream hold: unauthorized ...'`).
 *
 * Each check has a deadline, because neither client fails fast on its own while its server is
 * away (BullMQ's Redis connection queues commands until it reconnects; postgres.js waits up to
 * its connect timeout).
 *
 * Two states of a database that answers but where this process cannot do its work:
 * - `postgres: 'read-only'`: a standby, or `default_transaction_read_only` (every write fails
 *   with 25006; the workers wait and resume by themselves, so ready again once writes work);
 * - `schema: 'schema-newer'`: a newer build migrated further, and a migration this build does
 *   not know is not marked backward-compatible (src/domain/schema-compat.ts): this daemon
 *   schedules nothing new. Newer migrations that are all marked compatible leave it ready, and
 *   are listed (`newerMigrations`) either way.
 *
 * The report is served without authentication, so it names only the state of each check
 * (`ok`, `down`, `timeout`, `pending`, `held`, `read-only`, `schema-newer`), the codes of the
 * holds (never their reasons) and the tags of newer migrations; the underlying error is logged,
 * once per change.
 */
import { ping, type Queryable } from '../db/connection.ts';
import { migrationsCurrent, newerMigrations } from '../db/migrate.ts';
import { readOnlyState } from '../db/read-only.ts';
import { judgeSchema, migrationLabel, schemaStopReason } from '../domain/schema-compat.ts';
import { holdsForKey } from '../db/upstream-holds.ts';
import type { HoldCode } from '../domain/refusals.ts';
import type { Logger } from '../log.ts';
import type { RedisClient } from '../queues/connection.ts';

/** Longest wait for one check, in milliseconds. */
export const READY_CHECK_TIMEOUT_MS = 2_000;

export type CheckState = 'ok' | 'down' | 'timeout' | 'pending' | 'held' | 'read-only' | 'schema-newer';

export interface ReadinessReport {
  ready: boolean;
  /** `upstream` only for a process given its key's fingerprint */
  checks: {
    postgres: CheckState;
    redis: CheckState;
    migrations: CheckState;
    schema: CheckState;
    upstream?: CheckState;
  };
  /** the codes of the holds that apply to this process's key, when some do */
  holds?: HoldCode[];
  /** tags of applied migrations newer than this build, when there are some (compatible or not) */
  newerMigrations?: string[];
  /** why not ready, when a hold, a read-only database or a newer schema is the reason */
  reason?: string;
}

export interface ReadinessDeps {
  sql: Queryable;
  redis: RedisClient;
  log: Logger;
  /** per check, in milliseconds; default READY_CHECK_TIMEOUT_MS */
  timeoutMs?: number;
  /**
   * the fingerprint of this process's API key (ApiClient.keyFingerprint): not ready while a hold
   * applies to it; unset (a process that calls no API): holds are not looked at
   */
  keyFingerprint?: string | undefined;
}

class CheckTimeout extends Error {}

async function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new CheckTimeout(`no answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    if (timer) clearTimeout(timer);
  }
}

export interface ReadinessChecker {
  check(): Promise<ReadinessReport>;
}

export function createReadinessChecker(deps: ReadinessDeps): ReadinessChecker {
  const timeoutMs = deps.timeoutMs ?? READY_CHECK_TIMEOUT_MS;
  const last = new Map<string, CheckState>();
  // Once every migration is applied it stays applied (a newer release migrating further does
  // not undo ours), so the journal is read and compared until then only.
  let migrationsDone = false;

  const run = async (name: string, probe: () => Promise<CheckState>): Promise<CheckState> => {
    let state: CheckState;
    let err: unknown;
    try {
      state = await withDeadline(probe(), timeoutMs);
    } catch (e: unknown) {
      state = e instanceof CheckTimeout ? 'timeout' : 'down';
      err = e;
    }
    if (last.get(name) !== state) {
      if (state === 'ok') deps.log.info({ event: 'admin.check_ok', check: name }, 'readiness check ok');
      else
        deps.log.warn(
          {
            event: 'admin.check_failing',
            check: name,
            state,
            err: err instanceof Error ? { message: err.message } : undefined,
          },
          'readiness check failing',
        );
      last.set(name, state);
    }
    return state;
  };

  return {
    async check() {
      const keyFingerprint = deps.keyFingerprint;
      let holds: HoldCode[] = [];
      let newer: string[] = [];
      let schemaReason: string | undefined;
      const [postgres, redis, migrations, schema, upstream] = await Promise.all([
        run('postgres', async () => {
          await ping(deps.sql);
          return (await readOnlyState(deps.sql)) === 'writable' ? 'ok' : 'read-only';
        }),
        run('redis', async () => {
          // a connection that is reconnecting would only queue the PING: answer at once
          if (deps.redis.status !== 'ready') return 'down';
          await deps.redis.ping();
          return 'ok';
        }),
        run('migrations', async () => {
          if (!migrationsDone) migrationsDone = await migrationsCurrent(deps.sql);
          return migrationsDone ? 'ok' : 'pending';
        }),
        run('schema', async () => {
          const verdict = judgeSchema(await newerMigrations(deps.sql));
          newer = verdict.newer.map(migrationLabel);
          schemaReason = schemaStopReason(verdict);
          return verdict.state === 'newer-incompatible' ? 'schema-newer' : 'ok';
        }),
        keyFingerprint === undefined
          ? undefined
          : run('upstream', async () => {
              holds = [...new Set((await holdsForKey(deps.sql, keyFingerprint)).map((h) => h.code))];
              return holds.length === 0 ? 'ok' : 'held';
            }),
      ]);
      const ready =
        postgres === 'ok' &&
        redis === 'ok' &&
        migrations === 'ok' &&
        schema === 'ok' &&
        (upstream === undefined || upstream === 'ok');
      const checks = { postgres, redis, migrations, schema, ...(upstream === undefined ? {} : { upstream }) };
      const reasons = [
        upstream === 'held'
          ? `upstream hold: ${holds.join(', ')} (API key fingerprint ${keyFingerprint}; see videosite-ingest status)`
          : undefined,
        postgres === 'read-only'
          ? 'read-only: the database refuses writes (a standby, or default_transaction_read_only); work resumes by itself when writes work'
          : undefined,
        schema === 'schema-newer' ? `schema-newer: ${schemaReason}` : undefined,
      ].filter((r) => r !== undefined);
      return {
        ready,
        checks,
        ...(upstream === 'held' ? { holds } : {}),
        ...(newer.length > 0 ? { newerMigrations: newer } : {}),
        ...(reasons.length > 0 ? { reason: reasons.join('; ') } : {}),
      };
    },
  };
}
