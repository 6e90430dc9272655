/**
 * Change events: the types, what each one's `data` carries, and the rules that decide
 * which change makes which event. Defined once; the `events` table, its producers, the `events`
 * CLI and the webhook worker all use these.
 *
 * An event is written in the same transaction as the change it describes, and only when something
 * actually changed: a repeated poll, a replay or a re-delivery of identical content makes none.
 * `data` holds ids and changed fields, never a whole transcript (its sha256 and lang instead).
 */
import type { BatchStatus } from './batches.ts';
import type { HoldCode } from './refusals.ts';
import type { SyncRunOutcome } from './syncs.ts';

export const EVENT_TYPES = [
  // The video and transcript events are written by the triggers of migrations/0010 (every writer
  // of `videos` and `transcripts` makes them); `sourceId` is the delivering batch's source.
  /** a video delivered for the first time: `{videoId, sourceId, jobId}` */
  'video.added',
  /** a delivered video's title, description, tags, duration, thumbnail or transcript languages changed: `{videoId, sourceId, jobId, fields: {name: {old, new}}}` */
  'video.changed',
  /** a later batch reported a stored video `not-found` or `forbidden`: `{videoId, sourceId, jobId, reason}` */
  'video.gone',
  /** a gone video was delivered again: `{videoId, sourceId, jobId}` */
  'video.returned',
  /** a (video, lang) transcript stored for the first time: `{videoId, sourceId, lang, sha256, jobId, origin}` */
  'transcript.added',
  /** a stored transcript's content_sha256 changed: `{videoId, sourceId, lang, sha256, previousSha256, jobId, origin, changed: ('text'|'chunks'|'availableLangs'|'origin')[]}` */
  'transcript.changed',
  /** a translation a source asked for was left unbought: its `--max-translate-minutes` has no room for it (once per source, video and language): `{videoId, sourceId, lang, fromLang, minutes, usedMinutes, maxMinutes}` */
  'translation.refused',
  // The page events are written where pages are stored (src/db/pages.ts), in the same transaction.
  /** a web page stored for the first time: `{url, sourceId, jobId, sha256}` */
  'page.added',
  /** a stored page's content changed (its content_sha256): `{url, sourceId, jobId, sha256, previousSha256}` */
  'page.changed',
  /** a completed crawl of every source that had the page no longer found it, or a scrape answered not-found: `{url, sourceId, jobId}` */
  'page.gone',
  /** a gone page was found again: `{url, sourceId, jobId, sha256}` */
  'page.returned',
  // The media events are written where media are stored (src/db/media.ts), in the same transaction.
  /** a media item stored for the first time: `{url, sourceId, jobId, platform, type}` */
  'media.added',
  /** a stored media item's metadata or transcript changed: `{url, sourceId, jobId, changed: ('metadata'|'transcript')[]}` */
  'media.changed',
  /** a batch reached `completed` (once, whatever the polls that see it): `{jobId, sourceId, kind, lang, total, succeeded, failed}` */
  'batch.completed',
  /** a batch reached `expired` (upstream `job-expired`, confirmed not-found, or too old): `{jobId, sourceId, kind, lang, errorCode, reason}` */
  'batch.expired',
  /** a sync run ended having listed the source (submitted or up to date): `{sourceId, runId, outcome, videosListed, videosSubmitted, creditsEstimated, jobIds}` */
  'source.synced',
  /** a sync run ended without syncing (refused, error, held): `{sourceId, runId, outcome, detail}` */
  'source.failed',
  /** the upstream refused an API key for account reasons and a new hold was set: `{code, scope, reason, keyFingerprint}` */
  'account.hold',
  /** a hold was lifted: `{code, reason, keyFingerprint}` */
  'account.hold_lifted',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * The events about the corpus itself (what is stored of videos, transcripts, pages and media), as
 * readers of its changes see them (the MCP server's `recent_changes`); batches, syncs and holds
 * are the pipeline's business.
 */
export const CORPUS_EVENT_TYPES = [
  'video.added',
  'video.changed',
  'video.gone',
  'video.returned',
  'transcript.added',
  'transcript.changed',
  'page.added',
  'page.changed',
  'page.gone',
  'page.returned',
  'media.added',
  'media.changed',
] as const satisfies readonly EventType[];
export type CorpusEventType = (typeof CORPUS_EVENT_TYPES)[number];

/** Sent by `webhooks test` to one endpoint only; never stored in `events`. */
export const WEBHOOK_TEST_EVENT = 'webhook.test';

/** The Postgres channel each commit that wrote events notifies, with the highest new id as payload. */
export const EVENTS_CHANNEL = 'videosite_ingest_events';

export function isEventType(s: string): s is EventType {
  return (EVENT_TYPES as readonly string[]).includes(s);
}

/**
 * The event of a batch that reaches a terminal status (null: none). `failed` has no event type in
 * the list; a failed batch is visible in `status` and its sync's `source.failed`.
 */
export const BATCH_TERMINAL_EVENT: Readonly<
  Record<Extract<BatchStatus, 'completed' | 'failed' | 'expired'>, EventType | null>
> = {
  completed: 'batch.completed',
  expired: 'batch.expired',
  failed: null,
};

/** The event of each finished sync run's outcome. */
export const SYNC_RUN_EVENT: Readonly<Record<SyncRunOutcome, 'source.synced' | 'source.failed'>> = {
  submitted: 'source.synced',
  'up-to-date': 'source.synced',
  'refused-credits': 'source.failed',
  'refused-upstream': 'source.failed',
  error: 'source.failed',
  held: 'source.failed',
};

/** What an `account.*` event's data says about a hold. */
export interface HoldEventData {
  code: HoldCode;
  reason: string;
  keyFingerprint: string | null;
}

/**
 * A list of event types given on the command line (`--type a,b`, `--events a,b`): the valid ones,
 * or the first value that is not a type.
 */
export function parseEventTypes(value: string): { types: EventType[] } | { invalid: string } {
  const parts = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const p of parts) if (!isEventType(p)) return { invalid: p };
  return { types: [...new Set(parts)] as EventType[] };
}
