/**
 * An older build's migrations, for upgrade tests: a copy of this build's migrations/ without the
 * migration `firstLeftOut` and every one after it, with the journal cut to match.
 * `migrateDatabase(url, log, { migrationsFolder })` then makes the schema that build made; the
 * test migrates the database again with this build's migrations.
 */
import { cpSync, mkdtempSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIGRATIONS_FOLDER } from '../../src/db/migrate.ts';

/** The folder of the older build's migrations (the caller removes it). */
export function olderBuildMigrations(firstLeftOut: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'vsi-older-build-'));
  cpSync(MIGRATIONS_FOLDER, dir, { recursive: true });
  const journalPath = join(dir, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: { tag: string }[] };
  const cut = journal.entries.findIndex((e) => e.tag === firstLeftOut);
  if (cut < 0) throw new Error(`${firstLeftOut} not in the journal`);
  for (const e of journal.entries.slice(cut)) unlinkSync(join(dir, `${e.tag}.sql`));
  journal.entries = journal.entries.slice(0, cut);
  writeFileSync(journalPath, JSON.stringify(journal, null, 2));
  return dir;
}
