/**
 * Who may run what at once, across processes. The source sync lock is a lease in a row
 * (`source_sync_leases`, migration 0014); the claim lock is a transaction-scoped advisory lock.
 * Neither keeps state in a server session between transactions, so both hold behind a
 * transaction-pooling PgBouncer, where consecutive statements of one client may run on different
 * server connections (a session advisory lock was taken on one and released, or not, on another).
 */
import postgres from 'postgres';
import type { BatchKind } from '../domain/batches.ts';
import type { Queryable } from './connection.ts';
import { SourceNotFoundError } from './sources.ts';

/** Video claims ('VC'); the second key hashes kind and language. */
const CLAIM_LOCK_NAMESPACE = 0x5643;

/**
 * How long a sync lease holds without renewal, ms. The sync renews it every SYNC_LEASE_RENEW_MS
 * while it runs; a holder that died (SIGKILL, machine lost) blocks the source's syncs at most
 * this long. A minute: a cron sync waits at worst one tick longer after a crash, while three
 * renewals in a row would have to fail (Postgres unreachable 40 s) before a live sync loses it.
 */
export const SYNC_LEASE_TTL_MS = 60_000;
/** A third of the TTL: two renewals may fail before the lease lapses. */
export const SYNC_LEASE_RENEW_MS = SYNC_LEASE_TTL_MS / 3;

const PG_FOREIGN_KEY_VIOLATION = '23503';

/**
 * Takes the sync lease of a source for `holder`, for `ttlMs`: true when it is now `holder`'s
 * (nobody held it, the lease had expired, or `holder` held it already); false when someone else
 * holds it. Two takers at once: the second waits on the primary key for the first's insert to
 * commit, then finds an unexpired lease and gets no row back.
 */
export async function acquireSyncLease(
  sql: Queryable,
  sourceId: number,
  holder: string,
  ttlMs: number,
): Promise<boolean> {
  try {
    const rows = await sql<{ holder: string }[]>`
      insert into source_sync_leases as l (source_id, holder, acquired_at, expires_at)
      values (${sourceId}, ${holder}, clock_timestamp(), clock_timestamp() + make_interval(secs => ${ttlMs / 1000}))
      on conflict (source_id) do update
        set holder = excluded.holder, acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
        where l.expires_at < clock_timestamp() or l.holder = excluded.holder
      returning l.holder`;
    return rows[0]?.holder === holder;
  } catch (e: unknown) {
    if (e instanceof postgres.PostgresError && e.code === PG_FOREIGN_KEY_VIOLATION)
      throw new SourceNotFoundError(sourceId);
    throw e;
  }
}

/** Extends `holder`'s lease by `ttlMs` from now; false when it is no longer theirs (expired and taken, or the source removed). */
export async function renewSyncLease(
  sql: Queryable,
  sourceId: number,
  holder: string,
  ttlMs: number,
): Promise<boolean> {
  const rows = await sql`
    update source_sync_leases set expires_at = clock_timestamp() + make_interval(secs => ${ttlMs / 1000})
    where source_id = ${sourceId} and holder = ${holder}
    returning source_id`;
  return rows.length > 0;
}

/** Ends `holder`'s lease; someone else's is left alone. */
export async function releaseSyncLease(sql: Queryable, sourceId: number, holder: string): Promise<void> {
  await sql`delete from source_sync_leases where source_id = ${sourceId} and holder = ${holder}`;
}

/** Until the transaction ends: claims of `kind`/`lang` are decided by one process at a time. */
export async function lockClaims(tx: Queryable, kind: BatchKind, lang: string | null): Promise<void> {
  await tx`select pg_advisory_xact_lock(${CLAIM_LOCK_NAMESPACE}, hashtext(${`${kind}/${lang ?? ''}`}))`;
}
