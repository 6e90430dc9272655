/**
 * `media`: any number of media URLs a person gave (arguments, or a file with one per line): the
 * video platform's, the four social platforms' (TikTok, Instagram, X/Twitter, Facebook), or
 * public media file URLs. Parsed locally, all or nothing.
 *
 * A video-platform URL is a video: its ID is remembered in `source_videos` and bought by the
 * scheduler's `videoIds` batches like a `videos` source's (stored in `videos`/`transcripts`, once
 * whichever source lists it). Every other URL is a media item, remembered in `source_media` and
 * bought by the media sync (src/pipeline/ingest/sync-media.ts): `/metadata`, then for a video the
 * universal `/transcript` with the source's `--mode` (`auto` and `generate` need
 * `--max-generate-minutes`, the minutes budget `--generate-missing` takes; with them the source's
 * video-platform videos without captions get a generated transcript too, as `--generate-missing`).
 */
import { createHash } from 'node:crypto';
import { tryParseVideoId } from '../../api/ids.ts';
import { rememberedVideos } from '../../db/source-videos.ts';
import { MEDIA_MODE_DEFAULT, MEDIA_MODES, mediaPlatformOf, modeGenerates } from '../../domain/media.ts';
import { MEDIA_DOCUMENTS } from '../ingest/sync-media.ts';
import {
  refuseOptions,
  SourceSpecError,
  videoIdBatches,
  type SourceAdapter,
  type SourceRef,
  type SourceSpec,
} from './adapter.ts';

/** How many bad references one error names. */
const BAD_REFS_SHOWN = 5;

/** A media URL without its fragment, or undefined when it is not an http(s) URL of a platform or a media file. */
function mediaUrl(value: string): string | undefined {
  let u: URL;
  try {
    u = new URL(value.trim());
  } catch {
    return undefined;
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.username !== '' || u.password !== '') return undefined;
  u.hash = '';
  return mediaPlatformOf(u) === undefined ? undefined : u.href;
}

/** The list split: video-platform video IDs, and the other media URLs. */
export function parseMediaRefs(refs: readonly SourceRef[]): { videoIds: string[]; urls: string[] } {
  const videoIds: string[] = [];
  const urls: string[] = [];
  const bad: string[] = [];
  for (const r of refs) {
    // a social platform's or a media file's URL first: the video URL shapes do not look at the host
    const url = mediaUrl(r.value);
    if (url !== undefined) {
      urls.push(url);
      continue;
    }
    const id = tryParseVideoId(r.value);
    if (id !== undefined) videoIds.push(id);
    else bad.push(`${r.where}: ${JSON.stringify(r.value)}`);
  }
  if (bad.length > 0) {
    const more = bad.length > BAD_REFS_SHOWN ? ` (and ${bad.length - BAD_REFS_SHOWN} more)` : '';
    throw new SourceSpecError(
      `not a media URL: ${bad.slice(0, BAD_REFS_SHOWN).join('; ')}${more}; ` +
        'expected a URL of the video platform, TikTok, Instagram, X/Twitter or Facebook, or of a media file ' +
        '(such as https://www.tiktok.com/@user/video/1234567890 or https://example.com/talk.mp3); nothing was registered',
    );
  }
  if (videoIds.length + urls.length === 0)
    throw new SourceSpecError('a media source needs at least one media URL (arguments or --file)');
  return { videoIds: [...new Set(videoIds)], urls: [...new Set(urls)] };
}

export const mediaAdapter: SourceAdapter = {
  kind: 'media',

  parse(spec): SourceSpec {
    if (spec.generateMissing)
      throw new SourceSpecError('--generate-missing does not apply to a media source: use --mode auto (or generate)');
    const mode = spec.mediaMode ?? MEDIA_MODE_DEFAULT;
    if (!(MEDIA_MODES as readonly string[]).includes(mode))
      throw new SourceSpecError(`--mode ${mode}: expected one of ${MEDIA_MODES.join(', ')}`);
    if (modeGenerates(mode) && spec.maxGenerateMinutes === null)
      throw new SourceSpecError(
        `--mode ${mode} may buy generated transcripts (2 credits per started minute): it needs --max-generate-minutes N, the most media minutes this source may have generated`,
      );
    if (!modeGenerates(mode) && spec.maxGenerateMinutes !== null)
      throw new SourceSpecError('--max-generate-minutes needs --mode auto or --mode generate');
    // `auto`/`generate`: the source's videos without captions are generated too, within the same budget
    const parsed: SourceSpec = { ...spec, mediaMode: mode, generateMissing: modeGenerates(mode) };
    refuseOptions(parsed, {});
    parseMediaRefs(spec.refs);
    return parsed;
  },

  async resolve(_deps, spec) {
    const { videoIds, urls } = parseMediaRefs(spec.refs);
    // the same set of URLs (in any order) is the same source
    const digest = createHash('sha256')
      .update([...videoIds, ...urls].sort().join('\n'))
      .digest('hex')
      .slice(0, 16);
    const n = videoIds.length + urls.length;
    return {
      ref: spec.origin ?? (n === 1 ? spec.refs[0]!.value : `${n} media`),
      externalId: `media:${digest}`,
      title: `${n} media${spec.origin ? ` from ${spec.origin}` : ''}`,
      maxVideos: n,
      search: null,
      videoIds,
      mediaUrls: urls,
    };
  },

  async refresh() {
    // a list of media has no record of its own
  },

  async list({ sql }, source) {
    return { videoIds: await rememberedVideos(sql, source.id), credits: 0 };
  },

  buildBatches: videoIdBatches,
  documents: MEDIA_DOCUMENTS,
};
