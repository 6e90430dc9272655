/**
 * Webhook delivery (issues #14, #27): the `webhooks` role of a daemon. Each endpoint is delivered
 * by one worker at a time, the one holding its lease (db/webhooks.ts): events after its cursor,
 * matching its filter, in id order, one POST at a time, each signed with every secret in force
 * (Standard Webhooks). A slot holds an endpoint for one turn (WEBHOOK_TURN_MS), then takes the
 * endpoint whose turn is the oldest: a slow receiver's backlog never keeps a slot from the others
 * for longer than one delivery. An endpoint not added with --allow-private is never connected to
 * a private, loopback or link-local address, whatever its host name resolves to at the time.
 *
 * A 2xx moves the cursor past the event; anything else (an error status, a 3xx: redirects are
 * not followed, a timeout, a refused connection, a secret that cannot be opened) is recorded and
 * the endpoint waits out an exponential backoff with jitter before it is tried again, from the
 * same event; an endpoint failing for WEBHOOK_DISABLE_AFTER_MS is disabled. The cursor moves
 * only after a 2xx, so a worker killed mid-delivery repeats at most that event: delivery is at
 * least once, receivers dedupe on the event id.
 *
 * Workers are woken by LISTEN on the events channel (a notification arrives when the events'
 * transaction commits) and look anyway every WEBHOOK_POLL_INTERVAL_MS: the clock of retries,
 * and the safety net under a notification lost with a dropped connection.
 */
import { randomBytes } from 'node:crypto';
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { hostname } from 'node:os';
import { Agent } from 'undici';
import type { Sql } from '../../db/connection.ts';
import { readEvents, type EventRow } from '../../db/events.ts';
import {
  claimEndpoint,
  recordDelivered,
  recordFailed,
  releaseLease,
  renewLease,
  type DeliveryAttempt,
  type EndpointTarget,
  type LeasedEndpoint,
} from '../../db/webhooks.ts';
import { EVENTS_CHANNEL } from '../../domain/events.ts';
import { isIpLiteral, privateAddressRange } from '../../domain/private-addresses.ts';
import { openSecret, WebhookSecretError } from '../../domain/webhook-secrets.ts';
import {
  deliveryHeaders,
  isDelivered,
  webhookBackoffMs,
  WEBHOOK_RESPONSE_KEEP_BYTES,
  WEBHOOK_SLOTS,
  WEBHOOK_TURN_MS,
  type SigningKey,
} from '../../domain/webhooks.ts';
import type { Logger } from '../../log.ts';
import type { PipelineSettings } from '../deps.ts';

/** Events read per statement for one endpoint. */
export const WEBHOOK_READ_EVENTS = 100;
/**
 * A lease lasts twice the longest delivery plus this, ms; it is renewed before every POST, so
 * it lapses only when its worker stopped (killed, or cut off from Postgres): another one takes the
 * endpoint over that long after.
 */
export const WEBHOOK_LEASE_MARGIN_MS = 5_000;

export type WebhookDeps = { sql: Sql; log: Logger; settings: PipelineSettings };

/** What one POST of an event got. */
export interface PostOutcome {
  delivered: boolean;
  startedAt: Date;
  durationMs: number;
  responseCode: number | null;
  responseBody: string | null;
  error: string | null;
  /** stopped by the caller's signal (a shutdown), not by the endpoint: not an attempt */
  aborted: boolean;
}

/** The record of one POST of an event, as `webhook_deliveries` keeps it. */
export function deliveryAttempt(
  endpointId: number,
  event: { id: number; type: string },
  attempt: number,
  out: PostOutcome,
): DeliveryAttempt {
  return {
    endpointId,
    eventId: event.id,
    eventType: event.type,
    attempt,
    status: out.delivered ? 'delivered' : 'failed',
    startedAt: out.startedAt,
    durationMs: out.durationMs,
    responseCode: out.responseCode,
    responseBody: out.responseBody,
    error: out.error,
  };
}

/** The body of a delivery: `{"id","type","occurred_at","data"}`. */
export function webhookBody(e: { id: number; type: string; occurredAt: Date; data: unknown }): string {
  return JSON.stringify({ id: e.id, type: e.type, occurred_at: e.occurredAt.toISOString(), data: e.data });
}

/** The keys that sign deliveries to an endpoint, newest first; throws WebhookSecretError when one cannot be opened. */
export function signingKeys(
  target: Pick<EndpointTarget, 'id' | 'secrets'>,
  secretsKey: Buffer | undefined,
): SigningKey[] {
  if (target.secrets.length === 0)
    throw new WebhookSecretError('secret-unreadable', 'the endpoint has no secret in force');
  return target.secrets.map((s) => ({ key: openSecret(secretsKey, target.id, s), legacy: s.format === 'legacy' }));
}

/** A connection refused before it was made: the destination is a private address the endpoint may not reach. */
export class PrivateAddressError extends Error {
  readonly code = 'ERR_WEBHOOK_PRIVATE_ADDRESS';
  constructor(host: string, address: string, range: string) {
    super(
      `${host === address ? address : `${host} resolves to ${address}`} (${range}): not connected; an endpoint reaches private, ` +
        'loopback and link-local addresses only when allowed (videosite-ingest webhooks edit ID --allow-private)',
    );
    this.name = 'PrivateAddressError';
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * `net.connect`'s lookup for endpoints not allowed private addresses: the host name is resolved
 * once, every address it has is checked, and the connection goes to a checked one (so a name that
 * resolves differently a moment later cannot slip a private address in between).
 */
function publicOnlyLookup(host: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(host, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    for (const a of addresses) {
      const range = privateAddressRange(a.address);
      if (range !== undefined) return callback(new PrivateAddressError(host, a.address, range), []);
    }
    if (options.all === true) return callback(null, addresses);
    const first = addresses[0];
    if (!first) return callback(Object.assign(new Error(`${host}: no address`), { code: 'ENOTFOUND' }), []);
    callback(null, first.address, first.family);
  });
}

/** The connection pools of one worker: endpoints that may reach private addresses, and the others. */
export interface WebhookDispatcher {
  agentFor(allowPrivate: boolean): Agent;
  close(): Promise<void>;
}

/**
 * No redirect handling (undici's `request` follows none). The time limit of a delivery is
 * `postEvent`'s signal; the agents' own timeouts are only a backstop behind it.
 */
export function webhookDispatcher(timeoutMs: number): WebhookDispatcher {
  const options = { headersTimeout: 2 * timeoutMs, bodyTimeout: 2 * timeoutMs };
  const open = new Agent({ ...options, connect: { timeout: timeoutMs } });
  const guarded = new Agent({ ...options, connect: { timeout: timeoutMs, lookup: publicOnlyLookup } });
  return {
    agentFor: (allowPrivate) => (allowPrivate ? open : guarded),
    async close() {
      await Promise.allSettled([open.close(), guarded.close()]);
    },
  };
}

/** What to deliver to: the URL, whether it may be private, and the keys that sign. */
export interface DeliveryTarget {
  url: string;
  allowPrivate: boolean;
  keys: SigningKey[];
}

/** An attempt that ended before any request: a secret that cannot be opened, a private address. */
export function notSent(error: string): PostOutcome {
  return {
    delivered: false,
    startedAt: new Date(),
    durationMs: 0,
    responseCode: null,
    responseBody: null,
    error,
    aborted: false,
  };
}

/** POSTs `body` signed with the target's keys, within `timeoutMs` overall. Never throws. */
export async function postEvent(
  dispatcher: WebhookDispatcher,
  target: DeliveryTarget,
  eventId: number,
  body: string,
  o: { timeoutMs: number; signal?: AbortSignal | undefined },
): Promise<PostOutcome> {
  const url = new URL(target.url);
  // an address written in the URL is connected to without a lookup: checked here
  if (!target.allowPrivate && isIpLiteral(url.hostname)) {
    const range = privateAddressRange(url.hostname);
    if (range !== undefined) return notSent(new PrivateAddressError(url.hostname, url.hostname, range).message);
  }
  const startedAt = new Date();
  const t0 = performance.now();
  const timeout = AbortSignal.timeout(o.timeoutMs);
  const signal = o.signal ? AbortSignal.any([timeout, o.signal]) : timeout;
  try {
    const res = await dispatcher.agentFor(target.allowPrivate).request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      headers: deliveryHeaders(target.keys, eventId, Math.floor(Date.now() / 1000), body),
      body,
      signal,
    });
    const kept = await readStart(res.body, WEBHOOK_RESPONSE_KEEP_BYTES);
    return {
      delivered: isDelivered(res.statusCode),
      startedAt,
      durationMs: performance.now() - t0,
      responseCode: res.statusCode,
      responseBody: kept,
      error: isDelivered(res.statusCode)
        ? null
        : `answered ${res.statusCode}${res.statusCode >= 300 && res.statusCode < 400 ? ' (a redirect: not followed)' : ''}`,
      aborted: false,
    };
  } catch (e: unknown) {
    const aborted = o.signal?.aborted === true;
    const message = timeout.aborted ? `no answer within ${o.timeoutMs} ms` : describeNetworkError(e);
    return {
      delivered: false,
      startedAt,
      durationMs: performance.now() - t0,
      responseCode: null,
      responseBody: null,
      error: message,
      aborted,
    };
  }
}

/** The first `max` bytes of an answer's body as text; the rest is not read (the connection is dropped). */
async function readStart(body: AsyncIterable<Buffer> & { destroy(): unknown }, max: number): Promise<string> {
  const parts: Buffer[] = [];
  let n = 0;
  try {
    for await (const chunk of body) {
      parts.push(chunk);
      n += chunk.length;
      if (n >= max) break;
    }
  } catch {
    // a body cut short still leaves what arrived, and the status decided the outcome already
  }
  body.destroy();
  return Buffer.concat(parts)
    .subarray(0, max)
    .toString('utf8')
    .replace(/\u0000/g, '');
}

function describeNetworkError(e: unknown): string {
  if (e instanceof Error) {
    const code = (e as { code?: unknown }).code;
    const cause = (e as { cause?: { code?: unknown; message?: unknown } }).cause;
    const causeText = cause && typeof cause.message === 'string' ? `: ${cause.message}` : '';
    return `${typeof code === 'string' ? `${code} ` : ''}${e.message}${causeText}`.slice(0, 500);
  }
  return String(e).slice(0, 500);
}

export interface WebhookWorker {
  /** Look for due deliveries now (a notification, a test). */
  wake(): void;
  /** Stop: a POST in flight is abandoned (not counted as an attempt; its event is sent again), leases released. */
  stop(): Promise<void>;
}

/** Starts the delivery loops of one process. */
export function startWebhookDelivery(deps: WebhookDeps, opts: { owner?: string; slots?: number } = {}): WebhookWorker {
  const { sql, log, settings } = deps;
  const stopping = new AbortController();
  const ctx: DeliveryContext = {
    deps,
    owner: opts.owner ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`,
    leaseMs: 2 * settings.webhookTimeoutMs + WEBHOOK_LEASE_MARGIN_MS,
    dispatcher: webhookDispatcher(settings.webhookTimeoutMs),
    signal: stopping.signal,
  };
  const stopped = new Promise<void>((resolve) =>
    stopping.signal.addEventListener('abort', () => resolve(), { once: true }),
  );
  const wakeups = wakeUps();
  // LISTEN on a connection of its own (postgres.js opens one for listeners, re-listening after a
  // reconnect, when `onlisten` fires again: a look then catches up on what was missed)
  const listening = sql
    .listen(
      EVENTS_CHANNEL,
      () => wakeups.wake(),
      () => wakeups.wake(),
    )
    .catch((err: unknown) => {
      log.warn({ event: 'webhook.worker_error', err }, 'could not LISTEN for events; relying on the interval');
      return undefined;
    });
  const loops = Array.from({ length: opts.slots ?? WEBHOOK_SLOTS }, () => deliveryLoop(ctx, wakeups, stopped));

  return {
    wake: () => wakeups.wake(),
    async stop() {
      stopping.abort();
      await Promise.allSettled(loops);
      const l = await listening;
      await l?.unlisten().catch(() => undefined);
      await ctx.dispatcher.close();
    },
  };
}

/** What the delivery loops of one process share. */
interface DeliveryContext {
  deps: WebhookDeps;
  /** who holds an endpoint's lease: this process */
  owner: string;
  leaseMs: number;
  dispatcher: WebhookDispatcher;
  /** aborted when the worker stops */
  signal: AbortSignal;
}

/** A wake-up any number of loops can wait for: `wake()` resolves the current one and arms the next. */
function wakeUps(): { wake(): void; current(): Promise<void> } {
  let wakeUp: () => void = () => undefined;
  let woken = new Promise<void>((resolve) => (wakeUp = resolve));
  return {
    wake: () => {
      const resolve = wakeUp;
      woken = new Promise<void>((r) => (wakeUp = r));
      resolve();
    },
    current: () => woken,
  };
}

/** One slot: claims a due endpoint and gives it a turn; with none due, waits for a wake-up or the interval. */
async function deliveryLoop(
  ctx: DeliveryContext,
  wakeups: ReturnType<typeof wakeUps>,
  stopped: Promise<void>,
): Promise<void> {
  const { sql, log, settings } = ctx.deps;
  while (!ctx.signal.aborted) {
    // taken before looking: a wake-up that comes while the look runs is not missed
    const wokenBeforeLook = wakeups.current();
    try {
      const ep = await claimEndpoint(sql, ctx.owner, ctx.leaseMs);
      if (ep) {
        try {
          await deliverTurn(ctx, ep);
        } finally {
          await releaseLease(sql, ep.id, ctx.owner);
        }
        continue;
      }
    } catch (err: unknown) {
      if (ctx.signal.aborted) return;
      log.warn(
        { event: 'webhook.worker_error', err },
        'webhook delivery loop failed; trying again at the next interval',
      );
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      wokenBeforeLook,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, settings.webhookPollIntervalMs);
      }),
      stopped,
    ]);
    clearTimeout(timer);
  }
}

/**
 * One turn at an endpoint: its due events, in id order, until it is caught up, a delivery fails,
 * the turn has lasted WEBHOOK_TURN_MS (at least one event is sent per turn), or the worker stops.
 */
async function deliverTurn(ctx: DeliveryContext, ep: LeasedEndpoint): Promise<void> {
  const { sql, settings } = ctx.deps;
  const turnStartedAt = performance.now();
  let cursor = ep.cursor;
  let failures = ep.failures;
  let sent = 0;
  let keys: SigningKey[] | undefined;
  // The lease (two timeouts and a margin) is renewed once a timeout has passed since the last
  // renewal, not before every event: the POST that follows ends within a timeout, inside the
  // lease. Renewing per event was one of the two commits each delivery cost (63 events/s
  // measured on a disk-synced Postgres).
  let renewedAt = performance.now();
  for (;;) {
    const events = await readEvents(sql, {
      afterId: cursor,
      types: ep.eventTypes ?? undefined,
      limit: WEBHOOK_READ_EVENTS,
    });
    for (const e of events) {
      if (ctx.signal.aborted) return;
      if (sent > 0 && performance.now() - turnStartedAt >= WEBHOOK_TURN_MS) return;
      if (performance.now() - renewedAt >= settings.webhookTimeoutMs) {
        if (!(await renewLease(sql, ep.id, ctx.owner, ctx.leaseMs))) return;
        renewedAt = performance.now();
      }
      if (keys === undefined) {
        try {
          keys = signingKeys(ep, settings.webhookSecretsKey);
        } catch (err: unknown) {
          if (!(err instanceof WebhookSecretError)) throw err;
          // nothing is sent unsigned: a failed attempt, retried after a backoff (the key may be fixed meanwhile)
          await recordFailure(ctx, ep, e, failures + 1, notSent(`not sent: ${err.message}`));
          return;
        }
      }
      const ok = await deliverOne(ctx, ep, keys, e, failures + 1);
      if (!ok) return;
      sent++;
      cursor = e.id;
      failures = 0;
    }
    if (events.length < WEBHOOK_READ_EVENTS) return;
  }
}

/** POSTs one event; true when it was delivered (and recorded so). */
async function deliverOne(
  ctx: DeliveryContext,
  ep: LeasedEndpoint,
  keys: SigningKey[],
  e: EventRow,
  attempt: number,
): Promise<boolean> {
  const target = { url: ep.url, allowPrivate: ep.allowPrivate, keys };
  const out = await postEvent(ctx.dispatcher, target, e.id, webhookBody(e), {
    timeoutMs: ctx.deps.settings.webhookTimeoutMs,
    signal: ctx.signal,
  });
  if (out.aborted) return false;
  if (out.delivered) return recordDelivered(ctx.deps.sql, ctx.owner, deliveryAttempt(ep.id, e, attempt, out));
  await recordFailure(ctx, ep, e, attempt, out);
  return false;
}

/** A failed attempt: retried after a backoff, or the endpoint disabled once it has failed for WEBHOOK_DISABLE_AFTER_MS. */
async function recordFailure(
  ctx: DeliveryContext,
  ep: LeasedEndpoint,
  e: EventRow,
  attempt: number,
  out: PostOutcome,
): Promise<void> {
  const { sql, log, settings } = ctx.deps;
  const backoffMs = webhookBackoffMs(
    attempt,
    settings.webhookBackoffBaseMs,
    settings.webhookBackoffMaxMs,
    Math.random(),
  );
  const failed = await recordFailed(sql, ctx.owner, deliveryAttempt(ep.id, e, attempt, out), {
    backoffMs,
    disableAfterMs: settings.webhookDisableAfterMs,
    disabledReason: (since) =>
      `every delivery failed since ${since.toISOString()} (WEBHOOK_DISABLE_AFTER_MS=${settings.webhookDisableAfterMs}); last: ${out.error ?? 'failed'}`,
  });
  if (failed?.disabled) {
    log.error(
      {
        event: 'webhook.endpoint_disabled',
        endpointId: ep.id,
        eventId: e.id,
        attempt,
        failingSince: failed.failingSince,
        responseCode: out.responseCode,
        error: out.error,
      },
      'webhook endpoint disabled: it kept failing',
    );
  } else {
    log.warn(
      {
        event: 'webhook.delivery_failed',
        endpointId: ep.id,
        eventId: e.id,
        attempt,
        responseCode: out.responseCode,
        error: out.error,
        retryInMs: backoffMs,
      },
      'webhook delivery failed: retried after a backoff',
    );
  }
}
