/**
 * Migrations behind a long transaction (issue #16): a migration that must ALTER a table another
 * transaction has read (an open psql session, a long report) waits at most
 * MIGRATION_LOCK_TIMEOUT_MS per try, rolls back, retries with backoff, then fails with an error
 * naming the migration and the transaction it waited behind: never stuck without end, and
 * nothing half-applied. Once that transaction ends, the same migration applies.
 *
 * How it fails when the property breaks: without `lock_timeout` (the set_config in
 * src/db/migrate.ts removed) the first `migrateDatabase` never returns and the test times out.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import postgres from 'postgres';
import { MigrationError, migrateDatabase } from '../../src/db/migrate.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { figures } from '../helpers/fault-rig.ts';
import { newerBuildMigrations, type NewerBuild } from '../helpers/newer-build.ts';

let t: TestDatabase;
let newer: NewerBuild;
beforeAll(async () => {
  t = await createTestDatabase('migrate_lock');
  newer = newerBuildMigrations([
    {
      tag: '0900_probe_column',
      sql: '-- vsi: backward-compatible\nALTER TABLE "sources" ADD COLUMN IF NOT EXISTS "upgrade_probe" text;\n',
    },
  ]);
});
afterAll(async () => {
  newer?.remove();
  await t?.drop();
});

it('a migration behind a long transaction times out, retries, then fails naming it; applies once it ends', async () => {
  const blocker = postgres(t.url, { max: 1, onnotice: () => {}, connection: { application_name: 'long-report' } });
  const reserved = await blocker.reserve();
  try {
    await reserved`begin`;
    await reserved`select count(*) from sources`;
    const [{ pid }] = (await reserved`select pg_backend_pid() as pid`) as unknown as [{ pid: number }];
    // the transaction is over a second old when the migration looks for the blockers
    await new Promise((r) => setTimeout(r, 1_200));
    const startedAt = Date.now();
    const err = await migrateDatabase(t.url, undefined, {
      migrationsFolder: newer.folder,
      lockTimeoutMs: 300,
      lockRetries: 2,
      retryBaseDelayMs: 100,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const tookMs = Date.now() - startedAt;
    figures('migrate-lock-timeout', {
      lock_timeout_ms: 300,
      tries: 3,
      gave_up_after_s: tookMs / 1000,
      applied_while_blocked: 0,
    });
    expect(err).toBeInstanceOf(MigrationError);
    const message = (err as Error).message;
    expect(message).toContain('0900_probe_column');
    expect(message).toContain('MIGRATION_LOCK_TIMEOUT_MS=300');
    expect(message).toContain('3 time(s)');
    expect(message).toContain(`pid ${pid} (long-report`);
    // 3 tries of 300 ms and backoffs of 100 + 200 ms: bounded, far from "without end"
    expect(tookMs).toBeLessThan(5_000);
    const [col] = await t.sql<{ n: number }[]>`
      select count(*)::int as n from information_schema.columns where table_name = 'sources' and column_name = 'upgrade_probe'`;
    expect(col!.n).toBe(0);
    await reserved`commit`;
  } finally {
    reserved.release();
    await blocker.end({ timeout: 5 });
  }
  const r = await migrateDatabase(t.url, undefined, {
    migrationsFolder: newer.folder,
    lockTimeoutMs: 300,
    lockRetries: 2,
    retryBaseDelayMs: 100,
  });
  expect(r.applied).toBe(1);
  const [row] = await t.sql<{ tag: string; compatible: boolean; at: string }[]>`
    select tag, backward_compatible as compatible, created_at::text as at from schema_compat where tag = '0900_probe_column'`;
  expect(row).toEqual({ tag: '0900_probe_column', compatible: true, at: String(newer.whens[0]) });
});

it('records every migration of the journal in schema_compat, with its mark, idempotently', async () => {
  await migrateDatabase(t.url);
  const rows = await t.sql<
    { tag: string; compatible: boolean }[]
  >`select tag, backward_compatible as compatible from schema_compat order by created_at`;
  expect(rows.find((r) => r.tag === '0012_schema_compat')?.compatible).toBe(true);
  expect(rows.length).toBeGreaterThanOrEqual(13);
});
