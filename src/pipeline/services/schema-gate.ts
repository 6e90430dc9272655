/**
 * Rolling upgrades, in a running daemon: does the database carry migrations newer than this
 * build, and may the daemon keep scheduling on it? Checked at start and at every reconcile
 * interval; the verdict is logged when it changes (`schema.newer`, `schema.current`).
 *
 * On a newer migration not marked backward-compatible the daemon schedules nothing new (no
 * cron-tick syncs, no syncs, so no paid submission) until the verdict changes: a person marks the
 * migration compatible (a row in schema_compat), or this daemon is replaced by an upgraded one.
 * Polls and sinks of batches already paid for go on: their answers expire upstream if nobody
 * reads them, a newer daemon sharing the queues may be the one to take them, and every step is
 * an idempotent write whose failure only retries.
 */
import { newerMigrations, newestBuiltMigration } from '../../db/migrate.ts';
import type { Queryable } from '../../db/connection.ts';
import { judgeSchema, migrationLabel, schemaStopReason, type SchemaVerdict } from '../../domain/schema-compat.ts';
import type { Logger } from '../../log.ts';

export interface SchemaGate {
  /** read the database and update the verdict (a failed read keeps the previous one) */
  check(): Promise<SchemaVerdict>;
  /** the last verdict ('current' until the first check) */
  verdict(): SchemaVerdict;
  /** false while a newer migration is not marked compatible */
  allowsScheduling(): boolean;
}

/** The verdict for `sql` now, for one-shot readers (`status`, `/readyz`). */
export async function readSchemaVerdict(sql: Queryable): Promise<SchemaVerdict> {
  return judgeSchema(await newerMigrations(sql));
}

export function createSchemaGate(deps: { sql: Queryable; log: Logger }): SchemaGate {
  const built = newestBuiltMigration().tag;
  let verdict: SchemaVerdict = judgeSchema([]);
  let lastKey = JSON.stringify([]);
  return {
    async check() {
      const next = await readSchemaVerdict(deps.sql);
      const key = JSON.stringify(next.newer);
      if (key !== lastKey) {
        lastKey = key;
        if (next.state === 'current') {
          deps.log.info({ event: 'schema.current', built }, 'the database has no migration newer than this build');
        } else {
          const scheduling = next.state === 'newer-compatible';
          deps.log.warn(
            {
              event: 'schema.newer',
              built,
              newer: next.newer.map(migrationLabel),
              incompatible: next.state === 'newer-incompatible' ? next.incompatible.map(migrationLabel) : [],
              scheduling,
            },
            scheduling
              ? 'the database has migrations newer than this build, all marked backward-compatible: going on'
              : `scheduling stopped: ${schemaStopReason(next)}`,
          );
        }
      }
      verdict = next;
      return next;
    },
    verdict: () => verdict,
    allowsScheduling: () => verdict.state !== 'newer-incompatible',
  };
}
