/**
 * The Postgres schema (drizzle pg-core). `migrations/` is generated from this file by drizzle-kit;
 * change it only together with a new migration (`npx drizzle-kit generate --name <what>`).
 *
 * Table and column names listed in DESIGN.md ("Tables") are a public contract: people query them.
 * Each table lists those columns first, then ours. Every timestamp is timestamptz; every value
 * is stored as delivered (null stays null, text byte-exact), so most columns are nullable.
 */
import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  check,
  customType,
  date,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import {
  BATCH_IN_FLIGHT_STATUSES,
  BATCH_KINDS,
  BATCH_STATUSES,
  type BatchKind,
  type BatchStatus,
} from '../domain/batches.ts';
import { ITEM_STATES, type ItemState, type QuarantineReason } from '../domain/items.ts';
import { PRUNABLE_ITEM_STATES } from '../domain/retention.ts';
import { SYNC_RUN_OUTCOMES, type SyncRunOutcome } from '../domain/syncs.ts';
import { CLAIM_STANDING_SUBMISSIONS, SUBMISSION_STATES, type SubmissionState } from '../domain/submissions.ts';
import { EVENT_TYPES, type EventType } from '../domain/events.ts';
import { MEDIA_MODES, MEDIA_TRANSCRIPT_STATES, type MediaMode, type MediaTranscriptState } from '../domain/media.ts';
import { CHARGE_BASES, type ChargeBasis } from '../domain/charges.ts';
import { PASSAGE_KINDS, type PassageKind } from '../domain/passages.ts';
import { WEBHOOK_DELIVERY_STATUSES, type WebhookDeliveryStatus } from '../domain/webhooks.ts';
import {
  SECRET_ENCRYPTIONS,
  SECRET_FORMATS,
  type SecretEncryption,
  type SecretFormat,
} from '../domain/webhook-secrets.ts';
import { HOLD_CODES, HOLD_SCOPES, type HoldCode, type HoldEvent, type HoldScope } from '../domain/refusals.ts';
import {
  BATCH_MODES,
  SOURCE_INCLUDES,
  SOURCE_KINDS,
  TRANSCRIPT_ORIGINS,
  TRANSLATION_BOUGHT_STATES,
  TRANSLATION_STATES,
  type BatchMode,
  type SearchFilterValues,
  type SourceInclude,
  type SourceKind,
  type TranscriptOrigin,
  type TranslationState,
} from '../domain/sources.ts';

/** timestamptz, read as a JS Date through drizzle. */
const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
/** timestamptz not null default now(). */
const tstzNow = (name: string) => tstz(name).notNull().defaultNow();
/** bigint read as a JS number: counts and credits stay far below 2^53. */
const bigNumber = (name: string) => bigint(name, { mode: 'number' });
/** A Postgres `bytea`, read and written as a Buffer. */
const bytea = customType<{ data: Buffer }>({ dataType: () => 'bytea' });

export { SOURCE_KINDS, SOURCE_INCLUDES, TRANSCRIPT_ORIGINS, BATCH_MODES } from '../domain/sources.ts';
export type { SourceKind, SourceInclude, TranscriptOrigin, BatchMode } from '../domain/sources.ts';

// States and codes are defined once, in src/domain/; re-exported here for the tables' users.
export { BATCH_KINDS, BATCH_STATUSES, BATCH_IN_FLIGHT_STATUSES, BATCH_TERMINAL_STATUSES } from '../domain/batches.ts';
export type { BatchKind, BatchStatus } from '../domain/batches.ts';
export { ITEM_STATES, QUARANTINE_REASONS } from '../domain/items.ts';
export type { ItemState, QuarantineReason } from '../domain/items.ts';
export { HOLD_CODES, HOLD_SCOPES } from '../domain/refusals.ts';
export type { HoldCode, HoldScope } from '../domain/refusals.ts';

export { SYNC_RUN_OUTCOMES } from '../domain/syncs.ts';
export type { SyncRunOutcome } from '../domain/syncs.ts';

/** `sql` list literal for a check constraint or a partial index: `'a', 'b'`. */
const sqlList = (values: readonly string[]) => sql.raw(values.map((v) => `'${v}'`).join(', '));

// ---------------------------------------------------------------------------------------------

export const sources = pgTable(
  'sources',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    kind: text('kind').$type<SourceKind>().notNull(),
    /** as the user gave it (URL, ID or handle) */
    ref: text('ref').notNull(),
    /**
     * canonical playlist or channel ID, resolved through the API; for a `videos` source a digest
     * of its ID set, for a `search` source its query and filters in a canonical form
     */
    externalId: text('external_id').notNull(),
    /** `--limit`: at most this many videos per sync (a `videos` source: how many IDs it was given) */
    maxVideos: integer('max_videos').notNull(),
    /** transcript languages to fetch; empty: the API's default language only */
    langs: text('langs')
      .array()
      .notNull()
      .default(sql`'{}'::text[]`),
    textOnly: boolean('text_only').notNull().default(false),
    /** cron expression; null: synced only by `backfill` */
    cron: text('cron'),
    paused: boolean('paused').notNull().default(false),
    lastSyncedAt: tstz('last_synced_at'),
    // ours
    title: text('title'),
    createdAt: tstzNow('created_at'),
    updatedAt: tstzNow('updated_at'),
    lastError: text('last_error'),
    lastErrorCode: text('last_error_code'),
    lastErrorAt: tstz('last_error_at'),
    /**
     * unused since source kinds submit only `videoIds`; kept (not dropped) so that a daemon of the
     * previous version, which still writes it, keeps working while an upgrade rolls out
     */
    initialSyncDone: boolean('initial_sync_done').notNull().default(false),
    /** `--include` of a channel or playlist: listed shorts and live videos are submitted too */
    include: text('include')
      .array()
      .$type<SourceInclude[]>()
      .notNull()
      .default(sql`'{}'::text[]`),
    /**
     * a `search` source's query (the `ref`) and filters, as sent to the search endpoint (`features`
     * a list; a row of an older release may hold one feature as a string)
     */
    search: jsonb('search').$type<{ query: string } & SearchFilterValues>(),
    /** `--generate-missing`: a video without captions gets a generated transcript (priced per minute) */
    generateMissing: boolean('generate_missing').notNull().default(false),
    /** `--max-generate-minutes`: the most media minutes this source may have generated, ever; null: no cap */
    maxGenerateMinutes: integer('max_generate_minutes'),
    /** `--max-credits-per-day`: the most credits this source's syncs may spend in one UTC day; null: no cap */
    maxCreditsPerDay: integer('max_credits_per_day'),
    /**
     * `--refresh`: a stored (or gone) video is fetched again once its latest fetch is older than
     * this, so that edits upstream are seen (src/domain/attempts.ts); null: never automatically
     */
    refreshAfterMs: bigNumber('refresh_after_ms'),
    /** `--translate`: languages each stored transcript of another language is translated into (priced per minute) */
    translateLangs: text('translate_langs')
      .array()
      .notNull()
      .default(sql`'{}'::text[]`),
    /** `--max-translate-minutes`: the most transcript minutes this source may have translated, ever (required with `--translate`) */
    maxTranslateMinutes: integer('max_translate_minutes'),
    /**
     * `--mode` of a `media` source: the universal transcript's mode (`native`, `auto`,
     * `generate`); null for every other kind (and read as `native`)
     */
    mediaMode: text('media_mode').$type<MediaMode>(),
  },
  (t) => [
    uniqueIndex('sources_kind_external_id_uq').on(t.kind, t.externalId),
    // /metrics: the sources longest without a sync
    index('sources_last_synced_idx').on(t.lastSyncedAt),
    check('sources_kind_ck', sql`${t.kind} in (${sqlList(SOURCE_KINDS)})`),
    check('sources_max_videos_ck', sql`${t.maxVideos} >= 1`),
    check('sources_include_ck', sql`${t.include} <@ array[${sqlList(SOURCE_INCLUDES)}]::text[]`),
    check('sources_max_generate_minutes_ck', sql`${t.maxGenerateMinutes} is null or ${t.maxGenerateMinutes} >= 1`),
    check('sources_max_credits_per_day_ck', sql`${t.maxCreditsPerDay} is null or ${t.maxCreditsPerDay} >= 1`),
    check('sources_max_translate_minutes_ck', sql`${t.maxTranslateMinutes} is null or ${t.maxTranslateMinutes} >= 1`),
    // a translation is never bought without a minute budget
    check(
      'sources_translate_budget_ck',
      sql`cardinality(${t.translateLangs}) = 0 or ${t.maxTranslateMinutes} is not null`,
    ),
    check('sources_media_mode_ck', sql`${t.mediaMode} is null or ${t.mediaMode} in (${sqlList(MEDIA_MODES)})`),
  ],
);

/** Which videos belong to which source: from ID listings and from that source's batch results. */
export const sourceVideos = pgTable(
  'source_videos',
  {
    sourceId: integer('source_id')
      .notNull()
      .references(() => sources.id, { onDelete: 'cascade' }),
    videoId: text('video_id').notNull(),
    firstSeenAt: tstzNow('first_seen_at'),
    lastListedAt: tstz('last_listed_at'),
  },
  (t) => [primaryKey({ columns: [t.sourceId, t.videoId] }), index('source_videos_video_id_idx').on(t.videoId)],
);

export const batches = pgTable(
  'batches',
  {
    jobId: text('job_id').primaryKey(),
    sourceId: integer('source_id').references(() => sources.id, { onDelete: 'set null' }),
    kind: text('kind').$type<BatchKind>().notNull(),
    /** the language requested; null for video batches (and a transcript batch without `lang`) */
    lang: text('lang'),
    status: text('status').$type<BatchStatus>().notNull(),
    errorCode: text('error_code'),
    total: integer('total'),
    succeeded: integer('succeeded'),
    failed: integer('failed'),
    /** 1 + videos (1 + limit at submission for a playlist/channel batch, corrected from stats.total) */
    creditsEstimated: integer('credits_estimated').notNull(),
    submittedAt: tstzNow('submitted_at'),
    completedAt: tstz('completed_at'),
    polls: integer('polls').notNull().default(0),
    // ours
    /** the request body as submitted (never holds a secret) */
    request: jsonb('request').notNull(),
    textOnly: boolean('text_only'),
    lastPolledAt: tstz('last_polled_at'),
    nextPollAt: tstz('next_poll_at'),
    terminalAt: tstz('terminal_at'),
    /** job_id of the batch whose items this one re-submits */
    replayOf: text('replay_of'),
    updatedAt: tstzNow('updated_at'),
    /** the head's status as last received (it may be one this interface version does not list) */
    upstreamStatus: text('upstream_status'),
    /** poll attempts in a row that threw; past POLL_FAILURES_MAX the batch is failed */
    pollFailures: integer('poll_failures').notNull().default(0),
    /** why the batch ended without the upstream saying so, or why the last poll failed */
    reason: text('reason'),
    /** first of the consecutive polls answered with a JSON `not-found` (null once an answer arrives) */
    notFoundSince: tstz('not_found_since'),
    /**
     * `batch`: a batch job; `generate`: a transcript job of one video (`GET /transcript`, mode
     * generate); `crawl`: a crawl job (`POST /web/crawl`); `scrape`: a sync's scrapes of a `pages`
     * source (no upstream job: `job_id` is `scrape:<sync run>`). Their items are pages, keyed by URL
     * in `batch_items.video_id`.
     */
    mode: text('mode').$type<BatchMode>().notNull().default('batch'),
  },
  (t) => [
    index('batches_in_flight_idx')
      .on(t.status, t.nextPollAt)
      .where(sql`${t.status} in (${sqlList(BATCH_IN_FLIGHT_STATUSES)})`),
    index('batches_source_id_idx').on(t.sourceId, t.submittedAt),
    // credits spent today (CREDIT_BUDGET_PER_DAY)
    index('batches_submitted_at_idx').on(t.submittedAt),
    // the batches that ended lately (status, the overview), newest first
    index('batches_terminal_at_idx')
      .on(t.terminalAt)
      .where(sql`${t.terminalAt} is not null`),
    check('batches_kind_ck', sql`${t.kind} in (${sqlList(BATCH_KINDS)})`),
    check(
      'batches_mode_ck',
      sql`${t.mode} in (${sqlList(BATCH_MODES)}) and (${t.mode} = 'batch' or (${t.mode} = 'generate' and ${t.kind} = 'transcript') or (${t.mode} = 'generate' and ${t.kind} = 'media') or (${t.mode} in ('crawl', 'scrape') and ${t.kind} = 'page') or (${t.mode} = 'media' and ${t.kind} = 'media'))`,
    ),
    check('batches_status_ck', sql`${t.status} in (${sqlList(BATCH_STATUSES)})`),
    check('batches_lang_ck', sql`${t.kind} = 'transcript' or ${t.lang} is null`),
  ],
);

export const batchItems = pgTable(
  'batch_items',
  {
    jobId: text('job_id')
      .notNull()
      .references(() => batches.jobId, { onDelete: 'cascade' }),
    videoId: text('video_id').notNull(),
    state: text('state').$type<ItemState>().notNull(),
    errorCode: text('error_code'),
    /** the raw item exactly as received (null when it cannot be jsonb: see payload_raw) */
    payload: jsonb('payload'),
    landedAt: tstz('landed_at'),
    sunkAt: tstz('sunk_at'),
    // ours
    /** the raw item as JSON text, when jsonb cannot hold it (a \u0000 or a lone surrogate) */
    payloadRaw: text('payload_raw'),
    /** why the item was quarantined */
    reason: text('reason'),
    /** job_id of the batch that re-submitted this retryable item (so it is re-submitted once) */
    resubmittedIn: text('resubmitted_in'),
    updatedAt: tstzNow('updated_at'),
    /** the stable category of `reason` for a quarantined item (QUARANTINE_REASONS) */
    reasonCode: text('reason_code').$type<QuarantineReason>(),
    /** sha256 (hex) of the raw item's text, kept when RAW_RETENTION_DAYS prunes the payload */
    payloadSha256: text('payload_sha256'),
    /** size of the raw item's text in bytes, kept when the payload is pruned */
    payloadBytes: integer('payload_bytes'),
    /** when `prune` dropped `payload`/`payload_raw` (the row, its state and error code stay) */
    payloadPrunedAt: tstz('payload_pruned_at'),
  },
  (t) => [
    primaryKey({ columns: [t.jobId, t.videoId] }),
    // the sink's work list, and reconcile's "landed but not sunk"
    index('batch_items_landed_idx')
      .on(t.jobId, t.videoId)
      .where(sql`${t.state} = 'landed'`),
    // the next sync's and replay's re-submission list
    index('batch_items_retryable_idx')
      .on(t.jobId, t.videoId)
      .where(sql`${t.state} = 'retryable' and ${t.resubmittedIn} is null`),
    index('batch_items_video_id_idx').on(t.videoId),
    index('batch_items_quarantined_idx')
      .on(t.reasonCode)
      .where(sql`${t.state} = 'quarantined'`),
    // prune's work list: settled items whose raw payload is still kept, oldest first
    index('batch_items_prunable_idx')
      .on(sql`coalesce(${t.sunkAt}, ${t.landedAt}, ${t.updatedAt})`)
      .where(sql`${t.payloadPrunedAt} is null and ${t.state} in (${sqlList(PRUNABLE_ITEM_STATES)})`),
    check('batch_items_state_ck', sql`${t.state} in (${sqlList(ITEM_STATES)})`),
  ],
);

export const videos = pgTable(
  'videos',
  {
    id: text('id').primaryKey(),
    title: text('title'),
    description: text('description'),
    durationS: doublePrecision('duration_s'),
    channelId: text('channel_id'),
    channelName: text('channel_name'),
    tags: text('tags').array(),
    thumbnail: text('thumbnail'),
    uploadDate: tstz('upload_date'),
    viewCount: bigNumber('view_count'),
    likeCount: bigNumber('like_count'),
    transcriptLanguages: text('transcript_languages').array(),
    firstSeenAt: tstzNow('first_seen_at'),
    /** changes only when a delivered value changes */
    updatedAt: tstzNow('updated_at'),
    // ours
    /** the batch that last changed (or first delivered) this row */
    lastJobId: text('last_job_id'),
    /** when a later batch reported the stored video `not-found` or `forbidden`; null again when it is delivered again */
    goneAt: tstz('gone_at'),
    /** the error code that batch reported */
    goneReason: text('gone_reason'),
  },
  (t) => [index('videos_channel_id_idx').on(t.channelId)],
);

/**
 * Field-level history of `videos` (issue #14): a row per changed field when a delivered video's
 * title, description, tags, duration, thumbnail or transcript languages change, and when it goes
 * (`gone`: new value the error code) or returns (`gone`: new value null). Written by the trigger
 * `videos_changed` (migrations/0010) in the transaction that changes the row, whichever writer
 * it is. View and like counts are measurements, not changes: never here.
 */
export const videoChanges = pgTable(
  'video_changes',
  {
    id: bigNumber('id').primaryKey().generatedAlwaysAsIdentity(),
    videoId: text('video_id').notNull(),
    /** the contract's field name: title, description, tags, duration, thumbnail, transcriptLanguages, gone */
    field: text('field').notNull(),
    oldValue: jsonb('old_value'),
    newValue: jsonb('new_value'),
    /** the batch that delivered (or reported) the change */
    jobId: text('job_id'),
    changedAt: tstzNow('changed_at'),
  },
  (t) => [index('video_changes_video_id_idx').on(t.videoId, t.id)],
);

/**
 * Every distinct content of a (video, lang) transcript (issue #14), by `content_sha256`: a new row
 * only when the content changes (a return to an earlier content moves that row's `last_seen_at`).
 * Written by the triggers `transcripts_added`, `transcripts_changed` and `transcripts_removed`
 * (migrations/0010, 0029); `last_seen_at` also moves when identical content is delivered again.
 *
 * The current version's text and chunks are stored once, in `transcripts`: its row here holds
 * null in both, and the trigger that replaces it (a change, a delete, a truncate) fills them from
 * the row replaced, in the same statement. Read it through the view `transcript_versions`
 * (migrations/0029), which has every column of this table with the current text and chunks
 * filled in; the view is updatable for every column but those two.
 */
export const transcriptVersions = pgTable(
  'transcript_version_rows',
  {
    id: bigNumber('id').primaryKey().generatedAlwaysAsIdentity(),
    videoId: text('video_id').notNull(),
    lang: text('lang').notNull(),
    contentSha256: text('content_sha256').notNull(),
    /** null while this is the current version (its text is `transcripts.text`) */
    text: text('text'),
    /** null while this is the current version, or when the content arrived as a string */
    chunks: jsonb('chunks'),
    availableLangs: text('available_langs').array(),
    /** the batch that first delivered this content */
    jobId: text('job_id'),
    firstSeenAt: tstzNow('first_seen_at'),
    /** the latest delivery of this content */
    lastSeenAt: tstzNow('last_seen_at'),
    /** the batch of that latest delivery */
    lastJobId: text('last_job_id'),
  },
  (t) => [uniqueIndex('transcript_versions_content_uq').on(t.videoId, t.lang, t.contentSha256)],
);

export const transcripts = pgTable(
  'transcripts',
  {
    videoId: text('video_id').notNull(),
    /** the language the API returned (may differ from the one asked for) */
    lang: text('lang').notNull(),
    /** chunk texts joined by a single space, or the string content as delivered */
    text: text('text').notNull(),
    /** the chunks as delivered; null when the content arrived as a string */
    chunks: jsonb('chunks'),
    availableLangs: text('available_langs').array(),
    contentSha256: text('content_sha256').notNull(),
    /** changes only when the content (or availableLangs) does */
    updatedAt: tstzNow('updated_at'),
    // ours
    firstSeenAt: tstzNow('first_seen_at'),
    /** the batch that last changed (or first delivered) this row */
    lastJobId: text('last_job_id'),
    /** true when the content arrived as a plain string */
    textOnly: boolean('text_only'),
    /**
     * `captions` (a transcript batch), `generated` (a transcript job that generated it from the
     * audio) or `translation` (`--translate`: translated from another stored transcript of the video)
     */
    origin: text('origin').$type<TranscriptOrigin>().notNull().default('captions'),
    /** a translation: the language of the stored transcript it was translated from; else null */
    translatedFrom: text('translated_from'),
    /** a translation: that transcript's `content_sha256` when it was translated (a change makes it due again on refresh) */
    translatedFromSha256: text('translated_from_sha256'),
  },
  (t) => [
    primaryKey({ columns: [t.videoId, t.lang] }),
    check('transcripts_origin_ck', sql`${t.origin} in (${sqlList(TRANSCRIPT_ORIGINS)})`),
  ],
);

/**
 * Every translation a source asked for (`--translate`): bought (or possibly bought) once per video,
 * target language and content of the transcript it is translated from, whichever sources ask
 * (`translations_bought_uq`); and, per source, those its minute budget left unbought
 * (`refused-budget`, `translations_refused_uq`). The translated transcript itself is the video's
 * `transcripts` row of the target language (origin `translation`). src/db/translations.ts.
 */
export const translations = pgTable(
  'translations',
  {
    id: bigNumber('id').primaryKey().generatedAlwaysAsIdentity(),
    videoId: text('video_id').notNull(),
    /** the target language */
    lang: text('lang').notNull(),
    /** the stored transcript it is translated from: its language and content hash */
    fromLang: text('from_lang').notNull(),
    fromSha256: text('from_sha256').notNull(),
    /** the source that asked (and paid, or whose budget refused it) */
    sourceId: integer('source_id').references(() => sources.id, { onDelete: 'set null' }),
    state: text('state').$type<TranslationState>().notNull(),
    /** the video's duration it was estimated by, seconds */
    durationS: doublePrecision('duration_s').notNull(),
    /** started minutes of that duration: what the source's `--max-translate-minutes` counts */
    minutes: integer('minutes').notNull(),
    /** the published price of those minutes (what the credit guard reserved); the billed credits are in `credit_charges` */
    creditsEstimated: integer('credits_estimated').notNull(),
    /** why it failed, was refused or is unknown */
    detail: text('detail'),
    createdAt: tstzNow('created_at'),
    updatedAt: tstzNow('updated_at'),
  },
  (t) => [
    uniqueIndex('translations_bought_uq')
      .on(t.videoId, t.lang, t.fromSha256)
      .where(sql`${t.state} in (${sqlList(TRANSLATION_BOUGHT_STATES)})`),
    uniqueIndex('translations_refused_uq')
      .on(t.sourceId, t.videoId, t.lang)
      .where(sql`${t.state} = 'refused-budget'`),
    index('translations_source_idx').on(t.sourceId, t.state),
    check('translations_state_ck', sql`${t.state} in (${sqlList(TRANSLATION_STATES)})`),
  ],
);

/** Per video, kind and language (lang '' for metadata): the outcome of its latest item. */
export const videoSync = pgTable(
  'video_sync',
  {
    videoId: text('video_id').notNull(),
    kind: text('kind').$type<BatchKind>().notNull(),
    /** '' for metadata */
    lang: text('lang').notNull().default(''),
    lastJobId: text('last_job_id'),
    lastState: text('last_state').$type<ItemState>(),
    lastErrorCode: text('last_error_code'),
    attempts: integer('attempts').notNull().default(0),
    /** when to re-check (e.g. `transcript-unavailable` on a slow backoff); null: never automatically */
    nextCheckAt: tstz('next_check_at'),
    updatedAt: tstzNow('updated_at'),
    /** the POST that claimed this video (its batch is `last_job_id` once the answer arrived) */
    submissionId: bigNumber('submission_id'),
    /** the latest purchase asked for plain text only (`--text`) */
    textOnly: boolean('text_only').notNull().default(false),
    /**
     * kind transcript: the language the latest delivered transcript came in. It differs from
     * `lang` when the interface fell back to the video's first available language (it does when
     * the one asked for has no transcript); null until a transcript is delivered.
     */
    deliveredLang: text('delivered_lang'),
  },
  (t) => [
    primaryKey({ columns: [t.videoId, t.kind, t.lang] }),
    index('video_sync_next_check_idx')
      .on(t.nextCheckAt)
      .where(sql`${t.nextCheckAt} is not null`),
    // the claims of a POST still waiting for its batch ID (pointing and releasing them): without
    // it each submission scanned every row (270 ms at 2 M rows, bench:scale)
    index('video_sync_pending_claims_idx')
      .on(t.submissionId)
      .where(sql`${t.lastJobId} is null`),
    check('video_sync_kind_ck', sql`${t.kind} in (${sqlList(BATCH_KINDS)})`),
  ],
);

export const channels = pgTable('channels', {
  id: text('id').primaryKey(),
  name: text('name'),
  handle: text('handle'),
  description: text('description'),
  subscriberCount: bigNumber('subscriber_count'),
  videoCount: bigNumber('video_count'),
  viewCount: bigNumber('view_count'),
  thumbnail: text('thumbnail'),
  banner: text('banner'),
  /** the Channel answer as received */
  raw: jsonb('raw'),
  fetchedAt: tstz('fetched_at'),
  updatedAt: tstzNow('updated_at'),
});

export const playlists = pgTable('playlists', {
  id: text('id').primaryKey(),
  title: text('title'),
  description: text('description'),
  videoCount: bigNumber('video_count'),
  viewCount: bigNumber('view_count'),
  lastUpdated: tstz('last_updated'),
  channelId: text('channel_id'),
  channelName: text('channel_name'),
  /** the Playlist answer as received */
  raw: jsonb('raw'),
  fetchedAt: tstz('fetched_at'),
  updatedAt: tstzNow('updated_at'),
});

export const creditSnapshots = pgTable(
  'credit_snapshots',
  {
    id: bigNumber('id').primaryKey().generatedAlwaysAsIdentity(),
    takenAt: tstzNow('taken_at'),
    organizationId: text('organization_id'),
    plan: text('plan'),
    maxCredits: bigNumber('max_credits'),
    usedCredits: bigNumber('used_credits'),
    // ours
    /** why it was taken, e.g. 'before-submit', 'after-batch' */
    reason: text('reason'),
    sourceId: integer('source_id').references(() => sources.id, { onDelete: 'set null' }),
  },
  (t) => [index('credit_snapshots_taken_at_idx').on(t.takenAt)],
);

export const syncRuns = pgTable(
  'sync_runs',
  {
    id: bigNumber('id').primaryKey().generatedAlwaysAsIdentity(),
    sourceId: integer('source_id').references(() => sources.id, { onDelete: 'set null' }),
    startedAt: tstzNow('started_at'),
    finishedAt: tstz('finished_at'),
    outcome: text('outcome').$type<SyncRunOutcome>(),
    detail: text('detail'),
    videosListed: integer('videos_listed'),
    videosSubmitted: integer('videos_submitted'),
    /** what the run's batches were estimated to cost (what the credit guard checked) */
    creditsEstimated: integer('credits_estimated'),
    jobIds: text('job_ids').array(),
    /** what listing the source cost this run (1 per ID listing, 1 per search page), spent before the guard */
    listingCredits: integer('listing_credits'),
    /** what the run's requests were billed in all (`credit_charges`); null: runs of older releases */
    creditsBilled: integer('credits_billed'),
  },
  (t) => [
    index('sync_runs_source_started_idx').on(t.sourceId, t.startedAt),
    // prune by age (HISTORY_RETENTION_DAYS); listing credits spent today
    index('sync_runs_started_idx').on(t.startedAt),
    check('sync_runs_outcome_ck', sql`${t.outcome} is null or ${t.outcome} in (${sqlList(SYNC_RUN_OUTCOMES)})`),
  ],
);

export { SUBMISSION_STATES, SUBMISSION_PENDING_STATES } from '../domain/submissions.ts';
export type { SubmissionState } from '../domain/submissions.ts';

/**
 * Every batch POST, written before it is sent. A POST costs credits and is never retried
 * blindly: when its answer is lost (`unknown`; or `sending` left by a process that died), the
 * next sync of the source compares the account's credits with the reading before the POST:
 * nothing charged → `not-created`, submitted again; charged → `lost`, not re-submitted (that
 * could pay twice) until a person releases it (`replay --lost`).
 */
export const batchSubmissions = pgTable(
  'batch_submissions',
  {
    id: bigNumber('id').primaryKey().generatedAlwaysAsIdentity(),
    sourceId: integer('source_id').references(() => sources.id, { onDelete: 'set null' }),
    kind: text('kind').$type<BatchKind>().notNull(),
    lang: text('lang'),
    /** the request body (never holds a secret) */
    request: jsonb('request').notNull(),
    creditsEstimated: integer('credits_estimated').notNull(),
    /** `usedCredits` of the /me reading taken before the POST; null: none was taken */
    usedCreditsBefore: bigNumber('used_credits_before'),
    state: text('state').$type<SubmissionState>().notNull(),
    /** the upstream job ID, once the answer arrived */
    jobId: text('job_id'),
    /** why it failed, or what was decided about it */
    detail: text('detail'),
    createdAt: tstzNow('created_at'),
    updatedAt: tstzNow('updated_at'),
  },
  (t) => [
    index('batch_submissions_pending_idx')
      .on(t.sourceId, t.kind)
      .where(sql`${t.state} in (${sqlList(CLAIM_STANDING_SUBMISSIONS)})`),
    check('batch_submissions_state_ck', sql`${t.state} in (${sqlList(SUBMISSION_STATES)})`),
    check('batch_submissions_kind_ck', sql`${t.kind} in (${sqlList(BATCH_KINDS)})`),
  ],
);

/**
 * The upstream refused one API key for account reasons (key, plan, credits): scheduled work of
 * the processes using that key makes no API call while its hold stands; a process with another
 * key is not held by it. A sync a person started that gets through with the key lifts its
 * holds; daemons re-check a free `/me` every HOLD_RECHECK_MS and lift `unauthorized` and
 * `credits` by themselves.
 */
export const upstreamHolds = pgTable(
  'upstream_holds',
  {
    code: text('code').$type<HoldCode>().notNull(),
    scope: text('scope').$type<HoldScope>().notNull(),
    /** what the upstream said, for `status` and the logs */
    reason: text('reason').notNull(),
    since: tstzNow('since'),
    lastSeenAt: tstzNow('last_seen_at'),
    /**
     * which key was refused: its fingerprint (src/api/key-fingerprint.ts), never the key. Null on
     * a hold recorded before holds were per key (migrations/0007): it applies to every key, as it
     * did then, and a key that gets through lifts it.
     */
    keyFingerprint: text('key_fingerprint'),
  },
  (t) => [
    // one hold per code and key; the null of an older hold is never written again
    uniqueIndex('upstream_holds_code_key_uq').on(t.code, t.keyFingerprint),
    check('upstream_holds_code_ck', sql`${t.code} in (${sqlList(HOLD_CODES)})`),
    check('upstream_holds_scope_ck', sql`${t.scope} in (${sqlList(HOLD_SCOPES)})`),
  ],
);

/** Every hold set or lifted, and by whom: a hold that lifts by itself leaves a trace. */
export const upstreamHoldEvents = pgTable(
  'upstream_hold_events',
  {
    id: bigNumber('id').primaryKey().generatedAlwaysAsIdentity(),
    code: text('code').$type<HoldCode>().notNull(),
    /** 'set' or 'lifted' (HOLD_EVENTS) */
    event: text('event').$type<HoldEvent>().notNull(),
    /** what the upstream said, or why it was lifted */
    reason: text('reason'),
    at: tstzNow('at'),
    /** the fingerprint of the key the hold was about (null before migrations/0007) */
    keyFingerprint: text('key_fingerprint'),
  },
  (t) => [index('upstream_hold_events_at_idx').on(t.at)],
);

/**
 * Items per batch, state and error code ('' for none), kept by triggers on `batch_items` (every
 * writer, replay and prune included): a batch's progress reads a few rows, not its items.
 */
export const batchItemCounts = pgTable(
  'batch_item_counts',
  {
    jobId: text('job_id')
      .notNull()
      .references(() => batches.jobId, { onDelete: 'cascade' }),
    state: text('state').$type<ItemState>().notNull(),
    errorCode: text('error_code').notNull().default(''),
    n: integer('n').notNull(),
  },
  (t) => [primaryKey({ columns: [t.jobId, t.state, t.errorCode] })],
);

/**
 * Items of all batches per state, error code, quarantine reason ('' for none) and `pending`, kept
 * by the same triggers. Spread over ITEM_COUNT_SHARDS rows per key (by job_id) so that landing
 * batches side by side do not queue on one counter row; readers sum the shards (and `pending`,
 * unless they ask for it).
 */
export const itemCounts = pgTable(
  'item_counts',
  {
    shard: smallint('shard').notNull(),
    state: text('state').$type<ItemState>().notNull(),
    errorCode: text('error_code').notNull().default(''),
    reasonCode: text('reason_code').notNull().default(''),
    /**
     * true exactly for the items still to re-submit: state 'retryable' and no `resubmitted_in`
     * (migrations/0006; the re-submission backlog, read without counting `batch_items`)
     */
    pending: boolean('pending').notNull().default(false),
    n: bigNumber('n').notNull(),
  },
  (t) => [primaryKey({ columns: [t.shard, t.state, t.errorCode, t.reasonCode, t.pending] })],
);

/**
 * Batches per status with their estimated credits, kept by triggers on `batches` (sharded by
 * job_id like `item_counts`): `status` and `/metrics` read 16 rows per status, not every batch.
 */
export const batchCounts = pgTable(
  'batch_counts',
  {
    shard: smallint('shard').notNull(),
    status: text('status').$type<BatchStatus>().notNull(),
    batches: bigNumber('batches').notNull(),
    creditsEstimated: bigNumber('credits_estimated').notNull(),
  },
  (t) => [primaryKey({ columns: [t.shard, t.status] })],
);

/**
 * Videos per kind, language, latest outcome (`video_sync.last_state`, '' for none), error code and
 * delivered language ('' for none), kept by triggers on `video_sync` (migrations/0008): what
 * `status`, `/metrics` and the overview count is each video's latest word, not every item ever
 * received (that history stays in `item_counts`). Spread over ITEM_COUNT_SHARDS rows per key by
 * the writing transaction, so that batches landing side by side do not queue on one row.
 */
export const videoOutcomeCounts = pgTable(
  'video_outcome_counts',
  {
    shard: smallint('shard').notNull(),
    kind: text('kind').$type<BatchKind>().notNull(),
    lang: text('lang').notNull(),
    state: text('state').notNull(),
    errorCode: text('error_code').notNull(),
    deliveredLang: text('delivered_lang').notNull(),
    n: bigNumber('n').notNull(),
  },
  (t) => [primaryKey({ columns: [t.shard, t.kind, t.lang, t.state, t.errorCode, t.deliveredLang] })],
);

/**
 * Per source, the videos and transcripts stored, kept by triggers on `videos`, `transcripts`
 * and `source_videos`; `refreshed_at` is the last full recount (each listing recounts its source).
 */
export const sourceStats = pgTable('source_stats', {
  sourceId: integer('source_id')
    .primaryKey()
    .references(() => sources.id, { onDelete: 'cascade' }),
  videos: integer('videos').notNull().default(0),
  transcripts: integer('transcripts').notNull().default(0),
  refreshedAt: tstzNow('refreshed_at'),
});

/**
 * Credits that passed the credit guard and may not show in `/me` yet, shared by every process on
 * the account. A check reads `/me` under a transaction lock and subtracts the reservations still
 * open and those released after that read began; one left open by a process that died counts
 * until `expires_at`.
 */
export const creditReservations = pgTable(
  'credit_reservations',
  {
    id: bigNumber('id').primaryKey().generatedAlwaysAsIdentity(),
    sourceId: integer('source_id').references(() => sources.id, { onDelete: 'set null' }),
    credits: integer('credits').notNull(),
    /** host and pid of the process that holds it (for `status` and the logs) */
    holder: text('holder').notNull(),
    createdAt: tstzNow('created_at'),
    releasedAt: tstz('released_at'),
    expiresAt: tstz('expires_at').notNull(),
  },
  (t) => [
    index('credit_reservations_open_idx')
      .on(t.expiresAt)
      .where(sql`${t.releasedAt} is null`),
    index('credit_reservations_released_idx').on(t.releasedAt),
    check('credit_reservations_credits_ck', sql`${t.credits} >= 0`),
  ],
);

/**
 * What each paid API request was billed (its answer's `x-billable-requests`, or the published
 * price where it carried none), beside what was estimated: the exact cost per request, sync run,
 * source and day (src/pipeline/ingest/charges.ts).
 */
export const creditCharges = pgTable(
  'credit_charges',
  {
    id: bigNumber('id').primaryKey().generatedAlwaysAsIdentity(),
    chargedAt: tstzNow('charged_at'),
    /** the source whose sync (or other work) made the request; null: none (e.g. `sources add`) */
    sourceId: integer('source_id').references(() => sources.id, { onDelete: 'set null' }),
    syncRunId: bigNumber('sync_run_id').references(() => syncRuns.id, { onDelete: 'set null' }),
    /** the endpoint template, e.g. `POST /videosite/video/batch` */
    endpoint: text('endpoint').notNull(),
    /** the answer's HTTP status; null: no answer arrived */
    status: integer('status'),
    credits: integer('credits').notNull(),
    /** the published price the request was expected to cost; null: not estimated */
    estimated: integer('estimated'),
    basis: text('basis').$type<ChargeBasis>().notNull(),
    /** what this charge adds to the daily budgets beyond the estimates they count (src/domain/charges.ts `budgetDelta`) */
    budgetDelta: integer('budget_delta').notNull().default(0),
    /** which API key paid (src/api/key-fingerprint.ts) */
    keyFingerprint: text('key_fingerprint'),
  },
  (t) => [
    index('credit_charges_charged_at_idx').on(t.chargedAt),
    index('credit_charges_source_idx').on(t.sourceId, t.chargedAt),
    index('credit_charges_sync_run_idx')
      .on(t.syncRunId)
      .where(sql`${t.syncRunId} is not null`),
    check('credit_charges_credits_ck', sql`${t.credits} >= 0`),
    check('credit_charges_basis_ck', sql`${t.basis} in (${sqlList(CHARGE_BASES)})`),
  ],
);

/** Every `prune` run (by a person or the daily job): what it freed, per table. */
export const pruneRuns = pgTable(
  'prune_runs',
  {
    id: bigNumber('id').primaryKey().generatedAlwaysAsIdentity(),
    startedAt: tstzNow('started_at'),
    finishedAt: tstz('finished_at'),
    dryRun: boolean('dry_run').notNull().default(false),
    /** 'daily' (a daemon's job) or 'cli' */
    trigger: text('trigger').notNull(),
    /** per table: rows affected and bytes freed, e.g. `{"batch_items": {"rows": 10, "bytes": 2048}}` */
    freed: jsonb('freed').$type<Record<string, { rows: number; bytes: number }>>(),
    /** what went wrong, when it failed */
    error: text('error'),
  },
  (t) => [index('prune_runs_started_idx').on(t.startedAt)],
);

/**
 * Change events (issue #14; types and data: src/domain/events.ts), each written in the same
 * transaction as its change. A statement-level trigger (migrations/0009) notifies
 * `videosite_ingest_events` with the highest new id; Postgres delivers a notification only when
 * its transaction commits, so a listener hears of an event once it is readable.
 */
export const events = pgTable(
  'events',
  {
    /**
     * From `events_id_seq`, assigned by the trigger `events_assign_id` under a transaction lock
     * held to commit (migrations/0009): ids become visible in increasing order, so a reader that
     * saw id N will never later find a smaller one (an identity would hand out ids before the
     * lock, and a slower transaction would commit a smaller id after a larger one was read).
     */
    id: bigNumber('id').primaryKey(),
    type: text('type').$type<EventType>().notNull(),
    occurredAt: tstzNow('occurred_at'),
    data: jsonb('data').notNull(),
    /** the source the event is about, for `events --source` (no foreign key: an event outlives its source) */
    sourceId: integer('source_id'),
    videoId: text('video_id'),
  },
  (t) => [
    // `events --type`, and a webhook endpoint's filter, read by type after a cursor
    index('events_type_id_idx').on(t.type, t.id),
    index('events_source_id_idx')
      .on(t.sourceId, t.id)
      .where(sql`${t.sourceId} is not null`),
    index('events_video_id_idx')
      .on(t.videoId, t.id)
      .where(sql`${t.videoId} is not null`),
    // prune by age (EVENTS_RETENTION_DAYS)
    index('events_occurred_at_idx').on(t.occurredAt),
    check('events_type_ck', sql`${t.type} in (${sqlList(EVENT_TYPES)})`),
  ],
);

/**
 * Where change events are POSTed (`webhooks add`). `cursor` is the last event id handled: it moves
 * only after a 2xx, so delivery is at least once. One daemon at a time delivers an endpoint: the
 * one holding its lease (`lease_owner` until `lease_expires_at`), a row rather than a session
 * advisory lock so that it works through a transaction-pooling PgBouncer.
 */
export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    url: text('url').notNull(),
    /** the event types sent; null: every type */
    eventTypes: text('event_types').array().$type<EventType[]>(),
    /**
     * the secret of an endpoint added before Standard Webhooks, as builds from then read it (this
     * one reads `webhook_secrets`, where migration 0017 copied it); null for endpoints added or
     * rotated since, and once `webhooks encrypt-secrets` has sealed it. Never logged or printed.
     */
    secret: text('secret'),
    enabled: boolean('enabled').notNull().default(true),
    createdAt: tstzNow('created_at'),
    cursor: bigNumber('cursor').notNull().default(0),
    /** the first failed attempt of the current run of failures; null while deliveries succeed */
    failingSince: tstz('failing_since'),
    /** failed attempts in a row (the backoff's exponent) */
    failures: integer('failures').notNull().default(0),
    /** no attempt before this (backoff after a failure) */
    nextAttemptAt: tstz('next_attempt_at'),
    disabledAt: tstz('disabled_at'),
    disabledReason: text('disabled_reason'),
    lastDeliveredAt: tstz('last_delivered_at'),
    leaseOwner: text('lease_owner'),
    leaseExpiresAt: tstz('lease_expires_at'),
    /** added with `--allow-private`: may reach private, loopback and link-local addresses */
    allowPrivate: boolean('allow_private').notNull().default(false),
    /** when a delivery slot last took the endpoint: slots take the endpoint whose turn is the oldest */
    lastTurnAt: tstz('last_turn_at'),
  },
  (t) => [
    check('webhook_endpoints_url_ck', sql`${t.url} ~ '^https?://'`),
    // credentials in a URL are never sent and would be shown: `webhooks add` refuses them
    check('webhook_endpoints_url_credentials_ck', sql`${t.url} !~ '^[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#]*@'`),
  ],
);

/**
 * The signing secrets of an endpoint: one in force, and during a rotation's grace also the ones
 * it replaced (`expires_at` ahead). Every delivery is signed with each secret in force.
 */
export const webhookSecrets = pgTable(
  'webhook_secrets',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    endpointId: integer('endpoint_id')
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    format: text('format').$type<SecretFormat>().notNull(),
    encryption: text('encryption').$type<SecretEncryption>().notNull(),
    /** which WEBHOOK_SECRETS_KEY sealed it (a hash of the key); null when not encrypted */
    keyId: text('key_id'),
    /** the key (`none`), or IV + ciphertext + GCM tag (`aes-256-gcm`) */
    material: bytea('material').notNull(),
    createdAt: tstzNow('created_at'),
    /** null: in force; else signs until then (a rotation's grace) */
    expiresAt: tstz('expires_at'),
  },
  (t) => [
    index('webhook_secrets_endpoint_idx').on(t.endpointId, t.id),
    check('webhook_secrets_format_ck', sql`${t.format} in (${sqlList(SECRET_FORMATS)})`),
    check('webhook_secrets_encryption_ck', sql`${t.encryption} in (${sqlList(SECRET_ENCRYPTIONS)})`),
    check('webhook_secrets_key_id_ck', sql`(${t.encryption} = 'none') = (${t.keyId} is null)`),
  ],
);

/** Every delivery attempt of an event to an endpoint (`webhooks test` included, event id 0 there). */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: bigNumber('id').primaryKey().generatedAlwaysAsIdentity(),
    endpointId: integer('endpoint_id')
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    eventId: bigNumber('event_id').notNull(),
    eventType: text('event_type').notNull(),
    /** 1 for the first attempt of this event at this endpoint */
    attempt: integer('attempt').notNull(),
    status: text('status').$type<WebhookDeliveryStatus>().notNull(),
    startedAt: tstzNow('started_at'),
    durationMs: integer('duration_ms').notNull(),
    responseCode: integer('response_code'),
    /** the first 1 kB of the answer's body */
    responseBody: text('response_body'),
    error: text('error'),
  },
  (t) => [
    index('webhook_deliveries_endpoint_idx').on(t.endpointId, t.id),
    index('webhook_deliveries_started_idx').on(t.startedAt),
    check('webhook_deliveries_status_ck', sql`${t.status} in (${sqlList(WEBHOOK_DELIVERY_STATUSES)})`),
  ],
);

// ---------------------------------------------------------------------------------------------
// Row types

/** A Postgres `tsvector` (drizzle has no column type of its own for it). */
const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' });
/** A Postgres `regconfig`: a text search configuration's name (`english`, `simple`, ...). */
const regconfig = customType<{ data: string }>({ dataType: () => 'regconfig' });

/**
 * How far each named export got (`export --cursor NAME`, issue #15): the highest event id its last
 * run covered. The next run writes only the transcripts that events after it added or changed;
 * `prune` keeps the events a cursor still needs.
 */
export const exportCursors = pgTable('export_cursors', {
  name: text('name').primaryKey(),
  lastEventId: bigNumber('last_event_id').notNull().default(0),
  /** records the last run wrote */
  records: bigNumber('records').notNull().default(0),
  createdAt: tstzNow('created_at'),
  updatedAt: tstzNow('updated_at'),
});

/**
 * The search index before passages (issue #15): each transcript cut into windows of consecutive
 * chunks with a tsvector. No longer built or read (migrations/0025 emptied it; passages are the
 * search index); kept, empty, for a build before that migration, whose search reads it.
 */
export const transcriptWindows = pgTable(
  'transcript_windows',
  {
    videoId: text('video_id').notNull(),
    lang: text('lang').notNull(),
    /** the window's position in the transcript, from 0 */
    n: integer('n').notNull(),
    /** seconds from the start of the video of its first chunk; null when the chunks carry no offset */
    startS: doublePrecision('start_s'),
    /** seconds of its last chunk's end, when known */
    endS: doublePrecision('end_s'),
    text: text('text').notNull(),
    config: regconfig('config').notNull(),
    tsv: tsvector('tsv').notNull(),
  },
  (t) => [primaryKey({ columns: [t.videoId, t.lang, t.n] }), index('transcript_windows_tsv_idx').using('gin', t.tsv)],
);

/**
 * Documents whose passages (the search index) are to be (re)cut: the trigger on `transcripts`
 * adds a transcript's key when it is stored or its content changes, the media store
 * (src/db/media.ts) a media item's when its transcript changes, the page store (src/db/pages.ts)
 * a page's when its content changes; the search indexer
 * (src/pipeline/services/search-index.ts; `search_index_pending()` of older builds takes only
 * transcripts) takes keys off in small transactions, after the landing transaction committed
 * (issue #12: indexing was ~80% of landing a transcript).
 */
export const searchIndexQueue = pgTable(
  'search_index_queue',
  {
    /** which document (src/domain/passages.ts PASSAGE_KINDS); older builds queue only transcripts */
    kind: text('kind').$type<PassageKind>().notNull().default('transcript'),
    /** the document: a transcript's video id, a media item's or page's URL */
    videoId: text('video_id').notNull(),
    /** a transcript's language; '' for a page, and for a media item (its passages take the language stored with it) */
    lang: text('lang').notNull(),
    queuedAt: tstzNow('queued_at'),
  },
  (t) => [
    primaryKey({ columns: [t.kind, t.videoId, t.lang] }),
    index('search_index_queue_queued_at_idx').on(t.queuedAt),
    check('search_index_queue_kind_ck', sql`${t.kind} in (${sqlList(PASSAGE_KINDS)})`),
  ],
);

/**
 * Passages (issue #31): every transcript cut into token-aware windows for embedding models
 * (src/domain/passages.ts), each with its moment, chunk range, token count and content hash; also
 * the search index of transcripts (`config`, `tsv`, migrations/0025) and of pages (0032).
 * `id` is the passage's identity: a re-cut of a changed document keeps the row (and id) of
 * every passage whose text and first chunk did not change, and only deletes and inserts the
 * others. Cut by the search indexer from `search_index_queue` (src/db/passages.ts); removed with
 * the transcript. `cut_at` orders `export --passages --cursor` (a re-cut passage comes again).
 */
export const passages = pgTable(
  'passages',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    /** transcript, page or media (src/domain/passages.ts PASSAGE_KINDS) */
    kind: text('kind').notNull(),
    /** the document: the video id of a transcript, the URL of a page or media item */
    doc: text('doc').notNull(),
    /** the transcript's language; '' where a document has none */
    lang: text('lang').notNull(),
    /** position in the document, from 0 */
    n: integer('n').notNull(),
    text: text('text').notNull(),
    tokens: integer('tokens').notNull(),
    sha256: text('sha256').notNull(),
    /** seconds of its first chunk's start and its last chunk's end; null without timings */
    startS: doublePrecision('start_s'),
    endS: doublePrecision('end_s'),
    /** the chunks it holds (0-based, inclusive); null for text without chunks */
    firstChunk: integer('first_chunk'),
    lastChunk: integer('last_chunk'),
    /** pages: the headings the passage is under, outermost first, and the section's anchor */
    headings: text('headings').array(),
    anchor: text('anchor'),
    cutAt: tstzNow('cut_at'),
    /** the language's text search configuration (`search_config(lang)`), set on write by the trigger of the migration that added it */
    config: regconfig('config').notNull(),
    /**
     * the full-text search index of `text` in `config`, set on write with `config`; empty for a
     * media passage (media search reads `media_segments`; migrations/0036)
     */
    tsv: tsvector('tsv').notNull(),
  },
  (t) => [
    index('passages_doc_idx').on(t.kind, t.doc, t.lang, t.n),
    index('passages_cut_at_idx').on(t.cutAt, t.id),
    // one full-text index per kind searched, so a search reads no other kind's passages (issue
    // #34; migrations/0034, 0035): transcript search and page search (media search reads
    // `media_segments`; media passages are cut for search by meaning only)
    index('passages_transcript_tsv_idx')
      .using('gin', t.tsv)
      .where(sql`${t.kind} = 'transcript'`),
    index('passages_page_tsv_idx')
      .using('gin', t.tsv)
      .where(sql`${t.kind} = 'page'`),
    // the embedder's anti-join: which content hashes lack a vector (issue #32)
    index('passages_sha256_idx').on(t.sha256),
  ],
);

/**
 * Passages that went (their document re-cut or deleted), written by a trigger on `passages` in
 * the transaction that deleted them, for `export --passages --cursor`: a consumer that loaded a
 * passage into a vector store learns it went. `seq` comes from the passages' own id sequence, so
 * one cursor position orders cuts and removals alike. Deleted after HISTORY_RETENTION_DAYS
 * (`prune`).
 */
export const passageRemovals = pgTable(
  'passage_removals',
  {
    /** the removed passage's id */
    id: bigint('id', { mode: 'number' }).primaryKey(),
    kind: text('kind').notNull(),
    doc: text('doc').notNull(),
    lang: text('lang').notNull(),
    seq: bigint('seq', { mode: 'number' })
      .notNull()
      .default(sql`nextval('passages_id_seq')`),
    removedAt: tstzNow('removed_at'),
  },
  (t) => [index('passage_removals_seq_idx').on(t.seq), index('passage_removals_removed_at_idx').on(t.removedAt)],
);

/** pgvector's `halfvec` (2 bytes a dimension), of no fixed dimension: every model's vectors share the table. */
const halfvec = customType<{ data: string }>({ dataType: () => 'halfvec' });

/**
 * Embeddings (issue #32): one vector per (model, passage content hash), so a passage is embedded
 * once per model and content, wherever the text appears, and an unchanged passage never again.
 * Created only where pgvector is (`embeddings_ensure()`, migrations/*_embeddings.sql: at migrate
 * and when an embedder starts); without it the table is absent and text search works as before.
 * Each model has a partial HNSW index on `(embedding::halfvec(N))`, created when its first
 * vectors are stored (src/db/embeddings.ts). Written by the embedder
 * (src/pipeline/services/embedder.ts); rows of a model no longer configured stay.
 */
export const embeddings = pgTable(
  'embeddings',
  {
    /** the provider's model name (EMBEDDINGS_MODEL) */
    model: text('model').notNull(),
    /** `passages.sha256` of the text embedded */
    sha256: text('sha256').notNull(),
    dimensions: integer('dimensions').notNull(),
    embedding: halfvec('embedding').notNull(),
    /** tokens of the text (cl100k_base, as `passages.tokens`) */
    tokens: integer('tokens').notNull(),
    embeddedAt: tstzNow('embedded_at'),
  },
  (t) => [primaryKey({ columns: [t.model, t.sha256] })],
);

/**
 * Content hashes an embedder has taken for a model (so two processes never pay for one text),
 * until `expires_at` (a crashed embedder's claims lapse); with `error`, a text the provider
 * refused (a 4xx), not asked again before `expires_at`.
 */
export const embeddingClaims = pgTable(
  'embedding_claims',
  {
    model: text('model').notNull(),
    sha256: text('sha256').notNull(),
    claimedAt: tstzNow('claimed_at'),
    expiresAt: tstz('expires_at').notNull(),
    error: text('error'),
  },
  (t) => [primaryKey({ columns: [t.model, t.sha256] })],
);

/**
 * A model that has covered the corpus: an embedder found, once idle, every passage up to
 * `through_passage_id` with a vector of (model, dimensions; 0: whatever the model answers). Search
 * by meaning then counts the model as in use without reading every passage again; passages
 * added since are embedded as they come, and `status` reads only them for the backlog. Vectors of
 * the model taken away (a delete or truncate of `embeddings`) take its record with them
 * (migrations/0031).
 */
export const embeddingCoverage = pgTable(
  'embedding_coverage',
  {
    model: text('model').notNull(),
    dimensions: integer('dimensions').notNull(),
    throughPassageId: bigNumber('through_passage_id').notNull(),
    checkedAt: tstzNow('checked_at'),
  },
  (t) => [primaryKey({ columns: [t.model, t.dimensions] })],
);

/**
 * Passages stored, kept by triggers on `passages` (migrations/0031; every writer, older builds
 * included): `status`, `/metrics` and the overview read at most 16 rows, not the
 * passages. A writer adds to the shard of its connection, as for `page_counts`; readers sum them.
 */
export const passageCounts = pgTable('passage_counts', {
  shard: smallint('shard').primaryKey(),
  passages: bigNumber('passages').notNull().default(0),
});

/**
 * Vectors stored per (model, dimensions), and when the newest was, kept by triggers on
 * `embeddings` (migrations/0031; attached by `embeddings_ensure()` when the table is created
 * later): the models `status` lists and search by meaning falls back to are read here, not by
 * grouping every vector. Sharded by the writer's connection, as `page_counts`.
 */
export const embeddingCounts = pgTable(
  'embedding_counts',
  {
    model: text('model').notNull(),
    dimensions: integer('dimensions').notNull(),
    shard: smallint('shard').notNull(),
    texts: bigNumber('texts').notNull().default(0),
    lastEmbeddedAt: tstz('last_embedded_at'),
  },
  (t) => [primaryKey({ columns: [t.model, t.dimensions, t.shard] })],
);

/**
 * Tokens sent to the embeddings provider per UTC day and model (EMBEDDINGS_TOKENS_PER_DAY):
 * counted before each request (its estimate), corrected by what the provider reported after, and
 * given back when it answered an error that bills nothing.
 */
export const embeddingUsage = pgTable(
  'embedding_usage',
  {
    day: date('day', { mode: 'string' }).notNull(),
    model: text('model').notNull(),
    tokens: bigNumber('tokens').notNull().default(0),
    requests: integer('requests').notNull().default(0),
    inputs: integer('inputs').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.day, t.model] })],
);

/**
 * Requests the daily token budget refused, one row per UTC day and model (`refusals` counts them),
 * shown by `status` and the overview: embedding waits for the next day.
 */
export const embeddingRefusals = pgTable(
  'embedding_refusals',
  {
    day: date('day', { mode: 'string' }).notNull(),
    model: text('model').notNull(),
    firstAt: tstzNow('first_at'),
    lastAt: tstzNow('last_at'),
    refusals: integer('refusals').notNull().default(1),
    /** the request refused last: its estimate, the day's tokens so far, the budget */
    tokensAsked: integer('tokens_asked').notNull(),
    tokensSpent: bigNumber('tokens_spent').notNull(),
    budget: bigNumber('budget').notNull(),
  },
  (t) => [primaryKey({ columns: [t.day, t.model] })],
);

/**
 * Web pages (crawled by a `website` source, scraped for a `pages` source), one row per URL as
 * delivered: Markdown `content`, its sha256, when first and last seen, and `gone_at` while no source
 * finds it any more (kept). Written with their events and versions in one transaction
 * (src/db/pages.ts).
 */
export const pages = pgTable(
  'pages',
  {
    url: text('url').primaryKey(),
    name: text('name'),
    description: text('description'),
    ogUrl: text('og_url'),
    content: text('content').notNull(),
    countCharacters: bigNumber('count_characters'),
    contentSha256: text('content_sha256').notNull(),
    firstSeenAt: tstzNow('first_seen_at'),
    /** the last crawl or scrape that delivered it */
    lastSeenAt: tstzNow('last_seen_at'),
    /** changes only when a delivered value changes */
    updatedAt: tstzNow('updated_at'),
    /** set while no source's latest crawl or scrape finds it; null again when it returns */
    goneAt: tstz('gone_at'),
    /** the job that delivered the stored version (`batches.job_id`) */
    jobId: text('job_id'),
    sourceId: integer('source_id'),
  },
  (t) => [index('pages_updated_at_idx').on(t.updatedAt)],
);

/**
 * Web pages stored, of them gone, and their versions, kept by triggers on `pages` and
 * `page_version_rows` (migrations/0019; every writer, the bench's COPY included): `status`, `/metrics`
 * and the overview read PAGE_COUNT_SHARDS rows, not the pages. A writer adds to the shard of its
 * connection (`pg_backend_pid()`), so crawls landing side by side do not queue on one row; readers
 * sum the shards.
 */
export const pageCounts = pgTable('page_counts', {
  shard: smallint('shard').primaryKey(),
  stored: bigNumber('stored').notNull().default(0),
  gone: bigNumber('gone').notNull().default(0),
  versions: bigNumber('versions').notNull().default(0),
});

/** Which pages each web source found, and since when one is no longer found there. */
export const sourcePages = pgTable(
  'source_pages',
  {
    sourceId: integer('source_id')
      .notNull()
      .references(() => sources.id, { onDelete: 'cascade' }),
    url: text('url').notNull(),
    firstSeenAt: tstzNow('first_seen_at'),
    lastSeenAt: tstzNow('last_seen_at'),
    /** the source's latest completed crawl did not find it (or its scrape answered not-found) */
    goneAt: tstz('gone_at'),
  },
  (t) => [primaryKey({ columns: [t.sourceId, t.url] }), index('source_pages_url_idx').on(t.url)],
);

/**
 * Every distinct version of a page's content, the current one included, once per content hash
 * (written by src/db/pages.ts with the page).
 *
 * The current version's content is stored once, in `pages`: its row here holds null, and the
 * triggers on `pages` (`pages_current_version`, migrations/0033) fill it from the row a change, a
 * delete or a truncate replaces, in the same statement, and clear it when that content comes back.
 * Read it through the view `page_versions` (migrations/0033), which has every column of this table
 * with the current content filled in; the view is updatable for every column but `content`, and an
 * INSERT into it stores no copy of a page's current content.
 */
export const pageVersions = pgTable(
  'page_version_rows',
  {
    url: text('url').notNull(),
    contentSha256: text('content_sha256').notNull(),
    name: text('name'),
    description: text('description'),
    ogUrl: text('og_url'),
    /** null while this is the page's current version (its content is `pages.content`) */
    content: text('content'),
    countCharacters: bigNumber('count_characters'),
    /** when this version was first stored */
    storedAt: tstzNow('stored_at'),
    jobId: text('job_id'),
  },
  (t) => [primaryKey({ columns: [t.url, t.contentSha256] })],
);

/**
 * The search index of pages before page search read passages: each page cut at its headings
 * (src/domain/pages.ts `pageSections`), rebuilt in the transaction that stored a changed page. No
 * longer written or read (migrations/0032 emptied it, and a trigger keeps no row an older build
 * inserts; a page's passages are its search index); kept for such a build, whose statements
 * still succeed.
 */
export const pageSections = pgTable(
  'page_sections',
  {
    url: text('url').notNull(),
    n: integer('n').notNull(),
    /** the headings the section is under, outermost first */
    headings: text('headings').array().notNull(),
    /** the fragment of its heading (`getting-started`), null before the first heading */
    anchor: text('anchor'),
    text: text('text').notNull(),
    tsv: tsvector('tsv').notNull(),
  },
  (t) => [primaryKey({ columns: [t.url, t.n] }), index('page_sections_tsv_idx').using('gin', t.tsv)],
);

/**
 * Media items of `media` sources (the four social platforms and public media files; a URL of the
 * video platform is a video, stored in `videos`), one row per URL: the metadata as delivered
 * (platform, type, author, stats, media, tags, creation time) and, for a video, its transcript
 * and the transcript's state (src/domain/media.ts). Written with their events in one
 * transaction (src/db/media.ts).
 */
export const media = pgTable(
  'media',
  {
    url: text('url').primaryKey(),
    /** `tiktok`, `instagram`, `twitter`, `facebook`, or `file` */
    platform: text('platform').notNull(),
    /** `video`, `image`, `carousel`, `post` (as delivered) */
    type: text('type').notNull(),
    /** the platform's own ID of the item */
    mediaId: text('media_id'),
    title: text('title'),
    description: text('description'),
    authorUsername: text('author_username'),
    authorDisplayName: text('author_display_name'),
    author: jsonb('author'),
    views: bigNumber('views'),
    likes: bigNumber('likes'),
    comments: bigNumber('comments'),
    shares: bigNumber('shares'),
    /** the `media` object as delivered (a video's duration and thumbnail, an image's URL, a carousel's items) */
    mediaInfo: jsonb('media_info'),
    durationS: doublePrecision('duration_s'),
    tags: text('tags')
      .array()
      .notNull()
      .default(sql`'{}'::text[]`),
    /** `createdAt` as delivered: when the item was posted */
    postedAt: tstz('posted_at'),
    additionalData: jsonb('additional_data'),
    /** sha256 of the metadata as stored: a change makes `media.changed` */
    metadataSha256: text('metadata_sha256').notNull(),
    transcriptState: text('transcript_state').$type<MediaTranscriptState>().notNull(),
    /** the mode the stored transcript was bought with */
    transcriptMode: text('transcript_mode'),
    transcriptLang: text('transcript_lang'),
    /** the chunks as delivered (`[]`: no speech) */
    transcriptContent: jsonb('transcript_content'),
    transcriptText: text('transcript_text'),
    transcriptSha256: text('transcript_sha256'),
    /** transcript purchases so far (at most RETRY_ATTEMPTS_MAX automatically) */
    transcriptAttempts: integer('transcript_attempts').notNull().default(0),
    /** the transcript job in flight or last bought (`batches.job_id`) */
    transcriptJobId: text('transcript_job_id'),
    /** why the transcript is not stored (failed, expired, over budget) */
    transcriptReason: text('transcript_reason'),
    transcriptAt: tstz('transcript_at'),
    firstSeenAt: tstzNow('first_seen_at'),
    lastSeenAt: tstzNow('last_seen_at'),
    updatedAt: tstzNow('updated_at'),
    /** the job that delivered the stored metadata (`media:<sync run>`) */
    jobId: text('job_id'),
    sourceId: integer('source_id'),
  },
  (t) => [
    index('media_updated_at_idx').on(t.updatedAt),
    check('media_transcript_state_ck', sql`${t.transcriptState} in (${sqlList(MEDIA_TRANSCRIPT_STATES)})`),
  ],
);

/**
 * Media items stored, by platform and transcript state, kept by triggers on `media`
 * (migrations/0022, as `page_counts` for pages): `status`, `/metrics` and the overview read these
 * rows, not the media. A writer adds to the shard of its connection (`pg_backend_pid()`); readers
 * sum the shards.
 */
export const mediaCounts = pgTable(
  'media_counts',
  {
    shard: smallint('shard').notNull(),
    platform: text('platform').notNull(),
    transcriptState: text('transcript_state').notNull(),
    n: bigNumber('n').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.shard, t.platform, t.transcriptState] })],
);

/** Which media URLs each `media` source lists (its video-platform URLs are in `source_videos`). */
export const sourceMedia = pgTable(
  'source_media',
  {
    sourceId: integer('source_id')
      .notNull()
      .references(() => sources.id, { onDelete: 'cascade' }),
    url: text('url').notNull(),
    firstSeenAt: tstzNow('first_seen_at'),
  },
  (t) => [primaryKey({ columns: [t.sourceId, t.url] }), index('source_media_url_idx').on(t.url)],
);

/**
 * The search index of media: one row per transcript chunk (its offset, the moment a hit names)
 * and one for the title and description (offset null), rebuilt when the media item is stored.
 */
export const mediaSegments = pgTable(
  'media_segments',
  {
    url: text('url').notNull(),
    n: integer('n').notNull(),
    /** ms into the media; null for the title and description */
    offsetMs: bigNumber('offset_ms'),
    text: text('text').notNull(),
    tsv: tsvector('tsv').notNull(),
  },
  (t) => [primaryKey({ columns: [t.url, t.n] }), index('media_segments_tsv_idx').using('gin', t.tsv)],
);

export type Source = typeof sources.$inferSelect;
export type NewSource = typeof sources.$inferInsert;
export type SourceVideo = typeof sourceVideos.$inferSelect;
export type Page = typeof pages.$inferSelect;
export type Media = typeof media.$inferSelect;
export type NewSourceVideo = typeof sourceVideos.$inferInsert;
export type Batch = typeof batches.$inferSelect;
export type NewBatch = typeof batches.$inferInsert;
export type BatchItemRecord = typeof batchItems.$inferSelect;
export type NewBatchItemRecord = typeof batchItems.$inferInsert;
export type VideoRecord = typeof videos.$inferSelect;
export type NewVideoRecord = typeof videos.$inferInsert;
export type TranscriptRecord = typeof transcripts.$inferSelect;
export type NewTranscriptRecord = typeof transcripts.$inferInsert;
export type VideoSync = typeof videoSync.$inferSelect;
export type NewVideoSync = typeof videoSync.$inferInsert;
export type ChannelRecord = typeof channels.$inferSelect;
export type NewChannelRecord = typeof channels.$inferInsert;
export type PlaylistRecord = typeof playlists.$inferSelect;
export type NewPlaylistRecord = typeof playlists.$inferInsert;
export type CreditSnapshot = typeof creditSnapshots.$inferSelect;
export type NewCreditSnapshot = typeof creditSnapshots.$inferInsert;
export type SyncRun = typeof syncRuns.$inferSelect;
export type NewSyncRun = typeof syncRuns.$inferInsert;
export type BatchSubmission = typeof batchSubmissions.$inferSelect;
export type UpstreamHold = typeof upstreamHolds.$inferSelect;
export type BatchItemCount = typeof batchItemCounts.$inferSelect;
export type SourceStats = typeof sourceStats.$inferSelect;
export type VideoOutcomeCount = typeof videoOutcomeCounts.$inferSelect;
export type CreditReservation = typeof creditReservations.$inferSelect;
export type CreditCharge = typeof creditCharges.$inferSelect;
export type PruneRun = typeof pruneRuns.$inferSelect;
export type EventRecord = typeof events.$inferSelect;
export type WebhookEndpoint = typeof webhookEndpoints.$inferSelect;
export type WebhookDelivery = typeof webhookDeliveries.$inferSelect;
export type WebhookSecret = typeof webhookSecrets.$inferSelect;
