/**
 * The credit guard: credits are money, so every paid request of a sync (its listing, its
 * batches, its generated transcripts) is checked first against a fresh `GET /me` (free, kept in
 * `credit_snapshots`) less CREDIT_RESERVE and what other syncs, in this process or any other,
 * have reserved; and against the daily budgets (CREDIT_BUDGET_PER_DAY, `--max-credits-per-day`).
 *
 * Reservations live in Postgres (`credit_reservations`, src/db/credit-reservations.ts), so any
 * number of daemons on one account never together send more than `maxCredits - usedCredits -
 * CREDIT_RESERVE`. A check takes one advisory lock that every process takes, reads `/me` under
 * it, subtracts every reservation that `/me` may not show yet (open ones, and those released
 * after this read began, on the database's clock: one released before the read began had its
 * charge made before, so the read shows it), and, if the estimate fits, records its own
 * reservation before letting the lock go. At worst a charge is counted twice (a reservation
 * released just after a read that already showed its charge), which errs on the side of refusing.
 *
 * Checks take turns for one `/me` round trip each: all processes together make at most about
 * one check per round trip (measured: 2.7-4 ms a check with an immediate `/me`; a 100 ms `/me`
 * would allow ~10 a second, ~5 syncs a second). A `/me` that hangs holds the others back until
 * the client's timeouts end it; each waiting check holds one pooled connection, the second
 * connection a sync is allowed.
 */
import { hostname } from 'node:os';
import type { Account } from '../../api/schemas.ts';
import type { Queryable } from '../../db/connection.ts';
import {
  databaseClock,
  heldCredits,
  insertReservation,
  lockCredits,
  pruneReservations,
  releaseReservation,
  renewReservation,
  spendReservation,
  spentSince,
  utcDayStart,
  type SpentToday,
} from '../../db/credit-reservations.ts';
import { insertCreditSnapshot } from '../../db/credit-snapshots.ts';
import type { CreditLimit } from '../../domain/refusals.ts';
import type { PipelineDeps } from '../deps.ts';

/**
 * How long a reservation counts when its process stops renewing it (it died). The holder renews
 * it before each paid request, so it must outlast one request and the `/me` read after it that
 * shows the charge: the rate limiter's wait, the connect (10 s) and answer (30 s) timeouts of
 * the API client, and the claim transaction before a POST. It equals
 * SUBMISSION_STALE_SENDING_MS, the time after which a POST still `sending` is judged left by a
 * dead process: until then its claims stand, so the credits it may have charged count too. A
 * process that dies holding a reservation keeps those credits refused for at most this long.
 */
export const CREDIT_RESERVATION_TTL_MS = 10 * 60_000;

/** Which process holds a reservation (shown with it; never a secret). */
const HOLDER = `${hostname()}:${process.pid}`;

export class CreditsRefusedError extends Error {
  readonly needed: number;
  readonly available: number;
  /** what refused it: the account, or a daily budget */
  readonly limit: CreditLimit = 'account';
  /**
   * `what` names what is paid for in the message (default `this submission`); `reserve` is
   * CREDIT_RESERVE, named when it is not 0.
   */
  constructor(needed: number, available: number, reserve: number, what = 'this submission') {
    super(
      `not enough credits: ${what} needs ${needed}, ${available} are left` +
        (reserve > 0 ? ` above the reserve of ${reserve}` : ''),
    );
    this.name = 'CreditsRefusedError';
    this.needed = needed;
    this.available = available;
  }
}

/** A daily budget would be passed: refused like the account's refusal, but the account is fine. */
export class BudgetRefusedError extends CreditsRefusedError {
  override readonly limit: CreditLimit;
  readonly budget: number;
  readonly spent: number;
  constructor(o: {
    needed: number;
    budget: number;
    spent: number;
    limit: Exclude<CreditLimit, 'account'>;
    sourceId: number | null;
    what: string;
  }) {
    const available = Math.max(0, o.budget - o.spent);
    super(o.needed, available, 0, o.what);
    const whose =
      o.limit === 'installation-budget'
        ? `CREDIT_BUDGET_PER_DAY=${o.budget}`
        : `--max-credits-per-day ${o.budget} of source ${o.sourceId ?? '-'}`;
    this.message =
      `daily credit budget spent: ${o.what} needs ${o.needed}, ${available} are left of ${whose} ` +
      `(${o.spent} spent or reserved since 00:00 UTC; the budget renews at the next UTC day)`;
    this.name = 'BudgetRefusedError';
    this.limit = o.limit;
    this.budget = o.budget;
    this.spent = o.spent;
  }
}

/** Credits that passed the guard: counted by every other check until spent or released. */
export interface CreditHold {
  /** credits the account had left for this check (after the reserve and other reservations) */
  readonly available: number;
  /** credits reserved: the estimate, plus the headroom when it was granted */
  readonly reserved: number;
  /** reserved credits not yet spent through this hold */
  left(): number;
  /**
   * Before each paid request: counted for CREDIT_RESERVATION_TTL_MS more. False when it had
   * already expired (the holder was stalled that long): its credits were not counted meanwhile,
   * so send nothing more on it.
   */
  renew(): Promise<boolean>;
  /** In the transaction that records a paid request's cost (its batch, the listing): no longer reserved. */
  spend(tx: Queryable, credits: number): Promise<void>;
  /** Every request it was for has been sent (or will not be): the rest is no longer reserved. */
  release(): Promise<void>;
}

export type CreditCheck =
  | { hold: CreditHold; refused?: undefined }
  | {
      hold?: undefined;
      refused: CreditsRefusedError;
      /** what `/me` showed left above the reserve (before other reservations); undefined when not read */
      accountLeft?: number;
    };

export interface CreditRequest {
  /** the source paying (its budget, and its reservation's `source_id`); null: none */
  sourceId: number | null;
  /** credits the requests are estimated to cost */
  estimate: number;
  /** the source's `--max-credits-per-day`; null: no cap */
  sourceBudget?: number | null;
  /** names what is paid for in a refusal, e.g. `listing this source`; default `this submission` */
  what?: string;
  /** `credit_snapshots.reason` of the `/me` reading; default `before-submit` */
  reason?: string;
  /**
   * Credits to reserve on top of `estimate` when they are plentiful: granted only when no daily
   * budget applies and the account leaves HEADROOM_FACTOR times `estimate + headroom`, else just
   * `estimate` is reserved. A sync asks its listing's check for the most its batches can cost,
   * so that in the common case its batches need no second check (see HEADROOM_FACTOR).
   */
  headroom?: number;
  /** ends the `/me` read (held under the lock every check takes) when the caller gives up */
  signal?: AbortSignal | undefined;
}

/**
 * Headroom is granted only when the account leaves this many times what is reserved with it. A
 * check takes one `/me` round trip under the lock every process shares, so two checks per sync
 * (listing, then batches) capped W1's 20 syncs at about 5 a second with a 100 ms `/me`; one
 * check per sync doubles that. Reserving more than is spent holds the difference from other
 * syncs only until the sync's batches are sent, and never when credits are scarce (then each
 * sync reserves exactly what it needs, as before, and nothing is refused for the headroom).
 */
export const HEADROOM_FACTOR = 4;

/**
 * Check `estimate` against the daily budgets and the account, and reserve it if it fits. The
 * caller renews the hold before each paid request, spends it as each is recorded, and releases
 * it when done (in a `finally`).
 */
export async function reserveCredits(
  deps: Pick<PipelineDeps, 'sql' | 'api' | 'settings'>,
  req: CreditRequest,
): Promise<CreditCheck> {
  const { sql, api, settings } = deps;
  const what = req.what ?? 'this submission';
  const checked = await sql.begin(
    async (
      tx,
    ): Promise<{ id: number; available: number; reserved: number } | Exclude<CreditCheck, { hold: CreditHold }>> => {
      await lockCredits(tx);
      // the budgets first: Postgres alone knows them, so a spent budget refuses without a call
      const overBudget = await checkBudgets(tx, settings.creditBudgetPerDay, req, what);
      if (overBudget) return { refused: overBudget };
      const readFrom = await databaseClock(tx);
      const me = await api.me({ signal: req.signal });
      await insertCreditSnapshot(tx, me, req.reason ?? 'before-submit', req.sourceId);
      const accountLeft = me.maxCredits - me.usedCredits - settings.creditReserve;
      const available = accountLeft - (await heldCredits(tx, readFrom));
      await pruneReservations(tx, readFrom);
      if (req.estimate > available) {
        return {
          refused: new CreditsRefusedError(req.estimate, Math.max(0, available), settings.creditReserve, what),
          accountLeft,
        };
      }
      const headroom = req.headroom ?? 0;
      const budgeted = settings.creditBudgetPerDay !== undefined || (req.sourceBudget ?? null) !== null;
      const reserved =
        headroom > 0 && !budgeted && (req.estimate + headroom) * HEADROOM_FACTOR <= available
          ? req.estimate + headroom
          : req.estimate;
      const id = await insertReservation(tx, {
        sourceId: req.sourceId,
        credits: reserved,
        holder: HOLDER,
        ttlMs: CREDIT_RESERVATION_TTL_MS,
      });
      return { id, available, reserved };
    },
  );
  if ('refused' in checked) return checked;
  return { hold: creditHold(sql, checked.id, checked.available, checked.reserved) };
}

function creditHold(sql: Queryable, id: number, available: number, reserved: number): CreditHold {
  let released = false;
  let spent = 0;
  return {
    available,
    reserved,
    left: () => Math.max(0, reserved - spent),
    renew: () => renewReservation(sql, id, CREDIT_RESERVATION_TTL_MS),
    spend: async (tx, credits) => {
      await spendReservation(tx, id, credits);
      spent += credits;
    },
    release: async () => {
      if (released) return;
      released = true;
      await releaseReservation(sql, id);
    },
  };
}

/** The first daily budget `estimate` would pass, as a refusal; undefined when both allow it. */
async function checkBudgets(
  tx: Queryable,
  installationBudget: number | undefined,
  req: CreditRequest,
  what: string,
): Promise<BudgetRefusedError | undefined> {
  const sourceBudget = req.sourceBudget ?? null;
  if (installationBudget === undefined && (sourceBudget === null || req.sourceId === null)) return undefined;
  const now = await databaseClock(tx);
  const dayStart = await utcDayStart(tx, now);
  if (installationBudget !== undefined) {
    const spent = total(await spentSince(tx, dayStart, now, null));
    if (spent + req.estimate > installationBudget) {
      return new BudgetRefusedError({
        needed: req.estimate,
        budget: installationBudget,
        spent,
        limit: 'installation-budget',
        sourceId: req.sourceId,
        what,
      });
    }
  }
  if (sourceBudget !== null && req.sourceId !== null) {
    const spent = total(await spentSince(tx, dayStart, now, req.sourceId));
    if (spent + req.estimate > sourceBudget) {
      return new BudgetRefusedError({
        needed: req.estimate,
        budget: sourceBudget,
        spent,
        limit: 'source-budget',
        sourceId: req.sourceId,
        what,
      });
    }
  }
  return undefined;
}

function total(s: SpentToday): number {
  return Math.max(0, s.batches + s.listings + s.pending + s.reserved + s.billedOver);
}

/** What the daily budgets have left now (for `backfill --dry-run`); undefined where there is no budget. */
export async function budgetsLeft(
  deps: Pick<PipelineDeps, 'sql' | 'settings'>,
  sourceId: number | null,
  sourceBudget: number | null,
): Promise<{ installation?: { budget: number; spent: number }; source?: { budget: number; spent: number } }> {
  const { sql, settings } = deps;
  const now = await databaseClock(sql);
  const dayStart = await utcDayStart(sql, now);
  const out: { installation?: { budget: number; spent: number }; source?: { budget: number; spent: number } } = {};
  if (settings.creditBudgetPerDay !== undefined) {
    out.installation = {
      budget: settings.creditBudgetPerDay,
      spent: total(await spentSince(sql, dayStart, now, null)),
    };
  }
  if (sourceBudget !== null && sourceId !== null) {
    out.source = { budget: sourceBudget, spent: total(await spentSince(sql, dayStart, now, sourceId)) };
  }
  return out;
}

/**
 * What the account has left above the reserve per a fresh `/me` (free), and how much of it the
 * syncs in progress have reserved. Writes nothing (`backfill --dry-run`).
 */
export async function creditsLeft(
  deps: Pick<PipelineDeps, 'sql' | 'api' | 'settings'>,
  o: { signal?: AbortSignal } = {},
): Promise<{ me: Account; left: number; reserved: number }> {
  const readFrom = await databaseClock(deps.sql);
  const me = await deps.api.me({ signal: o.signal });
  return {
    me,
    left: me.maxCredits - me.usedCredits - deps.settings.creditReserve,
    reserved: await heldCredits(deps.sql, readFrom),
  };
}

/** GET /me (free) and keep it in `credit_snapshots`. */
export async function takeCreditSnapshot(
  deps: Pick<PipelineDeps, 'sql' | 'api'>,
  sourceId: number | null,
  reason: string,
): Promise<Account> {
  const me = await deps.api.me();
  await insertCreditSnapshot(deps.sql, me, reason, sourceId);
  return me;
}
