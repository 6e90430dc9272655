/**
 * Prometheus metrics of one process, in its own registry (no global state: two servers in one
 * process, as in tests, do not share counters).
 *
 * Two kinds of series:
 * - counters fed by events as they happen: every API attempt (the client's `onRequest` hook)
 *   and every committed sink chunk (`PipelineMetrics.rowsUpserted`). These cost nothing extra
 *   on the hot path: no query, a map lookup and an addition.
 * - gauges of shared state, computed when scraped: one query (Postgres) or one round of
 *   commands (Redis) per family and scrape, shared by the family's gauges, with a deadline, so a scrape
 *   during an outage answers quickly with the series it can and counts the failure. A Postgres
 *   family runs in a transaction of its own under `statement_timeout`: a slow query is cancelled
 *   by Postgres itself, not left running on a connection of the pipeline's pool. Each reads
 *   counters or bounded rows (src/db/item-counts.ts, src/db/video-outcomes.ts), never a scan
 *   of the items' history.
 *
 * The state gauges describe the whole system (every daemon sees the same Postgres and queues);
 * the counters describe this process only. Sum the counters over instances.
 */
import type { RedisClient } from '../queues/connection.ts';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RequestEvent } from '../api/client.ts';
import { batchCountsByStatus, inFlightAgeByKind } from '../db/batches.ts';
import type { Queryable } from '../db/connection.ts';
import { billedByDay, billedBySource } from '../db/credit-charges.ts';
import { latestCreditSnapshot } from '../db/credit-snapshots.ts';
import { chargeOf } from '../domain/charges.ts';
import { cronIntervalMs } from '../domain/cron.ts';
import { itemErrorCodeCounts } from '../db/item-counts.ts';
import { languageCoverage, outcomeCounts, outcomeErrorCounts } from '../db/video-outcomes.ts';
import { quarantineCounts } from '../db/quarantine.ts';
import { holdsForKey } from '../db/upstream-holds.ts';
import { mediaCounts } from '../db/media.ts';
import { pageTotals } from '../db/pages.ts';
import { translationTotals } from '../db/translations.ts';
import { searchBacklog } from '../db/search.ts';
import { listEndpoints, PENDING_COUNT_CAP } from '../db/webhooks.ts';
import { BATCH_STATUSES } from '../db/schema.ts';
import { sourceSyncCounts, stalestSources, type SourceSyncCount } from '../db/source-freshness.ts';
import { isQueryCanceled, readWithTimeout, type Pool } from '../db/statement-timeout.ts';
import type { UpsertCounts } from '../db/videos.ts';
import { BATCH_KINDS } from '../domain/batches.ts';
import { ITEM_STATES, PERMANENT_ITEM_CODES, RETRYABLE_ITEM_CODES } from '../domain/items.ts';
import { HOLD_CODES } from '../domain/refusals.ts';
import { MEDIA_PLATFORMS, MEDIA_TRANSCRIPT_STATES } from '../domain/media.ts';
import { SOURCE_KINDS } from '../domain/sources.ts';
import type { Logger } from '../log.ts';
import type { PipelineMetrics } from '../pipeline/deps.ts';
import { readEmbeddingsStatus, type EmbeddingsStatusOptions } from '../pipeline/read/status.ts';
import type { PipelineQueues } from '../queues/queues.ts';

/** Every series of ours starts with this. */
export const METRIC_PREFIX = 'vsi_';

/** Upper bounds of the API latency histogram, in seconds (a batch answer can take a minute). */
export const API_LATENCY_BUCKETS_S = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * Longest one family's read may take, in milliseconds: Postgres cancels a family's statement
 * after it (`statement_timeout`); the queue family (Redis) is given up after it.
 */
export const COLLECT_TIMEOUT_MS = 2_000;
/**
 * How much longer than the statement timeout a scrape waits for a Postgres family (ms): the time
 * to get a connection and open the transaction, so that normally Postgres cancels first; the
 * wait itself ends a family only when the server does not answer at all.
 */
export const COLLECT_CONNECT_GRACE_MS = 1_000;

/**
 * Sources given a `vsi_source_seconds_since_sync` series of their own: the stalest, which an
 * alert on one source's age needs; the others are in the aggregates of `vsi_sources` and
 * `vsi_source_seconds_since_sync_max`, so a scrape stays the same size at any number of sources.
 */
export const STALEST_SOURCES_SHOWN = 100;

/** Sources given a `vsi_source_credits_billed_today` series: those billed the most today (UTC). */
export const BILLED_SOURCES_SHOWN = 20;

/** The `state` label of `vsi_sources`: each source is in exactly one. */
export const SOURCE_SYNC_STATES = ['active', 'paused', 'never_synced'] as const;

function sourceSyncState(g: Pick<SourceSyncCount, 'paused' | 'neverSynced'>): (typeof SOURCE_SYNC_STATES)[number] {
  if (g.paused) return 'paused';
  return g.neverSynced ? 'never_synced' : 'active';
}

/** Queue states reported per queue. */
export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;

export interface AdminMetrics extends PipelineMetrics {
  registry: Registry;
  /** one embeddings request of the embedder, by outcome, with the texts and tokens it stored */
  embeddingRequest(outcome: string, texts: number, tokens: number): void;
  /** one API attempt (wire to the client's `onRequest`) */
  apiRequest(e: RequestEvent): void;
}

export interface CreateMetricsOptions {
  /** also export Node's process metrics (CPU, memory, event-loop lag, GC); default true */
  processMetrics?: boolean;
}

/** The `status` label of an attempt: the HTTP status, or the local error code when no answer came. */
export function statusLabel(e: RequestEvent): string {
  if (e.status !== undefined) return String(e.status);
  return e.errorCode ?? 'error';
}

export function createMetrics(opts: CreateMetricsOptions = {}): AdminMetrics {
  const registry = new Registry();
  if (opts.processMetrics ?? true) collectDefaultMetrics({ register: registry });

  const requests = new Counter({
    name: `${METRIC_PREFIX}api_requests_total`,
    help: 'Upstream API attempts (retries count once each) by endpoint template and HTTP status (or local error code when no answer arrived).',
    labelNames: ['endpoint', 'status'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: `${METRIC_PREFIX}api_request_duration_seconds`,
    help: 'Upstream API attempt duration in seconds, until the answer head (streamed batch bodies are read afterwards), by endpoint and status.',
    labelNames: ['endpoint', 'status'] as const,
    buckets: API_LATENCY_BUCKETS_S,
    registers: [registry],
  });
  const billed = new Counter({
    name: `${METRIC_PREFIX}credits_billed_total`,
    help: 'API credits billed to the requests of this process, by endpoint template and basis (header: x-billable-requests; price: no header, the published price; unanswered: no answer, possibly charged).',
    labelNames: ['endpoint', 'basis'] as const,
    registers: [registry],
  });
  const rows = new Counter({
    name: `${METRIC_PREFIX}rows_upserted_total`,
    help: 'Rows the sink upserted into a table, by outcome (inserted, updated, unchanged: an identical row left untouched).',
    labelNames: ['table', 'outcome'] as const,
    registers: [registry],
  });

  const embeddingRequests = new Counter({
    name: `${METRIC_PREFIX}embedding_requests_total`,
    help: 'Requests of this process to the embeddings provider, by outcome (embedded, rate-limited: 429, paused; failed: 5xx or connection, retried; halved: a 4xx for a batch, asked again with half as many texts; rejected: a 4xx for one text, left for a day; refused: by the daily token budget, never sent).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const embeddedTexts = new Counter({
    name: `${METRIC_PREFIX}embedded_texts_total`,
    help: 'Passage texts this process embedded and stored (one vector per model and content hash).',
    registers: [registry],
  });
  const embeddingTokens = new Counter({
    name: `${METRIC_PREFIX}embedding_tokens_total`,
    help: "Tokens the embeddings provider billed this process's stored requests (its usage.total_tokens).",
    registers: [registry],
  });

  return {
    registry,
    embeddingRequest(outcome, texts, tokens) {
      embeddingRequests.inc({ outcome });
      embeddedTexts.inc(texts);
      embeddingTokens.inc(tokens);
    },
    apiRequest(e) {
      const labels = { endpoint: e.endpoint, status: statusLabel(e) };
      requests.inc(labels);
      latency.observe(labels, e.durationMs / 1000);
      const charge = chargeOf(e);
      if (charge !== null) billed.inc({ endpoint: e.endpoint, basis: charge.basis }, charge.credits);
    },
    rowsUpserted(table: 'videos' | 'transcripts', counts: UpsertCounts) {
      rows.inc({ table, outcome: 'inserted' }, counts.inserted);
      rows.inc({ table, outcome: 'updated' }, counts.updated);
      rows.inc({ table, outcome: 'unchanged' }, counts.unchanged);
    },
  };
}

export interface StateSources {
  /** a pool (each Postgres family opens its own transaction) */
  sql: Pool;
  redis: RedisClient;
  queues: PipelineQueues;
  log: Logger;
  /** per family, in milliseconds; default COLLECT_TIMEOUT_MS */
  timeoutMs?: number;
  /** this process's API key fingerprint: `vsi_upstream_hold` reports the holds that apply to it (unset: no such gauge) */
  keyFingerprint?: string | undefined;
  /** EMBEDDINGS_* (unset: embeddings off, no embeddings gauges) */
  embeddings?: EmbeddingsStatusOptions | undefined;
}

/**
 * How the gauges of one registry read shared state: one read per family and scrape, with a
 * deadline, counted in `vsi_metrics_collect_errors_total` when it fails.
 */
interface FamilyReaders {
  registry: Registry;
  /** a family read by `load`, given up after `deadlineMs`; its getter answers undefined when the read failed */
  family<T>(name: string, load: () => Promise<T>, deadlineMs?: number): () => Promise<T | undefined>;
  /** a Postgres family: its own read-only transaction, its statements cancelled by Postgres after the timeout */
  pgFamily<T>(name: string, load: (q: Queryable) => Promise<T>): () => Promise<T | undefined>;
}

/** Add the scrape-time gauges of shared state (Postgres and the queues) to a registry. Call once per registry. */
export function registerStateMetrics(metrics: AdminMetrics, src: StateSources): void {
  const readers = createFamilyReaders(metrics.registry, src);
  registerCreditGauges(readers, src.keyFingerprint);
  registerBatchGauges(readers);
  registerLatestOutcomeGauges(readers);
  registerQuarantineGauge(readers);
  registerSourceGauges(readers);
  registerBacklogGauges(readers);
  registerQueueGauges(readers, src);
  if (src.embeddings) registerEmbeddingsGauges(readers, src.embeddings);
}

/** Embeddings (issue #32): whether vectors can be stored, the configured model's coverage and backlog, the day's tokens. */
function registerEmbeddingsGauges({ registry, pgFamily }: FamilyReaders, space: EmbeddingsStatusOptions): void {
  const status = pgFamily('embeddings', (q) => readEmbeddingsStatus(q, space));
  const ready = async () => {
    const s = await status();
    return s?.state === 'ready' ? s : undefined;
  };
  new Gauge({
    name: `${METRIC_PREFIX}embeddings_store_ready`,
    help: '1 when vectors can be stored (pgvector and the embeddings table are there), 0 when not (status says what to install).',
    registers: [registry],
    async collect() {
      this.reset();
      const s = await status();
      if (s !== undefined) this.set(s.state === 'ready' ? 1 : 0);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}embeddings_passages`,
    help: 'Passages, and those whose text has a vector of the configured model (covered), by model.',
    labelNames: ['model', 'state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const s = await ready();
      if (s === undefined) return;
      this.set({ model: s.model, state: 'covered' }, s.covered);
      this.set({ model: s.model, state: 'uncovered' }, s.passages - s.covered);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}embeddings_backlog_texts`,
    help: 'Distinct passage texts without a vector of the configured model: what the embedders have yet to send.',
    labelNames: ['model'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const s = await ready();
      if (s !== undefined) this.set({ model: s.model }, s.backlog);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}embeddings_tokens_today`,
    help: 'Tokens sent to the embeddings provider this UTC day by every process (embedding_usage), every model.',
    registers: [registry],
    async collect() {
      this.reset();
      const s = await ready();
      if (s !== undefined) this.set(s.tokensToday);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}embeddings_budget_refusals_today`,
    help: 'Requests the daily token budget (EMBEDDINGS_TOKENS_PER_DAY) refused this UTC day, by model; above 0 embedding waits for the next day.',
    labelNames: ['model'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const s = await ready();
      if (s !== undefined) this.set({ model: s.model }, s.refusedToday);
    },
  });
}

/** The collect-errors counter of a registry and the family readers that feed it. */
function createFamilyReaders(registry: Registry, src: StateSources): FamilyReaders {
  const timeoutMs = src.timeoutMs ?? COLLECT_TIMEOUT_MS;
  /** families whose last read failed (logged once per outage) */
  const failing = new Set<string>();
  const families: (() => Promise<unknown>)[] = [];
  const collectErrors = new Counter({
    name: `${METRIC_PREFIX}metrics_collect_errors_total`,
    help: 'Scrapes that could not read a family of state gauges (its series are left out of that scrape).',
    labelNames: ['family'] as const,
    registers: [registry],
    // the registry reads every metric at once: wait for this scrape's reads, so a failure
    // shows in the same scrape that lacks the family's series
    async collect() {
      await Promise.all(families.map((f) => f()));
    },
  });

  const family = <T>(
    name: string,
    load: () => Promise<T>,
    deadlineMs: number = timeoutMs,
  ): (() => Promise<T | undefined>) => {
    // shared while running: the registry starts every metric's collect in the same tick, so
    // the gauges of one scrape share one read; the next scrape reads afresh
    let pending: Promise<T | undefined> | undefined;
    const attempt = async (): Promise<T | undefined> => {
      let timer: NodeJS.Timeout | undefined;
      try {
        const value = await Promise.race([
          load(),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`no answer within ${deadlineMs} ms`)), deadlineMs);
          }),
        ]);
        if (failing.delete(name))
          src.log.info({ event: 'metrics.family_recovered', family: name }, 'metrics family readable again');
        return value;
      } catch (e: unknown) {
        collectErrors.inc({ family: name });
        // logged when it starts failing, not on every scrape of an outage
        if (!failing.has(name)) {
          failing.add(name);
          src.log.warn(
            {
              event: 'metrics.family_failed',
              family: name,
              cancelled: isQueryCanceled(e),
              err: { message: e instanceof Error ? e.message : String(e) },
            },
            'metrics family not readable',
          );
        }
        return undefined;
      } finally {
        if (timer) clearTimeout(timer);
      }
    };
    const get = () => {
      pending ??= attempt().finally(() => {
        pending = undefined;
      });
      return pending;
    };
    families.push(get);
    return get;
  };

  /** A Postgres family: its own read-only transaction, its statements cancelled by Postgres after `timeoutMs`. */
  const pgFamily = <T>(name: string, load: (q: Queryable) => Promise<T>) =>
    family(name, () => readWithTimeout(src.sql, timeoutMs, load), timeoutMs + COLLECT_CONNECT_GRACE_MS);

  return { registry, family, pgFamily };
}

/** Credits: the latest GET /me snapshot, billed today, and the upstream holds of this key. */
function registerCreditGauges({ registry, pgFamily }: FamilyReaders, keyFingerprint: string | undefined): void {
  const credits = pgFamily('credits', latestCreditSnapshot);
  new Gauge({
    name: `${METRIC_PREFIX}credits_used`,
    help: 'API credits used, per the latest GET /me snapshot (credit_snapshots).',
    registers: [registry],
    async collect() {
      this.reset();
      const r = await credits();
      if (r?.usedCredits != null) this.set(r.usedCredits);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}credits_max`,
    help: "The plan's credit allowance, per the latest GET /me snapshot (credit_snapshots).",
    registers: [registry],
    async collect() {
      this.reset();
      const r = await credits();
      if (r?.maxCredits != null) this.set(r.maxCredits);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}credits_snapshot_timestamp_seconds`,
    help: 'When the latest GET /me snapshot was taken (Unix seconds): how current the credit gauges are.',
    registers: [registry],
    async collect() {
      this.reset();
      const r = await credits();
      if (r) this.set(r.takenAt.getTime() / 1000);
    },
  });

  // today's total and the sources billed the most today: one family (two statements, one transaction)
  const billed = pgFamily('credits_billed', async (q) => ({
    days: await billedByDay(q, 1),
    bySource: await billedBySource(
      q,
      new Date(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`),
      BILLED_SOURCES_SHOWN,
    ),
  }));
  new Gauge({
    name: `${METRIC_PREFIX}credits_billed_today`,
    help: 'API credits billed so far this UTC day by every process (credit_charges: x-billable-requests of each answer, the published price where one had none), by basis (header, price, unanswered).',
    labelNames: ['basis'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const days = (await billed())?.days;
      const d = days?.[0];
      if (days === undefined) return;
      const today = d?.day === new Date().toISOString().slice(0, 10) ? d : undefined;
      const priced = today?.priced ?? 0;
      const unanswered = today?.unanswered ?? 0;
      this.set({ basis: 'header' }, (today?.credits ?? 0) - priced - unanswered);
      this.set({ basis: 'price' }, priced);
      this.set({ basis: 'unanswered' }, unanswered);
    },
  });

  new Gauge({
    name: `${METRIC_PREFIX}source_credits_billed_today`,
    help:
      `API credits billed so far this UTC day by every process, per source, for the ${BILLED_SOURCES_SHOWN} sources billed the most ` +
      "(source_id 'none': requests of no source, e.g. GET /me or a replay).",
    labelNames: ['source_id'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const row of (await billed())?.bySource ?? [])
        this.set({ source_id: row.sourceId === null ? 'none' : String(row.sourceId) }, row.credits);
    },
  });

  if (keyFingerprint !== undefined) {
    const holds = pgFamily('upstream_holds', (q) => holdsForKey(q, keyFingerprint));
    new Gauge({
      name: `${METRIC_PREFIX}upstream_hold`,
      help:
        "1 while an upstream hold of this code applies to this process's API key (it makes no scheduled API call), else 0; " +
        'every code listed. Unlike the other state gauges it is per key: daemons with another key may differ.',
      labelNames: ['code'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        const r = await holds();
        if (!r) return;
        for (const code of HOLD_CODES) this.set({ code }, r.some((h) => h.code === code) ? 1 : 0);
      },
    });
  }
}

/** Batches by status and batch items by error code (history). */
function registerBatchGauges({ registry, pgFamily }: FamilyReaders): void {
  // by status (the counters of migration 0005) and the in-flight ones' age (the in-flight index): one family
  const batches = pgFamily('batches', async (q) => ({
    byStatus: await batchCountsByStatus(q),
    inFlight: await inFlightAgeByKind(q),
  }));
  new Gauge({
    name: `${METRIC_PREFIX}batches`,
    help: 'Upstream batches recorded in Postgres, by status.',
    labelNames: ['status'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const r = await batches();
      if (!r) return;
      // every status, zeros included, so a rate or an alert never sees a series vanish
      for (const status of BATCH_STATUSES) this.set({ status }, 0);
      for (const [status, n] of Object.entries(r.byStatus)) this.set({ status }, n);
    },
  });

  new Gauge({
    name: `${METRIC_PREFIX}batch_oldest_in_flight_seconds`,
    help:
      'Seconds since the oldest batch of this kind still in flight was submitted (0 when none is); ' +
      'a batch in flight longer than BATCH_MAX_AGE_MS (48 h by default) is expired locally. Every kind, zeros included.',
    labelNames: ['kind'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const r = (await batches())?.inFlight;
      if (!r) return;
      for (const kind of BATCH_KINDS) this.set({ kind }, 0);
      for (const row of r) this.set({ kind: row.kind }, Math.max(0, row.oldestSeconds));
    },
  });

  const itemErrors = pgFamily('item_errors', itemErrorCodeCounts);
  new Gauge({
    name: `${METRIC_PREFIX}batch_items_by_error_code`,
    help:
      'History: every batch item ever received that carries an errorCode, by code and by item state (failed, retryable, quarantined; ' +
      'processing for unfinished items); an item re-submitted and stored since still counts. Now: vsi_videos_by_latest_error_code.',
    labelNames: ['error_code', 'state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const r = await itemErrors();
      for (const row of r ?? []) this.set({ error_code: row.errorCode, state: row.state }, row.items);
    },
  });
}

/** Each video's latest outcome: by state, by error code, and transcript language coverage. */
function registerLatestOutcomeGauges({ registry, pgFamily }: FamilyReaders): void {
  // each video's latest outcome per kind and language: the counters of migrations/0008, a few
  // hundred rows whatever the history (three statements, one transaction)
  const latest = pgFamily('latest_outcomes', async (q) => ({
    outcomes: await outcomeCounts(q),
    errors: await outcomeErrorCounts(q),
    coverage: await languageCoverage(q),
  }));
  new Gauge({
    name: `${METRIC_PREFIX}videos_by_latest_outcome`,
    help:
      "Videos by their latest outcome per kind and language (lang '' for metadata and the default transcript language): " +
      'the state the latest item left them in; a video re-submitted moves, it is not counted twice. Every state of a kind and language seen, zeros included.',
    labelNames: ['kind', 'lang', 'state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const r = await latest();
      for (const o of r?.outcomes ?? [])
        for (const state of ITEM_STATES) this.set({ kind: o.kind, lang: o.lang, state }, o.byState[state]);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}videos_by_latest_error_code`,
    help:
      'Videos whose latest outcome (per kind and language, summed over languages) carries an errorCode, by code and the state it left them in; ' +
      'every code the interface lists at the state its policy gives, zeros included.',
    labelNames: ['kind', 'error_code', 'state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const r = await latest();
      if (!r) return;
      // the listed codes at their policy's state, zeros included: a code cleared by a re-submission drops to 0, not out
      for (const kind of BATCH_KINDS) {
        for (const error_code of RETRYABLE_ITEM_CODES) this.set({ kind, error_code, state: 'retryable' }, 0);
        for (const error_code of PERMANENT_ITEM_CODES) this.set({ kind, error_code, state: 'failed' }, 0);
      }
      for (const e of r.errors) this.inc({ kind: e.kind, error_code: e.errorCode, state: e.state }, e.videos);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}transcript_language_coverage`,
    help:
      'Videos whose transcript was asked in a language (lang), by what their latest outcome delivered: the language itself, another language ' +
      "(the interface falls back to the video's first available one; charged the same), none (failed: no transcript) or pending " +
      '(not delivered yet: in flight, retryable or quarantined). Per language asked, delivered = lang, none and pending always present.',
    labelNames: ['lang', 'delivered'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const r = await latest();
      for (const c of r?.coverage ?? []) {
        this.set({ lang: c.lang, delivered: c.lang }, c.asked);
        for (const [delivered, n] of Object.entries(c.fellBack)) this.set({ lang: c.lang, delivered }, n);
        this.set({ lang: c.lang, delivered: 'none' }, c.none);
        this.set({ lang: c.lang, delivered: 'pending' }, c.pending);
      }
    },
  });
}

/** Quarantined batch items by reason. */
function registerQuarantineGauge({ registry, pgFamily }: FamilyReaders): void {
  const quarantined = pgFamily('quarantined', quarantineCounts);
  new Gauge({
    name: `${METRIC_PREFIX}batch_items_quarantined`,
    help: "Batch items quarantined (kept raw, never re-submitted automatically) by reason_code ('unknown' when none was recorded); replay --quarantined re-sinks them.",
    labelNames: ['reason'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const r = await quarantined();
      // every reason, zeros included (quarantineCounts lists them all), so a series never vanishes
      for (const [reason, n] of Object.entries(r ?? {})) this.set({ reason }, n);
    },
  });
}

/** Source freshness: the stalest sources, the stalest per kind, and sources by kind and state. */
function registerSourceGauges({ registry, pgFamily }: FamilyReaders): void {
  const freshness = pgFamily('sources', async (q) => ({
    stalest: await stalestSources(q, STALEST_SOURCES_SHOWN),
    counts: await sourceSyncCounts(q),
  }));
  new Gauge({
    name: `${METRIC_PREFIX}source_seconds_since_sync`,
    help:
      `Seconds since the last successful sync of a source, for the ${STALEST_SOURCES_SHOWN} unpaused sources longest without one ` +
      '(paused and never-synced sources have none; every source is counted in vsi_sources).',
    labelNames: ['source_id', 'kind'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const r = await freshness();
      for (const row of r?.stalest ?? [])
        this.set({ source_id: String(row.id), kind: row.kind }, Math.max(0, row.seconds));
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}source_sync_interval_seconds`,
    help:
      "Seconds between the two latest fires of a source's cron, for the sources of vsi_source_seconds_since_sync that have one " +
      '(backfill-only sources have none): compare with vsi_source_seconds_since_sync, same labels.',
    labelNames: ['source_id', 'kind'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const r = await freshness();
      const now = new Date();
      // sources mostly share a few schedules: each expression parsed once per scrape
      const known = new Map<string, number | undefined>();
      for (const row of r?.stalest ?? []) {
        if (row.cron === null) continue;
        if (!known.has(row.cron)) known.set(row.cron, cronIntervalMs(row.cron, now));
        const ms = known.get(row.cron);
        if (ms !== undefined) this.set({ source_id: String(row.id), kind: row.kind }, ms / 1000);
      }
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}source_seconds_since_sync_max`,
    help: 'Seconds since the last successful sync of the unpaused source of this kind longest without one (absent for a kind with no such source).',
    labelNames: ['kind'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const r = await freshness();
      for (const g of r?.counts ?? []) {
        if (sourceSyncState(g) === 'active' && g.maxSeconds !== null)
          this.set({ kind: g.kind }, Math.max(0, g.maxSeconds));
      }
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}sources`,
    help: 'Sources by kind and state: paused, never_synced (not paused, no successful sync yet) or active (the others); every kind and state, zeros included.',
    labelNames: ['kind', 'state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const r = await freshness();
      if (!r) return;
      // zeros included, so a rate or an alert never sees a series vanish
      for (const kind of SOURCE_KINDS) for (const state of SOURCE_SYNC_STATES) this.set({ kind, state }, 0);
      for (const g of r.counts) this.inc({ kind: g.kind, state: sourceSyncState(g) }, g.sources);
    },
  });
}

/**
 * What is still to deliver, one family: the webhook endpoints (disabled, failing, events not
 * delivered yet; by ID: a URL may carry a secret) and the search indexer's queue.
 */
function registerBacklogGauges({ registry, pgFamily }: FamilyReaders): void {
  const backlogs = pgFamily('backlogs', async (q) => ({
    endpoints: await listEndpoints(q),
    search: await searchBacklog(q),
    pages: await pageTotals(q),
    media: await mediaCounts(q),
    translations: await translationTotals(q),
  }));
  new Gauge({
    name: `${METRIC_PREFIX}pages`,
    help: 'Web pages stored, by state: `current` (found by the latest crawl or read of a source that holds it) or `gone` (no source finds it any more; kept).',
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const p = (await backlogs())?.pages;
      if (p === undefined) return;
      this.set({ state: 'current' }, p.stored - p.gone);
      this.set({ state: 'gone' }, p.gone);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}page_versions`,
    help: 'Distinct versions of web pages kept (page_versions), the current ones included.',
    registers: [registry],
    async collect() {
      const p = (await backlogs())?.pages;
      if (p !== undefined) this.set(p.versions);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}media`,
    help:
      'Media items stored (media sources), by platform and transcript state: none (an image, a carousel, a post), pending, ' +
      'stored, empty (no speech), failed, expired, over-budget, retry; every pair, zeros included.',
    labelNames: ['platform', 'transcript'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const m = (await backlogs())?.media;
      if (m === undefined) return;
      for (const platform of MEDIA_PLATFORMS)
        for (const transcript of MEDIA_TRANSCRIPT_STATES) this.set({ platform, transcript }, 0);
      for (const c of m) this.inc({ platform: c.platform, transcript: c.transcriptState }, c.n);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}translations`,
    help:
      'Translations by state: sending, stored, failed (refused for the video), unknown (the answer was lost, or its process ' +
      'died while sending: it may have been billed; `replay --lost` releases it), refused-budget; every state, zeros included.',
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const t = (await backlogs())?.translations;
      if (t === undefined) return;
      for (const [state, n] of Object.entries(t)) this.set({ state }, n);
    },
  });
  const endpoints = async () => (await backlogs())?.endpoints;
  new Gauge({
    name: `${METRIC_PREFIX}webhook_endpoint_disabled`,
    help: 'Per webhook endpoint: 1 while it is disabled (after failing for WEBHOOK_DISABLE_AFTER_MS; `webhooks enable` ends it), else 0.',
    labelNames: ['endpoint_id'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const e of (await endpoints()) ?? []) this.set({ endpoint_id: String(e.id) }, e.enabled ? 0 : 1);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}webhook_endpoint_failing`,
    help: 'Per webhook endpoint: 1 while it is enabled and its deliveries fail (retried with backoff), else 0.',
    labelNames: ['endpoint_id'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const e of (await endpoints()) ?? [])
        this.set({ endpoint_id: String(e.id) }, e.enabled && e.failingSince !== null ? 1 : 0);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}webhook_events_pending`,
    help: `Per webhook endpoint: matching events not delivered yet, counted up to ${PENDING_COUNT_CAP} (more: ${PENDING_COUNT_CAP + 1}).`,
    labelNames: ['endpoint_id'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const e of (await endpoints()) ?? [])
        this.set({ endpoint_id: String(e.id) }, Math.min(e.pending, PENDING_COUNT_CAP + 1));
    },
  });
  const backlog = async () => (await backlogs())?.search;
  new Gauge({
    name: `${METRIC_PREFIX}search_index_pending`,
    help: 'Transcripts stored whose passages (the search index) the indexer has yet to cut (search_index_queue).',
    registers: [registry],
    async collect() {
      this.reset();
      const r = await backlog();
      if (r) this.set(r.pending);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}search_index_oldest_queued_seconds`,
    help: 'Seconds since the oldest transcript waiting for the search indexer was queued (0 when none waits).',
    registers: [registry],
    async collect() {
      this.reset();
      const r = await backlog();
      if (r) this.set(r.oldestQueuedAt === null ? 0 : Math.max(0, (Date.now() - r.oldestQueuedAt.getTime()) / 1000));
    },
  });
}

/** BullMQ job counts per queue and state (Redis). */
function registerQueueGauges({ registry, family }: FamilyReaders, src: StateSources): void {
  const depths = family('queues', async () => {
    // a reconnecting connection would queue the commands until Redis returns: fail at once
    if (src.redis.status !== 'ready') throw new Error(`redis connection ${src.redis.status}`);
    const { schedule, poll, sink } = src.queues;
    return Promise.all(
      [schedule, poll, sink].map(async (q) => ({ queue: q.name, counts: await q.getJobCounts(...QUEUE_STATES) })),
    );
  });
  new Gauge({
    name: `${METRIC_PREFIX}queue_jobs`,
    help: 'BullMQ jobs per queue and state (waiting, active, delayed, failed).',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const r = await depths();
      for (const q of r ?? []) {
        for (const state of QUEUE_STATES) this.set({ queue: q.queue, state }, q.counts[state] ?? 0);
      }
    },
  });
}
