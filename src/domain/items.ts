/**
 * What an item of a batch answer means for the pipeline: its state, its errorCode as received,
 * and (when set aside) why. The single place where item errorCodes are given a policy.
 *
 * | errorCode | state | the video next |
 * |---|---|---|
 * | none, with a result | landed | stored by the sink |
 * | `processing` | processing | polled again; at the batch's end `retryable` |
 * | `transcript-unavailable` | failed | metadata kept; transcript re-checked on a slow backoff |
 * | `not-found`, `forbidden` | failed | gone or private: not re-submitted |
 * | `invalid-request`, `unauthorized`, `upgrade-required` | failed | configuration problem, shown |
 * | `internal-error`, `limit-exceeded`, `result-unavailable` | retryable | re-submitted (capped) |
 * | a code the interface does not list | retryable | recorded exactly as received |
 * | fails the interface's schema, too large, or Postgres cannot store it | quarantined | never re-submitted automatically |
 */
import type { BatchItem } from '../api/schemas.ts';
import type { BatchKind } from './batches.ts';

export const ITEM_STATES = ['processing', 'landed', 'sunk', 'failed', 'retryable', 'quarantined'] as const;
export type ItemState = (typeof ITEM_STATES)[number];

/** States of an item that was delivered: landed, or landed and written in one go (the poller). */
export const DELIVERED_ITEM_STATES = ['landed', 'sunk'] as const satisfies readonly ItemState[];

/** States of an item that ended without being stored: failed, left retryable, or set aside. */
export const ITEM_ERROR_STATES = ['failed', 'retryable', 'quarantined'] as const satisfies readonly ItemState[];

/** States after which an item of a batch never changes again (per that batch). */
export function isFinalItemState(state: ItemState): boolean {
  return state !== 'processing' && state !== 'quarantined';
}

export const RETRYABLE_ITEM_CODES = ['internal-error', 'limit-exceeded', 'result-unavailable'] as const;
export const PERMANENT_ITEM_CODES = [
  'transcript-unavailable',
  'not-found',
  'forbidden',
  'invalid-request',
  'unauthorized',
  'upgrade-required',
] as const;
/**
 * The video has no captions (in that language): its transcript is re-checked later
 * (src/domain/attempts.ts), and a source with `--generate-missing` may have one generated.
 */
export const NO_CAPTIONS_CODE = 'transcript-unavailable' satisfies (typeof PERMANENT_ITEM_CODES)[number];
/**
 * The video is gone (`not-found`) or private (`forbidden`): a stored one keeps its rows and is
 * marked gone (`videos.gone_at`, a `video.gone` event) until a later batch delivers it again.
 */
export const GONE_ITEM_CODES = [
  'not-found',
  'forbidden',
] as const satisfies readonly (typeof PERMANENT_ITEM_CODES)[number][];

export function isGoneCode(code: string | null): code is (typeof GONE_ITEM_CODES)[number] {
  return (GONE_ITEM_CODES as readonly (string | null)[]).includes(code);
}

/** Every item errorCode the interface (v1.3.0) lists; anything else is recorded and retryable. */
export const KNOWN_ITEM_CODES: readonly string[] = ['processing', ...RETRYABLE_ITEM_CODES, ...PERMANENT_ITEM_CODES];

/** An item left unfinished when its batch ended (expired, failed, or lost upstream). */
export const UNFINISHED_AT_END_CODE = 'processing';

/**
 * The item of a transcript job (`--generate-missing`) whose result expired unread (the batch's
 * end code LOCAL_BATCH_END_CODES.resultExpired): the interface's code for a result that is gone,
 * and `failed`, not `retryable`: the generation was paid, and buying it again is a person's
 * decision, never a sync's (a generation is requested once per video and language,
 * src/db/generations.ts; `replay` re-submits batch items only).
 */
export const EXPIRED_RESULT_OUTCOME = {
  state: 'failed',
  errorCode: 'result-unavailable',
} as const satisfies ItemOutcome;

/** The stable categories of `batch_items.reason_code` for a quarantined item (status, metrics). */
export const QUARANTINE_REASONS = [
  /** fails the interface's schema */
  'schema',
  /** no errorCode and no result */
  'no-result',
  /** a repeated videoId in one answer (kept beside the first copy) */
  'duplicate',
  /** larger than ITEM_MAX_BYTES: kept unparsed, its first bytes */
  'too-large',
  /** not valid JSON */
  'unparsable',
  /** a value Postgres cannot store (out of range, a character text cannot hold) */
  'unstorable',
] as const;
export type QuarantineReason = (typeof QUARANTINE_REASONS)[number];

export interface ItemOutcome {
  state: ItemState;
  /** the errorCode exactly as received */
  errorCode: string | null;
  /** why it is quarantined (human words) */
  reason?: string | undefined;
  reasonCode?: QuarantineReason | undefined;
}

/** The outcome of an item that matched the interface's schema. */
export function classifyItem(item: BatchItem, kind: BatchKind): ItemOutcome {
  const code = item.errorCode ?? null;
  if (code === null) {
    const payload = kind === 'video' ? item.video : item.transcript;
    if (payload === undefined || payload === null) {
      return { state: 'quarantined', errorCode: null, reason: `no ${kind} and no errorCode`, reasonCode: 'no-result' };
    }
    return { state: 'landed', errorCode: null };
  }
  if (code === 'processing') return { state: 'processing', errorCode: code };
  if ((PERMANENT_ITEM_CODES as readonly string[]).includes(code)) return { state: 'failed', errorCode: code };
  // the listed retryable codes, and any code this interface version does not know
  return { state: 'retryable', errorCode: code };
}

// ---------------------------------------------------------------------------------------------
// Item counters (`batch_item_counts`, `item_counts`: migrations/0005, `pending` since 0006; kept by triggers)

/**
 * Rows per key of `item_counts`: a batch's items are counted in shard
 * `abs(hashtext(job_id)) % ITEM_COUNT_SHARDS`, so batches landing side by side seldom queue on
 * one counter row (16 until migrations/0013, which says why 64). The migration's trigger spells
 * the number out (SQL cannot import it); test/integration/counters.test.ts checks that the two
 * agree. Readers sum every shard, so a total never depends on it.
 */
export const ITEM_COUNT_SHARDS = 64;

/**
 * Rows per status of `batch_counts` (migrations/0005): a batch is counted in shard
 * `abs(hashtext(job_id)) % BATCH_COUNT_SHARDS`. Its writers are short transactions (a batch's
 * status moves), so it kept the 16 item_counts had before migrations/0013.
 */
export const BATCH_COUNT_SHARDS = 16;
