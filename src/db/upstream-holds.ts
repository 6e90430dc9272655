/**
 * `upstream_holds`: the upstream refused one API key for account reasons (the key, the plan, the
 * credits). While a hold stands, scheduled work of the processes using that key makes no API
 * call: retrying cannot fix it, and every refused call is noise at best. A process using another
 * key is not held (one mistyped `API_KEY=... backfill` must not stop the daemons that have the
 * right one). A sync a person started (backfill, replay) that gets through clears its key's
 * holds; daemons re-check `/me` (free) every HOLD_RECHECK_MS for the holds it can judge
 * (`unauthorized`, `credits`) and lift them by themselves.
 *
 * `upstream_hold_events` keeps every hold set and lifted, with the reason, written in the same
 * statement as the change: a hold that came and went while nobody watched still shows. So is its
 * `account.hold` / `account.hold_lifted` change event, on a real transition only.
 */
import type { EventType } from '../domain/events.ts';
import type { Queryable } from './connection.ts';
import { HOLD_SCOPE_OF, type HoldCode, type HoldEvent } from '../domain/refusals.ts';
import type { upstreamHoldEvents, UpstreamHold } from './schema.ts';

export type UpstreamHoldRow = UpstreamHold;

export { HOLD_SCOPE_OF };

export type UpstreamHoldEventRow = typeof upstreamHoldEvents.$inferSelect;

const SET: HoldEvent = 'set';
const LIFTED: HoldEvent = 'lifted';
/** The change events of a hold set and lifted (src/domain/events.ts), written with `upstream_hold_events`. */
const HOLD_SET_EVENT: EventType = 'account.hold';
const HOLD_LIFTED_EVENT: EventType = 'account.hold_lifted';

/** Why holds are lifted when no reason is given: the only such caller is a sync a person started. */
export const LIFTED_BY_SYNC = 'a sync a person started (backfill or replay) got through';

/** Set (or refresh) the hold of a key; a new one is recorded as a 'set' event. Returns true when it is new. */
export async function setHold(
  sql: Queryable,
  keyFingerprint: string,
  code: HoldCode,
  reason: string,
): Promise<boolean> {
  const rows = await sql<{ inserted: boolean }[]>`
    with hold as (
      insert into upstream_holds (code, scope, reason, key_fingerprint)
      values (${code}, ${HOLD_SCOPE_OF[code]}, ${reason}, ${keyFingerprint})
      on conflict (code, key_fingerprint) do update set reason = excluded.reason, last_seen_at = now()
      returning code, scope, reason, key_fingerprint, (xmax = 0) as inserted
    ), event as (
      insert into upstream_hold_events (code, event, reason, key_fingerprint)
      select code, ${SET}, reason, key_fingerprint from hold where inserted
    ), change as (
      insert into events (type, data)
      select ${HOLD_SET_EVENT}, jsonb_build_object('code', code, 'scope', scope, 'reason', reason, 'keyFingerprint', key_fingerprint)
      from hold where inserted
    )
    select inserted from hold`;
  return rows[0]?.inserted ?? false;
}

/** Every hold, whichever key it is about (for `status` and the overview). */
export async function activeHolds(sql: Queryable): Promise<UpstreamHoldRow[]> {
  return sql<UpstreamHoldRow[]>`
    select code, scope, reason, since, last_seen_at as "lastSeenAt", key_fingerprint as "keyFingerprint"
    from upstream_holds order by since`;
}

/**
 * The holds that apply to a process using the key of `keyFingerprint`: that key's, and those
 * recorded before holds were per key (no fingerprint: they apply to every key).
 */
export async function holdsForKey(sql: Queryable, keyFingerprint: string): Promise<UpstreamHoldRow[]> {
  return sql<UpstreamHoldRow[]>`
    select code, scope, reason, since, last_seen_at as "lastSeenAt", key_fingerprint as "keyFingerprint"
    from upstream_holds
    where key_fingerprint = ${keyFingerprint} or key_fingerprint is null
    order by since`;
}

/**
 * Clear the holds that apply to a key (all of them, or those of `codes`), each recorded as a
 * 'lifted' event with `reason` (who lifted it and why); returns the codes cleared. Another key's
 * holds stay: that the key works says nothing of another. Processes that clear at once each get
 * only the rows they deleted, so a lift is recorded once.
 */
export async function clearHolds(
  sql: Queryable,
  keyFingerprint: string,
  codes?: readonly HoldCode[],
  reason: string = LIFTED_BY_SYNC,
): Promise<HoldCode[]> {
  const all = codes === undefined;
  const rows = await sql<{ code: HoldCode }[]>`
    with gone as (
      delete from upstream_holds
      where (key_fingerprint = ${keyFingerprint} or key_fingerprint is null)
        and (${all} or code = any(${(codes ?? []) as HoldCode[]}::text[]))
      returning code, key_fingerprint
    ), event as (
      insert into upstream_hold_events (code, event, reason, key_fingerprint)
      select code, ${LIFTED}, ${reason}, key_fingerprint from gone
    ), change as (
      insert into events (type, data)
      select ${HOLD_LIFTED_EVENT}, jsonb_build_object('code', code, 'reason', ${reason}::text, 'keyFingerprint', key_fingerprint)
      from gone
    )
    select distinct code from gone order by code`;
  return rows.map((r) => r.code);
}

/** The latest hold events, newest first (for `status`). */
export async function recentHoldEvents(sql: Queryable, limit: number): Promise<UpstreamHoldEventRow[]> {
  const rows = await sql<UpstreamHoldEventRow[]>`
    select id, code, event, reason, at, key_fingerprint as "keyFingerprint" from upstream_hold_events order by at desc, id desc limit ${limit}`;
  return rows.map((r) => ({ ...r, id: Number(r.id) }));
}

/** How each hold ends, for a person. */
const HOW_TO_RESUME: Readonly<Record<HoldCode, string>> = {
  unauthorized:
    'give the processes using this key a working API_KEY (a process with another key is not held): ' +
    'running daemons re-check /me (free) every HOLD_RECHECK_MS and lift the hold by themselves once the key works, ' +
    'or run `videosite-ingest backfill --all` with it',
  credits:
    'wait for the billing period to renew or add credits: running daemons re-check /me (free) every HOLD_RECHECK_MS and lift the hold by themselves, ' +
    'or run `videosite-ingest backfill --all`',
  'upgrade-required':
    'upgrade the plan, then run `videosite-ingest backfill --all` (/me cannot tell, so no daemon lifts this hold)',
};

/** Which key a hold is about, for a person (never the key itself). */
export function describeHoldKey(keyFingerprint: string | null): string {
  return keyFingerprint === null
    ? 'every API key (a hold recorded before holds were per key)'
    : `the API key with fingerprint ${keyFingerprint}`;
}

/** One line for a person: what was refused, for which key, since when, and how to resume. */
export function describeHold(h: Pick<UpstreamHoldRow, 'code' | 'reason' | 'since' | 'keyFingerprint'>): string {
  return (
    `upstream refused (${h.code}) since ${h.since.toISOString()}, holding ${describeHoldKey(h.keyFingerprint)}: ${h.reason}; ` +
    `scheduled syncs with that key make no API call until cleared: ${HOW_TO_RESUME[h.code]}`
  );
}
