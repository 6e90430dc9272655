/**
 * The adapter of each source kind. A `Record` over SOURCE_KINDS: a kind added to
 * src/domain/sources.ts without an adapter here fails to compile.
 */
import type { SourceKind } from '../../domain/sources.ts';
import type { SourceAdapter } from './adapter.ts';
import { channelAdapter } from './channel.ts';
import { mediaAdapter } from './media.ts';
import { playlistAdapter } from './playlist.ts';
import { searchAdapter } from './search.ts';
import { videosAdapter } from './videos.ts';
import { pagesAdapter, websiteAdapter } from './web.ts';

export const SOURCE_ADAPTERS: Record<SourceKind, SourceAdapter> = {
  playlist: playlistAdapter,
  channel: channelAdapter,
  videos: videosAdapter,
  search: searchAdapter,
  website: websiteAdapter,
  pages: pagesAdapter,
  media: mediaAdapter,
};

export function adapterFor(kind: SourceKind): SourceAdapter {
  return SOURCE_ADAPTERS[kind];
}
