/**
 * Advisory locks, each in its own namespace (the first key). The sync lock is held for a whole
 * sync on a reserved connection; the claim lock only inside the transaction that claims videos.
 */
import type { BatchKind } from '../domain/batches.ts';
import type postgres from 'postgres';
import type { Queryable } from './connection.ts';

/** The session lock lives on one server connection: a reserved one, or a transaction's. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type SessionSql = Queryable | postgres.ReservedSql<any>;

/** Sync runs ('VS'); the second key is the source ID. */
const SYNC_LOCK_NAMESPACE = 0x5653;
/** Video claims ('VC'); the second key hashes kind and language. */
const CLAIM_LOCK_NAMESPACE = 0x5643;

/** One sync of a source at a time, across processes; false when another holds it. */
export async function tryLockSourceSync(conn: SessionSql, sourceId: number): Promise<boolean> {
  const [row] = await conn<{ locked: boolean }[]>`select pg_try_advisory_lock(${SYNC_LOCK_NAMESPACE}, ${sourceId}) as locked`;
  return row?.locked === true;
}

export async function unlockSourceSync(conn: SessionSql, sourceId: number): Promise<void> {
  await conn`select pg_advisory_unlock(${SYNC_LOCK_NAMESPACE}, ${sourceId})`;
}

/** Until the transaction ends: claims of `kind`/`lang` are decided by one process at a time. */
export async function lockClaims(tx: Queryable, kind: BatchKind, lang: string | null): Promise<void> {
  await tx`select pg_advisory_xact_lock(${CLAIM_LOCK_NAMESPACE}, hashtext(${`${kind}/${lang ?? ''}`}))`;
}
