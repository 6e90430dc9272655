/**
 * BullMQ workers for the three queue roles (the `webhooks` role is no queue:
 * src/pipeline/services/webhook-delivery.ts; the poller and sink roles also run the search indexer,
 * src/pipeline/services/search-index.ts). Each validates its payload, runs one pipeline step, and turns the
 * step's errors into what BullMQ should do with the job:
 *
 * - a 429 pauses every process's API calls for the Retry-After window (shared limiter) and the
 *   queue (`rateLimit`), and the job goes back without burning an attempt;
 * - a permanent error (bad payload, auth, plan, a source that no longer exists) fails the job at
 *   once (`UnrecoverableError`);
 * - a read-only database (25006: a standby, `default_transaction_read_only`) pauses the job's queue
 *   for READ_ONLY_RETRY_MS (`rateLimit`, every process's workers of that queue) and the job goes
 *   back without burning an attempt, nor a poll failure; the queue resumes by itself once writes work;
 * - anything else is retried with exponential backoff (DEFAULT_JOB_OPTIONS in src/queues/queues.ts).
 *
 * While the schema gate (schema-gate.ts) finds a newer migration not marked backward-compatible,
 * cron ticks queue nothing and syncs do not run: no new submission from this build.
 *
 * A poll job re-schedules itself (`moveToDelayed`) until its batch is terminal, so one job ID
 * stands for one batch for its whole life; a poll that ran past its batch's expected end reads it
 * once more in the same turn (poller.ts `dueAgainNow`). A schedule job is either a cron tick,
 * which only queues the syncs of the sources on its cron pattern, each at the source's offset in
 * the jitter window (ticks.ts), or a sync.
 */
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { RedisClient } from '../../queues/connection.ts';
import { ApiError, LimitExceededError } from '../../api/errors.ts';
import { SourceNotFoundError } from '../../db/sources.ts';
import { QUEUE_POLL, QUEUE_SCHEDULE, QUEUE_SINK } from '../../queues/names.ts';
import {
  PayloadError,
  parsePayload,
  PollJobSchema,
  SinkJobSchema,
  SyncJobSchema,
  TickJobSchema,
} from '../../queues/payloads.ts';
import type { Logger } from '../../log.ts';
import type { PipelineDeps } from '../deps.ts';
import { PERMANENT_API_CODES } from '../../domain/refusals.ts';
import { pollBatch, recordPollFailure } from '../ingest/poll-batch.ts';
import { isConnectionLost } from '../../db/connection.ts';
import { isReadOnlyError } from '../../db/pg-errors.ts';
import type { SchemaGate } from './schema-gate.ts';
import { syncSource } from '../ingest/sync-source.ts';
import { sinkBatch } from '../ingest/sink.ts';
import { queueCronTick, queueTickSync } from './cron-ticks.ts';
import { startEmbedder } from './embedder.ts';
import { startSearchIndexer } from './search-index.ts';
import { startWebhookDelivery } from './webhook-delivery.ts';
import { withSpan, withTraceParent } from '../../tracing.ts';

export const ROLES = ['scheduler', 'poller', 'sink', 'webhooks'] as const;
export type Role = (typeof ROLES)[number];

/** Pause when a 429 carries no Retry-After. */
export const RATE_LIMIT_DEFAULT_PAUSE_MS = 30_000;
/** After the grace period, how long a forced close may take (an unreachable Redis never answers). */
export const FORCE_CLOSE_WAIT_MS = 1_000;
/** Wait before a worker's main loop retries after a Redis connection error. */
export const WORKER_RUN_RETRY_MS = 2_000;
/** Times a job may lose its worker before BullMQ fails it; reconcile re-creates it then. */
export const MAX_STALLED_COUNT = 10;
/**
 * How long a queue pauses after a job met a read-only database, ms. A promoted standby or a
 * switched-back setting takes seconds; each retry costs one failed write, nothing upstream.
 */
export const READ_ONLY_RETRY_MS = 5_000;

export interface WorkerSet {
  workers: Worker[];
  /** Stop taking jobs, let running ones finish (or return them) within `timeoutMs`, close. */
  close(timeoutMs?: number): Promise<void>;
}

export interface StartWorkersOptions {
  roles: readonly Role[];
  /** a Redis connection for the workers (BullMQ duplicates it per worker) */
  connection: RedisClient;
  /** when given, cron ticks and syncs run only while it allows scheduling (rolling upgrades) */
  schemaGate?: SchemaGate;
}

export function startWorkers(deps: PipelineDeps, opts: StartWorkersOptions): WorkerSet {
  const { settings } = deps;
  const base = workerOptions(deps, opts.connection);
  // set when close() starts: long steps stop at their next safe point and hand the job back
  const stopping = new AbortController();
  const ctx: WorkerContext = { deps, signal: stopping.signal, schemaGate: opts.schemaGate };
  const workers: Worker[] = [];
  if (opts.roles.includes('scheduler')) {
    const w: Worker = new Worker(QUEUE_SCHEDULE, (job: Job) => runScheduleJob(ctx, w, job), {
      ...base,
      concurrency: settings.scheduleConcurrency,
    });
    workers.push(w);
  }
  if (opts.roles.includes('poller')) {
    const w: Worker = new Worker(QUEUE_POLL, (job: Job, token?: string) => runPollJob(ctx, w, job, token), {
      ...base,
      concurrency: settings.pollConcurrency,
    });
    workers.push(w);
  }
  if (opts.roles.includes('sink')) {
    const w: Worker = new Worker(QUEUE_SINK, (job: Job, token?: string) => runSinkJob(ctx, w, job, token), {
      ...base,
      concurrency: settings.sinkConcurrency,
    });
    workers.push(w);
  }
  // not a queue: webhook delivery reads Postgres only (src/pipeline/services/webhook-delivery.ts)
  const webhooks = opts.roles.includes('webhooks') ? startWebhookDelivery(deps) : undefined;
  // nor is the search indexer: it cuts the passages of what the polls and sinks stored (in
  // every process that stores transcripts, so no deployment of roles is left without one)
  const searchIndexer =
    opts.roles.includes('poller') || opts.roles.includes('sink')
      ? startSearchIndexer({ ...deps, passages: deps.settings.passages })
      : undefined;
  // beside it, the embedder keeps the passages' vectors current (EMBEDDINGS_BASE_URL set)
  const embedder =
    searchIndexer !== undefined && deps.embeddings !== undefined
      ? startEmbedder({ ...deps, embeddings: deps.embeddings })
      : undefined;
  for (const w of workers) logWorkerEvents(deps.log, w);

  return {
    workers,
    close: (timeoutMs = settings.shutdownGraceMs) =>
      closeWorkers(deps.log, { stopping, workers, others: [webhooks, searchIndexer, embedder] }, timeoutMs),
  };
}

/** What the job handlers of one process share. */
interface WorkerContext {
  deps: PipelineDeps;
  /** aborted when close() starts */
  signal: AbortSignal;
  schemaGate: SchemaGate | undefined;
}

/** The BullMQ options every worker of a process takes. */
function workerOptions(deps: PipelineDeps, connection: RedisClient) {
  const { settings, queues } = deps;
  return {
    connection,
    prefix: queues.prefix,
    lockDuration: settings.jobLockDurationMs,
    // a job whose worker died (lock expired) goes back to wait at the next check; every step is
    // idempotent, so running it again is safe, and a job that keeps killing its worker must not
    // fail as "stalled more than allowable limit" while attempts remain (reconcile revives it
    // from Postgres anyway when it does)
    stalledInterval: settings.jobStalledCheckMs,
    maxStalledCount: MAX_STALLED_COUNT,
    // after a Redis connection error, try again soon (BullMQ waits 15 s): back to work seconds
    // after an outage ends. BullMQ documents the option as internal, but its worker (6.x) reads
    // it for every retry of a failed Redis call (fetching, completing and failing jobs).
    runRetryDelay: WORKER_RUN_RETRY_MS,
  };
}

/** Put a job back in the queue without burning an attempt: another worker takes it up. */
async function handBack(log: Logger, job: Job, token: string | undefined, what: string): Promise<never> {
  await job.moveToDelayed(Date.now(), token);
  log.info(
    { event: 'job.handed_back', queue: job.queueName, bullJobId: job.id },
    `${what} interrupted by shutdown: job handed back`,
  );
  throw new DelayedError();
}

async function rateLimited(deps: PipelineDeps, worker: Worker, e: LimitExceededError): Promise<never> {
  const ms = e.retryAfterMs ?? RATE_LIMIT_DEFAULT_PAUSE_MS;
  if (deps.limiter) await deps.limiter.pauseFor(ms);
  await worker.rateLimit(ms);
  deps.log.warn({ event: 'rate_limit.paused', endpoint: e.endpoint, pauseMs: ms }, 'upstream rate limit: paused');
  throw Worker.RateLimitError();
}

/**
 * The database refuses writes: pause this queue in every process (BullMQ's manual rate limit)
 * and put the job back without an attempt. Nothing was written (the transaction rolled back),
 * and the step runs again unchanged once writes work.
 */
async function readOnly(log: Logger, worker: Worker, job: Job): Promise<never> {
  await worker.rateLimit(READ_ONLY_RETRY_MS);
  log.warn(
    { event: 'db.read_only', queue: job.queueName, bullJobId: job.id, retryInMs: READ_ONLY_RETRY_MS },
    'database is read-only: job put back, queue paused',
  );
  throw Worker.RateLimitError();
}

/** Why this daemon may not schedule now (a newer, incompatible schema), or undefined. */
function schemaBlocked(gate: SchemaGate | undefined): string[] | undefined {
  const v = gate?.verdict();
  return v?.state === 'newer-incompatible' ? v.incompatible.map((m) => m.tag ?? String(m.createdAt)) : undefined;
}

function classify(e: unknown): never {
  if (e instanceof SourceNotFoundError) throw new UnrecoverableError(e.message);
  if (e instanceof ApiError && PERMANENT_API_CODES.includes(e.code)) throw new UnrecoverableError(e.message);
  throw e;
}

/** A job of the schedule queue: a cron tick (its scheduler fired it) or one source's sync. */
function runScheduleJob(ctx: WorkerContext, w: Worker, job: Job): Promise<unknown> {
  return job.repeatJobKey !== undefined ? runCronTick(ctx, w, job) : runSync(ctx, w, job);
}

/**
 * A cron tick only queues syncs, each at its source's offset (src/pipeline/services/cron-ticks.ts);
 * safe to retry: one sync job per source and tick. A tick of a per-source scheduler from before
 * schedulers were per pattern stands for its one source.
 */
async function runCronTick(ctx: WorkerContext, w: Worker, job: Job): Promise<unknown> {
  const { deps } = ctx;
  const tick = parsePayload(QUEUE_SCHEDULE, TickJobSchema, job.data);
  const blocked = schemaBlocked(ctx.schemaGate);
  if (blocked) {
    deps.log.warn(
      {
        event: 'schedule.schema_blocked',
        ...('cron' in tick ? { cron: tick.cron } : { sourceId: tick.sourceId }),
        incompatible: blocked,
      },
      'cron tick skipped: the schema has a newer migration not marked backward-compatible',
    );
    return { skipped: 'schema-newer', incompatible: blocked };
  }
  try {
    return await ('cron' in tick ? queueCronTick(deps, job, tick.cron) : queueTickSync(deps, job, tick.sourceId));
  } catch (e: unknown) {
    if (isReadOnlyError(e)) return readOnly(deps.log, w, job);
    throw e;
  }
}

async function runSync(ctx: WorkerContext, w: Worker, job: Job): Promise<unknown> {
  const { deps } = ctx;
  const data = parsePayload(QUEUE_SCHEDULE, SyncJobSchema, job.data);
  const blocked = schemaBlocked(ctx.schemaGate);
  if (blocked) {
    deps.log.warn(
      { event: 'schedule.schema_blocked', sourceId: data.sourceId, incompatible: blocked },
      'sync not run: the schema has a newer migration not marked backward-compatible',
    );
    return { skipped: 'schema-newer', incompatible: blocked };
  }
  try {
    const r = await syncSource(deps, data.sourceId, { trigger: data.trigger });
    if (r.outcome === 'in-flight') {
      deps.log.info(
        { event: 'schedule.sync_in_flight', sourceId: data.sourceId, trigger: data.trigger, detail: r.detail },
        'sync found its source busy: nothing submitted',
      );
    }
    return r;
  } catch (e: unknown) {
    // a read-only database: the same sync later is what the next scheduled run would do
    // (it diffs again; a POST already sent is resolved from its intent row, never resent)
    if (isReadOnlyError(e)) return readOnly(deps.log, w, job);
    // a sync is never retried by the queue: a POST whose answer was lost must not be
    // repeated blindly; the next scheduled run diffs again and submits what is missing
    if (e instanceof LimitExceededError && e.retryAfterMs !== undefined && deps.limiter) {
      await deps.limiter.pauseFor(e.retryAfterMs);
    }
    if (e instanceof Error) throw new UnrecoverableError(e.message);
    throw e;
  }
}

/** A job of the poll queue: one poll (two when the batch is past its expected end), then delayed to the next. */
async function runPollJob(ctx: WorkerContext, w: Worker, job: Job, token: string | undefined): Promise<unknown> {
  const { deps, signal } = ctx;
  const data = parsePayload(QUEUE_POLL, PollJobSchema, job.data);
  let r;
  try {
    // each read a span of the trace of the sync that submitted the batch (src/tracing.ts)
    const poll = (previousDelayMs: number | undefined) =>
      withTraceParent(data.trace, () =>
        withSpan('poll', { 'videosite.job_id': data.jobId }, async (span) => {
          const p = await pollBatch(deps, data.jobId, { previousDelayMs, signal });
          span.setAttributes({ 'videosite.batch.status': p.status, 'videosite.items_landed': p.landed });
          return p;
        }),
      );
    r = await poll(data.delayMs);
    // past its expected end: once more now, before the polls that became due meanwhile
    if (!r.terminal && r.readAgainNow && !signal.aborted) r = await poll(r.nextDelayMs);
  } catch (e: unknown) {
    // aborted mid-answer by a shutdown: the poll's transaction rolled back; poll again later
    if (signal.aborted) return handBack(deps.log, job, token, 'poll');
    if (e instanceof LimitExceededError) return rateLimited(deps, w, e);
    // not the batch's fault: no poll failure counted (the count could not be written anyway)
    if (isReadOnlyError(e)) return readOnly(deps.log, w, job);
    // counted in Postgres: a poll that keeps failing ends its batch (failed, with the
    // reason) instead of being revived by reconcile forever
    if (!isConnectionLost(e) && !(e instanceof PayloadError)) {
      const counted = await recordPollFailure(deps, data.jobId, e).catch(() => ({ failed: false }));
      if (counted.failed) return { jobId: data.jobId, status: 'failed', terminal: true };
    }
    return classify(e);
  }
  if (r.terminal) return r;
  const delayMs = r.nextDelayMs ?? deps.settings.pollInitialDelayMs;
  await job.updateData({ ...data, delayMs });
  await job.moveToDelayed(Date.now() + delayMs, token);
  throw new DelayedError();
}

async function runSinkJob(ctx: WorkerContext, w: Worker, job: Job, token: string | undefined): Promise<unknown> {
  const { deps } = ctx;
  const data = parsePayload(QUEUE_SINK, SinkJobSchema, job.data);
  let r;
  try {
    r = await withTraceParent(data.trace, () =>
      withSpan('sink', { 'videosite.job_id': data.jobId }, () => sinkBatch(deps, data.jobId, { signal: ctx.signal })),
    );
  } catch (e: unknown) {
    if (isReadOnlyError(e)) return readOnly(deps.log, w, job);
    return classify(e);
  }
  if (r.interrupted) return handBack(deps.log, job, token, 'sink');
  return r;
}

function logWorkerEvents(log: Logger, w: Worker): void {
  w.on('failed', (job, err) => {
    // a payload that fails its schema fails once, for good: this line is its only report, with the failing path
    const payload = err instanceof PayloadError ? { payloadPath: err.path } : {};
    log.error(
      { event: 'job.failed', queue: w.name, bullJobId: job?.id, attemptsMade: job?.attemptsMade, ...payload, err },
      'job failed',
    );
  });
  w.on('error', (err) => {
    log.error({ event: 'worker.error', queue: w.name, err }, 'worker error');
  });
  w.on('stalled', (jobId) => {
    // its worker died or lost the lock: the job runs again (every step is idempotent)
    log.warn({ event: 'job.stalled', queue: w.name, bullJobId: jobId }, 'job stalled: re-queued');
  });
}

/**
 * Running polls and sinks stop at their next safe point and hand their job back, so a shutdown
 * leaves no job behind locked by a dead worker (a stalled job). A graceful close waits for that;
 * past the grace period (say, Redis unreachable), force it: those jobs' locks then expire and
 * another worker, or reconcile, takes them up again.
 */
async function closeWorkers(
  log: Logger,
  set: { stopping: AbortController; workers: Worker[]; others: ({ stop(): Promise<void> } | undefined)[] },
  timeoutMs: number,
): Promise<void> {
  const { stopping, workers } = set;
  stopping.abort();
  let timer: NodeJS.Timeout | undefined;
  const graceful = Promise.allSettled([...workers.map((w) => w.close()), ...set.others.map((o) => o?.stop())]);
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  const outcome = await Promise.race([graceful, timedOut]);
  if (timer) clearTimeout(timer);
  if (outcome === 'timeout') {
    log.warn({ event: 'worker.forced_close', timeoutMs }, 'workers did not finish in time; forcing close');
    let forceTimer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(workers.map((w) => w.close(true))),
      new Promise((resolve) => {
        forceTimer = setTimeout(resolve, FORCE_CLOSE_WAIT_MS);
      }),
    ]);
    if (forceTimer) clearTimeout(forceTimer);
  }
}
