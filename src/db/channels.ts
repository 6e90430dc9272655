/**
 * `channels` and `playlists`: the metadata records of channel and playlist sources, re-fetched
 * (1 credit each) when older than the caller's limit. `updated_at` moves only when the record
 * changed.
 */
import type { Channel, Playlist } from '../api/schemas.ts';
import type { Queryable } from './connection.ts';

/** Whether the record of `id` in `table` was fetched less than `maxAgeMs` ago. */
export async function isRecordFresh(
  sql: Queryable,
  table: 'channels' | 'playlists',
  id: string,
  maxAgeMs: number,
): Promise<boolean> {
  const [row] = await sql<{ fresh: boolean }[]>`
    select fetched_at > now() - make_interval(secs => ${maxAgeMs / 1000}) as fresh
    from ${sql(table)} where id = ${id}`;
  return row?.fresh === true;
}

export async function upsertChannel(sql: Queryable, c: Channel): Promise<void> {
  await sql`
    insert into channels (id, name, handle, description, subscriber_count, video_count, view_count,
      thumbnail, banner, raw, fetched_at, updated_at)
    values (${c.id}, ${c.name}, ${c.handle ?? null}, ${c.description ?? null}, ${c.subscriberCount ?? null},
      ${c.videoCount ?? null}, ${c.viewCount ?? null}, ${c.thumbnail ?? null}, ${c.banner ?? null},
      ${sql.json(c as never)}, now(), now())
    on conflict (id) do update set name = excluded.name, handle = excluded.handle,
      description = excluded.description, subscriber_count = excluded.subscriber_count,
      video_count = excluded.video_count, view_count = excluded.view_count,
      thumbnail = excluded.thumbnail, banner = excluded.banner, raw = excluded.raw,
      fetched_at = now(),
      updated_at = case when channels.raw is distinct from excluded.raw then now() else channels.updated_at end`;
}

export async function upsertPlaylist(sql: Queryable, p: Playlist): Promise<void> {
  await sql`
    insert into playlists (id, title, description, video_count, view_count, last_updated,
      channel_id, channel_name, raw, fetched_at, updated_at)
    values (${p.id}, ${p.title}, ${p.description ?? null}, ${p.videoCount}, ${p.viewCount ?? null},
      ${p.lastUpdated ?? null}, ${p.channel.id}, ${p.channel.name}, ${sql.json(p as never)}, now(), now())
    on conflict (id) do update set title = excluded.title, description = excluded.description,
      video_count = excluded.video_count, view_count = excluded.view_count,
      last_updated = excluded.last_updated, channel_id = excluded.channel_id,
      channel_name = excluded.channel_name, raw = excluded.raw, fetched_at = now(),
      updated_at = case when playlists.raw is distinct from excluded.raw then now() else playlists.updated_at end`;
}
