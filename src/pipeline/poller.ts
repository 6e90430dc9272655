/**
 * The poller: one read of one batch. It streams the answer, lands every newly finished item raw
 * in `batch_items` (in chunks, all in one transaction per poll), updates the batch row, and
 * enqueues sink work for what landed. The landed copy is the source of truth from then on: a
 * later answer that no longer carries a result (`result-unavailable`, expiry) never overwrites it.
 */
import { NotFoundError } from '../api/errors.ts';
import {
  BatchHeadSchema,
  BatchItemSchema,
  formatIssuePath,
  type BatchItem,
  type BatchHead,
} from '../api/schemas.ts';
import type { Queryable } from '../db/connection.ts';
import { landItems, markUnfinishedRetryable, type LandItem, type LandResult } from '../db/items.ts';
import type { BatchKind, BatchStatus, ItemState } from '../db/schema.ts';
import { sinkJobId } from '../queues/names.ts';
import { readBatchStream } from './batch-stream.ts';
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
  const [batch] = await sql<BatchRow[]>`
    select job_id, source_id, kind, lang, status, polls, request from batches where job_id = ${jobId}`;
  if (!batch) {
    log.warn({ jobId }, 'poll for a batch that is not recorded; dropped');
    return { jobId, status: 'expired', terminal: true, landed: 0, changed: 0, duplicates: 0, quarantined: 0 };
  }
  if (TERMINAL_STATUSES.includes(batch.status)) {
    return { jobId, status: batch.status, terminal: true, landed: 0, changed: 0, duplicates: 0, quarantined: 0 };
  }

  let stream;
  try {
    stream = await api.openBatch(jobId, { signal: opts.signal });
  } catch (e: unknown) {
    if (e instanceof NotFoundError) return expireUnknownBatch(deps, batch);
    throw e;
  }

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

    const gen = readBatchStream(stream.body);
    let index = 0;
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
      const raw = next.value;
      const i = index++;
      const row = toLandItem(raw, i, batch.kind);
      if (seen.has(row.videoId)) {
        result.duplicates++;
        continue;
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
    result.nextDelayMs = nextPollDelayMs(previous, result.changed > 0, settings);
    await sql`update batches set next_poll_at = now() + make_interval(secs => ${result.nextDelayMs / 1000}) where job_id = ${jobId}`;
  }
  log.info(
    { jobId, status: result.status, landed: result.landed, changed: result.changed, polls, quarantined: result.quarantined, duplicates: result.duplicates },
    'batch polled',
  );
  return result;
}

function toLandItem(raw: unknown, index: number, kind: BatchKind): LandItem {
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
      reason: `item does not match the interface at ${issue ? formatIssuePath(issue.path) : '(root)'}: ${issue?.message ?? 'invalid'}`,
    };
  }
  const c = classifyItem(parsed.data, kind);
  return { videoId: parsed.data.videoId, state: c.state, errorCode: c.errorCode, payload: raw, reason: c.reason };
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
