/**
 * The poller: one read of one batch. It streams the answer and, a bounded chunk per transaction
 * as the answer arrives, lands every newly finished item raw in `batch_items` and writes its
 * `videos` / `transcripts` row from the item it has just parsed, recording the item `sunk` (a
 * download that breaks or runs past POLL_MAX_DURATION_MS keeps what landed; the next poll skips
 * it); then it updates the batch row. Nothing is read back: the sink queue only finishes items
 * left `landed` by replay or by an older version. The landed copy is the source of truth from
 * then on: a later answer that no longer carries a result (`result-unavailable`, expiry) never
 * overwrites it.
 *
 * The answer is read liberally (src/domain/batches.ts): an unknown status keeps the batch in
 * flight, recorded; items with results land whatever the head says; a value Postgres rejects is
 * isolated and quarantined, never blocking its neighbours. Answers that may be transient cost
 * nothing: a JSON `not-found` expires the batch only when confirmed over
 * BATCH_NOT_FOUND_CONFIRM_MS, a gateway's 404 is retried, a 401 is confirmed with a free `/me`
 * before any hold. A batch in flight longer than BATCH_MAX_AGE_MS is expired locally.
 */
import {
  ApiError,
  GatewayForbiddenError,
  LimitExceededError,
  NotFoundError,
  UnauthorizedError,
} from '../../api/errors.ts';
import {
  batchForPoll,
  countPollFailure,
  endBatchLocally,
  recordIncompletePoll,
  recordNotFound,
  recordPollAnswer,
  recordPollHeld,
  recordRefusedPoll,
  scheduleNextPoll,
  type PolledBatch,
} from '../../db/batch-polls.ts';
import { isConnectionLost } from '../../db/connection.ts';
import { hasHugeNumberText, isDelivered, itemStates, markUnfinishedRetryable, type LandItem } from '../../db/items.ts';
import { findUnstorableNumber } from '../../db/storable.ts';
import { recordOutcomes } from '../../db/video-sync.ts';
import {
  LOCAL_BATCH_END_CODES,
  LiberalBatchHeadSchema,
  isTerminalStatus,
  readHead,
  storableDate,
  type BatchKind,
  type BatchStatus,
  type HeadReading,
  type LiberalBatchHead,
} from '../../domain/batches.ts';
import type { BatchStream } from '../../api/client.ts';
import type { BatchItem } from '../../api/schemas.ts';
import { isFinalItemState, UNFINISHED_AT_END_CODE, type ItemState } from '../../domain/items.ts';
import { classifyRawItem } from '../../domain/raw-items.ts';
import { readBatchItems, type RawBatchHead, type RawBatchItem } from './batch-stream.ts';
import type { RowBatch } from './item-rows.ts';
import { prepareItem, storeChunk, type PreparedItem } from './store-items.ts';
import type { PipelineDeps } from '../deps.ts';
import { takeCreditSnapshot } from './credits.ts';
import { pollCrawl } from './crawl.ts';
import { pollTranscriptJob } from './transcript-job.ts';
import { withSpan } from '../../tracing.ts';
import { holdsApplying, meRefusesKey, recordHold } from '../services/upstream-holds.ts';

/** Consecutive poll attempts that threw (not an answer we understood) before the batch is failed. */
export const POLL_FAILURES_MAX = 20;
/** How much of a failure's message `batches.reason` keeps. */
const REASON_MAX_CHARS = 500;

export interface PollResult {
  jobId: string;
  status: BatchStatus;
  terminal: boolean;
  /** items that landed in this poll */
  landed: number;
  /** of those, items whose rows this poll wrote (`sunk`) */
  sunk: number;
  /** items whose state changed in this poll (landed, failed, retryable, quarantined) */
  changed: number;
  /** items of the answer that repeated a videoId already seen in it */
  duplicates: number;
  quarantined: number;
  /** the delay before the next poll, when not terminal */
  nextDelayMs?: number;
  /**
   * Not terminal, but the batch should be complete by now (`dueAgainNow`): read it again at once,
   * in the same turn, rather than after the delay and a wait behind polls queued meanwhile
   */
  readAgainNow?: boolean;
}

/**
 * A chunk of items is also written once their received text reaches this many characters, before
 * LAND_CHUNK_ITEMS items: what one chunk holds in memory (the items' text, the statement built
 * from it, the driver's buffer: each about the text's size, twice that for text with a character
 * outside Latin-1, as most transcripts have) is then bounded by size, not by a count of items that
 * may be 1.5 KB videos or 20 KB transcripts. ~25 transcripts a chunk. Measured with the benchmark
 * (peak RSS per process in W1 and W2, 4 polls at once per process, on a busy 2-core machine):
 * 229-278 MB with no bound (100 transcripts, ~2 M characters), 202-253 MB at 1 M characters,
 * 204-225 MB at 400 000-500 000; with node's --max-semi-space-size=2, 171-205 MB at 1 M and
 * 165-181 MB at 500 000, at the same CPU and speed.
 */
export const LAND_CHUNK_MAX_CHARS = 500_000;
/** Added to the expected end of a batch before the poll that should find it complete. */
export const POLL_ETA_MARGIN_MS = 250;
/** Kept free of the land-within budget for scheduling jitter. */
export const POLL_LAND_MARGIN_MS = 500;

/** What one answer said about a batch's progress, for planning the next poll. */
export interface PollProgress {
  status: BatchStatus;
  total: number;
  /** items finished (succeeded + failed) per this answer */
  finished: number;
  /** items finished per the previous answer (0 before the first) */
  finishedBefore: number;
  /** from the previous answer (or the submission) to this one, ms */
  sinceBeforeMs: number;
  /** from this answer to now (reading and landing it), ms */
  sinceAnswerMs: number;
  /** how long this poll took from its start, ms (the next one takes about as long, or longer) */
  pollMs: number;
}

/**
 * When to poll a batch next. There is no paging upstream: every poll reads the whole answer
 * again, so a running batch is polled as seldom as its items allow.
 *
 * - Not started (nothing finished, not active): back off, doubling the previous delay.
 * - Running: come back when the rate of finishing says the batch will be complete (one more
 *   read then gets the rest), but never so late that an item finished just after this answer
 *   waits more than `pollLandWithinMs` to land: it waits for the rest of this poll, the delay,
 *   and the next poll, which reads more and lands what finished meanwhile. So this poll and the
 *   delay stay within half the budget (the next poll gets the other half; measured on a
 *   5000-item transcript batch it can take 3x as long as a poll that landed little), and
 *   within what is left after three polls of this one's length.
 *
 * Always within [pollMinDelayMs, pollMaxDelayMs].
 */
export function planNextPollMs(
  previousDelayMs: number,
  p: PollProgress,
  settings: { pollMinDelayMs: number; pollMaxDelayMs: number; pollLandWithinMs: number },
): number {
  const bounded = (ms: number) => Math.round(Math.min(settings.pollMaxDelayMs, Math.max(settings.pollMinDelayMs, ms)));
  if (p.finished === 0 && p.status !== 'active') return bounded(previousDelayMs * 2);
  let next =
    Math.min(settings.pollLandWithinMs / 2 - p.pollMs, settings.pollLandWithinMs - 3 * p.pollMs) - POLL_LAND_MARGIN_MS;
  const etaMs = etaFromAnswerMs(p);
  if (etaMs !== undefined) {
    next = Math.min(next, etaMs - p.sinceAnswerMs + POLL_ETA_MARGIN_MS);
  } else {
    // running but no progress seen since the previous answer: back off, within the budget
    next = Math.min(next, previousDelayMs * 2);
  }
  return bounded(next);
}

/**
 * Read the batch again at once, in the same turn? Yes when the rate of finishing says it was
 * complete before now (plus the margin) and the answer is at least `pollMinDelayMs` old: a poll
 * that took longer than the batch had left (landing many items, on a busy machine). The items it
 * left finished before those of the polls that became due while it ran, so they go first instead
 * of waiting behind them (measured: a W1 batch's last 20 items waited 5 s for a poll slot, 10 s in
 * all). Not while the batch shows no progress, so a batch stuck short of its end is not re-read.
 */
export function dueAgainNow(p: PollProgress, settings: { pollMinDelayMs: number }): boolean {
  if (p.status !== 'active' || p.sinceAnswerMs < settings.pollMinDelayMs) return false;
  const etaMs = etaFromAnswerMs(p);
  return etaMs !== undefined && etaMs + POLL_ETA_MARGIN_MS <= p.sinceAnswerMs;
}

/** From the answer, how long the rest of the batch takes at the rate seen since the previous one. */
function etaFromAnswerMs(p: PollProgress): number | undefined {
  const newlyFinished = p.finished - p.finishedBefore;
  if (newlyFinished <= 0 || p.sinceBeforeMs <= 0) return undefined;
  return ((p.total - p.finished) * p.sinceBeforeMs) / newlyFinished;
}

/** Adaptive backoff: quicker while items finish, slower while nothing moves, within bounds. */
export function nextPollDelayMs(
  previousMs: number,
  progressed: boolean,
  settings: { pollMinDelayMs: number; pollMaxDelayMs: number },
): number {
  const next = progressed ? previousMs / 2 : previousMs * 2;
  return Math.round(Math.min(settings.pollMaxDelayMs, Math.max(settings.pollMinDelayMs, next)));
}

export async function pollBatch(
  deps: PipelineDeps,
  jobId: string,
  opts: { previousDelayMs?: number; signal?: AbortSignal } = {},
): Promise<PollResult> {
  const { sql, api, settings } = deps;
  const startedAt = Date.now();
  const batch = await batchForPoll(sql, jobId);
  if (!batch) {
    deps.log.warn({ event: 'poll.unknown_batch', jobId }, 'poll for a batch that is not recorded; dropped');
    return { jobId, status: 'expired', terminal: true, ...NOTHING_CHANGED };
  }
  if (isTerminalStatus(batch.status)) return { jobId, status: batch.status, terminal: true, ...NOTHING_CHANGED };
  const previousDelayMs = opts.previousDelayMs ?? settings.pollInitialDelayMs;
  const later = pollLater(batch, previousDelayMs, settings);
  const notRead = await pollWithoutReading(deps, batch, later);
  if (notRead) return notRead;
  // a transcript job (`--generate-missing`) is read at GET /transcript/{jobId}, not as a batch
  if (batch.mode === 'generate') return pollTranscriptJob(deps, batch, opts);
  // a crawl is read at GET /web/crawl/{jobId}; a sync's scrapes have no job upstream
  if (batch.mode === 'crawl') return pollCrawl(deps, batch, opts);
  // a media sync's metadata reads have no job upstream either: the sync records their end itself
  // (a sync of 1 000 items runs for minutes; asking GET /videosite/batch/media:N would answer 404)
  if (batch.mode === 'media') return later;

  // read before the answer is opened: once open, its bytes must be consumed as they come (a
  // connection that breaks takes the bytes undici buffered but we had not read with it)
  const known = await knownItemStates(sql, jobId);
  // one poll never runs past its deadline; a shutdown (opts.signal) stops it too
  const deadline = AbortSignal.timeout(settings.pollMaxDurationMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, deadline]) : deadline;
  let stream;
  try {
    stream = await api.openBatch(jobId, { signal });
  } catch (e: unknown) {
    if (opts.signal?.aborted || e instanceof LimitExceededError || !(e instanceof ApiError)) throw e;
    return refusedAnswer(deps, batch, e, later);
  }
  // the answer describes the batch as of about now
  const answeredAt = Date.now();
  const result: PollResult = { jobId, status: batch.status, terminal: false, ...NOTHING_CHANGED };
  const { rawHead, readError } = await landAnswerItems(deps, batch, stream.body, known, result);
  if (opts.signal?.aborted) throw readError ?? new Error('poll aborted by shutdown');

  const polls = batch.polls + 1;
  const parsedHead = rawHead && rawHead.sawResults ? LiberalBatchHeadSchema.safeParse(rawHead) : undefined;
  if (readError !== undefined || !parsedHead?.success) {
    const why = incompleteAnswerReason(readError, deadline.aborted, rawHead, parsedHead, settings);
    return recordIncompleteAnswer(deps, batch, result, why, previousDelayMs);
  }
  const h = parsedHead.data;
  const reading = readHead(h);
  await recordAnswerHead(deps, batch, h, reading, result);
  if (result.terminal) {
    // observed usage after the batch (reading /me is free): what status reports as spent
    await takeCreditSnapshot(deps, batch.sourceId, 'after-batch').catch((err: unknown) =>
      deps.log.warn({ event: 'credits.read_failed', jobId, err }, 'could not read /me after the batch'),
    );
  } else {
    await scheduleNextRead(deps, batch, h, reading, result, { previousDelayMs, startedAt, answeredAt });
  }
  logPolled(deps, result, h, polls, startedAt);
  return result;
}

const NOTHING_CHANGED = { landed: 0, sunk: 0, changed: 0, duplicates: 0, quarantined: 0 } as const;

/** The result of a poll that read nothing: polled again after the backoff's next delay. */
function pollLater(batch: PolledBatch, previousDelayMs: number, settings: PipelineDeps['settings']): PollResult {
  return {
    jobId: batch.jobId,
    status: batch.status,
    terminal: false,
    ...NOTHING_CHANGED,
    nextDelayMs: nextPollDelayMs(previousDelayMs, false, settings),
  };
}

/** A poll that must not read the batch now: the key is held, or the batch is too old (ended here). */
async function pollWithoutReading(
  deps: PipelineDeps,
  batch: PolledBatch,
  later: PollResult,
): Promise<PollResult | undefined> {
  const { settings } = deps;
  // the key is refused: no call until the hold is lifted; the poll waits, unharmed
  if ((await holdsApplying(deps)).some((h) => h.scope === 'all')) {
    return { ...later, nextDelayMs: settings.pollMaxDelayMs };
  }
  if (batch.ageMs > settings.batchMaxAgeMs) {
    return endBatch(
      deps,
      batch,
      'expired',
      LOCAL_BATCH_END_CODES.maxAge,
      `in flight for ${Math.round(batch.ageMs / 3_600_000)} h, longer than BATCH_MAX_AGE_MS (${settings.batchMaxAgeMs} ms): expired locally`,
    );
  }
  return undefined;
}

type KnownItems = Map<string, { state: ItemState; errorCode: string | null }>;

async function knownItemStates(sql: PipelineDeps['sql'], jobId: string): Promise<KnownItems> {
  const known: KnownItems = new Map();
  for (const r of await itemStates(sql, jobId)) known.set(r.videoId, { state: r.state, errorCode: r.errorCode });
  return known;
}

/**
 * Streams the answer and lands its newly finished items, a chunk per transaction, counting them
 * in `result`. An answer that breaks off keeps what landed (`readError` says why); a lost
 * database connection throws.
 */
async function landAnswerItems(
  deps: PipelineDeps,
  batch: PolledBatch,
  body: BatchStream['body'],
  known: KnownItems,
  result: PollResult,
): Promise<{ rawHead: RawBatchHead | undefined; readError: unknown }> {
  const { settings } = deps;
  const answer: AnswerSeen = { seen: new Set<string>(), known };
  const rowBatch: RowBatch = { jobId: batch.jobId, kind: batch.kind, mode: batch.mode };
  const writer = chunkWriter(deps, batch, result);
  let rawHead: RawBatchHead | undefined;
  let readError: unknown;
  try {
    const gen = readBatchItems(body, {
      maxItemBytes: settings.itemMaxBytes,
      skip: (id) => {
        if (answer.seen.has(id) || !recordedForGood(answer, id)) return false;
        answer.seen.add(id);
        return true;
      },
    });
    for (;;) {
      const next = await gen.next();
      if (next.done) {
        rawHead = next.value;
        break;
      }
      const landing = itemToLand(next.value, answer, batch.kind, settings.itemMaxBytes, result);
      if (landing) await writer.add(prepareItem(rowBatch, landing.row, landing.validated));
    }
    await writer.settle();
  } catch (e: unknown) {
    if (isConnectionLost(e)) {
      // no transaction of this poll left running behind its caller
      await writer.abandon();
      throw e;
    }
    readError = e;
    body.destroy();
    // the items read whole before the break are as good as any: keep them
    await writer.settle();
  }
  return { rawHead, readError };
}

/** The videoIds this answer has shown so far, and the items' states before this poll. */
interface AnswerSeen {
  seen: Set<string>;
  known: KnownItems;
}

/**
 * Every poll reads the whole answer again: an item already recorded for good (most of a big
 * batch's answer, late in its life) is dropped unparsed.
 */
function recordedForGood(answer: AnswerSeen, id: string): boolean {
  const recorded = answer.known.get(id);
  return recorded !== undefined && isFinalItemState(recorded.state);
}

/**
 * What one element of the answer lands as, or undefined when there is nothing to write: it was
 * recorded for good before, it is unchanged, or it repeats a repeat. A repeated videoId is
 * counted in `result.duplicates`. Exported for its unit test.
 */
export function itemToLand(
  item: RawBatchItem,
  answer: AnswerSeen,
  kind: BatchKind,
  itemMaxBytes: number,
  result: Pick<PollResult, 'duplicates'>,
): { row: LandItem; validated: BatchItem | undefined } | undefined {
  const { seen, known } = answer;
  const { value: raw, raw: text, index: i, oversize } = item;
  // (an answer whose items do not start with their videoId: skipped here, before validation)
  const leadingId = oversize
    ? oversize.videoId
    : typeof (raw as { videoId?: unknown } | null)?.videoId === 'string'
      ? (raw as { videoId: string }).videoId
      : undefined;
  if (leadingId !== undefined && !seen.has(leadingId) && recordedForGood(answer, leadingId)) {
    seen.add(leadingId);
    return undefined;
  }
  let row: LandItem;
  let validated: BatchItem | undefined;
  if (oversize) {
    row = {
      videoId: oversize.videoId ?? `#${i}`,
      state: 'quarantined',
      errorCode: null,
      payload: undefined,
      payloadRaw: text,
      reason: `item of ${oversize.bytes} bytes is larger than ITEM_MAX_BYTES (${itemMaxBytes}): not parsed; payload_raw holds its first bytes`,
      reasonCode: 'too-large',
    };
  } else {
    ({ item: row, validated } = toLandItem(raw, i, kind, text));
  }
  if (seen.has(row.videoId)) {
    // a repeated videoId: the first copy is the item; a repeat is kept raw beside it (under
    // `<videoId>#<index>`), set aside for a human, never dropped: it may differ from the first
    result.duplicates++;
    row = {
      ...row,
      videoId: `${row.videoId}#${i}`,
      state: 'quarantined',
      errorCode: null,
      reason: `videoId ${JSON.stringify(row.videoId)} repeated in the answer (item #${i}); the first copy is the item`,
      reasonCode: 'duplicate',
    };
    if (seen.has(row.videoId)) return undefined;
  }
  seen.add(row.videoId);
  const before = known.get(row.videoId);
  // only an unfinished (or set-aside) item can still change: a landed copy is never
  // replaced, a recorded error is final for this batch; an unchanged one is not rewritten
  if (before && isFinalItemState(before.state)) return undefined;
  if (before && before.state === row.state && before.errorCode === row.errorCode) return undefined;
  return { row, validated };
}

interface ChunkWriter {
  /** Buffers an item; writes the buffer once it reaches LAND_CHUNK_ITEMS items or LAND_CHUNK_MAX_CHARS. */
  add(item: PreparedItem): Promise<void>;
  /** The buffer written and every write committed. */
  settle(): Promise<void>;
  /** Waits for the write under way, whatever its end. */
  abandon(): Promise<void>;
}

/**
 * One chunk is written while the next is read and parsed (issue #12: parsing and writing took
 * about as long each, one after the other). Still one transaction at a time, on one connection,
 * and two chunks in memory at most: a chunk starts once the one before committed.
 */
function chunkWriter(deps: PipelineDeps, batch: PolledBatch, result: PollResult): ChunkWriter {
  let buffer: PreparedItem[] = [];
  let bufferChars = 0;
  let writing: Promise<void> = Promise.resolve();
  const store = async (items: PreparedItem[]) => {
    const attributes = { 'videosite.job_id': batch.jobId, 'videosite.items': items.length };
    for (const w of await withSpan('land_chunk', attributes, () => storeChunk(deps, batch, items))) {
      result.changed++;
      if (isDelivered(w.state)) result.landed++;
      if (w.state === 'sunk') result.sunk++;
      if (w.state === 'quarantined') result.quarantined++;
    }
  };
  const flush = async () => {
    if (buffer.length === 0) return;
    const previous = writing;
    writing = Promise.resolve();
    // a failed write throws here, with this chunk still in the buffer
    await previous;
    const items = buffer;
    buffer = [];
    bufferChars = 0;
    writing = store(items);
    // rejections are taken up by the next flush or by settle()
    writing.catch(() => undefined);
  };
  return {
    add: async (prepared) => {
      buffer.push(prepared);
      bufferChars += (prepared.record.json ?? prepared.record.raw ?? '').length;
      if (buffer.length >= deps.settings.landChunkSize || bufferChars >= LAND_CHUNK_MAX_CHARS) await flush();
    },
    settle: async () => {
      await flush();
      const last = writing;
      writing = Promise.resolve();
      await last;
    },
    abandon: () => writing.catch(() => undefined),
  };
}

/** Why an answer was not read to its end, in words for `batches.reason` and the log. */
function incompleteAnswerReason(
  readError: unknown,
  timedOut: boolean,
  rawHead: RawBatchHead | undefined,
  parsedHead: ReturnType<typeof LiberalBatchHeadSchema.safeParse> | undefined,
  settings: { pollMaxDurationMs: number },
): string {
  if (readError !== undefined) {
    return timedOut
      ? `the answer took longer than POLL_MAX_DURATION_MS (${settings.pollMaxDurationMs} ms) to read`
      : `the answer broke off: ${readError instanceof Error ? readError.message : String(readError)}`;
  }
  return !rawHead?.sawResults
    ? 'the answer has no results array'
    : `the answer's head does not match the interface: ${parsedHead?.error?.issues[0]?.message ?? 'invalid'}`;
}

/** An answer not read to its end: what landed stays, the batch is read again after the backoff. */
async function recordIncompleteAnswer(
  deps: PipelineDeps,
  batch: PolledBatch,
  result: PollResult,
  why: string,
  previousDelayMs: number,
): Promise<PollResult> {
  const { jobId } = batch;
  const polls = batch.polls + 1;
  await recordIncompletePoll(
    deps.sql,
    jobId,
    polls,
    clip(`poll ${polls}: ${why}; ${result.landed} item(s) landed, the rest is read next time`),
  );
  deps.log.warn(
    { event: 'poll.incomplete', jobId, landed: result.landed, changed: result.changed, polls, reason: why },
    'batch answer incomplete: kept what landed',
  );
  return { ...result, nextDelayMs: nextPollDelayMs(previousDelayMs, result.changed > 0, deps.settings) };
}

/**
 * Records what the answer's head says in the batch row, in one transaction with the items left
 * unfinished at a terminal status (retryable); sets `result.status` and `result.terminal`.
 */
async function recordAnswerHead(
  deps: PipelineDeps,
  batch: PolledBatch,
  h: LiberalBatchHead,
  reading: HeadReading,
  result: PollResult,
): Promise<void> {
  const { jobId } = batch;
  const status: BatchStatus = reading.status ?? batch.status;
  const stats = h.stats ?? {};
  await deps.sql.begin(async (tx) => {
    if (reading.terminal) {
      // unfinished at the end: a later submission may still deliver them
      const marked = await markUnfinishedRetryable(tx, jobId, UNFINISHED_AT_END_CODE);
      if (marked.length > 0) {
        await recordOutcomes(
          tx,
          { jobId: batch.jobId, kind: batch.kind, lang: batch.lang },
          marked.map((videoId) => ({ videoId, state: 'retryable', errorCode: UNFINISHED_AT_END_CODE })),
          deps.settings.transcriptRecheckMs,
        );
        result.changed += marked.length;
      }
    }
    // a batch that expands a playlist or channel upstream costs 1 + what it found, not its estimate
    const request = batch.request as { playlistId?: unknown; channelId?: unknown };
    const fromSource = request.playlistId !== undefined || request.channelId !== undefined;
    const total = stats.total ?? null;
    await recordPollAnswer(tx, jobId, {
      status,
      upstreamStatus: h.status,
      errorCode: h.errorCode ?? null,
      total,
      succeeded: stats.succeeded ?? null,
      failed: stats.failed ?? null,
      creditsEstimated: fromSource && total !== null && total > 0 ? 1 + total : null,
      polls: batch.polls + 1,
      reason:
        reading.unknownStatus !== null
          ? `status ${JSON.stringify(reading.unknownStatus)} is not one this interface version lists: still polled`
          : null,
      completedAt: storableDate(h.completedAt),
      terminal: reading.terminal,
    });
  });
  result.status = status;
  result.terminal = reading.terminal;
}

/** A batch still in flight: when to read it next (`result.nextDelayMs`, `result.readAgainNow`), recorded. */
async function scheduleNextRead(
  deps: PipelineDeps,
  batch: PolledBatch,
  h: LiberalBatchHead,
  reading: HeadReading,
  result: PollResult,
  times: { previousDelayMs: number; startedAt: number; answeredAt: number },
): Promise<void> {
  const { settings } = deps;
  const { previousDelayMs, startedAt, answeredAt } = times;
  const stats = h.stats ?? {};
  const now = Date.now();
  const progress: PollProgress | undefined =
    reading.unknownStatus === null && stats.total !== undefined
      ? {
          status: result.status,
          total: stats.total,
          finished: (stats.succeeded ?? 0) + (stats.failed ?? 0),
          finishedBefore: batch.finishedBefore,
          sinceBeforeMs: batch.sincePreviousMs + (answeredAt - startedAt),
          sinceAnswerMs: now - answeredAt,
          pollMs: now - startedAt,
        }
      : undefined;
  result.nextDelayMs = progress
    ? planNextPollMs(previousDelayMs, progress, settings)
    : nextPollDelayMs(previousDelayMs, result.changed > 0, settings);
  result.readAgainNow = progress !== undefined && dueAgainNow(progress, settings);
  await scheduleNextPoll(deps.sql, batch.jobId, result.nextDelayMs);
  if (reading.unknownStatus !== null) {
    deps.log.warn(
      {
        event: 'poll.unknown_status',
        jobId: batch.jobId,
        upstreamStatus: reading.unknownStatus,
        landed: result.landed,
      },
      'batch status unknown to this interface version: still polled',
    );
  }
}

function logPolled(
  deps: PipelineDeps,
  result: PollResult,
  h: LiberalBatchHead,
  polls: number,
  startedAt: number,
): void {
  const stats = h.stats ?? {};
  deps.log.info(
    {
      event: 'poll.landed',
      jobId: result.jobId,
      status: result.status,
      landed: result.landed,
      sunk: result.sunk,
      changed: result.changed,
      polls,
      quarantined: result.quarantined,
      duplicates: result.duplicates,
      // what the answer said: how far the batch is (the benchmark's landing-lag figure reads these)
      total: stats.total,
      finished: (stats.succeeded ?? 0) + (stats.failed ?? 0),
      // how long the poll took, from its start (the fault scenarios tell a poll begun after a fault by it)
      ms: Date.now() - startedAt,
    },
    'batch polled',
  );
}

function clip(s: string): string {
  return s.length > REASON_MAX_CHARS ? `${s.slice(0, REASON_MAX_CHARS - 1)}…` : s;
}

/**
 * The poll was answered with an error. Nothing here pays again on a moment's trouble: a JSON
 * `not-found` expires the batch only when such answers span BATCH_NOT_FOUND_CONFIRM_MS; a 401, or
 * a 403 that is not the API's own answer (a gateway's), is a hold only when a free `/me` is
 * refused too; anything else is polled again later (the batch ends at BATCH_MAX_AGE_MS at worst).
 */
async function refusedAnswer(
  deps: PipelineDeps,
  batch: PolledBatch,
  e: ApiError,
  later: PollResult,
): Promise<PollResult> {
  const { sql, api, log, settings } = deps;
  const jobId = batch.jobId;
  if (e instanceof NotFoundError && e.rawBody === undefined) {
    const spanMs = await recordNotFound(sql, jobId, clip(`the API answered not-found: ${e.message}`));
    if (spanMs >= settings.batchNotFoundConfirmMs) {
      return endBatch(
        deps,
        batch,
        'expired',
        LOCAL_BATCH_END_CODES.notFound,
        `the API answered not-found on every poll for ${Math.round(spanMs / 1000)} s (BATCH_NOT_FOUND_CONFIRM_MS ${settings.batchNotFoundConfirmMs} ms): it no longer knows the job`,
      );
    }
    log.warn(
      { event: 'poll.not_found', jobId, notFoundForMs: Math.round(spanMs), confirmMs: settings.batchNotFoundConfirmMs },
      'batch not found upstream: confirming before expiring it',
    );
    // come back when the confirmation window ends, if that is sooner (whole ms: a job payload)
    const untilConfirmedMs = Math.ceil(settings.batchNotFoundConfirmMs - spanMs);
    return {
      ...later,
      nextDelayMs: Math.min(
        later.nextDelayMs ?? settings.pollMaxDelayMs,
        Math.max(settings.pollMinDelayMs, untilConfirmedMs),
      ),
    };
  }
  if (e instanceof UnauthorizedError || e instanceof GatewayForbiddenError) {
    let confirmed = false;
    try {
      await api.me();
    } catch (meErr: unknown) {
      confirmed = meRefusesKey(meErr);
    }
    if (confirmed) {
      await recordHold(deps, 'unauthorized', e.message, { jobId });
      await recordPollHeld(sql, jobId, clip(`polls held: ${e.message}`));
      return { ...later, nextDelayMs: settings.pollMaxDelayMs };
    }
  }
  await recordRefusedPoll(sql, jobId, clip(`poll answered ${e.code}: ${e.message}; polled again`));
  log.warn(
    { event: 'poll.refused', jobId, code: e.code, status: e.status, nextDelayMs: later.nextDelayMs },
    'batch poll refused: polled again later',
  );
  return later;
}

/**
 * A poll attempt threw (not an answer understood above): counted; past POLL_FAILURES_MAX in a row
 * the batch is marked `failed` with the reason, so reconcile stops reviving it (a poll that
 * works resets the count). A lost database connection is not counted (nothing could be).
 */
export async function recordPollFailure(deps: PipelineDeps, jobId: string, e: unknown): Promise<{ failed: boolean }> {
  const message = e instanceof Error ? e.message : String(e);
  const failures = await countPollFailure(deps.sql, jobId, clip(`poll failed: ${message}`));
  if (failures === undefined || failures < POLL_FAILURES_MAX) return { failed: false };
  const batch = await batchForPoll(deps.sql, jobId);
  if (!batch) return { failed: false };
  await endBatch(
    deps,
    batch,
    'failed',
    LOCAL_BATCH_END_CODES.pollFailed,
    `polling failed ${failures} times in a row, last: ${message}`,
  );
  return { failed: true };
}

/**
 * `text`: the item's JSON exactly as received, landed as is (numbers keep their digits). Returns
 * the item to land and, when it matched the interface's schema, the validated item (the row is
 * built from it without validating again).
 */
function toLandItem(
  raw: unknown,
  index: number,
  kind: BatchKind,
  text?: string,
): { item: LandItem; validated: BatchItem | undefined } {
  const outcome: ReturnType<typeof classifyRawItem> = classifyRawItem(raw, kind);
  // a number numeric cannot hold (JavaScript read it as Infinity, or as 0): never stored as is
  const hugeNumber = text !== undefined && hasHugeNumberText(text);
  const badNumber = hugeNumber ? findUnstorableNumber(text) : undefined;
  if (badNumber !== undefined) {
    outcome.state = 'quarantined';
    outcome.reason = `holds a number out of the range Postgres numeric stores (${badNumber}); payload_raw keeps the received text`;
    outcome.reasonCode = 'unstorable';
  }
  const videoId =
    outcome.item?.videoId ??
    (raw !== null && typeof raw === 'object' && typeof (raw as { videoId?: unknown }).videoId === 'string'
      ? (raw as { videoId: string }).videoId
      : `#${index}`);
  return {
    item: {
      videoId,
      state: outcome.state,
      errorCode: outcome.errorCode,
      payload: raw,
      payloadRaw: text,
      reason: outcome.reason,
      reasonCode: outcome.reasonCode,
      hugeNumber,
      // the stream decoded the item's bytes as UTF-8, and JSON.parse accepted them
      decodedText: text !== undefined,
    },
    validated: outcome.item,
  };
}

/**
 * The batch ends here without the upstream saying so (confirmed not-found, too old, polling
 * failed for good). What had not landed becomes retryable (re-submitted within the attempt cap).
 */
async function endBatch(
  deps: PipelineDeps,
  batch: Pick<PolledBatch, 'jobId' | 'kind' | 'lang'>,
  status: 'expired' | 'failed',
  errorCode: string,
  reason: string,
): Promise<PollResult> {
  const { sql, settings } = deps;
  let changed = 0;
  await sql.begin(async (tx) => {
    const marked = await markUnfinishedRetryable(tx, batch.jobId, UNFINISHED_AT_END_CODE);
    changed = marked.length;
    await recordOutcomes(
      tx,
      { jobId: batch.jobId, kind: batch.kind, lang: batch.lang },
      marked.map((videoId) => ({ videoId, state: 'retryable', errorCode: UNFINISHED_AT_END_CODE })),
      settings.transcriptRecheckMs,
    );
    await endBatchLocally(tx, batch.jobId, { status, errorCode, reason: clip(reason) });
  });
  deps.log.warn(
    { event: 'batch.ended', jobId: batch.jobId, status, errorCode, retryable: changed, reason },
    'batch ended locally',
  );
  return { jobId: batch.jobId, status, terminal: true, landed: 0, sunk: 0, changed, duplicates: 0, quarantined: 0 };
}
