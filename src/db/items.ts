/**
 * The `batch_items` table: every item of every batch, landed raw before anything else reads it.
 * The landed copy is the only one left once the API discards results, so a row leaves
 * `processing` exactly once: a later answer (`result-unavailable`, a repeated poll) never
 * overwrites what was landed, failed or set aside.
 */
import type { Queryable } from './connection.ts';
import { LAND_CHUNK_ITEMS } from './defaults.ts';
import { DELIVERED_ITEM_STATES, type ItemState, type QuarantineReason } from '../domain/items.ts';
import type { BatchItemRecord } from './schema.ts';
import { ESCAPED_UNSTORABLE_RE, findUnstorable, isStorableText, storableText } from './storable.ts';

export interface LandItem {
  videoId: string;
  state: ItemState;
  errorCode: string | null;
  /** the item as parsed from the answer; undefined when its JSON text could not be parsed */
  payload: unknown;
  /**
   * the item's JSON text exactly as received, when the reader kept it. Must be the text `payload`
   * was parsed from: it is stored instead of re-serialising `payload`, which keeps numbers as
   * written (1.50, integers past 2^53).
   */
  payloadRaw?: string | undefined;
  /** why the item is quarantined */
  reason?: string | undefined;
  /** the stable category of `reason` */
  reasonCode?: QuarantineReason | undefined;
  /** `hasHugeNumberText(payloadRaw)`, when the caller ran it already (see `hasHugeNumber`) */
  hugeNumber?: boolean | undefined;
  /**
   * true when `payloadRaw` was decoded from UTF-8 bytes (which leaves no lone surrogate) and then
   * parsed as JSON (which allows no raw U+0000): text Postgres stores as is, not scanned again
   * (the scan costs ~0.1 ms on a 20 KB transcript item with a character outside Latin-1)
   */
  decodedText?: boolean | undefined;
}

export { DELIVERED_ITEM_STATES };

export function isDelivered(state: ItemState): boolean {
  return (DELIVERED_ITEM_STATES as readonly ItemState[]).includes(state);
}

export interface LandResult {
  /** rows inserted or changed (any state) */
  written: number;
  /** rows that became `landed` or `sunk` by this call */
  landed: number;
  /** the rows inserted or changed, with the state and errorCode they now have */
  rows: { videoId: string; state: ItemState; errorCode: string | null }[];
}

/**
 * A number jsonb's numeric cannot hold (an exponent of five digits or more, e.g. `1e200000`:
 * "value overflows numeric format"), checked before the write; such an item is kept as text in
 * payload_raw. A string that merely looks like one only costs that item its jsonb copy.
 * `hasHugeNumberText` answers exactly what `HUGE_NUMBER_RE.test` does, faster.
 */
export const HUGE_NUMBER_RE = /[0-9.][eE][+-]?\d{5,}|\d{1000}/;
/** HUGE_NUMBER_RE's first alternative as a test: `\d{5,}` matches where five digits do. */
const HUGE_EXPONENT_RE = /[0-9.][eE][+-]?\d\d\d\d\d/;
/** HUGE_NUMBER_RE's second alternative: a run of this many digits. */
const HUGE_DIGIT_RUN = 1000;

function isDigitAt(text: string, i: number): boolean {
  const c = text.charCodeAt(i);
  return c >= 0x30 && c <= 0x39;
}

/**
 * `HUGE_NUMBER_RE.test(text)`, ~5x faster on the benchmark's 20 KB transcript items (~6 us
 * instead of ~28 us; it runs on every item). The exponent alternative spelled `\d\d\d\d\d`
 * lets V8 skip ahead (`\d{5,}` makes it try every position: ~17 us alone). A run of 1000 digits
 * covers a position p with p % 1000 === 999, so only those ~20 positions of a 20 KB text are
 * looked at, and the run is measured around the ones holding a digit.
 */
export function hasHugeNumberText(text: string): boolean {
  if (HUGE_EXPONENT_RE.test(text)) return true;
  for (let p = HUGE_DIGIT_RUN - 1; p < text.length; p += HUGE_DIGIT_RUN) {
    if (!isDigitAt(text, p)) continue;
    let start = p;
    while (start > 0 && isDigitAt(text, start - 1)) start--;
    let end = p + 1;
    while (end < text.length && end - start < HUGE_DIGIT_RUN && isDigitAt(text, end)) end++;
    if (end - start >= HUGE_DIGIT_RUN) return true;
  }
  return false;
}

/**
 * An item ready to land: its payload already cut to what is stored (the received text for the
 * jsonb column, or for payload_raw), so no parsed copy of it needs to stay in memory while a chunk
 * fills up (a parsed ~20 KB transcript item takes several times its text).
 */
export interface LandRecord {
  videoId: string;
  state: ItemState;
  errorCode: string | null;
  /** JSON text that becomes the jsonb `payload` (the received text), or null */
  json: string | null;
  /** `payload_raw`: the text when jsonb cannot hold it, or null */
  raw: string | null;
  /** why the item is quarantined */
  reason: string | undefined;
  reasonCode: QuarantineReason | undefined;
  /** what was changed to store it (a key in its JSON form, a payload kept as a string literal) */
  notes: string[];
}

/**
 * Whether the item's text may carry a number `numeric` cannot hold; the caller's answer when it
 * asked already (the scan of a 20 KB transcript item costs ~6 us: once per item is enough).
 */
function hasHugeNumber(item: LandItem, text: string): boolean {
  return item.hugeNumber ?? hasHugeNumberText(text);
}

/**
 * jsonb when it can hold the item; otherwise the raw text in payload_raw (jsonb rejects
 * `\u0000` and lone surrogates), so nothing is lost either way. `json` is spliced into the
 * statement's JSON as is, so it must be valid JSON: the received text or our serialisation.
 */
export function toLandRecord(item: LandItem): LandRecord {
  let { videoId, state, reasonCode } = item;
  const notes: string[] = [];
  if (!isStorableText(videoId)) {
    // Not storable as a key: keep the item under its JSON-quoted form, set aside for a human.
    videoId = JSON.stringify(videoId);
    state = 'quarantined';
    reasonCode ??= 'unstorable';
    notes.push('videoId holds a character Postgres text cannot store; video_id is its JSON form');
  }
  const record: LandRecord = {
    videoId,
    state,
    errorCode: item.errorCode,
    json: null,
    raw: null,
    reason: item.reason,
    reasonCode,
    notes,
  };
  const text = item.payloadRaw ?? (item.payload === undefined ? undefined : JSON.stringify(item.payload));
  if (text === undefined) return record;
  const storable = (item.decodedText === true && item.payloadRaw !== undefined) || isStorableText(text);
  if (item.payload !== undefined && storable && !hasHugeNumber(item, text)) {
    // Both U+0000 and lone surrogates can only reach the text as \u escapes; the walk that
    // tells for sure runs only when such an escape (or its look-alike \\u0000) is present.
    // (`includes` first: ~1.5 us instead of the regex's ~8 us on a 20 KB item, most have no \u)
    if (!text.includes('\\u') || !ESCAPED_UNSTORABLE_RE.test(text) || findUnstorable(item.payload) === undefined) {
      record.json = text;
      return record;
    }
  }
  if (storable) {
    record.raw = text;
    return record;
  }
  // Text with a literal U+0000 is not even valid JSON; keep it losslessly as a JSON string.
  record.raw = JSON.stringify(text);
  notes.push('payload_raw holds the received text as a JSON string literal');
  return record;
}

/**
 * The record set aside after Postgres rejected it (`message`, Postgres's words): quarantined,
 * its text kept in payload_raw (the jsonb copy may be what Postgres refused).
 */
export function setAsideRecord(record: LandRecord, message: string): LandRecord {
  return {
    ...record,
    state: 'quarantined',
    json: null,
    raw: record.raw ?? record.json,
    reason: `Postgres cannot store it: ${message}`,
    reasonCode: 'unstorable',
  };
}

function landJson(records: readonly LandRecord[]): string {
  // one flat string: `[${parts.join(',')}]` would be a rope the driver flattens, copying the
  // chunk's ~0.5 M characters once more
  const parts = ['['];
  for (const r of records) {
    const reason =
      [r.reason, ...r.notes]
        .filter((x): x is string => typeof x === 'string')
        .map(storableText)
        .join('; ') || null;
    // payload is spliced in as JSON text (not re-encoded), so Postgres parses the received text.
    if (parts.length > 1) parts.push(',');
    parts.push(
      `{"video_id":${JSON.stringify(r.videoId)},"state":${JSON.stringify(r.state)},` +
        `"error_code":${JSON.stringify(r.errorCode)},"payload":`,
      r.json ?? 'null',
      `,"payload_raw":${JSON.stringify(r.raw)},"reason":${JSON.stringify(reason)},` +
        `"reason_code":${JSON.stringify(r.state === 'quarantined' ? (r.reasonCode ?? null) : null)}}`,
    );
  }
  parts.push(']');
  return parts.join('');
}

/** Records items of one batch as they were answered (see `landRecords`). */
export async function landItems(
  sql: Queryable,
  jobId: string,
  items: readonly LandItem[],
  chunkItems: number = LAND_CHUNK_ITEMS,
): Promise<LandResult> {
  return landRecords(sql, jobId, items.map(toLandRecord), chunkItems);
}

/**
 * Records items of one batch as they were answered. New items are inserted; an existing row is
 * changed only while it is still `processing` (and only if something differs), so landing the
 * same answer twice writes nothing and a landed payload is never replaced. A record in state
 * `sunk` lands with its rows written in the same transaction (the poller's direct write):
 * `landed_at` and `sunk_at` both now. Items with the same videoId: the last one wins. Runs one
 * statement per `chunkItems` items (default LAND_CHUNK_ITEMS: it bounds the size of one JSON
 * parameter, ~20 KB per transcript item); pass a transaction to make a whole poll atomic.
 */
export async function landRecords(
  sql: Queryable,
  jobId: string,
  records: readonly LandRecord[],
  chunkItems: number = LAND_CHUNK_ITEMS,
): Promise<LandResult> {
  const byVideo = new Map<string, LandRecord>();
  for (const r of records) byVideo.set(r.videoId, r);
  const unique = [...byVideo.values()];
  const total: LandResult = { written: 0, landed: 0, rows: [] };
  for (let i = 0; i < unique.length; i += chunkItems) {
    const json = landJson(unique.slice(i, i + chunkItems));
    const rows = await sql<{ video_id: string; state: ItemState; error_code: string | null }[]>`
      insert into batch_items as b (job_id, video_id, state, error_code, payload, payload_raw, reason, reason_code, landed_at, sunk_at)
      select ${jobId}, video_id, state, error_code, payload, payload_raw, reason, reason_code,
        case when state = any(${[...DELIVERED_ITEM_STATES]}::text[]) then now() end, case when state = 'sunk' then now() end
      from jsonb_to_recordset(${json}::text::jsonb) as r(
        video_id text, state text, error_code text, payload jsonb, payload_raw text, reason text, reason_code text)
      on conflict (job_id, video_id) do update set
        state = excluded.state,
        error_code = excluded.error_code,
        payload = excluded.payload,
        payload_raw = excluded.payload_raw,
        reason = excluded.reason,
        reason_code = excluded.reason_code,
        landed_at = excluded.landed_at,
        sunk_at = excluded.sunk_at,
        updated_at = now()
      where b.state = 'processing'
        and (b.state, b.error_code, b.payload, b.payload_raw, b.reason)
          is distinct from (excluded.state, excluded.error_code, excluded.payload, excluded.payload_raw, excluded.reason)
      returning video_id, state, error_code`;
    total.written += rows.length;
    total.landed += rows.filter((r) => isDelivered(r.state)).length;
    for (const r of rows) total.rows.push({ videoId: r.video_id, state: r.state, errorCode: r.error_code });
  }
  return total;
}

export interface LandedItem {
  videoId: string;
  errorCode: string | null;
  /** the raw item (from payload, or parsed from payload_raw); undefined when neither parses */
  payload: unknown;
  /** set only when the item could not be stored as jsonb */
  payloadRaw: string | null;
  landedAt: Date | null;
}

export interface LandedChunkOptions {
  /** start after this videoId (keyset paging; default: from the first) */
  afterVideoId?: string | undefined;
  /**
   * lock the rows (`FOR UPDATE SKIP LOCKED`; inside a transaction): concurrent sinks then take
   * disjoint chunks, and rows another sink holds are skipped, not waited for
   */
  lock?: boolean | undefined;
}

/** Up to `limit` items of the batch that are landed but not yet sunk, ordered by videoId. */
export async function nextLandedChunk(
  sql: Queryable,
  jobId: string,
  limit: number,
  opts: LandedChunkOptions = {},
): Promise<LandedItem[]> {
  const after = opts.afterVideoId ?? null;
  const rows = await sql<
    {
      video_id: string;
      error_code: string | null;
      payload: unknown;
      payload_raw: string | null;
      landed_at: Date | null;
    }[]
  >`
    select video_id, error_code, payload, payload_raw, landed_at
    from batch_items
    where job_id = ${jobId} and state = 'landed' and (${after}::text is null or video_id > ${after}::text)
    order by video_id
    limit ${limit}
    ${opts.lock ? sql`for update skip locked` : sql``}`;
  return rows.map((r) => ({
    videoId: r.video_id,
    errorCode: r.error_code,
    payload: r.payload ?? parseOrUndefined(r.payload_raw),
    payloadRaw: r.payload_raw,
    landedAt: r.landed_at,
  }));
}

function parseOrUndefined(text: string | null): unknown {
  if (text === null) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** landed → sunk for these items; returns how many moved (already sunk ones are left alone). */
export async function markSunk(sql: Queryable, jobId: string, videoIds: readonly string[]): Promise<number> {
  if (videoIds.length === 0) return 0;
  const rows = await sql`
    update batch_items set state = 'sunk', sunk_at = now(), updated_at = now()
    where job_id = ${jobId} and video_id = any(${videoIds as string[]}::text[]) and state = 'landed'
    returning 1`;
  return rows.length;
}

/**
 * landed → quarantined for items the sink cannot write (payload fails validation, a value
 * Postgres cannot hold); the payload stays for replay. Returns how many moved.
 */
export async function markQuarantined(
  sql: Queryable,
  jobId: string,
  items: readonly { videoId: string; reason: string; reasonCode: QuarantineReason }[],
): Promise<number> {
  if (items.length === 0) return 0;
  const json = JSON.stringify(
    items.map((i) => ({ video_id: i.videoId, reason: storableText(i.reason), reason_code: i.reasonCode })),
  );
  const rows = await sql`
    update batch_items as b set state = 'quarantined', reason = r.reason, reason_code = r.reason_code, updated_at = now()
    from jsonb_to_recordset(${json}::text::jsonb) as r(video_id text, reason text, reason_code text)
    where b.job_id = ${jobId} and b.video_id = r.video_id and b.state = 'landed'
    returning 1`;
  return rows.length;
}

/**
 * At expiry: every item still `processing` becomes `retryable` with `errorCode` (the next sync
 * or `replay --failed` re-submits it). Landed items keep their landed copy. Returns the videoIds moved.
 */
export async function markUnfinishedRetryable(sql: Queryable, jobId: string, errorCode: string): Promise<string[]> {
  const rows = await sql<{ video_id: string }[]>`
    update batch_items set state = 'retryable', error_code = ${errorCode}, updated_at = now()
    where job_id = ${jobId} and state = 'processing'
    returning video_id`;
  return rows.map((r) => r.video_id);
}

/**
 * At a transcript job's expiry after its result's hour: its item, still `processing`, ends
 * `failed` with `errorCode` (nothing re-submits it). Returns the videoIds moved.
 */
export async function markUnfinishedFailed(sql: Queryable, jobId: string, errorCode: string): Promise<string[]> {
  const rows = await sql<{ video_id: string }[]>`
    update batch_items set state = 'failed', error_code = ${errorCode}, updated_at = now()
    where job_id = ${jobId} and state = 'processing'
    returning video_id`;
  return rows.map((r) => r.video_id);
}

/** The state and errorCode of every item recorded for a batch. */
export function itemStates(
  sql: Queryable,
  jobId: string,
): Promise<Pick<BatchItemRecord, 'videoId' | 'state' | 'errorCode'>[]> {
  return sql<Pick<BatchItemRecord, 'videoId' | 'state' | 'errorCode'>[]>`
    select video_id as "videoId", state, error_code as "errorCode" from batch_items where job_id = ${jobId}`;
}

/** sunk → landed for every item of the batch, so the sink stores them again; returns how many. */
export async function reopenSunk(sql: Queryable, jobId: string): Promise<number> {
  const rows = await sql`
    update batch_items set state = 'landed', updated_at = now()
    where job_id = ${jobId} and state = 'sunk'
    returning 1`;
  return rows.length;
}

/** Batches with items landed but not sunk (work for the sink). */
export async function jobIdsWithLandedItems(sql: Queryable): Promise<string[]> {
  const rows = await sql<Pick<BatchItemRecord, 'jobId'>[]>`
    select distinct job_id as "jobId" from batch_items where state = 'landed'`;
  return rows.map((r) => r.jobId);
}
