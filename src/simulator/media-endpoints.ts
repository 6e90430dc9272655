/**
 * Endpoints outside the platform segment: transcript of any media URL (and its jobs), media
 * metadata, web scrape/map/crawl, and `/me`.
 */
import {
  CRAWL_LIMIT_DEFAULT,
  CrawlQuerySchema,
  CrawlRequestSchema,
  JobIdParamSchema,
  MediaTranscriptQuerySchema,
  MetadataQuerySchema,
  WebPageQuerySchema,
  type Metadata,
  type Transcript,
} from '../api/schemas.ts';
import { generateCredits } from '../domain/prices.ts';
import { crawlNext } from './crawl-jobs.ts';
import { creditsExhausted, notFound, parseBody, parseWith, type ApiDeps, type Handler } from './handler.ts';
import { parseVideoRef } from './ids.ts';
import { hash32 } from './prng.ts';
import { errorReply, json } from './respond.ts';
import type { Router } from './router.ts';
import { LANGS, type Lang } from './text.ts';
import { chooseLang, shapeContent } from './transcripts.ts';
import { socialMetadata, socialPlatformOf } from './social.ts';
import { isPlatformHost, publicVideo } from './videosite-endpoints.ts';
import { httpUrl } from './web.ts';

function pageLang(lang: string | undefined): Lang {
  return lang !== undefined && (LANGS as readonly string[]).includes(lang) ? (lang as Lang) : 'en';
}

export function registerMediaEndpoints(router: Router<Handler>, deps: ApiDeps): void {
  registerTranscriptEndpoints(router, deps);
  registerMetadataEndpoint(router, deps);
  registerWebEndpoints(router, deps);
  registerAccountEndpoint(router, deps);
}

/** `GET /transcript` (from captions, or a generation job) and its job. */
function registerTranscriptEndpoints(router: Router<Handler>, deps: ApiDeps): void {
  const { catalog } = deps;
  const ownHost = (u: URL) => isPlatformHost(deps.platform, u);

  router.add('GET', '/transcript', (req) => {
    const q = parseWith(MediaTranscriptQuerySchema, req.query, 'query');
    if (!q.ok) return q.reply;
    const { url, mode = 'auto' } = q.value;
    const ref = catalog.findVideo(url);
    const parsedUrl = httpUrl(url);
    if (!ref && !parsedUrl) return errorReply('invalid-request', 'Invalid query: url: expected an http(s) media URL');
    if (!ref && parsedUrl && ownHost(parsedUrl) && parseVideoRef(url) !== undefined) return notFound('Video');
    if (ref) {
      const v = publicVideo(deps, url);
      if ('reply' in v) return v.reply;
      const lang = chooseLang(v.facts.transcriptLanguages, q.value.lang);
      if (mode !== 'generate' && lang !== undefined) {
        if (!req.charge(1)) return creditsExhausted();
        const body: Transcript = {
          content: shapeContent(catalog.transcriptChunks(v.ref, lang), q.value),
          lang,
          availableLangs: [...v.facts.transcriptLanguages],
        };
        return json(body);
      }
      if (mode === 'native') {
        if (!req.charge(1)) return creditsExhausted();
        return errorReply(
          'transcript-unavailable',
          'No native transcript is available.',
          `video ${v.facts.id} has no transcript; use mode=auto or mode=generate`,
        );
      }
    }
    // what follows transcribes the audio (no captions to answer from, or asked to generate):
    // priced per started minute of the media (UPSTREAM.md, "Generated transcripts"); a native
    // request for media outside the catalog keeps the price of any other answer
    const cost = mode === 'native' ? 1 : generateCredits(deps.transcriptJobs.mediaDurationS(ref, url, q.value.lang));
    if (!req.charge(cost)) return creditsExhausted();
    const s = deps.jobSettings();
    const jobId = deps.transcriptJobs.create(
      req.apiKey,
      { ref, url, lang: q.value.lang, text: q.value.text, chunkSize: q.value.chunkSize, mode },
      deps.clock.now(),
      { queuedMs: s.queuedMs, runMs: s.transcriptJobMs, resultMs: s.transcriptResultMs },
    );
    return json({ jobId }, 202);
  });

  router.add('GET', '/transcript/{jobId}', (req) => {
    const id = parseWith(JobIdParamSchema, req.params.jobId, 'path');
    if (!id.ok) return id.reply;
    const result = deps.transcriptJobs.view(id.value, req.apiKey, deps.clock.now());
    return result ? json(result) : notFound('Transcript job');
  });
}

/** `GET /metadata`: a catalog video, or a social post made up from its URL. */
function registerMetadataEndpoint(router: Router<Handler>, deps: ApiDeps): void {
  const { catalog } = deps;
  const ownHost = (u: URL) => isPlatformHost(deps.platform, u);

  router.add('GET', '/metadata', (req) => {
    const q = parseWith(MetadataQuerySchema, req.query, 'query');
    if (!q.ok) return q.reply;
    const ref = catalog.findVideo(q.value.url);
    if (ref) {
      const v = publicVideo(deps, q.value.url);
      if ('reply' in v) return v.reply;
      const video = catalog.video(v.ref);
      const ch = catalog.channel(ref.channel);
      // shorts and live streams are videos too: the published MediaType has no kind for them
      const body: Metadata = {
        platform: deps.platform,
        type: 'video',
        id: video.id,
        url: catalog.videoUrl(video.id),
        title: video.title,
        description: video.description === '' ? null : video.description,
        author: { username: ch.handle, displayName: ch.name, verified: (ch.subscriberCount ?? 0) > 100_000 },
        // the published document gives the video platform's share count as null
        stats: {
          views: video.viewCount ?? null,
          likes: video.likeCount ?? null,
          comments: hash32(video.id) % 5000,
          shares: null,
        },
        media: {
          type: 'video',
          duration: video.duration,
          ...(video.thumbnail === undefined ? {} : { thumbnailUrl: video.thumbnail }),
        },
        tags: [...video.tags],
        additionalData: { channelId: ch.id, videoKind: ref.kind, transcriptLanguages: [...video.transcriptLanguages] },
      };
      if (ch.thumbnail !== undefined) body.author!.avatarUrl = ch.thumbnail;
      if (typeof video.uploadDate === 'string') body.createdAt = video.uploadDate;
      return req.charge(1) ? json(body) : creditsExhausted();
    }
    const url = httpUrl(q.value.url);
    if (!url) return errorReply('invalid-request', 'Invalid query: url: expected an http(s) media URL');
    if (ownHost(url)) return notFound('Media');
    const platform = socialPlatformOf(url);
    if (!platform) return errorReply('invalid-request', 'Invalid query: url: not a URL of a supported platform');
    const body = socialMetadata(
      deps.seed,
      platform,
      url,
      deps.transcriptJobs.mediaDurationS(undefined, url.href, undefined),
    );
    return req.charge(1) ? json(body) : creditsExhausted();
  });
}

/** The web endpoints: scrape, map, and crawl jobs. */
function registerWebEndpoints(router: Router<Handler>, deps: ApiDeps): void {
  router.add('GET', '/web/scrape', (req) => {
    const q = parseWith(WebPageQuerySchema, req.query, 'query');
    if (!q.ok) return q.reply;
    const url = httpUrl(q.value.url);
    if (!url) return errorReply('invalid-request', 'Invalid query: url: expected an http(s) URL');
    if (deps.web.isRemoved(url)) return errorReply('not-found', 'Page not found.');
    const body = deps.web.scrape(url, q.value.noLinks ?? false, pageLang(q.value.lang));
    return req.charge(1) ? json(body) : creditsExhausted();
  });

  router.add('GET', '/web/map', (req) => {
    const q = parseWith(WebPageQuerySchema, req.query, 'query');
    if (!q.ok) return q.reply;
    const url = httpUrl(q.value.url);
    if (!url) return errorReply('invalid-request', 'Invalid query: url: expected an http(s) URL');
    return req.charge(1) ? json({ urls: deps.web.siteUrls(url.origin) }) : creditsExhausted();
  });

  router.add('POST', '/web/crawl', (req) => {
    const b = parseBody(CrawlRequestSchema, req.body);
    if (!b.ok) return b.reply;
    const url = httpUrl(b.value.url);
    if (!url) return errorReply('invalid-request', 'Invalid body: url: expected an http(s) URL');
    if (!req.charge(1)) return creditsExhausted();
    const s = deps.jobSettings();
    const jobId = deps.crawls.create(req.apiKey, url, b.value.limit ?? CRAWL_LIMIT_DEFAULT, deps.clock.now(), {
      pageMs: s.crawlPageMs,
      purgeMs: s.purgeMs,
      fault: s.crawlFault,
    });
    return json({ jobId });
  });

  router.add('GET', '/web/crawl/{jobId}', (req) => {
    const id = parseWith(JobIdParamSchema, req.params.jobId, 'path');
    if (!id.ok) return id.reply;
    const q = parseWith(CrawlQuerySchema, req.query, 'query');
    if (!q.ok) return q.reply;
    const shape = deps.jobSettings().crawlNext;
    const next = (skip: number) => crawlNext(shape, req.origin, id.value, skip);
    const job = deps.crawls.view(id.value, req.apiKey, q.value.skip ?? 0, deps.clock.now(), next);
    return job ? json(job) : notFound('Crawl job');
  });
}

/** `GET /me`: the calling key's account. */
function registerAccountEndpoint(router: Router<Handler>, deps: ApiDeps): void {
  router.add('GET', '/me', (req) => {
    const me = deps.accounts.me(req.apiKey);
    return me ? json(me) : errorReply('unauthorized', 'Invalid API key.');
  });
}
