/**
 * `videos`: any number of video IDs or URLs a person gave (arguments, or a file with one per
 * line). Parsed locally, all or nothing: a bad one is named with where it came from and nothing
 * is registered. The list is the source's `source_videos`; a sync reads it (free) and submits
 * what is due, in batches of BATCH_SIZE, like any other source.
 */
import { createHash } from 'node:crypto';
import { tryParseVideoId } from '../../api/ids.ts';
import { rememberedVideos } from '../../db/source-videos.ts';
import { refuseOptions, SourceSpecError, videoIdBatches, type SourceAdapter } from './adapter.ts';

/** How many bad references one error names (a file with thousands of bad lines stays readable). */
const BAD_REFS_SHOWN = 5;

function parseAll(refs: readonly { value: string; where: string }[]): string[] {
  const ids: string[] = [];
  const bad: string[] = [];
  for (const r of refs) {
    const id = tryParseVideoId(r.value);
    if (id === undefined) bad.push(`${r.where}: ${JSON.stringify(r.value)}`);
    else ids.push(id);
  }
  if (bad.length > 0) {
    const more = bad.length > BAD_REFS_SHOWN ? ` (and ${bad.length - BAD_REFS_SHOWN} more)` : '';
    throw new SourceSpecError(
      `not a video ID or video URL: ${bad.slice(0, BAD_REFS_SHOWN).join('; ')}${more}; ` +
        'expected an 11-character ID such as dQw4w9WgXcQ or a watch/shorts/youtu.be URL; nothing was registered',
    );
  }
  if (ids.length === 0)
    throw new SourceSpecError('a videos source needs at least one video ID or URL (arguments or --file)');
  return [...new Set(ids)];
}

export const videosAdapter: SourceAdapter = {
  kind: 'videos',

  parse(spec) {
    refuseOptions(spec, {});
    parseAll(spec.refs);
    return spec;
  },

  async resolve(_deps, spec) {
    const videoIds = parseAll(spec.refs);
    // the same set of IDs (in any order) is the same source
    const digest = createHash('sha256')
      .update([...videoIds].sort().join('\n'))
      .digest('hex')
      .slice(0, 16);
    const n = videoIds.length;
    return {
      ref: spec.origin ?? (n === 1 ? spec.refs[0]!.value : `${n} video IDs`),
      externalId: `videos:${digest}`,
      title: `${n} video${n === 1 ? '' : 's'}${spec.origin ? ` from ${spec.origin}` : ''}`,
      maxVideos: n,
      search: null,
      videoIds,
    };
  },

  async refresh() {
    // a list of IDs has no record of its own to keep current
  },

  async list({ sql }, source) {
    return { videoIds: await rememberedVideos(sql, source.id), credits: 0 };
  },

  buildBatches: videoIdBatches,
};
