/**
 * `credit_charges`: what each paid API request was billed, beside its estimate (written by
 * src/pipeline/ingest/charges.ts), and the sums `status`, `/metrics`, the sync records and the daily
 * budgets read from it.
 */
import type { ChargeBasis } from '../domain/charges.ts';
import type { Queryable } from './connection.ts';

export interface NewCharge {
  sourceId: number | null;
  syncRunId: number | null;
  endpoint: string;
  status: number | null;
  credits: number;
  estimated: number | null;
  basis: ChargeBasis;
  budgetDelta: number;
  keyFingerprint: string | null;
}

/** Write charges in one statement. */
export async function insertCharges(sql: Queryable, rows: readonly NewCharge[]): Promise<void> {
  if (rows.length === 0) return;
  const values = rows.map((r) => ({
    source_id: r.sourceId,
    sync_run_id: r.syncRunId,
    endpoint: r.endpoint,
    status: r.status,
    credits: r.credits,
    estimated: r.estimated,
    basis: r.basis,
    budget_delta: r.budgetDelta,
    key_fingerprint: r.keyFingerprint,
  }));
  await sql`insert into credit_charges ${sql(values)}`;
}

/** Billed credits of one UTC day (or the day so far). */
export interface BilledDay {
  /** `YYYY-MM-DD`, UTC */
  day: string;
  credits: number;
  estimated: number;
  requests: number;
  /** credits of requests whose answer carried no `x-billable-requests` (priced at the published prices) */
  priced: number;
  /** credits of requests that got no answer after they may have reached the API (possibly charged) */
  unanswered: number;
}

/** The last `days` UTC days with any charge, newest first. */
export async function billedByDay(sql: Queryable, days: number): Promise<BilledDay[]> {
  return sql<BilledDay[]>`
    select to_char(date_trunc('day', charged_at at time zone 'UTC'), 'YYYY-MM-DD') as day,
      sum(credits)::float8 as credits,
      coalesce(sum(estimated), 0)::float8 as estimated,
      count(*)::float8 as requests,
      coalesce(sum(credits) filter (where basis = 'price'), 0)::float8 as priced,
      coalesce(sum(credits) filter (where basis = 'unanswered'), 0)::float8 as unanswered
    from credit_charges
    where charged_at >= date_trunc('day', now() at time zone 'UTC') at time zone 'UTC' - make_interval(days => ${days - 1})
    group by 1 order by 1 desc`;
}

export interface BilledSource {
  sourceId: number | null;
  credits: number;
  estimated: number;
  requests: number;
}

/** Billed credits per source since `since` (null: requests of no source), most first. */
export async function billedBySource(sql: Queryable, since: Date, limit = 50): Promise<BilledSource[]> {
  return sql<BilledSource[]>`
    select source_id as "sourceId", sum(credits)::float8 as credits, coalesce(sum(estimated), 0)::float8 as estimated,
      count(*)::float8 as requests
    from credit_charges where charged_at >= ${since}
    group by source_id order by sum(credits) desc, source_id limit ${limit}`;
}

/** Every credit billed in [`from`, `to`) (`to` undefined: until now), to set beside `/me`'s usage over the same span. */
export async function billedBetween(sql: Queryable, from: Date, to?: Date): Promise<number> {
  const until = to === undefined ? sql`` : sql`and charged_at < ${to}`;
  const [row] = await sql<{ n: number }[]>`
    select coalesce(sum(credits), 0)::float8 as n from credit_charges where charged_at >= ${from} ${until}`;
  return row!.n;
}
