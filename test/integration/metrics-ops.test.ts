/**
 * The gauges the dashboard and alert rules of deploy/ need beyond the first ones: the oldest batch
 * in flight per kind, each stalest source's cron interval, credits billed today per source, the
 * webhook endpoints' health and the search indexer's backlog, read from rows written here.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createMetrics, registerStateMetrics } from '../../src/admin/metrics.ts';
import { loadConfig } from '../../src/config.ts';
import { BATCH_KINDS } from '../../src/domain/batches.ts';
import { silentLogger } from '../../src/log.ts';
import { closeRedis, createRedis } from '../../src/queues/connection.ts';
import { createQueues, type PipelineQueues } from '../../src/queues/queues.ts';
import { parseMetrics, value, samples, type Sample } from '../helpers/admin.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let db: TestDatabase;
let redis: ReturnType<typeof createRedis>;
let queues: PipelineQueues;

beforeAll(async () => {
  db = await createTestDatabase('metrics-ops');
  redis = createRedis(loadConfig({}).redisUrl);
  queues = createQueues(redis, `{vsi-test-metrics-ops-${randomBytes(4).toString('hex')}}`);
  await redis.ping();
});

afterAll(async () => {
  await queues?.close();
  await closeRedis(redis);
  await db?.drop();
});

async function scrape(): Promise<Sample[]> {
  const metrics = createMetrics({ processMetrics: false });
  registerStateMetrics(metrics, { sql: db.sql, redis, queues, log: silentLogger() });
  return parseMetrics(await metrics.registry.metrics());
}

it('reports zeros and no per-item series on an empty database', async () => {
  const m = await scrape();
  for (const kind of BATCH_KINDS) expect(value(m, 'vsi_batch_oldest_in_flight_seconds', { kind })).toBe(0);
  expect(value(m, 'vsi_search_index_pending')).toBe(0);
  expect(value(m, 'vsi_search_index_oldest_queued_seconds')).toBe(0);
  expect(samples(m, 'vsi_webhook_endpoint_disabled')).toHaveLength(0);
  expect(samples(m, 'vsi_source_sync_interval_seconds')).toHaveLength(0);
  expect(samples(m, 'vsi_source_credits_billed_today')).toHaveLength(0);
  expect(value(m, 'vsi_metrics_collect_errors_total')).toBeUndefined();
});

it('reads batch age, source intervals, billed credits per source, webhooks and the search backlog', async () => {
  const sql = db.sql;
  const [hourly] = await sql<{ id: number }[]>`
    insert into sources (kind, ref, external_id, max_videos, cron, last_synced_at)
    values ('channel', '@a', 'UCa', 10, '0 * * * *', now() - interval '3 hours') returning id`;
  const [backfillOnly] = await sql<{ id: number }[]>`
    insert into sources (kind, ref, external_id, max_videos, cron, last_synced_at)
    values ('channel', '@b', 'UCb', 10, null, now() - interval '1 hour') returning id`;
  await sql`
    insert into batches (job_id, kind, status, credits_estimated, request, submitted_at) values
      ('old', 'video', 'active', 11, '{}', now() - interval '2 hours'),
      ('new', 'video', 'queued', 11, '{}', now() - interval '1 minute'),
      ('done', 'transcript', 'completed', 11, '{}', now() - interval '5 hours')`;
  await sql`
    insert into credit_charges (endpoint, credits, basis, source_id) values
      ('POST /videosite/video/batch', 7, 'header', ${hourly!.id}),
      ('POST /videosite/video/batch', 5, 'header', ${hourly!.id}),
      ('GET /me', 0, 'header', null)`;
  const endpoints = await sql<{ id: number }[]>`
    insert into webhook_endpoints (url, enabled, failing_since, disabled_at) values
      ('https://a.example/hook', true, null, null),
      ('https://b.example/hook', true, now(), null),
      ('https://c.example/hook', false, now(), now())
    returning id`;
  await sql`insert into search_index_queue (video_id, lang, queued_at) values
    ('v1', 'en', now() - interval '10 minutes'), ('v2', 'en', now())`;

  const m = await scrape();
  const oldest = value(m, 'vsi_batch_oldest_in_flight_seconds', { kind: 'video' })!;
  expect(oldest).toBeGreaterThanOrEqual(7_200 - 5);
  expect(oldest).toBeLessThan(7_200 + 60);
  expect(value(m, 'vsi_batch_oldest_in_flight_seconds', { kind: 'transcript' })).toBe(0);

  expect(value(m, 'vsi_source_sync_interval_seconds', { source_id: String(hourly!.id), kind: 'channel' })).toBe(3_600);
  expect(samples(m, 'vsi_source_sync_interval_seconds', { source_id: String(backfillOnly!.id) })).toHaveLength(0);
  expect(value(m, 'vsi_source_seconds_since_sync', { source_id: String(hourly!.id) })).toBeGreaterThan(2 * 3_600);

  expect(value(m, 'vsi_source_credits_billed_today', { source_id: String(hourly!.id) })).toBe(12);
  expect(value(m, 'vsi_source_credits_billed_today', { source_id: 'none' })).toBe(0);

  const [ok, failing, disabled] = endpoints.map((e) => ({ endpoint_id: String(e.id) }));
  expect(value(m, 'vsi_webhook_endpoint_disabled', ok)).toBe(0);
  expect(value(m, 'vsi_webhook_endpoint_disabled', failing)).toBe(0);
  expect(value(m, 'vsi_webhook_endpoint_disabled', disabled)).toBe(1);
  expect(value(m, 'vsi_webhook_endpoint_failing', ok)).toBe(0);
  expect(value(m, 'vsi_webhook_endpoint_failing', failing)).toBe(1);
  expect(value(m, 'vsi_webhook_endpoint_failing', disabled)).toBe(0);
  expect(value(m, 'vsi_webhook_events_pending', ok)).toBe(0);

  expect(value(m, 'vsi_search_index_pending')).toBe(2);
  const age = value(m, 'vsi_search_index_oldest_queued_seconds')!;
  expect(age).toBeGreaterThanOrEqual(600 - 5);
  expect(age).toBeLessThan(600 + 60);
  expect(value(m, 'vsi_metrics_collect_errors_total')).toBeUndefined();
});
