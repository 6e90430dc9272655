/**
 * `POST /extract` and `GET /extract/{jobId}`: structured data extracted from a video of the
 * catalog or a post of a social platform. Always a job (202), charged when accepted: 5 credits
 * per started minute of the media, at least 5 (`extractCredits`).
 */
import { ExtractRequestSchema, JobIdParamSchema } from '../api/schemas.ts';
import { extractCredits } from '../domain/prices.ts';
import { creditsExhausted, notFound, parseBody, parseWith, type ApiDeps, type Handler } from './handler.ts';
import { errorReply, json } from './respond.ts';
import type { Router } from './router.ts';
import { socialPlatformOf } from './social.ts';
import { isPlatformHost, publicVideo } from './videosite-endpoints.ts';
import { httpUrl } from './web.ts';

export function registerExtractEndpoints(router: Router<Handler>, deps: ApiDeps): void {
  router.add('POST', '/extract', (req) => {
    const b = parseBody(ExtractRequestSchema, req.body);
    if (!b.ok) return b.reply;
    const { url, prompt, schema } = b.value;
    let mediaKey: string;
    let durationS: number;
    if (deps.catalog.findVideo(url)) {
      const v = publicVideo(deps, url);
      if ('reply' in v) return v.reply;
      mediaKey = v.facts.id;
      durationS = v.facts.durationS;
    } else {
      const u = httpUrl(url);
      if (!u) return errorReply('invalid-request', 'Invalid body: url: expected an http(s) video URL');
      if (isPlatformHost(deps.platform, u)) return notFound('Video');
      if (!socialPlatformOf(u))
        return errorReply('invalid-request', 'Invalid body: url: not a URL of a supported platform');
      mediaKey = u.href;
      durationS = deps.transcriptJobs.mediaDurationS(undefined, u.href, undefined);
    }
    if (!req.charge(extractCredits(durationS))) return creditsExhausted();
    const s = deps.jobSettings();
    const jobId = deps.extracts.create(req.apiKey, { mediaKey, prompt, schema }, deps.clock.now(), {
      queuedMs: s.queuedMs,
      runMs: s.extractJobMs,
    });
    return json({ jobId }, 202);
  });

  router.add('GET', '/extract/{jobId}', (req) => {
    const id = parseWith(JobIdParamSchema, req.params.jobId, 'path');
    if (!id.ok) return id.reply;
    const result = deps.extracts.view(id.value, req.apiKey, deps.clock.now());
    return result ? json(result) : notFound('Extract job');
  });
}
