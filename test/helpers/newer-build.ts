/**
 * A newer build's migrations, for rolling-upgrade tests: a copy of this build's migrations/
 * plus more migrations after its newest, with their journal entries. `migrateDatabase(url, log,
 * { migrationsFolder })` then applies them as that build's `migrate` would (drizzle's row and the
 * schema_compat row), while the daemon under test still runs this build.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIGRATIONS_FOLDER } from '../../src/db/migrate.ts';

export interface ExtraMigration {
  tag: string;
  sql: string;
}

export interface NewerBuild {
  folder: string;
  /** the journal `when` of each extra migration, in order */
  whens: number[];
  remove(): void;
}

/** Migrations of a build newer than this one: ours, then `extra`, each a second after the previous. */
export function newerBuildMigrations(extra: ExtraMigration[]): NewerBuild {
  const folder = mkdtempSync(join(tmpdir(), 'vsi-newer-build-'));
  cpSync(MIGRATIONS_FOLDER, folder, { recursive: true });
  const journalPath = join(folder, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as {
    entries: { idx: number; version: string; when: number; tag: string; breakpoints: boolean }[];
  };
  const last = journal.entries[journal.entries.length - 1]!;
  const whens: number[] = [];
  extra.forEach((m, i) => {
    const when = last.when + (i + 1) * 1_000;
    whens.push(when);
    journal.entries.push({ idx: last.idx + i + 1, version: last.version, when, tag: m.tag, breakpoints: true });
    writeFileSync(join(folder, `${m.tag}.sql`), m.sql);
  });
  writeFileSync(journalPath, JSON.stringify(journal, null, 2));
  return { folder, whens, remove: () => rmSync(folder, { recursive: true, force: true }) };
}
