/**
 * Upstream refusals: which error codes stop what. Defined once; the scheduler, the poller, the
 * workers and status use these.
 */
import type { ErrorCode } from '../api/errors.ts';

/** Account-level refusals recorded as a hold (`upstream_holds.code`). */
export const HOLD_CODES = ['unauthorized', 'upgrade-required', 'credits'] as const;
export type HoldCode = (typeof HOLD_CODES)[number];
/** `all`: no API call at all (the key is refused); `submit`: no sync (polls of batches in flight go on). */
export const HOLD_SCOPES = ['all', 'submit'] as const;
export type HoldScope = (typeof HOLD_SCOPES)[number];

export const HOLD_SCOPE_OF: Readonly<Record<HoldCode, HoldScope>> = {
  unauthorized: 'all',
  'upgrade-required': 'submit',
  credits: 'submit',
};

/** What happened to a hold (`upstream_hold_events.event`): a refusal set it, or someone lifted it. */
export const HOLD_EVENTS = ['set', 'lifted'] as const;
export type HoldEvent = (typeof HOLD_EVENTS)[number];

/**
 * Holds a daemon judges by itself with a free `GET /me`: an answer means the key works; credits
 * left above the reserve mean the quota came back (a billing renewal). A plan without batches
 * (`upgrade-required`) does not show there: only a person's sync that gets through lifts it.
 */
export const HOLD_CODES_JUDGED_BY_ME: readonly HoldCode[] = ['unauthorized', 'credits'];

/**
 * What a credit check measures an estimate against: the account (`/me` less CREDIT_RESERVE and
 * what other syncs reserved), the installation's CREDIT_BUDGET_PER_DAY, or the source's
 * `--max-credits-per-day`. A refusal by any of them is recorded alike (`sync_runs.outcome`
 * `refused-credits`, its detail naming the limit).
 */
export const CREDIT_LIMITS = ['account', 'installation-budget', 'source-budget'] as const;
export type CreditLimit = (typeof CREDIT_LIMITS)[number];

/**
 * Only an account with nothing left holds every scheduled sync (until a `/me` re-check shows
 * credits again). A daily budget is a choice of this installation, not a refusal by the
 * upstream: it refuses the sync that would pass it, and nothing else; the next UTC day, or a
 * cheaper sync, goes through.
 */
export const CREDIT_LIMIT_HOLD: Readonly<Record<CreditLimit, HoldCode | null>> = {
  account: 'credits',
  'installation-budget': null,
  'source-budget': null,
};

/** `sources.last_error_code` of a sync refused by each limit. */
export const CREDIT_LIMIT_ERROR_CODE: Readonly<Record<CreditLimit, string>> = {
  account: 'credits',
  'installation-budget': 'budget',
  'source-budget': 'budget',
};

/** API error codes that refuse a sync for account or plan reasons (`sync_runs.outcome` = refused-upstream). */
export const REFUSED_UPSTREAM_CODES: readonly ErrorCode[] = [
  'unauthorized',
  'upgrade-required',
  'forbidden',
  'limit-exceeded',
];

/** API error codes that retrying a job cannot fix: the job fails at once (BullMQ UnrecoverableError). */
export const PERMANENT_API_CODES: readonly ErrorCode[] = [
  'unauthorized',
  'upgrade-required',
  'forbidden',
  'invalid-request',
  'schema-mismatch',
];
