/**
 * An older build's migrations, for upgrade tests: a copy of this build's migrations/ without the
 * migration `firstLeftOut` and every one after it, with the journal cut to match.
 * `migrateDatabase(url, log, { migrationsFolder })` then makes the schema that build made; the
 * test migrates the database again with this build's migrations. `olderBuildDatabase` does both
 * for a test file: a database of its own, migrated as the older build left it, and the upgrade.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDb, type Sql } from '../../src/db/connection.ts';
import { MIGRATIONS_FOLDER, migrateDatabase } from '../../src/db/migrate.ts';
import { dropDatabase, testDatabaseName, testServerUrl } from './db.ts';

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

export interface OlderBuildDatabase {
  url: string;
  /** a connection to it (2 at most) */
  sql: Sql;
  /** applies this build's migrations, `firstLeftOut` and those after it */
  upgrade(): Promise<void>;
  /** closes the connection, drops the database and the migrations' copy */
  close(): Promise<void>;
}

/** A database of its own (named from `label`), migrated by the build before `firstLeftOut`. */
export async function olderBuildDatabase(firstLeftOut: string, label: string): Promise<OlderBuildDatabase> {
  const folder = olderBuildMigrations(firstLeftOut);
  const name = testDatabaseName(label);
  const url = testServerUrl(name);
  try {
    await migrateDatabase(url, undefined, { migrationsFolder: folder });
  } catch (e) {
    rmSync(folder, { recursive: true, force: true });
    await dropDatabase(name);
    throw e;
  }
  const handle = createDb(url, { max: 2 });
  return {
    url,
    sql: handle.sql,
    upgrade: () => migrateDatabase(url).then(() => undefined),
    async close() {
      await handle.close();
      await dropDatabase(name);
      rmSync(folder, { recursive: true, force: true });
    },
  };
}
