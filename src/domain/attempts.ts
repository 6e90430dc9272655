/**
 * When a video is due for (another) automatic submission, per kind and language. Money is at
 * stake: every rule here errs on the side of not buying. A video is bought once per kind and
 * language whichever sources list it; a failure retrying may fix is re-submitted with growing
 * spacing, at most `RETRY_ATTEMPTS_MAX` submissions in all; past that only a person
 * (`replay --failed`) submits it.
 */
import { NO_CAPTIONS_CODE, isGoneCode, type ItemState } from './items.ts';

/** What the scheduler knows of one video, kind and language (`video_sync` and its claim). */
export interface VideoSyncFacts {
  lastState: ItemState | null;
  lastErrorCode: string | null;
  /** submissions so far (automatic and by a person) */
  attempts: number;
  /** transcript re-check time (`transcript-unavailable`) */
  nextCheckAt: Date | null;
  /** when the latest outcome (or claim) was recorded */
  updatedAt: Date;
  /** the claiming batch is in flight, or its POST's outcome is not known yet */
  claimPending: boolean;
  /** the claiming batch ended (or its POST was not created) without a result for this video */
  claimEnded: boolean;
  /** the latest purchase asked for plain text (`--text`) */
  lastTextOnly: boolean;
  /** a transcript with chunks is stored for this video (and language, when one was asked for) */
  hasChunks: boolean;
  /**
   * The latest delivery fell back to another language (the interface does when the one asked for
   * has no transcript), and what arrived since says the asked language has appeared: the video's
   * `transcriptLanguages`, or a transcript's `availableLangs`, written after that delivery.
   */
  askedLangAppeared: boolean;
}

export interface DuePolicy {
  now: Date;
  retryAttemptsMax: number;
  retryBackoffBaseMs: number;
  /** the source wants chunked transcripts (not `--text`) */
  wantsChunks: boolean;
  /**
   * A stored or gone video is fetched again once its latest outcome is this old (the source's
   * `--refresh`; 0 for `backfill --refresh`: now), so that edits upstream, a video gone and one
   * back are seen. null: never (the default: a refresh is bought like the first fetch).
   */
  refreshAfterMs: number | null;
}

/**
 * The shortest `--refresh` a source takes: each refresh buys every stored video again, so a
 * shorter one would mostly spend credits on what has not changed.
 */
export const REFRESH_MIN_MS = 60 * 60_000;

export type DueReason = 'new' | 'retry' | 'recheck' | 'chunks' | 'language' | 'refresh';

/** The refresh a source asked for (`--refresh`) is due: its latest outcome is at least that old. */
function refreshDue(facts: VideoSyncFacts, policy: DuePolicy): boolean {
  return policy.refreshAfterMs !== null && facts.updatedAt.getTime() + policy.refreshAfterMs <= policy.now.getTime();
}

/**
 * Spacing before the next automatic submission after `attempts` submissions ended retryable: the
 * first re-submission is due at the next sync, each later one waits twice as long as the one before.
 */
export function retrySpacingMs(attempts: number, baseMs: number): number {
  if (attempts <= 1) return 0;
  return baseMs * 2 ** Math.min(attempts - 2, 30);
}

/** Why `facts` makes the video due now, or null when it is not. `facts` undefined: never submitted. */
export function dueReason(facts: VideoSyncFacts | undefined, policy: DuePolicy): DueReason | null {
  if (facts === undefined) return 'new';
  if (facts.claimPending) return null;
  const state = facts.claimEnded && facts.lastState === 'processing' ? 'retryable' : facts.lastState;
  switch (state) {
    case null:
      return 'new';
    case 'landed':
    case 'sunk':
      // a fallen-back transcript is bought again once its language has appeared: the evidence
      // must be newer than the delivery, so a second fallback (the upstream still has none)
      // waits for new evidence instead of buying at every sync
      if (facts.askedLangAppeared) return 'language';
      // a source that wants chunks buys, once, a transcript bought as plain text only
      if (policy.wantsChunks && facts.lastTextOnly && !facts.hasChunks) return 'chunks';
      return refreshDue(facts, policy) ? 'refresh' : null;
    case 'failed':
      // gone or private: asked again only by a refresh the source asked for, which is how a
      // video that came back is seen
      if (isGoneCode(facts.lastErrorCode)) return refreshDue(facts, policy) ? 'refresh' : null;
      if (facts.nextCheckAt === null || facts.nextCheckAt > policy.now) return null;
      return facts.attempts < policy.retryAttemptsMax ? 'recheck' : null;
    case 'retryable': {
      if (facts.attempts >= policy.retryAttemptsMax) return null;
      const dueAt = facts.updatedAt.getTime() + retrySpacingMs(facts.attempts, policy.retryBackoffBaseMs);
      return dueAt <= policy.now.getTime() ? 'retry' : null;
    }
    case 'processing':
    case 'quarantined':
      // still running; or set aside for a person (`replay --quarantined`)
      return null;
  }
}

/** When an item outcome is re-checked automatically (a transcript not available yet); null: never. */
export function recheckAt(errorCode: string | null, now: Date, transcriptRecheckMs: number): Date | null {
  return errorCode === NO_CAPTIONS_CODE ? new Date(now.getTime() + transcriptRecheckMs) : null;
}
