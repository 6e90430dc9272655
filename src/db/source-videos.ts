/**
 * `source_videos`: which videos belong to which source, from its listings and from its batches'
 * results. A source keeps every video it ever listed.
 */
import type { Queryable } from './connection.ts';

/** The videos arrived in a batch of the source: members from now on (known ones unchanged). */
export async function addSourceVideos(sql: Queryable, sourceId: number, videoIds: readonly string[]): Promise<void> {
  if (videoIds.length === 0) return;
  await sql`
    insert into source_videos (source_id, video_id)
    select ${sourceId}, v from unnest(${[...videoIds]}::text[]) as v
    on conflict do nothing`;
}

/** Rows per statement when remembering a long list (a `videos` source of any size). */
const REMEMBER_CHUNK_IDS = 10_000;

/**
 * Remember `videoIds` as the source's (kept when they fall out of a listing: a listing returns at
 * most a channel's newest 5000, so this is what keeps the whole channel). `listed`: this sync's
 * listing named them now.
 */
export async function rememberVideos(
  sql: Queryable,
  sourceId: number,
  videoIds: readonly string[],
  listed = true,
): Promise<void> {
  for (let i = 0; i < videoIds.length; i += REMEMBER_CHUNK_IDS) {
    const chunk = videoIds.slice(i, i + REMEMBER_CHUNK_IDS);
    await sql`
      insert into source_videos (source_id, video_id, last_listed_at)
      select ${sourceId}, v, case when ${listed} then now() end from unnest(${chunk as string[]}::text[]) as v
      on conflict (source_id, video_id) do update
        set last_listed_at = case when ${listed} then now() else source_videos.last_listed_at end`;
  }
}

/** Every video the source ever listed or was given, oldest first (ties by ID). */
export async function rememberedVideos(sql: Queryable, sourceId: number): Promise<string[]> {
  const rows = await sql<{ video_id: string }[]>`
    select video_id from source_videos where source_id = ${sourceId} order by first_seen_at, video_id`;
  return rows.map((r) => r.video_id);
}
