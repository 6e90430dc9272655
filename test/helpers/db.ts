/**
 * A private database per integration test file, so files run in parallel without seeing each
 * other's rows: created and migrated with the real `migrateDatabase`, dropped (WITH (FORCE),
 * so a leaked connection cannot keep it alive) by `drop()` in afterAll.
 */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { loadConfig } from '../../src/config.ts';
import { createDb, type Sql } from '../../src/db/connection.ts';
import { migrateDatabase, quoteIdentifier, withDatabase } from '../../src/db/migrate.ts';

export interface TestDatabase {
  /** postgres:// URL of the test database */
  url: string;
  name: string;
  sql: Sql;
  /** Closes `sql` and drops the database. */
  drop(): Promise<void>;
}

/** A unique, valid database name: `vsi_test_<label>_<random>` (at most 63 bytes). */
export function testDatabaseName(label = 'db'): string {
  const clean =
    label
      .toLowerCase()
      .replace(/[^a-z0-9_]+/g, '_')
      .replace(/^_+|_+$/g, '')
      .slice(0, 30) || 'db';
  return `vsi_test_${clean}_${randomBytes(5).toString('hex')}`;
}

/** The server of DATABASE_URL, any database. */
export function testServerUrl(database: string): string {
  return withDatabase(loadConfig().databaseUrl, database);
}

/** Drops a database if it exists, even with connections still open. */
export async function dropDatabase(name: string): Promise<void> {
  const admin = postgres(testServerUrl('postgres'), { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`drop database if exists ${quoteIdentifier(name)} with (force)`);
  } finally {
    await admin.end({ timeout: 5 });
  }
}

export async function createTestDatabase(label?: string): Promise<TestDatabase> {
  const name = testDatabaseName(label);
  const url = testServerUrl(name);
  await migrateDatabase(url);
  const handle = createDb(url, { max: 4 });
  return {
    url,
    name,
    sql: handle.sql,
    async drop() {
      await handle.close();
      await dropDatabase(name);
    },
  };
}
