/**
 * `channel`: a channel ID, @handle or channel URL, resolved to the channel ID. Each sync lists the
 * channel's newest videos (1 credit; at most 5000: `source_videos` keeps every one ever listed)
 * and, with `--include`, its shorts and live streams, which a channel batch would skip.
 */
import { ApiError } from '../../api/errors.ts';
import { parseChannelRef } from '../../api/ids.ts';
import { isRecordFresh, upsertChannel } from '../../db/channels.ts';
import { PRICES } from '../../domain/prices.ts';
import { rememberVideos } from '../../db/source-videos.ts';
import type { Source } from '../../db/schema.ts';
import { SOURCE_METADATA_REFRESH_MS } from '../../domain/sources.ts';
import { refuseOptions, SourceNotFoundUpstreamError, videoIdBatches, type SourceAdapter } from './adapter.ts';
import { listedIds, onlyRef, sourceLimit } from './listing.ts';

export const channelAdapter: SourceAdapter = {
  kind: 'channel',

  parse(spec) {
    refuseOptions(spec, { include: true, limit: true });
    const ref = onlyRef(spec);
    parseChannelRef(ref.value, ref.where);
    return spec;
  },

  async resolve({ sql, api }, spec) {
    const ref = onlyRef(spec);
    try {
      const c = await api.getChannel({ id: parseChannelRef(ref.value, ref.where).canonical });
      await upsertChannel(sql, c);
      return {
        ref: ref.value,
        externalId: c.id,
        title: c.name,
        maxVideos: sourceLimit(spec),
        search: null,
        videoIds: [],
      };
    } catch (e: unknown) {
      if (e instanceof ApiError && e.code === 'not-found') throw new SourceNotFoundUpstreamError('channel', ref.value);
      throw e;
    }
  },

  async refresh({ sql, api }, source: Source, o) {
    if (await isRecordFresh(sql, 'channels', source.externalId, SOURCE_METADATA_REFRESH_MS)) return;
    await upsertChannel(
      sql,
      await api.getChannel({ id: source.externalId }, { expectedCredits: PRICES.record, signal: o?.signal }),
    );
  },

  async list({ sql, api }, source, o) {
    const listing = await api.getChannelVideos(
      {
        id: source.externalId,
        limit: source.maxVideos,
        type: source.include.length > 0 ? 'all' : 'video',
      },
      { expectedCredits: PRICES.listing, signal: o?.signal },
    );
    const videoIds = listedIds(listing, source.include);
    await rememberVideos(sql, source.id, videoIds);
    return { videoIds, credits: PRICES.listing };
  },

  buildBatches: videoIdBatches,
};
