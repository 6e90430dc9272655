/**
 * Batch endpoints: `POST /{p}/video/batch`, `POST /{p}/transcript/batch` and
 * `GET /{p}/batch/{jobId}` (streamed item by item).
 */
import {
  BATCH_LIMIT_DEFAULT,
  JobIdParamSchema,
  TranscriptBatchRequestSchema,
  VideoBatchRequestSchema,
  type BatchHead,
  type BatchItem,
  type Transcript,
} from '../api/schemas.ts';
import { batchCredits } from '../domain/prices.ts';
import { FREE_PLAN } from './accounts.ts';
import { creditsExhausted, notFound, parseBody, parseWith, type ApiDeps, type Handler } from './handler.ts';
import { parseVideoRef } from './ids.ts';
import { viewBatch, type BatchEntry, type BatchJob, type BatchKind } from './jobs.ts';
import { errorReply, json, RawJson, type Reply } from './respond.ts';
import type { Router } from './router.ts';
import { chooseLang, shapeContent } from './transcripts.ts';

type Source = {
  videoIds?: string[] | undefined;
  playlistId?: string | undefined;
  channelId?: string | undefined;
  limit?: number | undefined;
};

/** The distinct entries of a batch request, or the error answer. */
function expand(deps: ApiDeps, src: Source): { entries: BatchEntry[] } | { reply: Reply } {
  const { catalog } = deps;
  if (src.videoIds !== undefined) {
    if (src.videoIds.length > deps.maxVideoIds) {
      return {
        reply: errorReply(
          'invalid-request',
          `Invalid body: videoIds: at most ${deps.maxVideoIds} entries are allowed`,
          `videoIds: got ${src.videoIds.length} entries, the maximum is ${deps.maxVideoIds}`,
        ),
      };
    }
    const seen = new Set<string>();
    const entries: BatchEntry[] = [];
    for (const raw of src.videoIds) {
      // URLs and IDs of the same video are one video: credits are per distinct video
      const videoId = parseVideoRef(raw) ?? raw.trim();
      if (seen.has(videoId)) continue;
      seen.add(videoId);
      entries.push({ videoId, ref: catalog.findVideo(videoId) });
    }
    return { entries };
  }
  const limit = src.limit ?? BATCH_LIMIT_DEFAULT;
  let ids: string[];
  if (src.playlistId !== undefined) {
    const pl = catalog.findPlaylist(src.playlistId);
    if (pl === undefined) return { reply: notFound('Playlist') };
    ids = catalog.playlistVideoIds(pl, 'video', limit);
  } else {
    const c = catalog.findChannel(src.channelId ?? '');
    if (c === undefined) return { reply: notFound('Channel') };
    ids = catalog.channelVideoIds(c, 'video', limit);
  }
  return { entries: ids.map((videoId) => ({ videoId, ref: catalog.findVideo(videoId) })) };
}

function createBatch(deps: ApiDeps, kind: BatchKind): Handler {
  return (req) => {
    const account = deps.accounts.get(req.apiKey);
    if (account?.plan === FREE_PLAN) {
      return errorReply(
        'upgrade-required',
        'Batch jobs are not included in your plan.',
        `The ${FREE_PLAN} plan has no batch jobs; upgrade to a paid plan.`,
      );
    }
    const parsed =
      kind === 'video'
        ? parseBody(VideoBatchRequestSchema, req.body)
        : parseBody(TranscriptBatchRequestSchema, req.body);
    if (!parsed.ok) return parsed.reply;
    const body = parsed.value as Source & { lang?: string | undefined; text?: boolean | undefined };
    const expanded = expand(deps, body);
    if ('reply' in expanded) return expanded.reply;
    if (!req.charge(batchCredits(expanded.entries.length))) return creditsExhausted();
    const job = deps.batches.create({
      kind,
      apiKey: req.apiKey,
      entries: expanded.entries,
      lang: body.lang,
      text: body.text,
      nowMs: deps.clock.now(),
      timings: deps.jobSettings(),
    });
    return json({ jobId: job.id });
  };
}

function transcriptOf(deps: ApiDeps, job: BatchJob, i: number): Transcript {
  const ref = job.entries[i]!.ref!;
  const facts = deps.catalog.facts(ref);
  const lang = chooseLang(facts.transcriptLanguages, job.lang)!;
  return {
    content: shapeContent(deps.catalog.transcriptChunks(ref, lang), { text: job.text }),
    lang,
    availableLangs: [...facts.transcriptLanguages],
  };
}

function* items(deps: ApiDeps, job: BatchJob, view: ReturnType<typeof viewBatch>): Generator<BatchItem | RawJson> {
  const field = job.kind === 'video' ? 'video' : 'transcript';
  const cache = deps.itemCache;
  for (let i = 0; i < job.entries.length; i++) {
    const videoId = job.entries[i]!.videoId;
    const state = view.item(i);
    if (state.state === 'processing') yield { videoId, [field]: null, errorCode: 'processing' };
    else if (state.state === 'error') yield { videoId, [field]: null, errorCode: state.errorCode };
    else {
      const generation = cache ? deps.catalog.editGeneration(videoId) : 0;
      const cached = cache?.get(job.id, i, generation);
      if (cached !== undefined) {
        yield new RawJson(cached);
        continue;
      }
      const item: BatchItem =
        job.kind === 'video'
          ? { videoId, video: deps.catalog.video(job.entries[i]!.ref!), errorCode: null }
          : { videoId, transcript: transcriptOf(deps, job, i), errorCode: null };
      if (!cache) {
        yield item;
        continue;
      }
      const json = JSON.stringify(item);
      cache.set(job.id, i, json, generation);
      yield new RawJson(json);
    }
  }
}

function readBatch(deps: ApiDeps): Handler {
  return (req) => {
    const id = parseWith(JobIdParamSchema, req.params.jobId, 'path');
    if (!id.ok) return id.reply;
    const now = deps.clock.now();
    const job = deps.batches.get(id.value, req.apiKey, now);
    if (!job) return notFound('Batch job');
    const view = viewBatch(job, now);
    const head: BatchHead = {
      status: view.status,
      ...(view.expired ? { errorCode: 'job-expired' as const } : {}),
      stats: view.stats,
      completedAt: view.completedAtMs === undefined ? null : new Date(view.completedAtMs).toISOString(),
    };
    return { kind: 'stream', status: 200, head, arrayKey: 'results', items: items(deps, job, view) };
  };
}

export function registerBatchEndpoints(router: Router<Handler>, deps: ApiDeps): void {
  const p = `/${deps.platform}`;
  router
    .add('POST', `${p}/video/batch`, createBatch(deps, 'video'))
    .add('POST', `${p}/transcript/batch`, createBatch(deps, 'transcript'))
    .add('GET', `${p}/batch/{jobId}`, readBatch(deps));
}
