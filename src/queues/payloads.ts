/**
 * zod schemas of the queue payloads. Every dequeued job is validated before it is worked on; a
 * payload that fails is reported with its path and the job is failed without retries (retrying
 * cannot repair it), never crashed on.
 */
import { UnrecoverableError } from 'bullmq';
import { z } from 'zod';
import { formatIssuePath } from '../api/issues.ts';

export const SyncJobSchema = z.object({
  sourceId: z.number().int().positive(),
  /** what started it: the source's cron, a backfill, a replay */
  trigger: z.enum(['cron', 'backfill', 'manual']).default('cron'),
  /** the cron tick (epoch ms) a sync job was queued for; absent on the tick itself */
  tickAt: z.number().int().nonnegative().optional(),
});
export type SyncJob = z.infer<typeof SyncJobSchema>;

/**
 * A cron tick, fired by the job scheduler of its pattern: the sources on that pattern are read
 * from Postgres when it fires. The second form is a tick of a per-source scheduler written before
 * schedulers were per pattern, still in Redis until the next reconcile removes it: it stands for
 * its one source.
 */
export const TickJobSchema = z.union([z.object({ cron: z.string().min(1) }), SyncJobSchema.pick({ sourceId: true })]);
export type TickJob = z.infer<typeof TickJobSchema>;

/**
 * The W3C trace context of the sync that queued a job (src/tracing.ts): the worker's spans join
 * that trace. Absent when tracing is off; a malformed one is ignored by the propagator.
 */
const TraceFieldSchema = z
  .object({ traceparent: z.string().max(256), tracestate: z.string().max(512).optional() })
  .optional();

export const PollJobSchema = z.object({
  jobId: z.string().min(1),
  /** the delay chosen after the previous poll, in milliseconds (adaptive backoff state) */
  delayMs: z.number().int().nonnegative().optional(),
  trace: TraceFieldSchema,
});
export type PollJob = z.infer<typeof PollJobSchema>;

export const SinkJobSchema = z.object({
  jobId: z.string().min(1),
  trace: TraceFieldSchema,
});
export type SinkJob = z.infer<typeof SinkJobSchema>;

/**
 * A job whose payload fails its schema. Unrecoverable: BullMQ fails the job at its first attempt,
 * whatever attempts it was given, from wherever in a worker it is thrown.
 */
export class PayloadError extends UnrecoverableError {
  readonly path: string;
  readonly raw: unknown;
  constructor(queue: string, path: string, message: string, raw: unknown) {
    super(`${queue}: invalid job payload at ${path}: ${message}`);
    this.name = 'PayloadError';
    this.path = path;
    this.raw = raw;
  }
}

export function parsePayload<T>(queue: string, schema: z.ZodType<T>, data: unknown): T {
  const r = schema.safeParse(data);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  throw new PayloadError(queue, issue ? formatIssuePath(issue.path) : '(root)', issue?.message ?? 'invalid', data);
}
