/**
 * The source sync lease (src/db/leases.ts, migration 0014): a row, not a session lock, so that it
 * holds behind a transaction-pooling PgBouncer. Each taker here has its own connection pool, as
 * two daemons would: of two takers at the same moment exactly one wins; an expired lease is
 * taken by the next taker; a lease is renewed and released only by its holder; removing the
 * source removes its lease.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../../src/db/connection.ts';
import { acquireSyncLease, releaseSyncLease, renewSyncLease } from '../../src/db/leases.ts';
import { SourceNotFoundError } from '../../src/db/sources.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const TTL_MS = 60_000;
/** Long enough to expire between two statements of the test, short enough not to slow it. */
const SHORT_TTL_MS = 300;

let t: TestDatabase;
let a: DbHandle;
let b: DbHandle;

beforeAll(async () => {
  t = await createTestDatabase('sync-lease');
  a = createDb(t.url, { max: 2 });
  b = createDb(t.url, { max: 2 });
});

afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await t?.drop();
});

async function addSource(n: number): Promise<number> {
  const [row] = await t.sql<{ id: number }[]>`
    insert into sources (kind, ref, external_id, max_videos) values ('channel', ${`UC-lease-${n}`}, ${`UC-lease-${n}`}, 10)
    returning id`;
  return row!.id;
}

async function leaseOf(sourceId: number): Promise<{ holder: string; ttlLeftMs: number } | undefined> {
  const [row] = await t.sql<{ holder: string; ttlLeftMs: number }[]>`
    select holder, (extract(epoch from expires_at - clock_timestamp()) * 1000)::float8 as "ttlLeftMs"
    from source_sync_leases where source_id = ${sourceId}`;
  return row;
}

it('of takers at the same moment, exactly one wins, each round', async () => {
  const sourceId = await addSource(1);
  const rounds = 20;
  const winners: string[] = [];
  for (let i = 0; i < rounds; i++) {
    const takers = [
      { name: `a${i}`, sql: a.sql },
      { name: `b${i}`, sql: b.sql },
      { name: `c${i}`, sql: a.sql },
      { name: `d${i}`, sql: b.sql },
    ];
    const got = await Promise.all(takers.map((k) => acquireSyncLease(k.sql, sourceId, k.name, TTL_MS)));
    const won = takers.filter((_, j) => got[j]);
    expect(won).toHaveLength(1);
    expect((await leaseOf(sourceId))?.holder).toBe(won[0]!.name);
    winners.push(won[0]!.name);
    await releaseSyncLease(b.sql, sourceId, won[0]!.name);
    expect(await leaseOf(sourceId)).toBeUndefined();
  }
  expect(winners).toHaveLength(rounds);
});

it('a held lease is refused to others, kept by its holder, and taken once it expires', async () => {
  const sourceId = await addSource(2);
  expect(await acquireSyncLease(a.sql, sourceId, 'crashed', SHORT_TTL_MS)).toBe(true);
  expect(await acquireSyncLease(b.sql, sourceId, 'next', TTL_MS)).toBe(false);
  // the holder itself takes it again (its own earlier lease, e.g. one it failed to release)
  expect(await acquireSyncLease(a.sql, sourceId, 'crashed', SHORT_TTL_MS)).toBe(true);
  // the holder "crashes": no renewal, no release
  await new Promise((r) => setTimeout(r, SHORT_TTL_MS + 200));
  expect(await acquireSyncLease(b.sql, sourceId, 'next', TTL_MS)).toBe(true);
  expect((await leaseOf(sourceId))?.holder).toBe('next');
  // the crashed holder, back, can neither renew, nor take, nor release it
  expect(await renewSyncLease(a.sql, sourceId, 'crashed', TTL_MS)).toBe(false);
  expect(await acquireSyncLease(a.sql, sourceId, 'crashed', TTL_MS)).toBe(false);
  await releaseSyncLease(a.sql, sourceId, 'crashed');
  expect((await leaseOf(sourceId))?.holder).toBe('next');
});

it('renewal extends only the holder’s lease; release by a non-holder does nothing', async () => {
  const sourceId = await addSource(3);
  expect(await acquireSyncLease(a.sql, sourceId, 'holder', SHORT_TTL_MS)).toBe(true);
  expect(await renewSyncLease(b.sql, sourceId, 'someone-else', TTL_MS)).toBe(false);
  expect((await leaseOf(sourceId))!.ttlLeftMs).toBeLessThanOrEqual(SHORT_TTL_MS);
  expect(await renewSyncLease(a.sql, sourceId, 'holder', TTL_MS)).toBe(true);
  expect((await leaseOf(sourceId))!.ttlLeftMs).toBeGreaterThan(TTL_MS - 5_000);
  // renewed: still held after the first TTL would have run out
  await new Promise((r) => setTimeout(r, SHORT_TTL_MS + 200));
  expect(await acquireSyncLease(b.sql, sourceId, 'other', TTL_MS)).toBe(false);

  await releaseSyncLease(b.sql, sourceId, 'other');
  expect((await leaseOf(sourceId))?.holder).toBe('holder');
  await releaseSyncLease(a.sql, sourceId, 'holder');
  expect(await leaseOf(sourceId)).toBeUndefined();
  expect(await acquireSyncLease(b.sql, sourceId, 'other', TTL_MS)).toBe(true);
});

it('a removed source takes its lease with it; a missing source is named', async () => {
  const sourceId = await addSource(4);
  expect(await acquireSyncLease(a.sql, sourceId, 'holder', TTL_MS)).toBe(true);
  await t.sql`delete from sources where id = ${sourceId}`;
  expect(await leaseOf(sourceId)).toBeUndefined();
  await expect(acquireSyncLease(a.sql, sourceId, 'holder', TTL_MS)).rejects.toBeInstanceOf(SourceNotFoundError);
});
