/**
 * `playlist`: a playlist ID or URL. Each sync lists the playlist (1 credit; at most its newest
 * 5000) and, with `--include`, its shorts and live streams, which a playlist batch would skip.
 */
import { ApiError } from '../../api/errors.ts';
import { parsePlaylistId } from '../../api/ids.ts';
import { isRecordFresh, upsertPlaylist } from '../../db/channels.ts';
import { PRICES } from '../../domain/prices.ts';
import { rememberVideos } from '../../db/source-videos.ts';
import { SOURCE_METADATA_REFRESH_MS } from '../../domain/sources.ts';
import { refuseOptions, SourceNotFoundUpstreamError, videoIdBatches, type SourceAdapter } from './adapter.ts';
import { listedIds, onlyRef, sourceLimit } from './listing.ts';

export const playlistAdapter: SourceAdapter = {
  kind: 'playlist',

  parse(spec) {
    refuseOptions(spec, { include: true, limit: true });
    const ref = onlyRef(spec);
    parsePlaylistId(ref.value, ref.where);
    return spec;
  },

  async resolve({ sql, api }, spec) {
    const ref = onlyRef(spec);
    try {
      const p = await api.getPlaylist({ id: parsePlaylistId(ref.value, ref.where) });
      await upsertPlaylist(sql, p);
      return {
        ref: ref.value,
        externalId: p.id,
        title: p.title,
        maxVideos: sourceLimit(spec),
        search: null,
        videoIds: [],
      };
    } catch (e: unknown) {
      if (e instanceof ApiError && e.code === 'not-found') throw new SourceNotFoundUpstreamError('playlist', ref.value);
      throw e;
    }
  },

  async refresh({ sql, api }, source, o) {
    if (await isRecordFresh(sql, 'playlists', source.externalId, SOURCE_METADATA_REFRESH_MS)) return;
    await upsertPlaylist(
      sql,
      await api.getPlaylist({ id: source.externalId }, { expectedCredits: PRICES.record, signal: o?.signal }),
    );
  },

  async list({ sql, api }, source, o) {
    const listing = await api.getPlaylistVideos(
      { id: source.externalId, limit: source.maxVideos },
      { expectedCredits: PRICES.listing, signal: o?.signal },
    );
    const videoIds = listedIds(listing, source.include);
    await rememberVideos(sql, source.id, videoIds);
    return { videoIds, credits: PRICES.listing };
  },

  buildBatches: videoIdBatches,
};
