/**
 * Which source a person means by `<id|ref>` in `sources edit|pause|resume|remove`: its ID, the
 * reference it was added with (`sources.ref`), its resolved external ID, a channel's @handle (any
 * case), or a URL that `sources add` would parse to one of those (a channel URL to its ID or
 * handle, a playlist URL to its list ID). Read from Postgres only: no API call, no credit, so a
 * handle is known by the channel record its source keeps, not asked for again.
 */
import { tryParseChannelRef, tryParsePlaylistId } from '../../api/ids.ts';
import type { Queryable } from '../../db/connection.ts';
import { sourcesMatching, type SourceMatch, type SourceRefKeys } from '../../db/sources.ts';

/** The largest source ID (an `integer` identity column). */
const SOURCE_ID_MAX = 2_147_483_647;

/** What `value` can be compared with: the forms the parsers of `sources add` read from it. */
export function sourceRefKeys(value: string): SourceRefKeys {
  const text = value.trim();
  const id = /^\d{1,10}$/.test(text) && Number(text) >= 1 && Number(text) <= SOURCE_ID_MAX ? Number(text) : null;
  const externalIds: string[] = [];
  let handle: string | null = null;
  const channel = tryParseChannelRef(text);
  if (channel?.kind === 'id') externalIds.push(channel.id);
  if (channel?.kind === 'handle') handle = channel.handle.slice(1);
  const playlist = tryParsePlaylistId(text);
  if (playlist !== undefined) externalIds.push(playlist);
  return { id, text, externalIds, handle };
}

/**
 * Every source `value` names (see sourcesMatching): one is the answer; none or several is for
 * the caller to report (with the candidates), never a guess: `remove` of the wrong one loses it.
 */
export async function findSourcesByRef(sql: Queryable, value: string): Promise<SourceMatch[]> {
  return sourcesMatching(sql, sourceRefKeys(value));
}
