/** What the channel and playlist adapters share: reading an ID listing and the `--limit` default. */
import { LIMIT_MAX, type VideoIds } from '../../api/schemas.ts';
import type { SourceInclude } from '../../domain/sources.ts';
import { SourceSpecError, type SourceRef, type SourceSpec } from './adapter.ts';

/** `--limit` of a channel or playlist when not given: the most one listing returns. */
export const LISTING_LIMIT_DEFAULT = LIMIT_MAX;

/** Regular IDs, then the included shorts and live IDs; each once, in listing order. */
export function listedIds(listing: VideoIds, include: readonly SourceInclude[]): string[] {
  // concat, not push(...ids): the upstream decides how long a listing is
  const ids = listing.videoIds.concat(
    include.includes('shorts') ? listing.shortIds : [],
    include.includes('live') ? listing.liveIds : [],
  );
  return [...new Set(ids)];
}

export function onlyRef(spec: SourceSpec): SourceRef {
  if (spec.refs.length !== 1) {
    throw new SourceSpecError(`a ${spec.kind} source takes exactly one reference, got ${spec.refs.length}`);
  }
  return spec.refs[0]!;
}

export function sourceLimit(spec: SourceSpec): number {
  return spec.limit ?? LISTING_LIMIT_DEFAULT;
}
