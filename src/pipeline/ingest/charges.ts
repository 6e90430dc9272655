/**
 * The charge recorder: every API attempt the client reports (`onRequest`) that was billed, or
 * was expected to cost something, becomes a `credit_charges` row (src/domain/charges.ts says
 * what it was billed), tagged with the source and sync run it was made for.
 *
 * Which source and run a request belongs to travels with the work that makes it
 * (`withBillingScope`, an AsyncLocalStorage): the client and the adapters need not know. Rows
 * are written in the background, a batch at a time; `flush()` waits until everything recorded
 * so far is in Postgres (a sync calls it before it sums its run), `close()` flushes and stops.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { RequestEvent } from '../../api/http.ts';
import type { Queryable } from '../../db/connection.ts';
import { insertCharges, type NewCharge } from '../../db/credit-charges.ts';
import { budgetDelta, chargeOf, type Charge } from '../../domain/charges.ts';
import type { Logger } from '../../log.ts';

/** The work a request is made for. */
export interface BillingScope {
  sourceId: number | null;
  /** set once the sync has its `sync_runs` row */
  syncRunId: number | null;
}

const scopes = new AsyncLocalStorage<BillingScope>();

/** Run `fn` with every request it makes billed to `scope` (which may be filled in as it goes). */
export function withBillingScope<T>(scope: BillingScope, fn: () => Promise<T>): Promise<T> {
  return scopes.run(scope, fn);
}

/** Charges kept in memory while Postgres cannot take them, at most; older ones are dropped with a warning. */
export const CHARGES_PENDING_MAX = 10_000;
/** How long a recorded charge waits for others to be written with it, ms. */
export const CHARGES_FLUSH_DELAY_MS = 100;

export interface ChargeRecorder {
  /** wire to the client's `onRequest`; returns the charge it recorded, if any */
  record(e: RequestEvent): Charge | null;
  /** resolves once every charge recorded before the call is written (or failed to be: logged) */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export interface ChargeRecorderOptions {
  sql: Queryable;
  log: Logger;
  keyFingerprint: string | null;
}

export function createChargeRecorder(opts: ChargeRecorderOptions): ChargeRecorder {
  let pending: NewCharge[] = [];
  let writing: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;

  const writeOnce = async (): Promise<void> => {
    if (pending.length === 0) return;
    const rows = pending;
    pending = [];
    try {
      await insertCharges(opts.sql, rows);
    } catch (err: unknown) {
      // kept for the next write: a charge is money, but never worth failing the request over
      pending = [...rows, ...pending].slice(-CHARGES_PENDING_MAX);
      opts.log.warn(
        { event: 'charges.write_failed', charges: rows.length, err },
        'could not record billed credits; trying again',
      );
    }
  };
  const schedule = (): Promise<void> => {
    writing = writing.then(writeOnce);
    return writing;
  };

  return {
    record(e) {
      const charge = chargeOf(e);
      if (charge === null) return null;
      const scope = scopes.getStore();
      pending.push({
        sourceId: scope?.sourceId ?? null,
        syncRunId: scope?.syncRunId ?? null,
        endpoint: e.endpoint,
        status: e.status ?? null,
        credits: charge.credits,
        estimated: charge.estimated,
        basis: charge.basis,
        budgetDelta: budgetDelta({ ...charge, status: e.status ?? null }),
        keyFingerprint: opts.keyFingerprint,
      });
      if (pending.length > CHARGES_PENDING_MAX) pending.shift();
      timer ??= setTimeout(() => {
        timer = undefined;
        void schedule();
      }, CHARGES_FLUSH_DELAY_MS);
      return charge;
    },
    async flush() {
      if (timer !== undefined) {
        clearTimeout(timer);
        timer = undefined;
      }
      await schedule();
    },
    async close() {
      await this.flush();
    },
  };
}
