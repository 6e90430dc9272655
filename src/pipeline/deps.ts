/**
 * What every pipeline step is given: connections and settings, passed in (never imported as
 * singletons), so tests build real ones and nothing needs module mocking.
 */
import type { ChargeRecorder } from './ingest/charges.ts';
import type { ApiClient } from '../api/client.ts';
import type { Config, EmbeddingsConfig } from '../config.ts';
import type { Sql } from '../db/connection.ts';
import type { UpsertCounts } from '../db/videos.ts';
import type { Logger } from '../log.ts';
import type { ApiLimiter } from '../queues/limiter.ts';
import type { PipelineQueues } from '../queues/queues.ts';

export type PipelineSettings = Config['pipeline'];

/**
 * Where steps report what they did, for metrics (the daemon's Prometheus counters). Optional:
 * nothing depends on it, and a step calls it only after the work it reports has committed.
 */
export interface PipelineMetrics {
  /** a sink chunk committed: rows of `table` inserted, updated, or found unchanged */
  rowsUpserted(table: 'videos' | 'transcripts', counts: UpsertCounts): void;
  /** one request of the embedder, by outcome, with the texts and tokens it stored */
  embeddingRequest?(outcome: string, texts: number, tokens: number): void;
}

export interface PipelineDeps {
  sql: Sql;
  api: ApiClient;
  log: Logger;
  queues: PipelineQueues;
  limiter?: ApiLimiter;
  settings: PipelineSettings;
  metrics?: PipelineMetrics;
  /** records what each request was billed (`credit_charges`); default none (nothing recorded) */
  charges?: ChargeRecorder;
  /** EMBEDDINGS_*: undefined, no embedder runs */
  embeddings?: EmbeddingsConfig | undefined;
}
