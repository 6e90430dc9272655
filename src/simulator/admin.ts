/**
 * The admin API under `/__admin/` (no API key, outside /v1): the programmatic controls of the
 * simulator for out-of-process users (the benchmark, fault tests, a person with curl).
 *
 *   GET  /__admin/catalog                          channels with handles, sizes, playlists
 *   GET  /__admin/catalog/{channelId}/videos       ?kind=video|short|live: IDs, newest first
 *   POST /__admin/catalog/{channelId}/videos       {count}: append new videos to a channel
 *   GET  /__admin/videos/{videoId}                 fate and transcript languages of a video
 *   POST /__admin/videos/{videoId}                 change it (VideoEditSchema): title, description,
 *        tags, durationS, thumbnail, transcriptLanguages, fate, transcriptRevisions {lang: n}
 *   GET  /__admin/clock, POST /__admin/clock       {advanceMs?, speed?}
 *   GET|POST|DELETE /__admin/faults                read, patch, clear (also clears the script)
 *   POST /__admin/script {steps}, DELETE /__admin/script
 *   GET  /__admin/stats, POST /__admin/stats/reset
 *   GET|PUT /__admin/accounts/{key}                read, create or patch an account
 *   GET|POST /__admin/jobs                         job settings for new jobs
 *   GET  /__admin/sites?origin=O                   the live page URLs of a synthetic site
 *   POST /__admin/sites {origin, size?, change?, remove?, restore?, add?}: change a site (web.ts SiteEdit)
 */
import { z } from 'zod';
import { AccountPatchSchema } from './accounts.ts';
import { VIDEO_KINDS } from './catalog.ts';
import { FaultsPatchSchema, ScriptStepSchema } from './faults.ts';
import { parseBody, parseWith } from './handler.ts';
import { JobSettingsPatchSchema } from './options.ts';
import { errorReply, json, type Reply } from './respond.ts';
import { Router } from './router.ts';
import type { Simulator } from './server.ts';

export const ClockRequestSchema = z
  .object({
    /** simulated ms to jump forward */
    advanceMs: z.number().int().min(0).optional(),
    /** simulated ms per real ms from now on */
    speed: z.number().min(0).optional(),
  })
  .strict();
export const ScriptRequestSchema = z.object({ steps: z.array(ScriptStepSchema) }).strict();
export const AddVideosRequestSchema = z.object({ count: z.number().int().min(1).max(100_000) }).strict();
export const VideoEditSchema = z
  .object({
    title: z.string().optional(),
    description: z.string().optional(),
    tags: z.array(z.string()).optional(),
    durationS: z.number().min(0).optional(),
    thumbnail: z.string().nullable().optional(),
    transcriptLanguages: z
      .array(z.string().min(1))
      .refine((l) => new Set(l).size === l.length, 'each language at most once')
      .optional(),
    fate: z.enum(['public', 'private', 'gone']).optional(),
    transcriptRevisions: z.record(z.string().min(1), z.number().int().min(0)).optional(),
  })
  .strict();
const UrlListSchema = z.array(z.string().url()).max(100_000).optional();
export const SiteEditSchema = z
  .object({
    origin: z.string().url(),
    size: z.number().int().min(1).max(100_000).optional(),
    change: UrlListSchema,
    remove: UrlListSchema,
    restore: UrlListSchema,
    add: z.number().int().min(0).max(100_000).optional(),
  })
  .strict();
const OriginQuerySchema = z.object({ origin: z.string().url() });
const KindQuerySchema = z.object({ kind: z.enum(VIDEO_KINDS).optional() });

export interface AdminRequest {
  params: Record<string, string>;
  query: Record<string, string>;
  body: string | undefined;
}
type AdminHandler = (req: AdminRequest) => Reply;

export function buildAdminRouter(sim: Simulator): Router<AdminHandler> {
  const r = new Router<AdminHandler>();
  const clockState = () => ({
    nowMs: sim.clock.now(),
    now: new Date(sim.clock.now()).toISOString(),
    speed: sim.clock.speed(),
  });
  const unknownChannel = (id: string) => errorReply('not-found', `Channel ${id} not found.`);

  r.add('GET', '/catalog', () => json({ platform: sim.platform, seed: sim.seed, channels: sim.catalog.channels() }));

  r.add('GET', '/catalog/{channelId}/videos', (req) => {
    const q = parseWith(KindQuerySchema, req.query, 'query');
    if (!q.ok) return q.reply;
    const ids = sim.catalog.videoIds(req.params.channelId!, q.value.kind ?? 'video');
    return ids ? json({ videoIds: ids }) : unknownChannel(req.params.channelId!);
  });

  r.add('POST', '/catalog/{channelId}/videos', (req) => {
    const b = parseBody(AddVideosRequestSchema, req.body);
    if (!b.ok) return b.reply;
    const ids = sim.catalog.addVideos(req.params.channelId!, b.value.count);
    return ids ? json({ videoIds: ids }) : unknownChannel(req.params.channelId!);
  });

  r.add('GET', '/videos/{videoId}', (req) => {
    const info = sim.catalog.videoInfo(req.params.videoId!);
    return info ? json(info) : errorReply('not-found', 'Video not in the catalog.');
  });
  r.add('POST', '/videos/{videoId}', (req) => {
    const b = parseBody(VideoEditSchema, req.body);
    if (!b.ok) return b.reply;
    const info = sim.catalog.editVideo(req.params.videoId!, b.value);
    return info ? json(info) : errorReply('not-found', 'Video not in the catalog.');
  });

  r.add('GET', '/clock', () => json(clockState()));
  r.add('POST', '/clock', (req) => {
    const b = parseBody(ClockRequestSchema, req.body);
    if (!b.ok) return b.reply;
    if (b.value.speed !== undefined) sim.clock.setSpeed(b.value.speed);
    if (b.value.advanceMs !== undefined) sim.clock.advance(b.value.advanceMs);
    return json(clockState());
  });

  r.add('GET', '/faults', () => json(sim.faults()));
  r.add('POST', '/faults', (req) => {
    const b = parseBody(FaultsPatchSchema, req.body);
    return b.ok ? json(sim.setFaults(b.value)) : b.reply;
  });
  r.add('DELETE', '/faults', () => {
    sim.clearFaults();
    return json(sim.faults());
  });

  r.add('POST', '/script', (req) => {
    const b = parseBody(ScriptRequestSchema, req.body);
    if (!b.ok) return b.reply;
    return json({ pending: sim.script(b.value.steps) });
  });
  r.add('DELETE', '/script', () => {
    sim.clearScript();
    return json({ pending: 0 });
  });

  r.add('GET', '/stats', () => json(sim.stats()));
  r.add('POST', '/stats/reset', () => {
    sim.resetStats();
    return json(sim.stats());
  });

  r.add('GET', '/accounts/{key}', (req) => {
    const a = sim.getAccount(req.params.key!);
    return a ? json(a) : errorReply('not-found', 'No such account.');
  });
  r.add('PUT', '/accounts/{key}', (req) => {
    const b = parseBody(AccountPatchSchema, req.body);
    return b.ok ? json(sim.setAccount(req.params.key!, b.value)) : b.reply;
  });

  r.add('GET', '/sites', (req) => {
    const q = parseWith(OriginQuerySchema, req.query, 'query');
    if (!q.ok) return q.reply;
    return json({ urls: sim.web.siteUrls(new URL(q.value.origin).origin) });
  });
  r.add('POST', '/sites', (req) => {
    const b = parseBody(SiteEditSchema, req.body);
    if (!b.ok) return b.reply;
    const { origin, ...edit } = b.value;
    const out = sim.web.editSite(new URL(origin).origin, edit);
    return 'urls' in out
      ? json(out)
      : errorReply('invalid-request', `not a page of ${origin}: ${out.unknown.slice(0, 5).join(', ')}`);
  });

  r.add('GET', '/jobs', () => json(sim.jobSettings()));
  r.add('POST', '/jobs', (req) => {
    const b = parseBody(JobSettingsPatchSchema, req.body);
    return b.ok ? json(sim.setJobSettings(b.value)) : b.reply;
  });

  return r;
}
