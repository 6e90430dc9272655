/** `credit_snapshots`: what `GET /me` said, when, and why it was asked. */
import type { Account } from '../api/schemas.ts';
import type { Queryable } from './connection.ts';
import type { CreditSnapshot } from './schema.ts';

/** Keep one `/me` answer; `reason` says why it was taken (e.g. 'before-submit', 'hold-recheck'). */
export async function insertCreditSnapshot(
  sql: Queryable,
  me: Account,
  reason: string,
  sourceId: number | null = null,
): Promise<void> {
  await sql`
    insert into credit_snapshots (organization_id, plan, max_credits, used_credits, reason, source_id)
    values (${me.organizationId}, ${me.plan}, ${me.maxCredits}, ${me.usedCredits}, ${reason}, ${sourceId})`;
}

export type CreditReading = Pick<CreditSnapshot, 'plan' | 'organizationId' | 'maxCredits' | 'usedCredits' | 'takenAt'>;

// bigint columns read as float8: a number whatever the client's int8 parser (credits stay far below 2^53)
const READING = (sql: Queryable) => sql`
  plan, organization_id as "organizationId", max_credits::float8 as "maxCredits", used_credits::float8 as "usedCredits",
  taken_at as "takenAt"`;

/** The latest snapshot, or undefined before the first. */
export async function latestCreditSnapshot(sql: Queryable): Promise<CreditReading | undefined> {
  const [row] = await sql<CreditReading[]>`
    select ${READING(sql)} from credit_snapshots order by taken_at desc, id desc limit 1`;
  return row;
}

/** The first snapshot taken within the last `withinMs`, or undefined. */
export async function firstCreditSnapshotWithin(sql: Queryable, withinMs: number): Promise<CreditReading | undefined> {
  const [row] = await sql<CreditReading[]>`
    select ${READING(sql)} from credit_snapshots
    where taken_at > now() - make_interval(secs => ${withinMs / 1000})
    order by taken_at, id limit 1`;
  return row;
}

/** One point of the credit chart: the highest usage within a span of time, and when. */
export interface CreditUsagePoint {
  at: Date;
  used: number;
  max: number | null;
}

/**
 * Credit usage over the last `days` (or since the first snapshot), in at most `maxPoints`
 * buckets of equal time, keeping the highest usage of each.
 */
export function creditUsage(sql: Queryable, o: { days: number; maxPoints: number }): Promise<CreditUsagePoint[]> {
  return sql<CreditUsagePoint[]>`
    with bounds as (
      select greatest(min(taken_at), now() - make_interval(days => ${o.days})) as lo, now() as hi
      from credit_snapshots
    ), pts as (
      select s.taken_at, s.used_credits, s.max_credits,
        floor(extract(epoch from s.taken_at - b.lo)
          / greatest(extract(epoch from b.hi - b.lo) / ${o.maxPoints}, 1e-3)) as bucket
      from credit_snapshots s, bounds b
      where s.taken_at >= b.lo and s.used_credits is not null
    )
    select max(taken_at) as at, max(used_credits)::float8 as used, max(max_credits)::float8 as max
    from pts group by bucket order by bucket`;
}
