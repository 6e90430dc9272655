/**
 * The platform's resource endpoints: video, playlist, channel, their ID listings, transcripts,
 * translation and search, at the published prices (src/domain/prices.ts): 1 credit an accepted
 * answer, a translation per minute of transcript, a search per page of results.
 */
import {
  CHANNEL_VIDEOS_LIMIT_DEFAULT,
  ChannelVideosQuerySchema,
  IdQuerySchema,
  PLAYLIST_VIDEOS_LIMIT_DEFAULT,
  PlaylistVideosQuerySchema,
  SearchQuerySchema,
  TranscriptQuerySchema,
  TranslateQuerySchema,
  type SearchItem,
  type SearchResults,
  type Transcript,
  type TranslatedTranscript,
  type VideoIds,
} from '../api/schemas.ts';
import type { VideoFacts, VideoKind, VideoRef } from './catalog.ts';
import { PRICES, searchCredits, translationCredits } from '../domain/prices.ts';
import { creditsExhausted, notFound, parseWith, type ApiDeps, type ApiRequest, type Handler } from './handler.ts';
import { rngFor } from './prng.ts';
import { errorReply, json, type Reply } from './respond.ts';
import type { Router } from './router.ts';
import { captionText, LANGS, type Lang } from './text.ts';
import { chooseLang, shapeContent } from './transcripts.ts';

/** Answer `body` if the key can pay `credits` (1: a record, a listing, a native transcript). */
function paid(req: ApiRequest, body: unknown, status = 200, credits = 1): Reply {
  return req.charge(credits) ? json(body, status) : creditsExhausted();
}

/** How long a transcript runs, in seconds: to the end of its last chunk (chunk times are in ms). */
function transcriptSeconds(chunks: readonly { offset: number; duration: number }[]): number {
  return chunks.reduce((end, c) => Math.max(end, c.offset + c.duration), 0) / 1000;
}

/** The public video behind `ref`, or the 404/403 answer. */
export function publicVideo(deps: ApiDeps, idOrUrl: string): { ref: VideoRef; facts: VideoFacts } | { reply: Reply } {
  const ref = deps.catalog.findVideo(idOrUrl);
  if (!ref) return { reply: notFound('Video') };
  const facts = deps.catalog.facts(ref);
  if (facts.fate === 'gone') return { reply: notFound('Video') };
  if (facts.fate === 'private') {
    return { reply: errorReply('forbidden', 'The video is private.', `video ${facts.id} is private`) };
  }
  return { ref, facts };
}

/** A URL on the video platform's own host (`<platform>.com` or a subdomain of it). */
export function isPlatformHost(platform: string, url: URL): boolean {
  return url.hostname === `${platform}.com` || url.hostname.endsWith(`.${platform}.com`);
}

/** 206 with an Error body: a 2xx that still costs a credit. */
function transcriptUnavailable(req: ApiRequest, videoId: string): Reply {
  if (!req.charge(1)) return creditsExhausted();
  return errorReply(
    'transcript-unavailable',
    'No transcript is available for this video.',
    `video ${videoId} has no transcript`,
  );
}

const LANG_CODE_RE = /^[a-z]{2}(-[A-Za-z]{2,4})?$/;

function listing(
  ids: (kind: VideoKind, limit: number) => string[],
  limit: number,
  kinds: readonly VideoKind[],
): VideoIds {
  return {
    videoIds: kinds.includes('video') ? ids('video', limit) : [],
    shortIds: kinds.includes('short') ? ids('short', limit) : [],
    liveIds: kinds.includes('live') ? ids('live', limit) : [],
  };
}

function search(deps: ApiDeps, q: ReturnType<typeof SearchQuerySchema.parse>): SearchResults | Reply {
  const { catalog } = deps;
  const PAGE = 20;
  let offset = 0;
  if (q.nextPageToken !== undefined) {
    const m = /^p(\d+)$/.exec(Buffer.from(q.nextPageToken, 'base64url').toString('utf8'));
    if (!m) return errorReply('invalid-request', 'Invalid query: nextPageToken: not a token of this search');
    offset = Number(m[1]);
  }
  const total = 40 + rngFor(deps.seed, 'search-total', q.query).int(0, 460);
  const count = q.limit !== undefined ? Math.min(q.limit, total) : Math.max(0, Math.min(PAGE, total - offset));
  const wanted = q.type === 'video' || q.type === 'channel' || q.type === 'playlist' ? q.type : undefined;
  const results: SearchItem[] = [];
  for (let k = offset; k < offset + count; k++) {
    const r = rngFor(deps.seed, 'search', q.query, wanted ?? '', k);
    const roll = r.next();
    const type = wanted ?? (roll < 0.8 ? 'video' : roll < 0.9 ? 'channel' : 'playlist');
    if (type === 'channel') {
      const ch = catalog.channel(r.int(0, catalog.channelCount() - 1));
      const item: SearchItem = { type: 'channel', id: ch.id, title: ch.name, handle: ch.handle };
      if (ch.description) item.description = ch.description.slice(0, 160);
      if (ch.thumbnail) item.thumbnail = ch.thumbnail;
      if (ch.videoCount !== undefined) item.videoCount = ch.videoCount;
      results.push(item);
      continue;
    }
    if (type === 'playlist') {
      const info = catalog.channels()[r.int(0, catalog.channelCount() - 1)]!;
      const plId = info.playlistIds.length > 0 ? r.pick(info.playlistIds) : undefined;
      const pl = plId === undefined ? undefined : catalog.playlist(plId);
      if (pl) {
        results.push({ type: 'playlist', id: pl.id, title: pl.title, channel: pl.channel, videoCount: pl.videoCount });
        continue;
      }
    }
    let ref = catalog.randomVideo(r);
    for (let tries = 0; tries < 10 && catalog.facts(ref).fate !== 'public'; tries++) ref = catalog.randomVideo(r);
    const v = catalog.video(ref);
    const item: SearchItem = { type: 'video', id: v.id, title: v.title, duration: v.duration };
    if (v.description !== '') item.description = v.description.slice(0, 160);
    if (v.thumbnail !== undefined) item.thumbnail = v.thumbnail;
    if (typeof v.viewCount === 'number') item.viewCount = v.viewCount;
    if (typeof v.uploadDate === 'string') item.uploadDate = v.uploadDate;
    item.channel = { ...v.channel, thumbnail: `https://img.${deps.platform}.com/ch/${v.channel.id}/avatar.jpg` };
    results.push(item);
  }
  const out: SearchResults = { query: q.query, results, totalResults: total };
  if (q.limit === undefined && offset + count < total) {
    out.nextPageToken = Buffer.from(`p${offset + count}`, 'utf8').toString('base64url');
  }
  return out;
}

export function registerVideositeEndpoints(router: Router<Handler>, deps: ApiDeps): void {
  const { catalog } = deps;
  const p = `/${deps.platform}`;

  router.add('GET', `${p}/video`, (req) => {
    const q = parseWith(IdQuerySchema, req.query, 'query');
    if (!q.ok) return q.reply;
    const v = publicVideo(deps, q.value.id);
    if ('reply' in v) return v.reply;
    return paid(req, catalog.video(v.ref));
  });

  router.add('GET', `${p}/playlist`, (req) => {
    const q = parseWith(IdQuerySchema, req.query, 'query');
    if (!q.ok) return q.reply;
    const id = catalog.findPlaylist(q.value.id);
    const pl = id === undefined ? undefined : catalog.playlist(id);
    return pl ? paid(req, pl) : notFound('Playlist');
  });

  router.add('GET', `${p}/channel`, (req) => {
    const q = parseWith(IdQuerySchema, req.query, 'query');
    if (!q.ok) return q.reply;
    const c = catalog.findChannel(q.value.id);
    return c === undefined ? notFound('Channel') : paid(req, catalog.channel(c));
  });

  router.add('GET', `${p}/playlist/videos`, (req) => {
    const q = parseWith(PlaylistVideosQuerySchema, req.query, 'query');
    if (!q.ok) return q.reply;
    const id = catalog.findPlaylist(q.value.id);
    if (id === undefined) return notFound('Playlist');
    const ids = (kind: VideoKind, limit: number) => catalog.playlistVideoIds(id, kind, limit);
    return paid(req, listing(ids, q.value.limit ?? PLAYLIST_VIDEOS_LIMIT_DEFAULT, ['video', 'short', 'live']));
  });

  router.add('GET', `${p}/channel/videos`, (req) => {
    const q = parseWith(ChannelVideosQuerySchema, req.query, 'query');
    if (!q.ok) return q.reply;
    const c = catalog.findChannel(q.value.id);
    if (c === undefined) return notFound('Channel');
    const type = q.value.type ?? 'all';
    const kinds: VideoKind[] = type === 'all' ? ['video', 'short', 'live'] : [type];
    const ids = (kind: VideoKind, limit: number) => catalog.channelVideoIds(c, kind, limit);
    return paid(req, listing(ids, q.value.limit ?? CHANNEL_VIDEOS_LIMIT_DEFAULT, kinds));
  });

  router.add('GET', `${p}/transcript`, (req) => {
    const q = parseWith(TranscriptQuerySchema, req.query, 'query');
    if (!q.ok) return q.reply;
    const v = publicVideo(deps, q.value.videoId ?? q.value.url ?? '');
    if ('reply' in v) return v.reply;
    const lang = chooseLang(v.facts.transcriptLanguages, q.value.lang);
    if (lang === undefined) return transcriptUnavailable(req, v.facts.id);
    const body: Transcript = {
      content: shapeContent(catalog.transcriptChunks(v.ref, lang), q.value),
      lang,
      availableLangs: [...v.facts.transcriptLanguages],
    };
    return paid(req, body);
  });

  router.add('GET', `${p}/transcript/translate`, async (req) => {
    const q = parseWith(TranslateQuerySchema, req.query, 'query');
    if (!q.ok) return q.reply;
    if (!LANG_CODE_RE.test(q.value.lang)) {
      return errorReply('invalid-request', 'Invalid query: lang: expected an ISO 639-1 language code');
    }
    const v = publicVideo(deps, q.value.videoId ?? q.value.url ?? '');
    if ('reply' in v) return v.reply;
    // a translation takes its time (scriptable: PATCH the job settings' `translateMs`)
    const takes = deps.jobSettings().translateMs;
    if (takes > 0) await new Promise<void>((resolve) => setTimeout(resolve, takes));
    const source = v.facts.transcriptLanguages[0];
    if (source === undefined) return transcriptUnavailable(req, v.facts.id);
    const target = q.value.lang;
    let chunks = catalog.transcriptChunks(
      v.ref,
      v.facts.transcriptLanguages.includes(target as Lang) ? target : source,
    );
    if (!v.facts.transcriptLanguages.includes(target as Lang)) {
      // "translated": same timings, text in the target language's script
      const r = rngFor(deps.seed, 'translate', v.facts.id, target);
      const script: Lang = (LANGS as readonly string[]).includes(target) ? (target as Lang) : 'en';
      chunks = chunks.map((c) => ({
        ...c,
        text: captionText(r, script),
        ...(c.lang !== undefined ? { lang: target } : {}),
      }));
    }
    const body: TranslatedTranscript = { content: shapeContent(chunks, q.value), lang: target };
    // priced per started minute of the transcript (UPSTREAM.md, "Credits")
    return paid(req, body, 200, translationCredits(transcriptSeconds(chunks)));
  });

  router.add('GET', `${p}/search`, (req) => {
    const q = parseWith(SearchQuerySchema, req.query, 'query');
    if (!q.ok) return q.reply;
    const out = search(deps, q.value);
    // one credit a page; with `limit` the API pages for the caller and charges each page
    return 'kind' in out
      ? out
      : paid(req, out, 200, q.value.limit !== undefined ? searchCredits(out.results.length) : PRICES.searchPage);
  });
}
