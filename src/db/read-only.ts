/**
 * Whether the database accepts writes now: a hot standby (`pg_is_in_recovery()`) never does, and
 * `default_transaction_read_only` (or a `transaction_read_only` set by a pooler) makes every
 * transaction read-only. Asked in a transaction of its own, so a session setting of a pooled
 * connection is read as the pipeline's next transaction would see it.
 */
import type { Queryable } from './connection.ts';

export type ReadOnlyState = 'writable' | 'standby' | 'read-only';

export async function readOnlyState(sql: Queryable): Promise<ReadOnlyState> {
  const [row] = await sql<{ recovery: boolean; readOnly: string }[]>`
    select pg_is_in_recovery() as recovery, current_setting('transaction_read_only') as "readOnly"`;
  if (row?.recovery) return 'standby';
  return row?.readOnly === 'on' ? 'read-only' : 'writable';
}
