/**
 * `upstream_holds`: the upstream refused for account reasons (the key, the plan, the credits).
 * While a hold stands, scheduled work makes no API call: retrying cannot fix it, and every
 * refused call is noise at best. A person clears it by fixing the cause and running a backfill
 * (its sync succeeding clears every hold); a daemon's start re-checks `/me` (free) for holds it
 * can judge there (`unauthorized`, `credits`).
 */
import type { Queryable } from './connection.ts';
import { HOLD_SCOPE_OF, type HoldCode, type HoldScope } from '../domain/refusals.ts';

export interface UpstreamHoldRow {
  code: HoldCode;
  scope: HoldScope;
  reason: string;
  since: Date;
  lastSeenAt: Date;
}

export { HOLD_SCOPE_OF };

/** Set (or refresh) a hold. Returns true when it is new. */
export async function setHold(sql: Queryable, code: HoldCode, reason: string): Promise<boolean> {
  const rows = await sql<{ inserted: boolean }[]>`
    insert into upstream_holds (code, scope, reason)
    values (${code}, ${HOLD_SCOPE_OF[code]}, ${reason})
    on conflict (code) do update set reason = excluded.reason, last_seen_at = now()
    returning (xmax = 0) as inserted`;
  return rows[0]?.inserted ?? false;
}

export async function activeHolds(sql: Queryable): Promise<UpstreamHoldRow[]> {
  const rows = await sql<{ code: HoldCode; scope: HoldScope; reason: string; since: Date; last_seen_at: Date }[]>`
    select code, scope, reason, since, last_seen_at from upstream_holds order by since`;
  return rows.map((r) => ({ code: r.code, scope: r.scope, reason: r.reason, since: r.since, lastSeenAt: r.last_seen_at }));
}

/** Clear holds (all of them, or those of `codes`); returns the codes cleared. */
export async function clearHolds(sql: Queryable, codes?: readonly HoldCode[]): Promise<HoldCode[]> {
  const rows =
    codes === undefined
      ? await sql<{ code: HoldCode }[]>`delete from upstream_holds returning code`
      : await sql<{ code: HoldCode }[]>`delete from upstream_holds where code = any(${codes as HoldCode[]}::text[]) returning code`;
  return rows.map((r) => r.code);
}

/** One line for a person: what was refused, since when, and how to resume. */
export function describeHold(h: Pick<UpstreamHoldRow, 'code' | 'reason' | 'since'>): string {
  const fix =
    h.code === 'unauthorized'
      ? 'fix API_KEY'
      : h.code === 'upgrade-required'
        ? 'upgrade the plan'
        : 'wait for the credits to renew or add credits';
  return (
    `upstream refused (${h.code}) since ${h.since.toISOString()}: ${h.reason}; ` +
    `scheduled syncs make no API call until cleared: ${fix}, then run \`videosite-ingest backfill --all\` (or restart the daemons)`
  );
}
