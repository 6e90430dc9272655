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

/**
 * `read` run on a connection of its own with Postgres's plan of each statement, as Postgres ran
 * it (auto_explain with ANALYZE, sent back as notices): what it returned, and the plan of the
 * statement whose text holds `statement`, with the rows its scans read and dropped (by a filter or
 * an index recheck).
 */
export async function withPlan<T>(
  url: string,
  statement: string,
  read: (tx: postgres.TransactionSql) => Promise<T>,
): Promise<{ result: T; plan: string; rowsDropped: number }> {
  const notices: string[] = [];
  const reader = createDb(url, { max: 1, onnotice: (n) => notices.push(String(n.message)) });
  const result = await reader.sql
    .begin(async (tx) => {
      await tx`load 'auto_explain'`;
      await tx`select set_config('auto_explain.log_min_duration', '0', true), set_config('auto_explain.log_analyze', 'on', true),
        set_config('auto_explain.log_level', 'notice', true)`;
      return read(tx);
    })
    .finally(() => reader.close());
  const plan = notices.find((m) => m.includes(statement));
  if (plan === undefined) throw new Error(`no plan holds ${JSON.stringify(statement)}; plans:\n${notices.join('\n')}`);
  const rowsDropped = [...plan.matchAll(/Rows Removed by (?:Filter|Index Recheck): (\d+)/g)].reduce(
    (n, m) => n + Number(m[1]),
    0,
  );
  return { result: result as T, plan, rowsDropped };
}

/**
 * `count` passages for a plan test, of `kinds` in turn, each document (`doc` and a number) ten of
 * them; the first `holding` say `words` (and their number), the others words no query asks for.
 */
export async function insertNoisePassages(
  sql: Sql,
  o: { kinds: readonly string[]; doc: string; lang: string; count: number; holding?: number; words?: string },
): Promise<void> {
  await sql`
    insert into passages (kind, doc, lang, n, text, tokens, sha256)
    select (${o.kinds as string[]}::text[])[1 + i % ${o.kinds.length}], ${o.doc} || (i / 10), ${o.lang}, i % 10,
      case when i < ${o.holding ?? 0} then ${o.words ?? ''} || ' ' || i else 'unrelated words ' || i end, 8,
      ${o.doc} || '-' || i
    from generate_series(0, ${o.count - 1}) as i`;
}
