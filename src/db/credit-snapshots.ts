/** `credit_snapshots`: what `GET /me` said, when, and why it was asked. */
import type { Account } from '../api/schemas.ts';
import type { Queryable } from './connection.ts';

/** Keep one `/me` answer; `reason` says why it was taken (e.g. 'before-submit', 'hold-recheck'). */
export async function insertCreditSnapshot(sql: Queryable, me: Account, reason: string, sourceId: number | null = null): Promise<void> {
  await sql`
    insert into credit_snapshots (organization_id, plan, max_credits, used_credits, reason, source_id)
    values (${me.organizationId}, ${me.plan}, ${me.maxCredits}, ${me.usedCredits}, ${reason}, ${sourceId})`;
}
