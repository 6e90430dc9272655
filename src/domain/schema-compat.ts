/**
 * Rolling upgrades: may a daemon of this build keep scheduling on a schema that a newer build
 * migrated further? Only when every migration newer than the build's own newest is marked
 * backward-compatible (old code keeps working on it: additive tables, columns with defaults or
 * nullable, indexes, triggers that do not reject old writes). The mark is a line in the
 * migration's SQL file; `migrate` records it in `schema_compat` (migration 0012), where builds
 * that do not have the file read it.
 */

/** The line that marks a migration file backward-compatible (anywhere in the file, alone on its line). */
export const BACKWARD_COMPATIBLE_MARK = '-- vsi: backward-compatible';

export function isMarkedBackwardCompatible(sqlText: string): boolean {
  return sqlText.split(/\r?\n/).some((line) => line.trim() === BACKWARD_COMPATIBLE_MARK);
}

/** A migration applied to the database that this build does not know. */
export interface NewerMigration {
  /** drizzle's `created_at`: the journal's `when`, ms */
  createdAt: number;
  /** from schema_compat; null when the build that applied it recorded nothing (then: incompatible) */
  tag: string | null;
  compatible: boolean;
}

export type SchemaVerdict =
  /** no migration newer than the build's */
  | { state: 'current'; newer: [] }
  /** newer ones, all marked compatible: go on */
  | { state: 'newer-compatible'; newer: NewerMigration[] }
  /** at least one newer one not marked compatible: schedule nothing new */
  | { state: 'newer-incompatible'; newer: NewerMigration[]; incompatible: NewerMigration[] };

export function judgeSchema(newer: NewerMigration[]): SchemaVerdict {
  if (newer.length === 0) return { state: 'current', newer: [] };
  const incompatible = newer.filter((m) => !m.compatible);
  return incompatible.length === 0
    ? { state: 'newer-compatible', newer }
    : { state: 'newer-incompatible', newer, incompatible };
}

/** How a migration is named to people: its tag, or its timestamp when no tag was recorded. */
export function migrationLabel(m: NewerMigration): string {
  return m.tag ?? `created_at ${m.createdAt} (not recorded in schema_compat)`;
}

/** Why scheduling stopped, one line (log, status, /readyz reason). */
export function schemaStopReason(v: SchemaVerdict): string | undefined {
  if (v.state !== 'newer-incompatible') return undefined;
  return `the database has migration(s) newer than this build and not marked backward-compatible: ${v.incompatible.map(migrationLabel).join(', ')}; upgrade this daemon (no new syncs or submissions until then)`;
}
