/**
 * What one API request was billed: the answer's `x-billable-requests` when it carries one, else
 * the published price of what the caller asked for (src/domain/prices.ts), and for a request
 * that got no answer after it may have reached the API, that price as possibly charged (a
 * timed-out request is charged when the server completed it).
 */

/** Where a recorded charge comes from. */
export const CHARGE_BASES = ['header', 'price', 'unanswered'] as const;
export type ChargeBasis = (typeof CHARGE_BASES)[number];

export interface Charge {
  credits: number;
  basis: ChargeBasis;
  /** the published price the caller expected; null: the caller named none */
  estimated: number | null;
}

/** One attempt as the API client reports it (src/api/http.ts `RequestEvent`). */
export interface ChargeableAttempt {
  status?: number | undefined;
  billedCredits?: number | undefined;
  expectedCredits?: number | undefined;
  /** set when no answer arrived: how the attempt ended */
  failure?: string | undefined;
}

/** Ways an attempt ends without an answer after which the API may still have done the work. */
const MAYBE_CHARGED_FAILURES: ReadonlySet<string> = new Set(['timeout', 'network', 'truncated']);

function isSuccess(status: number): boolean {
  return status >= 200 && status < 300;
}

/**
 * The charge of one attempt, or null for one that cost nothing and was not expected to (a poll,
 * `/me`, a refusal of a free request). An attempt that was expected to cost something is always
 * recorded, even at 0 (a refused POST), so every paid request shows beside its estimate.
 */
export function chargeOf(a: ChargeableAttempt): Charge | null {
  const estimated = a.expectedCredits !== undefined && a.expectedCredits > 0 ? a.expectedCredits : null;
  if (a.billedCredits !== undefined) {
    if (a.billedCredits === 0 && estimated === null) return null;
    return { credits: a.billedCredits, basis: 'header', estimated };
  }
  if (estimated === null) return null;
  if (a.status !== undefined) {
    // an answer without the header: a 2xx (206 included) is charged its price; a refusal is not
    return isSuccess(a.status)
      ? { credits: estimated, basis: 'price', estimated }
      : { credits: 0, basis: 'price', estimated };
  }
  if (a.failure !== undefined && MAYBE_CHARGED_FAILURES.has(a.failure))
    return { credits: estimated, basis: 'unanswered', estimated };
  return null;
}

/**
 * What a charge adds to the daily budgets beyond the rows they already count at the estimate (a
 * batch's, a listing's): the difference billed - estimated for an accepted request, the whole
 * charge for one nobody estimated, nothing for a refusal or an unanswered request (its pending
 * submission or reservation counts it).
 */
export function budgetDelta(c: Charge & { status: number | null }): number {
  if (c.basis === 'unanswered') return 0;
  if (c.estimated === null) return c.credits;
  return c.status !== null && isSuccess(c.status) ? c.credits - c.estimated : 0;
}
