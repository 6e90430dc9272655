/**
 * The scheduler: one sync run of one source. It decides what to submit, checks that the account
 * can pay for it, submits each batch exactly once, and records every batch in Postgres before its
 * poll job is enqueued.
 *
 * A source's first sync submits the playlist or channel itself (one request expands it upstream);
 * every later sync lists the source's video IDs (1 credit) and submits only the videos that are
 * due: never landed, last item retryable, or a transcript due for its re-check. A source whose
 * videos are all present spends only that listing.
 */
import { ApiError, toApiError } from '../api/errors.ts';
import type { Account, TranscriptBatchRequest, VideoBatchRequest } from '../api/schemas.ts';
import type { Queryable } from '../db/connection.ts';
import type { BatchKind } from '../db/schema.ts';
import { SourceNotFoundError } from '../db/sources.ts';
import { pollJobId } from '../queues/names.ts';
import type { PipelineDeps } from './deps.ts';

/** Advisory-lock namespace of sync runs ('VS'); the second key is the source ID. */
const SYNC_LOCK_NAMESPACE = 0x5653;
/** Channel/playlist metadata is re-fetched (1 credit) when older than this. */
export const SOURCE_METADATA_REFRESH_MS = 24 * 3_600_000;
/** A retryable video is re-submitted by later syncs at most this many times in all. */
export const RETRY_ATTEMPTS_MAX = 5;

export type SyncOutcome = 'submitted' | 'up-to-date' | 'refused-credits' | 'in-flight' | 'paused';

export interface SyncResult {
  sourceId: number;
  outcome: SyncOutcome;
  /** upstream job IDs submitted by this run */
  jobIds: string[];
  /** video IDs listed (0 on a first sync, which does not list) */
  listed: number;
  /** videos submitted, summed over batches (a first sync counts its limit) */
  submitted: number;
  creditsEstimated: number;
  detail?: string;
}

export interface SyncOptions {
  trigger?: 'cron' | 'backfill' | 'manual';
}

interface SourceRow {
  id: number;
  kind: 'playlist' | 'channel';
  external_id: string;
  max_videos: number;
  langs: string[];
  text_only: boolean;
  paused: boolean;
  initial_sync_done: boolean;
}

/** One batch to submit. `lang` undefined: the API's default language. */
interface PlannedBatch {
  kind: BatchKind;
  lang: string | null;
  request: VideoBatchRequest | TranscriptBatchRequest;
  videos: number;
  credits: number;
}

export class CreditsRefusedError extends Error {
  readonly needed: number;
  readonly available: number;
  constructor(needed: number, available: number, reserve: number) {
    super(
      `not enough credits: this submission needs ${needed}, ${available} are left` +
        (reserve > 0 ? ` above the reserve of ${reserve}` : ''),
    );
    this.name = 'CreditsRefusedError';
    this.needed = needed;
    this.available = available;
  }
}

export async function syncSource(
  deps: PipelineDeps,
  sourceId: number,
  opts: SyncOptions = {},
): Promise<SyncResult> {
  const conn = await deps.sql.reserve();
  try {
    const [lock] = await conn<{ locked: boolean }[]>`
      select pg_try_advisory_lock(${SYNC_LOCK_NAMESPACE}, ${sourceId}) as locked`;
    if (!lock?.locked) {
      return { sourceId, outcome: 'in-flight', jobIds: [], listed: 0, submitted: 0, creditsEstimated: 0, detail: 'another process is syncing this source' };
    }
    try {
      return await syncLocked(deps, sourceId, opts);
    } finally {
      await conn`select pg_advisory_unlock(${SYNC_LOCK_NAMESPACE}, ${sourceId})`;
    }
  } finally {
    conn.release();
  }
}

async function syncLocked(deps: PipelineDeps, sourceId: number, opts: SyncOptions): Promise<SyncResult> {
  const { sql, api, log, settings } = deps;
  const [source] = await sql<SourceRow[]>`
    select id, kind, external_id, max_videos, langs, text_only, paused, initial_sync_done
    from sources where id = ${sourceId}`;
  if (!source) throw new SourceNotFoundError(sourceId);
  const result: SyncResult = { sourceId, outcome: 'up-to-date', jobIds: [], listed: 0, submitted: 0, creditsEstimated: 0 };
  if (source.paused && (opts.trigger ?? 'cron') === 'cron') {
    return { ...result, outcome: 'paused' };
  }

  const [run] = await sql<{ id: number }[]>`
    insert into sync_runs (source_id) values (${sourceId}) returning id`;
  const runId = run!.id;

  try {
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

    let planned: PlannedBatch[];
    if (!source.initial_sync_done) {
      planned = planInitial(source, wanted);
    } else {
      const listed = await listVideoIds(deps, source);
      result.listed = listed.length;
      planned = await planIncremental(deps, source, wanted, listed);
    }
    if (planned.length === 0) {
      await sql`update sources set last_synced_at = now(), last_error = null, last_error_code = null where id = ${sourceId}`;
      await finishRun(sql, runId, 'up-to-date', result);
      log.info({ sourceId, listed: result.listed }, 'source up to date');
      return result;
    }

    const estimate = planned.reduce((n, b) => n + b.credits, 0);
    result.creditsEstimated = estimate;
    const account = await takeCreditSnapshot(deps, sourceId, 'before-submit');
    const available = account.maxCredits - account.usedCredits - settings.creditReserve;
    if (estimate > available) {
      const refusal = new CreditsRefusedError(estimate, Math.max(0, available), settings.creditReserve);
      result.outcome = 'refused-credits';
      result.detail = refusal.message;
      await sql`
        update sources set last_error = ${refusal.message}, last_error_code = 'credits', last_error_at = now()
        where id = ${sourceId}`;
      await finishRun(sql, runId, 'refused-credits', result);
      log.warn({ sourceId, needed: estimate, available }, 'sync refused: not enough credits');
      return result;
    }

    for (const batch of planned) {
      const jobId = await submitBatch(deps, { sourceId, ...batch, textOnly: source.text_only });
      result.jobIds.push(jobId);
      result.submitted += batch.videos;
    }
    if (!source.initial_sync_done) {
      await sql`update sources set initial_sync_done = true where id = ${sourceId}`;
    }
    await sql`
      update sources set last_synced_at = now(), last_error = null, last_error_code = null, updated_at = now()
      where id = ${sourceId}`;
    result.outcome = 'submitted';
    await finishRun(sql, runId, 'submitted', result);
    log.info({ sourceId, jobIds: result.jobIds, videos: result.submitted, credits: estimate }, 'batches submitted');
    return result;
  } catch (e: unknown) {
    const err = e instanceof ApiError ? e : e instanceof Error ? e : toApiError(e);
    const code = err instanceof ApiError ? err.code : 'error';
    result.detail = err.message;
    await sql`
      update sources set last_error = ${err.message}, last_error_code = ${code}, last_error_at = now()
      where id = ${sourceId}`;
    const refused = err instanceof ApiError && ['unauthorized', 'upgrade-required', 'forbidden', 'limit-exceeded'].includes(err.code);
    await finishRun(sql, runId, refused ? 'refused-upstream' : 'error', result);
    // submitted batches stay recorded; what was not submitted is due again at the next sync
    throw err;
  }
}

function key(kind: BatchKind, lang: string | null): string {
  return `${kind}/${lang ?? ''}`;
}

async function inFlightKeys(sql: Queryable, sourceId: number): Promise<Set<string>> {
  const rows = await sql<{ kind: BatchKind; lang: string | null }[]>`
    select kind, lang from batches
    where source_id = ${sourceId} and status in ('submitted', 'queued', 'active')`;
  return new Set(rows.map((r) => key(r.kind, r.lang)));
}

async function finishRun(sql: Queryable, runId: number, outcome: string, r: SyncResult): Promise<void> {
  await sql`
    update sync_runs set finished_at = now(), outcome = ${outcome}, detail = ${r.detail ?? null},
      videos_listed = ${r.listed}, videos_submitted = ${r.submitted},
      credits_estimated = ${r.creditsEstimated}, job_ids = ${r.jobIds}
    where id = ${runId}`;
}

/** GET /me (free) and keep it in `credit_snapshots`. */
export async function takeCreditSnapshot(
  deps: Pick<PipelineDeps, 'sql' | 'api'>,
  sourceId: number | null,
  reason: string,
): Promise<Account> {
  const me = await deps.api.me();
  await deps.sql`
    insert into credit_snapshots (organization_id, plan, max_credits, used_credits, reason, source_id)
    values (${me.organizationId}, ${me.plan}, ${me.maxCredits}, ${me.usedCredits}, ${reason}, ${sourceId})`;
  return me;
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

function planInitial(source: SourceRow, wanted: { kind: BatchKind; lang: string | null }[]): PlannedBatch[] {
  const from =
    source.kind === 'channel' ? { channelId: source.external_id } : { playlistId: source.external_id };
  return wanted.map((w) => ({
    kind: w.kind,
    lang: w.lang,
    request:
      w.kind === 'video'
        ? { ...from, limit: source.max_videos }
        : {
            ...from,
            limit: source.max_videos,
            ...(w.lang !== null ? { lang: w.lang } : {}),
            ...(source.text_only ? { text: true } : {}),
          },
    videos: source.max_videos,
    credits: 1 + source.max_videos,
  }));
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

async function planIncremental(
  deps: PipelineDeps,
  source: SourceRow,
  wanted: { kind: BatchKind; lang: string | null }[],
  listed: string[],
): Promise<PlannedBatch[]> {
  const planned: PlannedBatch[] = [];
  for (const w of wanted) {
    const due = await dueVideoIds(deps.sql, w.kind, w.lang, listed);
    if (due.length === 0) continue;
    // one in-flight batch per source, kind and language: the rest waits for the next sync
    const videoIds = due.slice(0, deps.settings.batchSize);
    planned.push({
      kind: w.kind,
      lang: w.lang,
      request:
        w.kind === 'video'
          ? { videoIds }
          : {
              videoIds,
              ...(w.lang !== null ? { lang: w.lang } : {}),
              ...(source.text_only ? { text: true } : {}),
            },
      videos: videoIds.length,
      credits: 1 + videoIds.length,
    });
  }
  return planned;
}

/**
 * Of `ids`, those due for `kind`/`lang` (in listing order): never delivered; or whose latest
 * item was retryable (re-submitted at most RETRY_ATTEMPTS_MAX times); or a transcript whose
 * re-check time has come. Private, gone and misconfigured videos are not due.
 */
export async function dueVideoIds(
  sql: Queryable,
  kind: BatchKind,
  lang: string | null,
  ids: string[],
): Promise<string[]> {
  if (ids.length === 0) return [];
  const syncLang = lang ?? '';
  const rows = await sql<{ id: string }[]>`
    select l.id
    from unnest(${ids}::text[]) with ordinality as l(id, n)
    left join video_sync s on s.video_id = l.id and s.kind = ${kind} and s.lang = ${syncLang}
    where case
      when s.video_id is null then
        ${kind} <> 'video' or not exists (select 1 from videos v where v.id = l.id)
      when s.last_state = 'retryable' then s.attempts < ${RETRY_ATTEMPTS_MAX}
      when s.next_check_at is not null then s.next_check_at <= now()
      else false
    end
    order by l.n`;
  return rows.map((r) => r.id);
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
}

/**
 * POST the batch once (the client never retries a create after it may have arrived), record it
 * with its estimate, then enqueue its poll job. Returns the upstream job ID.
 */
export async function submitBatch(deps: PipelineDeps, input: SubmitBatchInput): Promise<string> {
  const { sql, api, queues, settings } = deps;
  const { jobId } =
    input.kind === 'video'
      ? await api.createVideoBatch(input.request as VideoBatchRequest)
      : await api.createTranscriptBatch(input.request as TranscriptBatchRequest);
  await sql`
    insert into batches (job_id, source_id, kind, lang, status, credits_estimated, request, text_only, replay_of, next_poll_at)
    values (${jobId}, ${input.sourceId}, ${input.kind}, ${input.lang}, 'submitted', ${input.credits},
      ${sql.json(input.request as never)}, ${input.textOnly ?? false}, ${input.replayOf ?? null},
      now() + make_interval(secs => ${settings.pollInitialDelayMs / 1000}))`;
  const videoIds = (input.request as { videoIds?: string[] }).videoIds;
  if (videoIds !== undefined) {
    // these videos' retryable items are taken up by this batch: never re-submit them again
    await sql`
      update batch_items i set resubmitted_in = ${jobId}, updated_at = now()
      from batches b
      where b.job_id = i.job_id and b.kind = ${input.kind} and b.lang is not distinct from ${input.lang}
        and i.state = 'retryable' and i.resubmitted_in is null and i.job_id <> ${jobId}
        and i.video_id = any(${videoIds}::text[])`;
  }
  await queues.poll.add(
    'poll',
    { jobId, delayMs: settings.pollInitialDelayMs },
    { jobId: pollJobId(jobId), delay: settings.pollInitialDelayMs },
  );
  deps.log.debug({ jobId, kind: input.kind, lang: input.lang, credits: input.credits }, 'batch submitted');
  return jobId;
}
