/**
 * `webhook_endpoints`, `webhook_secrets` and `webhook_deliveries` (issues #14, #27): the endpoints
 * change events are POSTed to, each with its cursor (the last event id handled), its lease and the
 * time of its last turn; their signing secrets; every delivery attempt. Secrets are read only
 * where a delivery is signed (`claimEndpoint`, `endpointForTest`); `listEndpoints` counts them and
 * says whether they are encrypted, never selects them.
 */
import type { EventType } from '../domain/events.ts';
import { sealSecret, type SecretFormat, type StoredSecret } from '../domain/webhook-secrets.ts';
import type { WebhookDeliveryStatus } from '../domain/webhooks.ts';
import type { Queryable, Sql } from './connection.ts';

/** A secret signs while this holds: not replaced, or within the grace of the rotation that replaced it. */
const inForce = (sql: Queryable) => sql`(s.expires_at is null or s.expires_at > now())`;

/** An endpoint as `webhooks list`, `status` and the overview show it: never the secret. */
export interface EndpointSummary {
  id: number;
  url: string;
  /** null: every type */
  eventTypes: EventType[] | null;
  enabled: boolean;
  /** added with --allow-private: may reach private, loopback and link-local addresses */
  allowPrivate: boolean;
  /** secrets that sign its deliveries now (2 during a rotation's grace) */
  secrets: number;
  /** whether every secret in force is encrypted at rest, and no copy for older builds is left in plain text */
  secretsEncrypted: boolean;
  /** when the secrets a rotation replaced stop signing; null when none does */
  graceEndsAt: Date | null;
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

/** A secret in force, as stored (sealed or not), with what it signs. */
export interface SecretInForce extends StoredSecret {
  format: SecretFormat;
}

/** What signs a delivery to an endpoint, and where it may connect. */
export interface EndpointTarget {
  id: number;
  url: string;
  allowPrivate: boolean;
  /** newest first */
  secrets: SecretInForce[];
}

/** What the delivery worker needs of the endpoint it holds the lease of. */
export interface LeasedEndpoint extends EndpointTarget {
  eventTypes: EventType[] | null;
  cursor: number;
  failingSince: Date | null;
  failures: number;
}

/** The secret and how it is kept, for a new endpoint or a rotation. */
export interface NewSecret {
  /** the key (`whsec_` secrets: the bytes after the prefix, base64-decoded) */
  key: Buffer;
  /** WEBHOOK_SECRETS_KEY: the key is sealed with it; undefined: stored as it is */
  secretsKey: Buffer | undefined;
}

const insertSecret = (sql: Queryable, endpointId: number, s: NewSecret) => {
  const stored = sealSecret(s.secretsKey, endpointId, s.key);
  return sql`
    insert into webhook_secrets (endpoint_id, format, encryption, key_id, material)
    values (${endpointId}, ${'whsec' satisfies SecretFormat}, ${stored.encryption}, ${stored.keyId}, ${stored.material})`;
};

/**
 * A new endpoint and its secret, in one transaction. It receives the events written from now on:
 * its cursor starts at the latest event, so adding an endpoint does not replay the whole retained
 * history at it.
 */
export async function addEndpoint(
  sql: Sql,
  e: { url: string; eventTypes: readonly EventType[] | null; allowPrivate: boolean } & NewSecret,
): Promise<number> {
  return sql.begin(async (tx) => {
    const [row] = await tx<{ id: number }[]>`
      insert into webhook_endpoints (url, event_types, allow_private, cursor)
      values (${e.url}, ${e.eventTypes === null ? null : [...e.eventTypes]}::text[], ${e.allowPrivate}, (select coalesce(max(id), 0) from events))
      returning id`;
    await insertSecret(tx, row!.id, e);
    return row!.id;
  });
}

/**
 * A new secret for the endpoint; the ones in force keep signing for `graceMs` more (0: they stop
 * now). Returns when they stop, or undefined when there is no such endpoint. Secrets past their
 * grace are deleted, and so is the copy builds from before Standard Webhooks read.
 */
export async function rotateSecret(
  sql: Sql,
  id: number,
  s: NewSecret & { graceMs: number },
): Promise<{ graceEndsAt: Date } | undefined> {
  return sql.begin(async (tx) => {
    const [ep] = await tx<{ graceEndsAt: Date }[]>`
      update webhook_endpoints set secret = null where id = ${id}
      returning now() + make_interval(secs => ${s.graceMs / 1000}) as "graceEndsAt"`;
    if (!ep) return undefined;
    await tx`delete from webhook_secrets s where s.endpoint_id = ${id} and not ${inForce(tx)}`;
    await tx`
      update webhook_secrets s set expires_at = least(coalesce(s.expires_at, 'infinity'), now() + make_interval(secs => ${s.graceMs / 1000}))
      where s.endpoint_id = ${id} and ${inForce(tx)}`;
    await insertSecret(tx, id, s);
    return { graceEndsAt: ep.graceEndsAt };
  });
}

/** Lets the endpoint reach private addresses, or not; false when there is no such endpoint. */
export async function setAllowPrivate(sql: Queryable, id: number, allow: boolean): Promise<boolean> {
  const rows = await sql`update webhook_endpoints set allow_private = ${allow} where id = ${id} returning id`;
  return rows.length > 0;
}

/**
 * Seals every secret stored unencrypted with `secretsKey` and clears the plain-text copies builds
 * from before Standard Webhooks read (those builds then cannot sign for these endpoints), in one
 * transaction. Returns how many secrets were sealed and copies cleared.
 */
export async function encryptSecrets(sql: Sql, secretsKey: Buffer): Promise<{ sealed: number; copiesCleared: number }> {
  return sql.begin(async (tx) => {
    const plain = await tx<{ id: number; endpointId: number; material: Buffer }[]>`
      select id, endpoint_id as "endpointId", material from webhook_secrets where encryption = 'none' order by id for update`;
    for (const p of plain) {
      const stored = sealSecret(secretsKey, p.endpointId, p.material);
      await tx`update webhook_secrets set encryption = ${stored.encryption}, key_id = ${stored.keyId}, material = ${stored.material} where id = ${p.id}`;
    }
    const cleared = await tx`update webhook_endpoints set secret = null where secret is not null returning id`;
    return { sealed: plain.length, copiesCleared: cleared.length };
  });
}

export async function listEndpoints(sql: Queryable): Promise<EndpointSummary[]> {
  return sql<EndpointSummary[]>`
    select w.id, w.url, w.event_types as "eventTypes", w.enabled, w.allow_private as "allowPrivate", w.created_at as "createdAt",
      w.cursor::float8 as cursor, w.failing_since as "failingSince", w.failures, w.next_attempt_at as "nextAttemptAt",
      w.disabled_at as "disabledAt", w.disabled_reason as "disabledReason", w.last_delivered_at as "lastDeliveredAt",
      k.secrets, (k.unencrypted = 0 and w.secret is null) as "secretsEncrypted", k.grace_ends_at as "graceEndsAt",
      (select count(*)::int from (
        select 1 from events e where e.id > w.cursor and (w.event_types is null or e.type = any(w.event_types)) limit ${PENDING_COUNT_CAP + 1}
      ) p) as pending
    from webhook_endpoints w
    cross join lateral (
      select count(*)::int as secrets, count(*) filter (where s.encryption = 'none')::int as unencrypted,
        max(s.expires_at) as grace_ends_at
      from webhook_secrets s where s.endpoint_id = w.id and ${inForce(sql)}
    ) k
    order by w.id`;
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

/** The endpoint with its secrets, for `webhooks test`. */
export async function endpointForTest(sql: Queryable, id: number): Promise<EndpointTarget | undefined> {
  const [row] = await sql<
    (EndpointTarget & { secrets: SecretRow[] })[]
  >`select ${TARGET_COLUMNS(sql)} from webhook_endpoints w where w.id = ${id}`;
  return row && withSecrets(row);
}

/** A secret as `TARGET_COLUMNS` reads it: JSON, the material in base64. */
interface SecretRow {
  format: SecretFormat;
  encryption: StoredSecret['encryption'];
  keyId: string | null;
  material: string;
}

function withSecrets<T extends { secrets: unknown }>(row: T): Omit<T, 'secrets'> & { secrets: SecretInForce[] } {
  return {
    ...row,
    secrets: (row.secrets as SecretRow[]).map((s) => ({ ...s, material: Buffer.from(s.material, 'base64') })),
  };
}

/** An endpoint's URL, whether it may reach private addresses, and its secrets in force, newest first. */
const TARGET_COLUMNS = (sql: Queryable) => sql`
  w.id, w.url, w.allow_private as "allowPrivate",
  (select coalesce(json_agg(json_build_object(
      'format', s.format, 'encryption', s.encryption, 'keyId', s.key_id, 'material', translate(encode(s.material, 'base64'), E'\n', '')
    ) order by s.id desc), '[]'::json)
    from webhook_secrets s where s.endpoint_id = w.id and ${inForce(sql)}) as secrets`;

const LEASED_COLUMNS = (sql: Queryable) =>
  sql`${TARGET_COLUMNS(sql)}, w.event_types as "eventTypes", w.cursor::float8 as cursor, w.failing_since as "failingSince", w.failures`;

/**
 * Takes the lease of one endpoint for a turn: one that is enabled, due (no backoff pending), not
 * leased (by another worker, or another slot of this one: `owner` is per process), and has a
 * matching event after its cursor, the one whose last turn is the oldest (round robin); undefined
 * when none is. Rows another worker is claiming are skipped, not waited for.
 */
export async function claimEndpoint(
  sql: Queryable,
  owner: string,
  leaseMs: number,
): Promise<LeasedEndpoint | undefined> {
  const [row] = await sql<(LeasedEndpoint & { secrets: SecretRow[] })[]>`
    update webhook_endpoints w set lease_owner = ${owner}, lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000}),
      last_turn_at = clock_timestamp()
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
      order by c.last_turn_at nulls first, c.id
      limit 1
      for update skip locked
    )
    returning ${LEASED_COLUMNS(sql)}`;
  return row && withSecrets(row);
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
  if (!row.expired)
    return { disabled: false, failingSince: row.failingSince, nextAttemptAt: new Date(Date.now() + o.backoffMs) };
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
