/**
 * What every pipeline step is given: connections and settings, passed in (never imported as
 * singletons), so tests build real ones and nothing needs module mocking.
 */
import type { ApiClient } from '../api/client.ts';
import type { Config } from '../config.ts';
import type { Db, Sql } from '../db/connection.ts';
import type { Logger } from '../log.ts';
import type { ApiLimiter } from '../queues/limiter.ts';
import type { PipelineQueues } from '../queues/queues.ts';

export type PipelineSettings = Config['pipeline'];

export interface PipelineDeps {
  sql: Sql;
  db: Db;
  api: ApiClient;
  log: Logger;
  queues: PipelineQueues;
  limiter?: ApiLimiter;
  settings: PipelineSettings;
}
