/**
 * The poller: one read of one batch. It streams the answer, lands every newly finished item raw
 * in `batch_items` (in chunks, all in one transaction per poll), updates the batch row, and
 * enqueues sink work for what landed. The landed copy is the source of truth from then on: a
 * later answer that no longer carries a result (`result-unavailable`, expiry) never overwrites it.
 */
import { NotFoundError, UnauthorizedError } from '../api/errors.ts';
import {
  BatchHeadSchema,
  BatchItemSchema,
  formatIssuePath,
  type BatchItem,
  type BatchHead,
} from '../api/schemas.ts';
import type { Queryable } from '../db/connection.ts';
import { activeHolds, describeHold, setHold } from '../db/upstream-holds.ts';
import { landItems, markUnfinishedRetryable, type LandItem, type LandResult } from '../db/items.ts';
import type { BatchKind, BatchStatus, ItemState } from '../db/schema.ts';
import { sinkJobId } from '../queues/names.ts';
import { readBatchItems } from './batch-stream.ts';
import type { PipelineDeps } from './deps.ts';
import { takeCreditSnapshot } from './scheduler.ts';

export const TERMINAL_STATUSES: readonly BatchStatus[] = ['completed', 'failed', 'expired'];

/** Item errorCodes that a later submission may fix. */
const RETRYABLE_CODES = new Set(['internal-error', 'limit-exceeded', 'result-unavailable']);

export interface PollResult {
  jobId: string;
  status: BatchStatus;
  terminal: boolean;
  /** items that landed in this poll */
  landed: number;
  /** items whose state changed in this poll (landed, failed, retryable, quarantined) */
  changed: number;
  /** items of the answer that repeated a videoId already seen in it */
  duplicates: number;
  quarantined: number;
  /** the delay before the next poll, when not terminal */
  nextDelayMs?: number;
}

export class BatchHeadError extends Error {
  constructor(jobId: string, path: string, message: string) {
    super(`batch ${jobId}: answer does not match the interface at ${path}: ${message}`);
    this.name = 'BatchHeadError';
  }
}

interface BatchRow {
  job_id: string;
  source_id: number | null;
  kind: BatchKind;
  lang: string | null;
  status: BatchStatus;
  polls: number;
  request: Record<string, unknown>;
  /** items finished per the previous answer (0 before the first) */
  finished_before: number;
  /** ms from the previous answer (or the submission) to the start of this poll, on the database's clock */
  since_previous_ms: number;
}

/** The state an item's errorCode (and payload) puts it in. */
export function classifyItem(item: BatchItem, kind: BatchKind): { state: ItemState; errorCode: string | null; reason?: string } {
  const code = item.errorCode ?? null;
  if (code === null) {
    const payload = kind === 'video' ? item.video : item.transcript;
    if (payload === undefined || payload === null) {
      return { state: 'quarantined', errorCode: null, reason: `no ${kind} and no errorCode` };
    }
    return { state: 'landed', errorCode: null };
  }
  if (code === 'processing') return { state: 'processing', errorCode: code };
  if (RETRYABLE_CODES.has(code)) return { state: 'retryable', errorCode: code };
  return { state: 'failed', errorCode: code };
}

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
  let next = Math.min(settings.pollLandWithinMs / 2 - p.pollMs, settings.pollLandWithinMs - 3 * p.pollMs) - POLL_LAND_MARGIN_MS;
  const newlyFinished = p.finished - p.finishedBefore;
  if (newlyFinished > 0 && p.sinceBeforeMs > 0) {
    const etaMs = ((p.total - p.finished) * p.sinceBeforeMs) / newlyFinished;
    next = Math.min(next, etaMs - p.sinceAnswerMs + POLL_ETA_MARGIN_MS);
  } else {
    // running but no progress seen since the previous answer: back off, within the budget
    next = Math.min(next, previousDelayMs * 2);
  }
  return bounded(next);
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
  const { sql, api, log, settings } = deps;
  const startedAt = Date.now();
  const [batch] = await sql<BatchRow[]>`
    select job_id, source_id, kind, lang, status, polls, request,
      coalesce(succeeded, 0) + coalesce(failed, 0) as finished_before,
      (extract(epoch from clock_timestamp() - coalesce(last_polled_at, submitted_at)) * 1000)::float8 as since_previous_ms
    from batches where job_id = ${jobId}`;
  if (!batch) {
    log.warn({ jobId }, 'poll for a batch that is not recorded; dropped');
    return { jobId, status: 'expired', terminal: true, landed: 0, changed: 0, duplicates: 0, quarantined: 0 };
  }
  if (TERMINAL_STATUSES.includes(batch.status)) {
    return { jobId, status: batch.status, terminal: true, landed: 0, changed: 0, duplicates: 0, quarantined: 0 };
  }
  // the key is refused: no call until a person clears the hold; the poll waits, unharmed
  const held = { jobId, status: batch.status, terminal: false, landed: 0, changed: 0, duplicates: 0, quarantined: 0, nextDelayMs: settings.pollMaxDelayMs };
  if ((await activeHolds(sql)).some((h) => h.scope === 'all')) return held;

  let stream;
  try {
    stream = await api.openBatch(jobId, { signal: opts.signal });
  } catch (e: unknown) {
    if (e instanceof NotFoundError) return expireUnknownBatch(deps, batch);
    if (e instanceof UnauthorizedError) {
      if (await setHold(sql, 'unauthorized', e.message)) {
        log.error({ jobId, code: e.code }, describeHold({ code: 'unauthorized', reason: e.message, since: new Date() }));
      }
      return held;
    }
    throw e;
  }
  // the answer describes the batch as of about now
  const answeredAt = Date.now();

  const known = new Map<string, { state: ItemState; errorCode: string | null }>();
  for (const r of await sql<{ video_id: string; state: ItemState; error_code: string | null }[]>`
    select video_id, state, error_code from batch_items where job_id = ${jobId}`) {
    known.set(r.video_id, { state: r.state, errorCode: r.error_code });
  }

  const result: PollResult = { jobId, status: batch.status, terminal: false, landed: 0, changed: 0, duplicates: 0, quarantined: 0 };
  const polls = batch.polls + 1;
  let head: BatchHead | undefined;
  let headError: BatchHeadError | undefined;

  await sql.begin(async (tx) => {
    const seen = new Set<string>();
    let buffer: LandItem[] = [];
    const flush = async () => {
      if (buffer.length === 0) return;
      const rows = buffer;
      buffer = [];
      const written = await writeItems(tx, batch, rows, settings.transcriptRecheckMs);
      for (const w of written) {
        result.changed++;
        if (w.state === 'landed') result.landed++;
        if (w.state === 'quarantined') result.quarantined++;
      }
    };

    // every poll reads the whole answer again: an item already recorded for good (most of a
    // big batch's answer, late in its life) is dropped unparsed
    const final = (id: string) => {
      const recorded = known.get(id);
      return recorded !== undefined && recorded.state !== 'processing' && recorded.state !== 'quarantined';
    };
    const gen = readBatchItems(stream.body, {
      skip: (id) => {
        if (seen.has(id) || !final(id)) return false;
        seen.add(id);
        return true;
      },
    });
    for (;;) {
      const next = await gen.next();
      if (next.done) {
        const parsedHead = BatchHeadSchema.safeParse(next.value);
        if (!parsedHead.success) {
          const issue = parsedHead.error.issues[0];
          headError = new BatchHeadError(jobId, issue ? formatIssuePath(issue.path) : '(root)', issue?.message ?? 'invalid');
        } else if (!next.value.sawResults) {
          headError = new BatchHeadError(jobId, 'results', 'required array is missing');
        } else {
          head = parsedHead.data;
        }
        break;
      }
      const { value: raw, raw: text, index: i } = next.value;
      // (an answer whose items do not start with their videoId: skipped here, before validation)
      const id = typeof (raw as { videoId?: unknown } | null)?.videoId === 'string' ? (raw as { videoId: string }).videoId : undefined;
      if (id !== undefined && !seen.has(id) && final(id)) {
        seen.add(id);
        continue;
      }
      let row = toLandItem(raw, i, batch.kind, text);
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
        };
        if (seen.has(row.videoId)) continue;
      }
      seen.add(row.videoId);
      const before = known.get(row.videoId);
      // only an unfinished (or malformed) item can still change: a landed copy is never
      // replaced, a recorded error is final for this batch; an unchanged one is not rewritten
      if (before && before.state !== 'processing' && before.state !== 'quarantined') continue;
      if (before && before.state === row.state && before.errorCode === row.errorCode) continue;
      buffer.push(row);
      if (buffer.length >= settings.landChunkSize) await flush();
    }
    await flush();
    // items that landed stay landed even when the rest of the answer is malformed
    if (headError) {
      await tx`update batches set polls = ${polls}, last_polled_at = now(), updated_at = now() where job_id = ${jobId}`;
      return;
    }

    const h = head!;
    const status: BatchStatus = h.errorCode === 'job-expired' ? 'expired' : h.status;
    const terminal = TERMINAL_STATUSES.includes(status);
    if (terminal) {
      // unfinished at the end: a later submission may still deliver them
      const marked = await markUnfinishedRetryable(tx, jobId, 'processing');
      if (marked.length > 0) {
        await upsertVideoSync(tx, batch, marked.map((videoId) => ({ videoId, state: 'retryable', errorCode: 'processing' })), settings.transcriptRecheckMs);
        result.changed += marked.length;
      }
    }
    const fromSource = batch.request.playlistId !== undefined || batch.request.channelId !== undefined;
    await tx`
      update batches set
        status = ${status},
        error_code = ${h.errorCode ?? null},
        total = ${h.stats.total}, succeeded = ${h.stats.succeeded}, failed = ${h.stats.failed},
        credits_estimated = case when ${fromSource} and ${h.stats.total} > 0 then 1 + ${h.stats.total} else credits_estimated end,
        polls = ${polls}, last_polled_at = now(),
        completed_at = coalesce(${h.completedAt ?? null}::timestamptz, case when ${terminal} then now() end, completed_at),
        terminal_at = case when ${terminal} then now() else terminal_at end,
        updated_at = now()
      where job_id = ${jobId}`;
    result.status = status;
    result.terminal = terminal;
  });

  if (result.landed > 0) {
    await deps.queues.sink.add('sink', { jobId }, { jobId: sinkJobId(jobId, polls) });
  }
  if (result.terminal) {
    // observed usage after the batch (reading /me is free): what status reports as spent
    await takeCreditSnapshot(deps, batch.source_id, 'after-batch').catch((err: unknown) =>
      log.warn({ jobId, err }, 'could not read /me after the batch'),
    );
  }
  if (headError) {
    log.error({ jobId, err: headError, landed: result.landed }, 'batch answer malformed');
    throw headError;
  }
  if (!result.terminal) {
    const previous = opts.previousDelayMs ?? settings.pollInitialDelayMs;
    const now = Date.now();
    result.nextDelayMs = head
      ? planNextPollMs(
          previous,
          {
            status: head.status,
            total: head.stats.total,
            finished: head.stats.succeeded + head.stats.failed,
            finishedBefore: batch.finished_before,
            sinceBeforeMs: batch.since_previous_ms + (answeredAt - startedAt),
            sinceAnswerMs: now - answeredAt,
            pollMs: now - startedAt,
          },
          settings,
        )
      : nextPollDelayMs(previous, result.changed > 0, settings);
    await sql`update batches set next_poll_at = now() + make_interval(secs => ${result.nextDelayMs / 1000}) where job_id = ${jobId}`;
  }
  log.info(
    {
      jobId, status: result.status, landed: result.landed, changed: result.changed, polls, quarantined: result.quarantined, duplicates: result.duplicates,
      // what the answer said: how far the batch is (the benchmark's landing-lag figure reads these)
      total: head?.stats.total, finished: head ? head.stats.succeeded + head.stats.failed : undefined,
    },
    'batch polled',
  );
  return result;
}

/** `text`: the item's JSON exactly as received, landed as is (numbers keep their digits). */
function toLandItem(raw: unknown, index: number, kind: BatchKind, text?: string): LandItem {
  const parsed = BatchItemSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const videoId =
      raw !== null && typeof raw === 'object' && typeof (raw as { videoId?: unknown }).videoId === 'string'
        ? (raw as { videoId: string }).videoId
        : `#${index}`;
    return {
      videoId,
      state: 'quarantined',
      errorCode: null,
      payload: raw,
      payloadRaw: text,
      reason: `item does not match the interface at ${issue ? formatIssuePath(issue.path) : '(root)'}: ${issue?.message ?? 'invalid'}`,
    };
  }
  const c = classifyItem(parsed.data, kind);
  return { videoId: parsed.data.videoId, state: c.state, errorCode: c.errorCode, payload: raw, payloadRaw: text, reason: c.reason };
}

/** Land items (only unfinished rows change), then the per-video summary and source membership. */
async function writeItems(
  tx: Queryable,
  batch: BatchRow,
  items: LandItem[],
  recheckMs: number,
): Promise<LandResult['rows']> {
  const { rows } = await landItems(tx, batch.job_id, items);
  await upsertVideoSync(
    tx,
    batch,
    rows.filter((r) => r.state !== 'quarantined'),
    recheckMs,
  );
  if (batch.source_id !== null && rows.length > 0) {
    await tx`
      insert into source_videos (source_id, video_id)
      select ${batch.source_id}, v from unnest(${rows.map((r) => r.videoId)}::text[]) as v
      on conflict do nothing`;
  }
  return rows;
}

/** The per-video summary the scheduler diffs against. */
async function upsertVideoSync(
  tx: Queryable,
  batch: Pick<BatchRow, 'job_id' | 'kind' | 'lang'>,
  rows: { videoId: string; state: ItemState; errorCode: string | null }[],
  recheckMs: number,
): Promise<void> {
  if (rows.length === 0) return;
  await tx`
    insert into video_sync (video_id, kind, lang, last_job_id, last_state, last_error_code, attempts, next_check_at, updated_at)
    select r.video_id, ${batch.kind}, ${batch.lang ?? ''}, ${batch.job_id}, r.state, r.error_code, 1,
      case when r.error_code = 'transcript-unavailable' then now() + make_interval(secs => ${recheckMs / 1000}) end,
      now()
    from jsonb_to_recordset(${tx.json(rows.map((r) => ({ video_id: r.videoId, state: r.state, error_code: r.errorCode })) as never)})
      as r(video_id text, state text, error_code text)
    on conflict (video_id, kind, lang) do update set
      attempts = video_sync.attempts + case when video_sync.last_job_id is distinct from excluded.last_job_id then 1 else 0 end,
      last_job_id = excluded.last_job_id, last_state = excluded.last_state,
      last_error_code = excluded.last_error_code, next_check_at = excluded.next_check_at, updated_at = now()`;
}

/** 404 on poll: the API no longer knows the job. What had not landed becomes retryable. */
async function expireUnknownBatch(deps: PipelineDeps, batch: BatchRow): Promise<PollResult> {
  const { sql, settings } = deps;
  let changed = 0;
  await sql.begin(async (tx) => {
    const marked = await markUnfinishedRetryable(tx, batch.job_id, 'processing');
    changed = marked.length;
    await upsertVideoSync(tx, batch, marked.map((videoId) => ({ videoId, state: 'retryable', errorCode: 'processing' })), settings.transcriptRecheckMs);
    await tx`
      update batches set status = 'expired', error_code = 'not-found', polls = polls + 1, last_polled_at = now(),
        terminal_at = now(), updated_at = now()
      where job_id = ${batch.job_id}`;
  });
  deps.log.warn({ jobId: batch.job_id, retryable: changed }, 'batch unknown upstream (404): expired');
  return { jobId: batch.job_id, status: 'expired', terminal: true, landed: 0, changed, duplicates: 0, quarantined: 0 };
}
