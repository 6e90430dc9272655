/**
 * The names of the log events: the one list. Every log line an operator, a test or the benchmark
 * relies on carries `event` (a dotted lower-case name from this list) beside its fields; `msg`
 * stays human text and may be reworded at will. Match on `event` and fields, never on `msg`.
 *
 *   log.info({ event: 'sync.submitted', sourceId, jobIds, videos, credits }, 'batches submitted');
 *
 * A name is an interface: rename one only together with everything that reads it (test/, bench/,
 * dashboards). test/unit/log-events.test.ts checks that every `event: '...'` in src/ is listed
 * here and every name listed here is logged somewhere.
 */
export const LOG_EVENTS = [
  // the daemon (src/cli/daemon.ts)
  /** the workers run: `roles`, `prefix` */
  'daemon.started',
  /** SIGTERM/SIGINT received, draining: `signal`, `graceMs` */
  'daemon.stopping',
  /** everything closed, the process exits: `closedCleanly`; `started: false` when stopped while waiting for Redis */
  'daemon.stopped',
  /** started with Redis down: the workers wait for it (warn), and SIGTERM/SIGINT still stop the daemon: `redis` (setting and host:port) */
  'daemon.waiting_for_redis',
  /** Redis may evict queued jobs (warn): `policy` (its maxmemory-policy) */
  'daemon.redis_eviction_policy',
  /** the check at start: /me refuses this daemon's API key, now held (error): `code`, `keyFingerprint`, `holdIsNew` */
  'daemon.api_key_refused',
  /** the check at start got no answer from /me (not a refusal; warn): `code`, `keyFingerprint` */
  'daemon.api_key_unchecked',
  /** the admin server accepts requests: `url`, `auth` */
  'admin.listening',

  // reconciling Redis with Postgres (src/pipeline/services/reconcile.ts, src/cli/daemon.ts)
  /** a reconcile re-created missing jobs (only logged when it did): `polls`, `sinks`, `schedulers` */
  'reconcile.requeued',
  /** Redis came back after a disconnect and a reconcile ran: `polls`, `sinks`, `schedulers` */
  'reconcile.after_reconnect',
  /** a reconcile (periodic or after a reconnect) failed; the next interval retries: `err` */
  'reconcile.failed',

  // cron ticks (src/pipeline/services/cron-ticks.ts, workers.ts)
  /** a cron pattern's tick queued the syncs of its sources (one line per pattern and tick): `cron`, `tickAt`, `sources`, `queued`, `skipped`, `ms` */
  'schedule.tick_done',
  /** a tick queued its source's sync at the source's offset (debug): `sourceId`, `tickAt`, `startAt`, `bullJobId` */
  'schedule.sync_queued',
  /** a tick found its source's previous sync still pending or running: nothing added: `sourceId`, `tickAt`, `pendingJobId`, `pendingState` */
  'schedule.tick_skipped',
  /** a queued sync found its source busy (another process syncing it, or every batch in flight): `sourceId`, `trigger`, `detail` */
  'schedule.sync_in_flight',

  // syncs and submissions (src/pipeline/ingest/sync-source.ts, submit.ts)
  /** a scheduled sync made no API call, a hold applying to the key (warn, once per source and hold; a `held` run every time): `sourceId`, `holds`, `keyFingerprint`, `since` */
  'sync.held',
  /** nothing due for this source: `sourceId`, `listed`, `listingCredits` */
  'sync.up_to_date',
  /** a sync refused before any POST, credits short: `sourceId`, `needed`, `available` */
  'sync.refused_credits',
  /** a sync refused before a paid call, a daily budget spent (no hold): `sourceId`, `limit`, `needed`, `available`, `budget`, `spent` */
  'sync.refused_budget',
  /** a sync submitted its batches: `sourceId`, `jobIds`, `videos`, `credits`, `listingCredits` */
  'sync.submitted',
  /** the sync lease (src/db/leases.ts) could not be renewed or released, or was found taken (warn): `sourceId`, `step` ('renew' | 'release'), `lost`, `err` */
  'sync.lease_failed',
  /** one batch POST answered with its job ID (debug): `jobId`, `kind`, `lang`, `credits` */
  'batch.submitted',
  /** a batch POST's answer was lost after it may have arrived; not retried: `sourceId`, `kind`, `lang`, `submission`, `err` */
  'batch.answer_lost',
  /** a lost POST turned out not created (credits unmoved): submitted again: `sourceId`, `submission`, `kind`, `lang` */
  'submission.not_created',
  /** a lost POST was probably created (credits moved): left for a person: `sourceId`, `submission`, `kind`, `lang`, `creditsEstimated` */
  'submission.lost',

  // upstream holds (src/pipeline/ingest/sync-source.ts, poll-batch.ts, services/upstream-holds.ts)
  /** an account-level refusal starts a hold of the key (error, once per hold): `code`, `reason`, `keyFingerprint`, `jobId` */
  'hold.set',
  /** recording a refusal as a hold failed: `err` */
  'hold.record_failed',
  /** a 403 that is not the API's own answer, judged by /me (warn): `endpoint`, `keyRefused`, `meCode` */
  'hold.gateway_forbidden',
  /** a sync a person started got through and lifted its key's holds: `cleared`, `keyFingerprint` */
  'hold.cleared',
  /** a /me re-check lifted holds: `cleared`, `usedCredits`, `maxCredits`, `creditReserve` */
  'hold.recheck_cleared',
  /** a /me re-check kept holds, credits still short (debug): `holds`, `usedCredits`, `maxCredits`, `creditReserve` */
  'hold.recheck_standing',
  /** the re-check's /me was refused; the holds stand: `code`, `holds` */
  'hold.recheck_refused',
  /** a re-check failed otherwise; retried at the next interval: `err` */
  'hold.recheck_failed',
  /** an `upgrade-required` hold waits for a person (once per hold): `code`, `since`, `needsPerson` */
  'hold.needs_person',

  // polls (src/pipeline/ingest/poll-batch.ts)
  /** a poll committed: `jobId`, `status`, `landed`, `changed`, `polls`, `quarantined`, `duplicates`, `total`, `finished`, `ms` (since the poll began) */
  'poll.landed',
  /** a poll's answer was cut short; what landed is kept: `jobId`, `landed`, `changed`, `polls`, `reason` */
  'poll.incomplete',
  /** the upstream answered a batch status this interface version does not know: `jobId`, `upstreamStatus`, `landed` */
  'poll.unknown_status',
  /** the upstream answered not-found; confirming before expiring: `jobId`, `notFoundForMs`, `confirmMs` */
  'poll.not_found',
  /** a poll was refused; polled again later: `jobId`, `code`, `status`, `nextDelayMs` */
  'poll.refused',
  /** a poll job for a batch Postgres does not know; dropped: `jobId` */
  'poll.unknown_batch',
  /** a batch ended without the upstream saying so (expired, not found): `jobId`, `status`, `errorCode`, `retryable`, `reason`; a transcript job whose result expired: `failed` too */
  'batch.ended',
  // web pages (src/pipeline/ingest/crawl.ts, sync-pages.ts)
  /** a website's crawl was POSTed and recorded: `sourceId`, `jobId`, `credits` (the estimate, 1 + limit) */
  'crawl.submitted',
  /** a crawl ended (completed, failed or cancelled upstream): `jobId`, `sourceId`, `status`, `errorCode`, `pages`, `landed`, `quarantined`, `gone` */
  'crawl.ended',
  /** pages stored from one answer (debug): `added`, `changed`, `returned`, `unchanged` */
  'pages.stored',
  /** a page of a `pages` source could not be read (warn): `sourceId`, `url`, `code` */
  'page.scrape_failed',
  // media of other platforms (src/pipeline/ingest/sync-media.ts; their transcript jobs' polls log `poll.landed` with `kind: 'media'`)
  /** a media item's metadata could not be read (warn): `sourceId`, `url`, `code` */
  'media.metadata_failed',
  /** a media item's transcript was refused (warn): `sourceId`, `url`, `code` */
  'media.transcript_failed',
  /** the credit reading after a batch or a backfill failed: `jobId` or nothing, `err` or `reason` */
  'credits.read_failed',
  /** a credit reservation expired before its holder sent every request (stalled past its TTL); the rest is not sent: `sourceId`, `sent`, `planned` */
  'credits.reservation_lapsed',
  /** releasing a credit reservation failed; it counts until it expires: `sourceId`, `err` */
  'credits.release_failed',
  /** billed credits could not be written to `credit_charges` (kept in memory and tried again; warn): `charges`, `err` */
  'charges.write_failed',
  /** the credits billed since a /me reading differ from what /me says was used (warn): `billed`, `usedDelta`, `since` */
  'charges.differ_from_me',

  // generated transcripts (src/pipeline/ingest/generate.ts; their jobs' polls log the poll.* events with `mode: 'generate'`)
  /** generations requested for a source: `sourceId`, `jobIds`, `videos`, `minutes`, `credits` */
  'generate.submitted',
  /** candidates left out because the source's minute budget is spent: `sourceId`, `skipped`, `usedMinutes`, `maxMinutes` */
  'generate.over_budget',
  /** the credit guard refused the set; nothing sent: `sourceId`, `limit`, `needed`, `available`, `videos` */
  'generate.refused_credits',
  /** a generation request's answer was lost after it may have arrived; not retried: `sourceId`, `videoId`, `lang`, `submission`, `err` */
  'generate.answer_lost',
  /** the upstream refused one video's generation (gone, private, invalid); not asked again: `sourceId`, `videoId`, `lang`, `submission`, `code` */
  'generate.refused',
  // translations (src/pipeline/ingest/translate.ts)
  /** translations bought at the end of a sync or backfill: `sourceId`, `translated`, `minutes`, `credits` (estimated; the billed are in credit_charges) */
  'translate.done',
  /** due translations the source's --max-translate-minutes leaves unbought, recorded (info): `sourceId`, `skipped`, `usedMinutes`, `maxMinutes` */
  'translate.over_budget',
  /** the credit guard refused the translations (warn): `sourceId`, `limit`, `needed`, `available`, `translations` */
  'translate.refused_credits',
  /** a translation's answer was lost after it may have been billed (error): `sourceId`, `videoId`, `lang`, `translation` */
  'translate.answer_lost',
  /** the upstream refused one video's translation, not asked again (warn): `sourceId`, `videoId`, `lang`, `translation`, `code` */
  'translate.failed',
  /** one translation stored (debug): `sourceId`, `videoId`, `lang`, `translation`, `fromLang`, `credits` */
  'translate.stored',

  // the sink and replays (src/pipeline/ingest/sink.ts, commands/replay.ts)
  /** a sink job wrote rows: `jobId`, `sunk`, `inserted`, `updated`, `unchanged`, `quarantined`, ... */
  'sink.done',
  /** items set aside raw with their reason: `jobId`, `quarantined` */
  'sink.quarantined',
  /** quarantined items sunk again from their raw answer: `items`, outcome counts, `pending`, row counts */
  'replay.resunk',

  // retention (src/pipeline/commands/prune.ts)
  /** a prune run began: `runId`, `dryRun`, `trigger`, `rawRetentionDays`, `historyRetentionDays` */
  'prune.started',
  /** a prune run finished one table: `runId`, `dryRun`, `trigger`, `table`, `rows`, `bytes`, `durationMs` */
  'prune.table_done',
  /** a prune run ended (or was stopped by shutdown): `runId`, `dryRun`, `trigger`, `rows`, `bytes`, `freed`, `durationMs`, `interrupted` */
  'prune.finished',
  /** a prune run failed (recorded in prune_runs): `runId`, `dryRun`, `trigger`, `freed`, `err` */
  'prune.failed',
  /** a daemon could not claim the daily prune; the next check tries again: `err` */
  'prune.daily_failed',

  // webhook delivery (src/pipeline/services/webhook-delivery.ts); never the endpoint's secret, nor its URL (it may carry a token)
  /** an attempt failed, the endpoint waits `retryInMs` (warn): `endpointId`, `eventId`, `attempt`, `responseCode`, `error`, `retryInMs` */
  'webhook.delivery_failed',
  /** an endpoint failed longer than WEBHOOK_DISABLE_AFTER_MS and is disabled (error): `endpointId`, `eventId`, `attempt`, `failingSince`, `responseCode`, `error` */
  'webhook.endpoint_disabled',
  /** the delivery loop or its LISTEN failed (Postgres unreachable); the next interval tries again (warn): `err` */
  'webhook.worker_error',

  // the search indexer (src/pipeline/services/search-index.ts)
  /** cutting queued transcripts' passages (the search index) failed; it tries again every SEARCH_INDEX_IDLE_MS, logged once until it works (warn): `readOnly`, `err` */
  'search_index.failed',
  /** the indexer works again after search_index.failed */
  'search_index.resumed',

  // workers (src/pipeline/services/workers.ts)
  /** an attempt failed (bullmq retries it or gives up): `queue`, `bullJobId`, `attemptsMade`, `err`; `payloadPath` when the payload failed its schema (failed for good, never retried) */
  'job.failed',
  /** a job's worker died or lost its lock; the job runs again: `queue`, `bullJobId` */
  'job.stalled',
  /** shutdown interrupted a job; it goes back to the queue: `queue`, `bullJobId` */
  'job.handed_back',
  /** a worker (not a job) failed, e.g. its Redis connection: `queue`, `err` */
  'worker.error',
  /** shutdown's grace ran out; workers are closed by force: `timeoutMs` */
  'worker.forced_close',
  /** the upstream answered 429: the queue pauses: `endpoint`, `pauseMs` */
  'rate_limit.paused',
  /** the pause could not be shared with the other processes: `err` */
  'rate_limit.share_failed',

  // the upstream API client (src/api/http.ts)
  /** one request answered (debug): `endpoint`, `status`, `attempt`, `durationMs` */
  'upstream.request',
  /** one request failed (debug): `endpoint`, `status`, `attempt`, `durationMs`, `code`, `reason` */
  'upstream.request_failed',
  /** a failed request is tried again: `endpoint`, `attempt`, `delayMs`, `code`, `status`, `durationMs` */
  'upstream.retry',
  /** a Retry-After longer than allowed was cut: `endpoint`, `status`, `receivedMs`, `cappedMs` */
  'upstream.retry_after_capped',
  /** an onRequest hook threw (the request went on): `endpoint`, `err` */
  'upstream.hook_failed',

  // commands, database, Redis (src/cli/*, src/db/*)
  /** a command's Redis connection failed (ioredis reconnects): `err` */
  'redis.error',
  /** a Redis node answered READONLY (a primary demoted by a failover): the connection reconnects and resends (warn): `err` */
  'redis.readonly_reconnect',
  /** cron schedules could not be written; the daemon's reconcile will: `err` */
  'schedules.update_failed',
  /** the database did not exist and was created: `database` */
  'db.created',
  /** migrations ran (also when none was pending): `database`, `applied`, `created` */
  'db.migrated',
  /** a Postgres notice (debug): `code`, `notice` */
  'db.notice',

  // the simulator (src/simulator/server.ts, src/cli/simulator.ts)
  /** the simulator accepts requests: `url`, `platform`, `seed` */
  'simulator.listening',
  /** one request answered (debug): `method`, `endpoint`, `status`, `ms`, `scripted` */
  'simulator.request',
  /** an endpoint's handler threw; answered 500: `endpoint`, `err` */
  'simulator.handler_failed',
  /** a request failed outside a handler; its socket is closed: `err` */
  'simulator.request_failed',
  /** the simulator command got a signal and stops: `signal` */
  'simulator.stopping',

  // the embeddings twin (src/embeddings/twin.ts, src/cli/embeddings-twin.ts)
  /** the twin stops listening for a while (a scripted outage): `ms` */
  'embeddings_twin.down',
  /** the twin failed to answer a request: `err` */
  'embeddings_twin.error',
  /** the embeddings-twin command got a signal and stops: `signal` */
  'embeddings_twin.stopping',

  // the embedder (src/pipeline/services/embedder.ts)
  /** the embedder runs: `model`, `dimensions`, `batchSize`, `tokensPerDay` */
  'embedder.started',
  /** vectors cannot be stored: pgvector is missing or may not be created (warn, once until it changes): `state`, `hint` */
  'embedder.store_unavailable',
  /** one request's vectors stored (debug): `model`, `texts`, `tokens`, `ms` */
  'embedder.embedded',
  /** the provider answered 429: every embedding of this process waits (info): `pauseMs` */
  'embedder.rate_limited',
  /** a request failed and is tried again later (warn, once per outage): `code`, `status`, `retryInMs`, `err` */
  'embedder.failed',
  /** requests succeed again after failures: `failures` */
  'embedder.resumed',
  /** the daily token budget refused a request; embedding waits (warn, once a day): `model`, `tokensSpent`, `budget` */
  'embedder.budget_refused',
  /** the provider refused texts for good (a 4xx): left alone for a day (warn): `model`, `texts`, `code`, `status`, `err` */
  'embedder.texts_rejected',
  /** a model's HNSW index was built: `model`, `dimensions`, `index`, `ms` */
  'embedder.index_built',
  /** a model's HNSW index could not be built (search by meaning scans instead; warn): `model`, `dimensions`, `err` */
  'embedder.index_failed',

  // export (src/pipeline/commands/export.ts)
  /** an export completed and its output is in place (the cursor moved after): `format`, `out`, `records` (srt/vtt: files, with `cues` and `skipped`), `bytes`, `ms`, `cursor`, `afterEventId`, `lastEventId` */
  'export.done',
  /** srt/vtt (src/pipeline/commands/subtitles.ts): a transcript whose video ID or language cannot be a file name got no file (warn): `videoId`, `lang`, `reason` */
  'export.subtitle_skipped',

  // the admin server (src/admin/*)
  /** a readiness check passes again: `check` */
  'admin.check_ok',
  /** a readiness check fails: `check`, `state`, `err` */
  'admin.check_failing',
  /** an admin answer held a secret and was redacted (a bug): `path` */
  'admin.secret_redacted',
  /** an admin request threw: `path`, `err` */
  'admin.request_failed',
  /** a request was refused before any route (warn): `status` (421 a foreign Host, 403 a cross-site request), `method`, `path`, `reason` */
  'admin.request_refused',
  /** the admin HTTP server failed: `err` */
  'admin.server_error',
  /** a metrics family could not be read: `family`, `err` */
  'metrics.family_failed',
  /** a metrics family is readable again: `family` */
  'metrics.family_recovered',
  /** a section of the overview could not be read and is left out of the page: `section`, `cancelled` (by statement_timeout), `err` */
  'overview.section_failed',
  /** a section of a source, batch, item or batches page could not be read and is left out: `page`, `section`, `cancelled`, `err` */
  'admin.section_failed',

  // the MCP server (src/mcp/*, src/cli/mcp.ts)
  /** `mcp --http` accepts requests: `url` */
  'mcp.listening',
  /** a tool could not answer (the caller is told only that it failed; error): `tool`, `err` (URLs' passwords redacted) */
  'mcp.tool_failed',
  /** the HTTP server failed after it started listening (error): `err` */
  'mcp.server_error',

  // a read-only database and rolling upgrades (src/pipeline/services/workers.ts, src/db/migrate.ts, src/pipeline/services/schema-gate.ts)
  /** a job met a read-only database (25006): handed back without burning an attempt, its queue paused (warn): `queue`, `bullJobId`, `retryInMs` */
  'db.read_only',
  /** a migration waited longer than MIGRATION_LOCK_TIMEOUT_MS for a lock: rolled back, retried (warn): `migration`, `attempt`, `retryInMs`, `lockTimeoutMs`, `blockers` */
  'db.migrate_lock_timeout',
  /** the database has migrations newer than this build (warn; logged when the verdict changes): `built`, `newer` (tags), `incompatible` (tags), `scheduling` (true: goes on) */
  'schema.newer',
  /** the database has no migration newer than this build any more (after a `schema.newer`): `built` */
  'schema.current',
  /** a sync or a cron tick was not run: the schema has a newer migration not marked compatible (warn): `sourceId` or `cron`, `incompatible` */
  'schedule.schema_blocked',
] as const;

export type LogEvent = (typeof LOG_EVENTS)[number];

export function isLogEvent(name: unknown): name is LogEvent {
  return typeof name === 'string' && (LOG_EVENTS as readonly string[]).includes(name);
}
