/**
 * `webhook_endpoints` and `webhook_deliveries` (issue #14): the endpoints change events are POSTed
 * to, each with its cursor (the last event id handled) and its lease, and every delivery attempt.
 * The secret is read only where a delivery is signed (`claimEndpoint`, `endpointForTest`) and by
 * `addEndpoint`'s caller; `listEndpoints` never selects it.
 */
import type { EventType } from '../domain/events.ts';
import type { WebhookDeliveryStatus } from '../domain/webhooks.ts';
import type { Queryable, Sql } from './connection.ts';

/** An endpoint as `webhooks list`, `status` and the overview show it: never the secret. */
export interface EndpointSummary {
  id: number;
  url: string;
  /** null: every type */
  eventTypes: EventType[] | null;
  enabled: boolean;
  createdAt: Date;
  cursor: number;
  failingSince: Date | null;
  failures: number;
  nextAttemptAt: Date | null;
  disabledAt: Date | null;
  disabledReason: string | null;
  lastDeliveredAt: Date | null;
  /** matching events after the cursor, counted up to PENDING_COUNT_CAP + 1 */
  pending: number;
}

/** `pending` stops counting past this: a long-dead endpoint must not make `list` scan every event. */
export const PENDING_COUNT_CAP = 10_000;

/** What the delivery worker needs of the endpoint it holds the lease of. */
export interface LeasedEndpoint {
  id: number;
  url: string;
  eventTypes: EventType[] | null;
  secret: string;
  cursor: number;
  failingSince: Date | null;
  failures: number;
}

/**
 * A new endpoint. It receives the events written from now on: its cursor starts at the latest
 * event, so adding an endpoint does not replay the whole retained history at it.
 */
export async function addEndpoint(sql: Queryable, e: { url: string; eventTypes: readonly EventType[] | null; secret: string }): Promise<number> {
  const [row] = await sql<{ id: number }[]>`
    insert into webhook_endpoints (url, event_types, secret, cursor)
    values (${e.url}, ${e.eventTypes === null ? null : [...e.eventTypes]}::text[], ${e.secret}, (select coalesce(max(id), 0) from events))
    returning id`;
  return row!.id;
}

export async function listEndpoints(sql: Queryable): Promise<EndpointSummary[]> {
  return sql<EndpointSummary[]>`
    select w.id, w.url, w.event_types as "eventTypes", w.enabled, w.created_at as "createdAt", w.cursor::float8 as cursor,
      w.failing_since as "failingSince", w.failures, w.next_attempt_at as "nextAttemptAt", w.disabled_at as "disabledAt",
      w.disabled_reason as "disabledReason", w.last_delivered_at as "lastDeliveredAt",
      (select count(*)::int from (
        select 1 from events e where e.id > w.cursor and (w.event_types is null or e.type = any(w.event_types)) limit ${PENDING_COUNT_CAP + 1}
      ) p) as pending
    from webhook_endpoints w order by w.id`;
}

/**
 * A disabled (or failing) endpoint delivers again from its cursor at once, its failure count and
 * reason cleared; false when there is no such endpoint. Events pruned while it was disabled are gone.
 */
export async function enableEndpoint(sql: Queryable, id: number): Promise<boolean> {
  const rows = await sql`
    update webhook_endpoints set enabled = true, disabled_at = null, disabled_reason = null, failing_since = null,
      failures = 0, next_attempt_at = null
    where id = ${id} returning id`;
  return rows.length > 0;
}

/** Deletes the endpoint and its delivery records; false when there was none. */
export async function removeEndpoint(sql: Queryable, id: number): Promise<boolean> {
  const rows = await sql`delete from webhook_endpoints where id = ${id} returning id`;
  return rows.length > 0;
}

/** The endpoint with its secret, for `webhooks test`. */
export async function endpointForTest(sql: Queryable, id: number): Promise<{ id: number; url: string; secret: string } | undefined> {
  const [row] = await sql<{ id: number; url: string; secret: string }[]>`select id, url, secret from webhook_endpoints where id = ${id}`;
  return row;
}

const LEASED_COLUMNS = (sql: Queryable) =>
  sql`id, url, event_types as "eventTypes", secret, cursor::float8 as cursor, failing_since as "failingSince", failures`;

/**
 * Takes the lease of one endpoint that is enabled, due (no backoff pending), not leased (by another
 * worker, or another slot of this one: `owner` is per process), and has a matching event after its cursor; undefined when none is. Rows another worker
 * is claiming are skipped, not waited for.
 */
export async function claimEndpoint(sql: Queryable, owner: string, leaseMs: number): Promise<LeasedEndpoint | undefined> {
  const [row] = await sql<LeasedEndpoint[]>`
    update webhook_endpoints w set lease_owner = ${owner}, lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000})
    where w.id = (
      select c.id from webhook_endpoints c
      where c.enabled
        and (c.lease_expires_at is null or c.lease_expires_at < now())
        and (c.next_attempt_at is null or c.next_attempt_at <= now())
        -- the newest event (of each type the endpoint takes) against the cursor: each max() is one
        -- step down an index, where "exists an event after the cursor" was a scan of the table
        -- once the planner could not tell how far behind the cursor is
        and (
          (c.event_types is null and c.cursor < (select max(e.id) from events e))
          or exists (select 1 from unnest(c.event_types) t(type) where c.cursor < (select max(e.id) from events e where e.type = t.type))
        )
      order by c.next_attempt_at nulls first, c.id
      limit 1
      for update skip locked
    )
    returning ${LEASED_COLUMNS(sql)}`;
  return row;
}

/** Extends the lease before a delivery; false when it is no longer ours (expired and taken, or the endpoint disabled or removed). */
export async function renewLease(sql: Queryable, id: number, owner: string, leaseMs: number): Promise<boolean> {
  const rows = await sql`
    update webhook_endpoints set lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000})
    where id = ${id} and lease_owner = ${owner} and enabled
    returning id`;
  return rows.length > 0;
}

export async function releaseLease(sql: Queryable, id: number, owner: string): Promise<void> {
  await sql`update webhook_endpoints set lease_owner = null, lease_expires_at = null where id = ${id} and lease_owner = ${owner}`;
}

export interface DeliveryAttempt {
  endpointId: number;
  eventId: number;
  eventType: string;
  attempt: number;
  status: WebhookDeliveryStatus;
  startedAt: Date;
  durationMs: number;
  responseCode: number | null;
  responseBody: string | null;
  error: string | null;
}

const insertAttempt = (sql: Queryable, a: DeliveryAttempt) => sql`
  insert into webhook_deliveries (endpoint_id, event_id, event_type, attempt, status, started_at, duration_ms, response_code, response_body, error)
  values (${a.endpointId}, ${a.eventId}, ${a.eventType}, ${a.attempt}, ${a.status}, ${a.startedAt}, ${Math.round(a.durationMs)},
    ${a.responseCode}, ${a.responseBody}, ${a.error})`;

/** Records an attempt of `webhooks test` (the endpoint's cursor and backoff are not touched). */
export async function recordTestAttempt(sql: Queryable, a: DeliveryAttempt): Promise<void> {
  await insertAttempt(sql, a);
}

/**
 * A 2xx: the attempt is recorded and the cursor moves past the event, in one statement, and only
 * while the lease is ours. Returns false when it was not (the attempt is recorded all the same).
 */
export async function recordDelivered(sql: Sql, owner: string, a: DeliveryAttempt): Promise<boolean> {
  // Not waiting for the WAL flush: what a Postgres crash can lose is the last fraction of a
  // second of cursor moves, whose events are then delivered again (at least once, deduped on the
  // id by the receiver); a crash of our process loses nothing committed. Each delivery would
  // otherwise wait for a disk sync (most of its cost on a real disk).
  return sql.begin(async (tx) => {
    await tx`set local synchronous_commit = off`;
    return movedPast(tx, owner, a);
  });
}

async function movedPast(sql: Queryable, owner: string, a: DeliveryAttempt): Promise<boolean> {
  const [row] = await sql<{ moved: boolean }[]>`
    with attempt as (${insertAttempt(sql, a)}),
    moved as (
      update webhook_endpoints set cursor = greatest(cursor, ${a.eventId}), failing_since = null, failures = 0, next_attempt_at = null,
        last_delivered_at = now()
      where id = ${a.endpointId} and lease_owner = ${owner}
      returning id
    )
    select exists (select 1 from moved) as moved`;
  return row?.moved ?? false;
}

export interface FailureOutcome {
  /** the endpoint failed for `disableAfterMs` and is now disabled */
  disabled: boolean;
  failingSince: Date;
  nextAttemptAt: Date | null;
}

/**
 * A failed attempt: recorded, the endpoint's next attempt put `backoffMs` away; an endpoint whose
 * failures started `disableAfterMs` ago or more is disabled with `reason`.
 */
export async function recordFailed(
  sql: Queryable,
  owner: string,
  a: DeliveryAttempt,
  o: { backoffMs: number; disableAfterMs: number; disabledReason: (failingSince: Date) => string },
): Promise<FailureOutcome | undefined> {
  const [row] = await sql<{ failingSince: Date; expired: boolean }[]>`
    with attempt as (${insertAttempt(sql, a)})
    update webhook_endpoints set failing_since = coalesce(failing_since, ${a.startedAt}), failures = failures + 1,
      next_attempt_at = now() + make_interval(secs => ${o.backoffMs / 1000})
    where id = ${a.endpointId} and lease_owner = ${owner}
    returning failing_since as "failingSince",
      failing_since <= now() - make_interval(secs => ${o.disableAfterMs / 1000}) as expired`;
  if (!row) return undefined;
  if (!row.expired) return { disabled: false, failingSince: row.failingSince, nextAttemptAt: new Date(Date.now() + o.backoffMs) };
  await sql`
    update webhook_endpoints set enabled = false, disabled_at = now(), disabled_reason = ${o.disabledReason(row.failingSince)},
      next_attempt_at = null, lease_owner = null, lease_expires_at = null
    where id = ${a.endpointId}`;
  return { disabled: true, failingSince: row.failingSince, nextAttemptAt: null };
}

/**
 * The lowest event id a reader still needs, or null when none needs any: an enabled endpoint
 * needs its cursor + 1 on, an export cursor (`export --cursor`, table export_cursors) its
 * last_event_id + 1 on. Prune keeps every event from there on. A disabled endpoint holds none; an
 * export cursor holds its events until it is removed from export_cursors.
 */
export async function oldestNeededEventId(sql: Queryable): Promise<number | null> {
  const [row] = await sql<{ id: number | null }[]>`
    select least(
      (select min(cursor) + 1 from webhook_endpoints where enabled),
      (select min(last_event_id) + 1 from export_cursors)
    )::float8 as id`;
  return row?.id ?? null;
}
