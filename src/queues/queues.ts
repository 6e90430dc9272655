/**
 * The three BullMQ queues (producers). Jobs are removed once completed so that a deterministic job
 * ID can be added again later for new work (BullMQ ignores an add whose ID still exists); failed
 * jobs are kept for inspection, and the reconcile step retries them from Postgres.
 */
import { Queue, type JobsOptions } from 'bullmq';
import type { RedisClient } from './connection.ts';
import { QUEUE_POLL, QUEUE_SCHEDULE, QUEUE_SINK } from './names.ts';
import type { PollJob, SinkJob, SyncJob, TickJob } from './payloads.ts';

/** Failed jobs kept per queue for inspection. */
export const FAILED_JOBS_KEPT = 1000;

/** Attempts of a job before it fails (a cron's sync job has one: a sync is never retried by the queue). */
export const JOB_ATTEMPTS = 8;
/**
 * Wait before the first retry of a failed attempt; BullMQ's `exponential` backoff doubles it for
 * each one after (2 s, 4 s, ... 128 s before the eighth attempt).
 */
export const JOB_RETRY_BASE_DELAY_MS = 2_000;

export const DEFAULT_JOB_OPTIONS: JobsOptions = {
  removeOnComplete: true,
  removeOnFail: { count: FAILED_JOBS_KEPT },
  attempts: JOB_ATTEMPTS,
  backoff: { type: 'exponential', delay: JOB_RETRY_BASE_DELAY_MS },
};

export interface PipelineQueues {
  /** syncs, and the cron ticks that queue them */
  schedule: Queue<SyncJob | TickJob>;
  poll: Queue<PollJob>;
  sink: Queue<SinkJob>;
  prefix: string;
  close(): Promise<void>;
}

export function createQueues(connection: RedisClient, prefix: string): PipelineQueues {
  const opts = { connection, prefix, defaultJobOptions: DEFAULT_JOB_OPTIONS };
  const schedule = new Queue<SyncJob | TickJob>(QUEUE_SCHEDULE, opts);
  const poll = new Queue<PollJob>(QUEUE_POLL, opts);
  const sink = new Queue<SinkJob>(QUEUE_SINK, opts);
  for (const q of [schedule, poll, sink]) {
    // a Redis outage is logged by the owner of the connection; do not crash on it here
    q.on('error', () => undefined);
  }
  return {
    schedule,
    poll,
    sink,
    prefix,
    async close() {
      await Promise.allSettled([schedule.close(), poll.close(), sink.close()]);
    },
  };
}
