/**
 * A paid POST's intent row (`batch_submissions`): recorded `sending` before the request, then
 * what became of it. Its state decides whether the videos it claimed stay claimed.
 */
export const SUBMISSION_STATES = [
  'sending',
  'submitted',
  'failed',
  'unknown',
  'not-created',
  'lost',
  'released',
] as const;
export type SubmissionState = (typeof SUBMISSION_STATES)[number];

/** Submissions whose outcome is not known yet (the next sync of their source resolves them). */
export const SUBMISSION_PENDING_STATES = ['sending', 'unknown'] as const satisfies readonly SubmissionState[];

/** A claiming POST whose outcome is not known, or known to be charged but unread: the claim stands. */
export const CLAIM_STANDING_SUBMISSIONS = [
  ...SUBMISSION_PENDING_STATES,
  'lost',
] as const satisfies readonly SubmissionState[];

/** A request that created nothing upstream (or that a person released): it may be asked again. */
export const SUBMISSION_NOTHING_CREATED_STATES = [
  'not-created',
  'released',
] as const satisfies readonly SubmissionState[];

/** A claiming POST that created nothing, was refused, or was released: the claim is void. */
export const CLAIM_VOID_SUBMISSIONS = [
  ...SUBMISSION_NOTHING_CREATED_STATES,
  'failed',
] as const satisfies readonly SubmissionState[];
