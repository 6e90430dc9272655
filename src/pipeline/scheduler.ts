/**
 * The scheduler: one sync run of one source. It decides what to submit, checks that the account
 * can pay for it, submits each batch exactly once, and records every batch in Postgres before its
 * poll job is enqueued.
 *
 * Every sync, the first too, lists the source's video IDs (1 credit) and submits only the videos
 * that are due (src/domain/attempts.ts) as `videoIds`: never bought for this kind and language by
 * any source, retryable within the attempt cap, or a transcript due for its re-check. That makes
 * the credit estimate exact before anything is spent, and a video listed by several sources is
 * bought once: each batch's videos are claimed in `video_sync` in the same transaction that
 * records the batch, under an advisory lock per kind and language that every process takes (the
 * due list is computed again under it). A source whose videos are all present spends only its
 * listing.
 */
import { AbortedError, ApiError, InternalError, LimitExceededError, NetworkError, SchemaMismatchError, TimeoutError, toApiError } from '../api/errors.ts';
import type { TranscriptBatchRequest, VideoBatchRequest } from '../api/schemas.ts';
import type { Queryable } from '../db/connection.ts';
import { BATCH_IN_FLIGHT_STATUSES, type BatchKind } from '../domain/batches.ts';
import { claimVideos, pointClaimsAt, readSyncFacts, releaseClaims } from '../db/video-sync.ts';
import { dueReason } from '../domain/attempts.ts';
import { REFUSED_UPSTREAM_CODES } from '../domain/refusals.ts';
import { activeHolds, clearHolds, describeHold, setHold, type UpstreamHoldRow } from '../db/upstream-holds.ts';
import { SourceNotFoundError } from '../db/sources.ts';
import { lostSubmissions, markSubmission, recordSending, unresolvedSubmissions } from '../db/submissions.ts';
import { pollJobId } from '../queues/names.ts';
import { checkCredits, CreditsRefusedError, type CreditReservations } from './credits.ts';
import { isConnectionLost } from '../db/connection.ts';
import type { PipelineDeps } from './deps.ts';

/** Advisory-lock namespace of sync runs ('VS'); the second key is the source ID. */
const SYNC_LOCK_NAMESPACE = 0x5653;
/** Channel/playlist metadata is re-fetched (1 credit) when older than this. */
export const SOURCE_METADATA_REFRESH_MS = 24 * 3_600_000;
/** Advisory-lock namespace of video claims ('VC'); the second key hashes kind and language. */
const CLAIM_LOCK_NAMESPACE = 0x5643;
/** A submission still `sending` after this long was left by a process that died. */
export const SUBMISSION_STALE_SENDING_MS = 10 * 60_000;

export type SyncOutcome = 'submitted' | 'up-to-date' | 'refused-credits' | 'in-flight' | 'paused';

export interface SyncResult {
  sourceId: number;
  outcome: SyncOutcome;
  /** upstream job IDs submitted by this run */
  jobIds: string[];
  /** video IDs listed */
  listed: number;
  /** videos submitted, summed over batches */
  submitted: number;
  creditsEstimated: number;
  detail?: string;
}

export interface SyncOptions {
  trigger?: 'cron' | 'backfill' | 'manual';
  /** shared by syncs that run side by side (one backfill), so together they keep to the budget; default none */
  reservations?: CreditReservations;
}

interface SourceRow {
  id: number;
  kind: 'playlist' | 'channel';
  external_id: string;
  max_videos: number;
  langs: string[];
  text_only: boolean;
  paused: boolean;
}

/** One batch to submit. `lang` undefined: the API's default language. */
interface PlannedBatch {
  kind: BatchKind;
  lang: string | null;
  request: VideoBatchRequest | TranscriptBatchRequest;
  videos: number;
  credits: number;
}

export async function syncSource(
  deps: PipelineDeps,
  sourceId: number,
  opts: SyncOptions = {},
): Promise<SyncResult> {
  const conn = await deps.sql.reserve();
  // A reserved connection whose server connection died must not go back to the pool: the pool
  // has already parked it for reconnection, and release() would hand the dead one out again
  // (porsager/postgres#1208). The session lock died with the session.
  let lost = false;
  const onConn = async <T>(q: Promise<T>): Promise<T> => {
    try {
      return await q;
    } catch (e: unknown) {
      if (isConnectionLost(e)) lost = true;
      throw e;
    }
  };
  try {
    const [lock] = await onConn(conn<{ locked: boolean }[]>`
      select pg_try_advisory_lock(${SYNC_LOCK_NAMESPACE}, ${sourceId}) as locked`);
    if (!lock?.locked) {
      return { sourceId, outcome: 'in-flight', jobIds: [], listed: 0, submitted: 0, creditsEstimated: 0, detail: 'another process is syncing this source' };
    }
    try {
      return await syncLocked(deps, sourceId, opts);
    } finally {
      await onConn(conn`select pg_advisory_unlock(${SYNC_LOCK_NAMESPACE}, ${sourceId})`).catch((e: unknown) => {
        // the sync's own outcome (or error) matters more; a lost session released its lock
        if (!lost) throw e;
      });
    }
  } finally {
    if (!lost) conn.release();
  }
}

async function syncLocked(deps: PipelineDeps, sourceId: number, opts: SyncOptions): Promise<SyncResult> {
  const { sql, api, log, settings } = deps;
  const [source] = await sql<SourceRow[]>`
    select id, kind, external_id, max_videos, langs, text_only, paused
    from sources where id = ${sourceId}`;
  if (!source) throw new SourceNotFoundError(sourceId);
  const result: SyncResult = { sourceId, outcome: 'up-to-date', jobIds: [], listed: 0, submitted: 0, creditsEstimated: 0 };
  const trigger = opts.trigger ?? 'cron';
  if (source.paused && trigger === 'cron') {
    return { ...result, outcome: 'paused' };
  }
  // the upstream refused the account (key, plan, credits): scheduled syncs make no API call
  // until a person clears it; a sync a person started (backfill, replay) tries, and clears it
  const upstreamHolds: UpstreamHoldRow[] = await activeHolds(sql);
  if (upstreamHolds.length > 0 && trigger === 'cron') {
    log.debug({ sourceId, holds: upstreamHolds.map((h) => h.code) }, 'sync skipped: upstream refused the account');
    return { ...result, outcome: 'paused', detail: describeHold(upstreamHolds[0]!) };
  }

  const [run] = await sql<{ id: number }[]>`
    insert into sync_runs (source_id) values (${sourceId}) returning id`;
  const runId = run!.id;

  try {
    await resolveSubmissions(deps, sourceId);
    const inFlight = await inFlightKeys(sql, sourceId);
    const langs: (string | null)[] = source.langs.length > 0 ? source.langs : [null];
    const wanted = [
      { kind: 'video' as const, lang: null },
      ...langs.map((lang) => ({ kind: 'transcript' as const, lang })),
    ].filter((w) => !inFlight.has(key(w.kind, w.lang)));
    if (wanted.length === 0) {
      result.outcome = 'in-flight';
      result.detail = 'every batch of this source is still in flight';
      await finishRun(sql, runId, 'up-to-date', result);
      return result;
    }

    await refreshSourceMetadata(deps, source);

    const listed = await listVideoIds(deps, source);
    result.listed = listed.length;
    const planned = await planBatches(deps, source, wanted, listed);
    if (planned.length === 0) {
      await sql`update sources set last_synced_at = now(), last_error = null, last_error_code = null where id = ${sourceId}`;
      await keepLostVisible(sql, sourceId);
      await finishRun(sql, runId, 'up-to-date', result);
      log.info({ sourceId, listed: result.listed }, 'source up to date');
      if (upstreamHolds.length > 0) await liftHolds(deps);
      return result;
    }

    const estimate = planned.reduce((n, b) => n + b.credits, 0);
    result.creditsEstimated = estimate;
    const { available, release } = await checkCredits(deps, sourceId, estimate, opts.reservations);
    if (estimate > available) {
      const refusal = new CreditsRefusedError(estimate, Math.max(0, available), settings.creditReserve);
      // nothing left at all: every sync would be refused; hold them until credits return
      if (available <= 0) await holdUpstream(deps, 'credits', refusal.message);
      result.outcome = 'refused-credits';
      result.detail = refusal.message;
      await sql`
        update sources set last_error = ${refusal.message}, last_error_code = 'credits', last_error_at = now()
        where id = ${sourceId}`;
      await finishRun(sql, runId, 'refused-credits', result);
      log.warn({ sourceId, needed: estimate, available }, 'sync refused: not enough credits');
      return result;
    }

    try {
      for (const batch of planned) {
        // the due list again, under the claim lock: another source's sync may have claimed some
        const submitted = await submitBatch(deps, {
          sourceId,
          kind: batch.kind,
          lang: batch.lang,
          request: batch.request,
          credits: batch.credits,
          textOnly: source.text_only,
          claimDue: (tx, ids) => dueVideoIds(tx, deps.settings, batch.kind, batch.lang, ids, !source.text_only),
        });
        if (submitted === null) continue;
        result.jobIds.push(submitted.jobId);
        result.submitted += submitted.videos;
      }
    } finally {
      release();
    }
    if (result.jobIds.length === 0) {
      await sql`update sources set last_synced_at = now(), last_error = null, last_error_code = null where id = ${sourceId}`;
      await keepLostVisible(sql, sourceId);
      result.creditsEstimated = 0;
      result.detail = 'every due video was claimed by another source meanwhile';
      await finishRun(sql, runId, 'up-to-date', result);
      log.info({ sourceId, listed: result.listed }, 'source up to date');
      if (upstreamHolds.length > 0) await liftHolds(deps);
      return result;
    }
    await sql`
      update sources set last_synced_at = now(), last_error = null, last_error_code = null, updated_at = now()
      where id = ${sourceId}`;
    await keepLostVisible(sql, sourceId);
    result.outcome = 'submitted';
    await finishRun(sql, runId, 'submitted', result);
    log.info({ sourceId, jobIds: result.jobIds, videos: result.submitted, credits: estimate }, 'batches submitted');
    if (upstreamHolds.length > 0) await liftHolds(deps);
    return result;
  } catch (e: unknown) {
    const err = e instanceof ApiError ? e : e instanceof Error ? e : toApiError(e);
    const code = err instanceof ApiError ? err.code : 'error';
    await holdOnRefusal(deps, err).catch((holdErr: unknown) => log.warn({ err: holdErr }, 'could not record the upstream refusal'));
    result.detail = err.message;
    await sql`
      update sources set last_error = ${err.message}, last_error_code = ${code}, last_error_at = now()
      where id = ${sourceId}`;
    const refused = err instanceof ApiError && REFUSED_UPSTREAM_CODES.includes(err.code);
    await finishRun(sql, runId, refused ? 'refused-upstream' : 'error', result);
    // submitted batches stay recorded; what was not submitted is due again at the next sync
    throw err;
  }
}

function key(kind: BatchKind, lang: string | null): string {
  return `${kind}/${lang ?? ''}`;
}

/**
 * Kinds and languages not to submit now: a batch in flight, or a POST whose answer was lost after
 * the account was charged (submitting again could pay twice; a person decides: replay --lost).
 */
async function inFlightKeys(sql: Queryable, sourceId: number): Promise<Set<string>> {
  const rows = await sql<{ kind: BatchKind; lang: string | null }[]>`
    select kind, lang from batches
    where source_id = ${sourceId} and status = any(${BATCH_IN_FLIGHT_STATUSES as unknown as string[]}::text[])`;
  const keys = new Set(rows.map((r) => key(r.kind, r.lang)));
  for (const l of await lostSubmissions(sql, sourceId)) keys.add(key(l.kind, l.lang));
  return keys;
}

/**
 * Decide what became of this source's POSTs whose answer was lost, before this sync spends
 * anything: if the account's credits have not moved since the reading taken just before the
 * POST, nothing was created (this sync submits again); if they moved, it probably was created
 * and cannot be read without its job ID: `lost`, not re-submitted automatically.
 */
async function resolveSubmissions(deps: PipelineDeps, sourceId: number): Promise<void> {
  const { sql, api, log } = deps;
  const pending = await unresolvedSubmissions(sql, sourceId, SUBMISSION_STALE_SENDING_MS);
  if (pending.length === 0) return;
  const me = await api.me();
  for (const p of pending) {
    const when = p.createdAt.toISOString();
    if (p.usedCreditsBefore !== null && me.usedCredits === p.usedCreditsBefore) {
      await sql.begin(async (tx) => {
        await markSubmission(tx, p.id, 'not-created', {
          detail: `answer lost at ${when}; the account was not charged since (used ${me.usedCredits}): not created, submitted again`,
        });
        await releaseClaims(tx, p.id);
      });
      log.warn({ sourceId, submission: p.id, kind: p.kind, lang: p.lang }, 'lost batch POST was not created upstream: submitting again');
      continue;
    }
    const detail =
      `the answer to a batch POST (${p.kind}${p.lang ? ` ${p.lang}` : ''}) was lost at ${when} and the account was charged since ` +
      `(used ${p.usedCreditsBefore ?? 'unknown'} -> ${me.usedCredits}): the batch was probably created upstream but cannot be read; ` +
      'not re-submitted automatically (that could pay twice); to re-submit: videosite-ingest replay --lost --yes';
    await markSubmission(sql, p.id, 'lost', { detail });
    await sql`
      update sources set last_error = ${detail}, last_error_code = 'answer-lost', last_error_at = now()
      where id = ${sourceId}`;
    log.error(
      { sourceId, submission: p.id, kind: p.kind, lang: p.lang, creditsEstimated: p.creditsEstimated },
      'lost batch POST was probably created upstream: not re-submitted',
    );
  }
}

/** A sync that went well otherwise still shows, as the source's error, a lost POST left undecided. */
async function keepLostVisible(sql: Queryable, sourceId: number): Promise<void> {
  const [lost] = await lostSubmissions(sql, sourceId);
  if (!lost) return;
  await sql`
    update sources set last_error = ${lost.detail}, last_error_code = 'answer-lost', last_error_at = ${lost.createdAt}
    where id = ${sourceId}`;
}

/** Record an account-level refusal as a hold (logged once, when it starts). */
async function holdUpstream(
  deps: Pick<PipelineDeps, 'sql' | 'log'>,
  code: 'unauthorized' | 'upgrade-required' | 'credits',
  reason: string,
): Promise<void> {
  if (await setHold(deps.sql, code, reason)) {
    deps.log.error({ code, reason }, describeHold({ code, reason, since: new Date() }));
  }
}

/** Holds for the refusals retrying cannot fix: a bad key, a plan without batches, no credits left. */
async function holdOnRefusal(deps: PipelineDeps, err: Error): Promise<void> {
  if (!(err instanceof ApiError)) return;
  if (err.code === 'unauthorized' || err.code === 'upgrade-required') {
    await holdUpstream(deps, err.code, err.message);
    return;
  }
  if (err instanceof LimitExceededError && err.retryAfterMs === undefined) {
    // a 429 is a rate limit or an exhausted quota; /me (free) tells which
    const me = await deps.api.me();
    if (me.usedCredits >= me.maxCredits - deps.settings.creditReserve) {
      await holdUpstream(deps, 'credits', `${err.message} (used ${me.usedCredits} of ${me.maxCredits} credits)`);
    }
  }
}

/** A sync a person started got through: the account is fine again. */
async function liftHolds(deps: Pick<PipelineDeps, 'sql' | 'log'>): Promise<void> {
  const cleared = await clearHolds(deps.sql);
  if (cleared.length > 0) deps.log.info({ cleared }, 'upstream hold cleared: scheduled syncs resume');
}

async function finishRun(sql: Queryable, runId: number, outcome: string, r: SyncResult): Promise<void> {
  await sql`
    update sync_runs set finished_at = now(), outcome = ${outcome}, detail = ${r.detail ?? null},
      videos_listed = ${r.listed}, videos_submitted = ${r.submitted},
      credits_estimated = ${r.creditsEstimated}, job_ids = ${r.jobIds}
    where id = ${runId}`;
}

/** Channel or playlist metadata into `channels`/`playlists`; skipped while fresh (it costs 1 credit). */
async function refreshSourceMetadata(deps: PipelineDeps, source: SourceRow): Promise<void> {
  const { sql, api } = deps;
  const table = source.kind === 'channel' ? 'channels' : 'playlists';
  const [fresh] = await sql<{ fresh: boolean }[]>`
    select fetched_at > now() - make_interval(secs => ${SOURCE_METADATA_REFRESH_MS / 1000}) as fresh
    from ${sql(table)} where id = ${source.external_id}`;
  if (fresh?.fresh) return;
  if (source.kind === 'channel') await upsertChannel(sql, await api.getChannel({ id: source.external_id }));
  else await upsertPlaylist(sql, await api.getPlaylist({ id: source.external_id }));
}

export async function upsertChannel(
  sql: Queryable,
  c: Awaited<ReturnType<PipelineDeps['api']['getChannel']>>,
): Promise<void> {
  await sql`
    insert into channels (id, name, handle, description, subscriber_count, video_count, view_count,
      thumbnail, banner, raw, fetched_at, updated_at)
    values (${c.id}, ${c.name}, ${c.handle ?? null}, ${c.description ?? null}, ${c.subscriberCount ?? null},
      ${c.videoCount ?? null}, ${c.viewCount ?? null}, ${c.thumbnail ?? null}, ${c.banner ?? null},
      ${sql.json(c as never)}, now(), now())
    on conflict (id) do update set name = excluded.name, handle = excluded.handle,
      description = excluded.description, subscriber_count = excluded.subscriber_count,
      video_count = excluded.video_count, view_count = excluded.view_count,
      thumbnail = excluded.thumbnail, banner = excluded.banner, raw = excluded.raw,
      fetched_at = now(),
      updated_at = case when channels.raw is distinct from excluded.raw then now() else channels.updated_at end`;
}

export async function upsertPlaylist(
  sql: Queryable,
  p: Awaited<ReturnType<PipelineDeps['api']['getPlaylist']>>,
): Promise<void> {
  await sql`
    insert into playlists (id, title, description, video_count, view_count, last_updated,
      channel_id, channel_name, raw, fetched_at, updated_at)
    values (${p.id}, ${p.title}, ${p.description ?? null}, ${p.videoCount}, ${p.viewCount ?? null},
      ${p.lastUpdated ?? null}, ${p.channel.id}, ${p.channel.name}, ${sql.json(p as never)}, now(), now())
    on conflict (id) do update set title = excluded.title, description = excluded.description,
      video_count = excluded.video_count, view_count = excluded.view_count,
      last_updated = excluded.last_updated, channel_id = excluded.channel_id,
      channel_name = excluded.channel_name, raw = excluded.raw, fetched_at = now(),
      updated_at = case when playlists.raw is distinct from excluded.raw then now() else playlists.updated_at end`;
}

/** The source's regular video IDs (1 credit), remembered in `source_videos`. */
async function listVideoIds(deps: PipelineDeps, source: SourceRow): Promise<string[]> {
  const ids =
    source.kind === 'channel'
      ? await deps.api.getChannelVideos({ id: source.external_id, limit: source.max_videos, type: 'video' })
      : await deps.api.getPlaylistVideos({ id: source.external_id, limit: source.max_videos });
  const videoIds = [...new Set(ids.videoIds)];
  if (videoIds.length > 0) {
    await deps.sql`
      insert into source_videos (source_id, video_id, last_listed_at)
      select ${source.id}, v, now() from unnest(${videoIds}::text[]) as v
      on conflict (source_id, video_id) do update set last_listed_at = now()`;
  }
  return videoIds;
}

/** One batch per kind and language with videos due, each within the batch size; exact estimates. */
async function planBatches(
  deps: PipelineDeps,
  source: SourceRow,
  wanted: { kind: BatchKind; lang: string | null }[],
  listed: string[],
): Promise<PlannedBatch[]> {
  const planned: PlannedBatch[] = [];
  for (const w of wanted) {
    const due = await dueVideoIds(deps.sql, deps.settings, w.kind, w.lang, listed, !source.text_only);
    if (due.length === 0) continue;
    // one in-flight batch per source, kind and language: the rest waits for the next sync
    const videoIds = due.slice(0, deps.settings.batchSize);
    planned.push({
      kind: w.kind,
      lang: w.lang,
      request: batchRequest(w.kind, w.lang, videoIds, source.text_only),
      videos: videoIds.length,
      credits: 1 + videoIds.length,
    });
  }
  return planned;
}

function batchRequest(kind: BatchKind, lang: string | null, videoIds: string[], textOnly: boolean): VideoBatchRequest | TranscriptBatchRequest {
  if (kind === 'video') return { videoIds };
  return { videoIds, ...(lang !== null ? { lang } : {}), ...(textOnly ? { text: true } : {}) };
}

/**
 * Of `ids`, those due for `kind`/`lang` now (in listing order), by the policy of
 * src/domain/attempts.ts over what `video_sync` and the claiming batch or POST say.
 */
export async function dueVideoIds(
  sql: Queryable,
  settings: Pick<PipelineDeps['settings'], 'retryAttemptsMax' | 'retryBackoffBaseMs'>,
  kind: BatchKind,
  lang: string | null,
  ids: string[],
  wantsChunks: boolean,
): Promise<string[]> {
  const { now, rows } = await readSyncFacts(sql, kind, lang, ids);
  const policy = {
    now,
    retryAttemptsMax: settings.retryAttemptsMax,
    retryBackoffBaseMs: settings.retryBackoffBaseMs,
    // only a transcript comes as chunks or as plain text
    wantsChunks: kind === 'transcript' && wantsChunks,
  };
  // metadata stored before claims were recorded counts as delivered
  return rows.filter((r) => !r.storedBeforeClaims && dueReason(r.facts, policy) !== null).map((r) => r.videoId);
}

export interface SubmitBatchInput {
  sourceId: number | null;
  kind: BatchKind;
  lang: string | null;
  request: VideoBatchRequest | TranscriptBatchRequest;
  credits: number;
  textOnly?: boolean;
  /** job_id whose retryable items this batch re-submits */
  replayOf?: string | null;
  /**
   * Under the claim lock, which of the request's videoIds are still due (a sync's automatic
   * submission); the request shrinks to those, and nothing is sent when none is. Omitted: a
   * person's re-submission, sent as planned.
   */
  claimDue?: ((tx: Queryable, videoIds: string[]) => Promise<string[]>) | undefined;
}

export interface SubmittedBatch {
  jobId: string;
  videos: number;
  credits: number;
}

/** Whether a failed POST may have created the batch anyway (its answer was lost, not refused). */
export function answerMayBeLost(e: unknown): boolean {
  if (e instanceof NetworkError) return !e.notSent;
  if (e instanceof TimeoutError) return (e.cause as { code?: unknown } | undefined)?.code !== 'UND_ERR_CONNECT_TIMEOUT';
  if (e instanceof AbortedError || e instanceof SchemaMismatchError) return true;
  // a gateway's non-JSON 5xx: the request may have reached the API behind it
  if (e instanceof InternalError) return e.rawBody !== undefined;
  // any other answer with a status refused the request; a local invalid-request sent nothing
  if (e instanceof ApiError) return false;
  return true;
}

/**
 * POST the batch once (the client never retries a create after it may have arrived), having
 * claimed its videos first, then record it with its estimate and enqueue its poll job.
 *
 * Claim first: under an advisory lock per kind and language that every process takes, the due
 * list is read again, the POST is recorded (`batch_submissions`, `sending`) and its videos are
 * claimed in `video_sync`, all in one short transaction. Two processes syncing sources that share
 * videos take turns there, and the second sees the first's claims. The claims stand while the
 * POST's outcome is unknown (an answer lost, a crash mid-POST: resolveSubmissions decides later
 * from the credits); a refused POST releases them. No connection is held across the POST, so a
 * sync needs at most two at once (its session lock and one more).
 * Returns null when nothing was left to submit.
 */
export async function submitBatch(deps: PipelineDeps, input: SubmitBatchInput): Promise<SubmittedBatch | null> {
  const { sql, api, queues, settings } = deps;
  const syncLang = input.lang ?? '';
  // the account's usage just before the POST (/me is free): how a lost answer is judged later
  const before = await api.me();
  const claim = await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${CLAIM_LOCK_NAMESPACE}, hashtext(${`${input.kind}/${syncLang}`}))`;
    let request = input.request;
    let credits = input.credits;
    const planned = (request as { videoIds?: string[] }).videoIds;
    if (input.claimDue && planned !== undefined) {
      const due = await input.claimDue(tx, planned);
      if (due.length === 0) return null;
      if (due.length < planned.length) {
        request = { ...request, videoIds: due } as typeof request;
        credits = 1 + due.length;
      }
    }
    const videoIds = (request as { videoIds?: string[] }).videoIds ?? [];
    const submission = await recordSending(tx, {
      sourceId: input.sourceId,
      kind: input.kind,
      lang: input.lang,
      request,
      credits,
      usedCreditsBefore: before.usedCredits,
    });
    await claimVideos(tx, { kind: input.kind, lang: input.lang, textOnly: input.textOnly ?? false, submission }, videoIds);
    return { request, credits, videoIds, submission };
  });
  if (claim === null) return null;
  const { request, credits, videoIds, submission } = claim;

  let jobId: string;
  try {
    ({ jobId } =
      input.kind === 'video'
        ? await api.createVideoBatch(request as VideoBatchRequest)
        : await api.createTranscriptBatch(request as TranscriptBatchRequest));
  } catch (e: unknown) {
    const lost = answerMayBeLost(e);
    const detail = e instanceof Error ? e.message : String(e);
    if (lost) {
      // the claims stand until the next sync of the source decides from the credits
      await markSubmission(sql, submission, 'unknown', { detail });
      deps.log.error(
        { sourceId: input.sourceId, kind: input.kind, lang: input.lang, submission, err: e },
        'batch POST answer lost: it may have been created upstream; not retried (the next sync checks the credits first)',
      );
    } else {
      await sql.begin(async (tx) => {
        await markSubmission(tx, submission, 'failed', { detail });
        await releaseClaims(tx, submission);
      });
    }
    throw e;
  }
  await sql.begin(async (tx) => {
    await tx`
      insert into batches (job_id, source_id, kind, lang, status, credits_estimated, request, text_only, replay_of, next_poll_at)
      values (${jobId}, ${input.sourceId}, ${input.kind}, ${input.lang}, 'submitted', ${credits},
        ${tx.json(request as never)}, ${input.textOnly ?? false}, ${input.replayOf ?? null},
        now() + make_interval(secs => ${settings.pollInitialDelayMs / 1000}))`;
    await markSubmission(tx, submission, 'submitted', { jobId });
    await pointClaimsAt(tx, submission, jobId);
    if (videoIds.length > 0) {
      // these videos' retryable items are taken up by this batch: never re-submit them again
      await tx`
        update batch_items i set resubmitted_in = ${jobId}, updated_at = now()
        from batches b
        where b.job_id = i.job_id and b.kind = ${input.kind} and b.lang is not distinct from ${input.lang}
          and i.state = 'retryable' and i.resubmitted_in is null and i.job_id <> ${jobId}
          and i.video_id = any(${videoIds}::text[])`;
    }
  });
  await queues.poll.add('poll', { jobId, delayMs: settings.pollInitialDelayMs }, { jobId: pollJobId(jobId), delay: settings.pollInitialDelayMs });
  deps.log.debug({ jobId, kind: input.kind, lang: input.lang, credits }, 'batch submitted');
  return { jobId, videos: videoIds.length, credits };
}
