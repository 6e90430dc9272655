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

/** API error codes that refuse a sync for account or plan reasons (`sync_runs.outcome` = refused-upstream). */
export const REFUSED_UPSTREAM_CODES: readonly ErrorCode[] = ['unauthorized', 'upgrade-required', 'forbidden', 'limit-exceeded'];

/** API error codes that retrying a job cannot fix: the job fails at once (BullMQ UnrecoverableError). */
export const PERMANENT_API_CODES: readonly ErrorCode[] = ['unauthorized', 'upgrade-required', 'forbidden', 'invalid-request', 'schema-mismatch'];
