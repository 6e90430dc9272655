/**
 * The naive baseline: what a user writes with the SDK in an afternoon. List each channel's
 * videos, then for each video in turn fetch its metadata and its transcript with the
 * single-video endpoints, and write each row with its own INSERT ... ON CONFLICT (autocommit,
 * one connection). Nothing tuned, nothing parallel; a video the API refuses is skipped.
 *
 * It is slow by nature, so it runs on a sample; the credits of the full W1 set are the
 * measured listings plus the measured credits per video times the W1 video count.
 */
import postgres from 'postgres';
import { createApiClient } from '../src/api/client.ts';
import { ApiError } from '../src/api/errors.ts';
import { transcriptRowFromApi } from '../src/db/transcripts.ts';
import { videoRowFromApi } from '../src/db/videos.ts';
import type { Simulator } from '../src/simulator/server.ts';
import { requestDiff, type RequestCounts } from './workload.ts';

export interface NaiveFigures {
  /** videos fetched one by one */
  sample: number;
  channels: number;
  /** the per-video loop, s (the listings are timed apart) */
  wallS: number;
  listingS: number;
  videosPerS: number;
  rows: { videos: number; transcripts: number; total: number };
  rowsPerS: number;
  transcriptMb: number;
  transcriptMbPerS: number;
  apiRequests: RequestCounts;
  /** credits of the listings */
  listingCredits: number;
  /** credits of the per-video calls */
  videoCredits: number;
  creditsPerVideo: number;
  skipped: { video: number; transcript: number };
}

const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

export async function runNaive(opts: {
  sim: Simulator;
  dbUrl: string;
  channelIds: string[];
  /** what the listing asks for (the W1 limit) */
  listLimit: number;
  sample: number;
  lang: string;
}): Promise<NaiveFigures> {
  const { sim } = opts;
  const api = createApiClient({ baseUrl: sim.baseUrl, apiKey: sim.apiKey, platform: sim.platform });
  const sql = postgres(opts.dbUrl, { max: 1, onnotice: () => {} });
  try {
    const statsBefore = sim.stats();
    const used0 = (await api.me()).usedCredits;

    // the listings: one per channel, as the user's script starts
    const t0 = performance.now();
    const perChannel = Math.ceil(opts.sample / opts.channelIds.length);
    const ids: string[] = [];
    for (const id of opts.channelIds) {
      const listed = await api.getChannelVideos({ id, limit: opts.listLimit, type: 'video' });
      ids.push(...listed.videoIds.slice(0, perChannel));
    }
    const sample = ids.slice(0, opts.sample);
    const listingS = (performance.now() - t0) / 1000;
    const used1 = (await api.me()).usedCredits;

    const skipped = { video: 0, transcript: 0 };
    let videoRows = 0;
    let transcriptRows = 0;
    const t1 = performance.now();
    for (const id of sample) {
      let video;
      try {
        video = await api.getVideo({ id });
      } catch (e: unknown) {
        if (e instanceof ApiError && (e.code === 'not-found' || e.code === 'forbidden')) {
          skipped.video++;
          continue;
        }
        throw e;
      }
      const v = videoRowFromApi(video, 'naive');
      await sql`
        insert into videos (id, title, description, duration_s, channel_id, channel_name, tags, thumbnail,
          upload_date, view_count, like_count, transcript_languages)
        values (${v.id}, ${v.title}, ${v.description}, ${v.durationS}, ${v.channelId}, ${v.channelName},
          ${v.tags}::text[], ${v.thumbnail}, ${v.uploadDate}::timestamptz, ${v.viewCount}, ${v.likeCount},
          ${v.transcriptLanguages}::text[])
        on conflict (id) do update set title = excluded.title, description = excluded.description,
          duration_s = excluded.duration_s, channel_id = excluded.channel_id, channel_name = excluded.channel_name,
          tags = excluded.tags, thumbnail = excluded.thumbnail, upload_date = excluded.upload_date,
          view_count = excluded.view_count, like_count = excluded.like_count,
          transcript_languages = excluded.transcript_languages, updated_at = now()`;
      videoRows++;

      let transcript;
      try {
        transcript = await api.getTranscript({ videoId: id, lang: opts.lang });
      } catch (e: unknown) {
        if (e instanceof ApiError && e.code === 'transcript-unavailable') {
          skipped.transcript++;
          continue;
        }
        throw e;
      }
      const t = transcriptRowFromApi(id, transcript, 'naive');
      const chunksJson = t.chunks === null ? null : JSON.stringify(t.chunks);
      await sql`
        insert into transcripts (video_id, lang, text, chunks, available_langs, content_sha256, text_only)
        values (${t.videoId}, ${t.lang}, ${t.text}, ${chunksJson}::jsonb, ${t.availableLangs}::text[],
          ${t.contentSha256}, ${t.textOnly})
        on conflict (video_id, lang) do update set text = excluded.text, chunks = excluded.chunks,
          available_langs = excluded.available_langs, content_sha256 = excluded.content_sha256,
          text_only = excluded.text_only, updated_at = now()`;
      transcriptRows++;
    }
    const wallS = (performance.now() - t1) / 1000;
    const used2 = (await api.me()).usedCredits;
    const statsAfter = sim.stats();
    // measured like the workloads: the stored chunks' JSON text
    const [size] = await sql<{ bytes: number }[]>`
      select coalesce(sum(coalesce(octet_length(chunks::text), octet_length(text))), 0)::float8 as bytes from transcripts`;
    const transcriptBytes = size!.bytes;
    const rowsTotal = videoRows + transcriptRows;
    return {
      sample: sample.length,
      channels: opts.channelIds.length,
      wallS: round(wallS),
      listingS: round(listingS),
      videosPerS: round(sample.length / wallS),
      rows: { videos: videoRows, transcripts: transcriptRows, total: rowsTotal },
      rowsPerS: round(rowsTotal / wallS),
      transcriptMb: round(transcriptBytes / 1e6),
      transcriptMbPerS: round(transcriptBytes / 1e6 / wallS),
      apiRequests: requestDiff(statsBefore, statsAfter),
      listingCredits: used1 - used0,
      videoCredits: used2 - used1,
      creditsPerVideo: round((used2 - used1) / sample.length, 3),
      skipped,
    };
  } finally {
    await sql.end({ timeout: 5 });
    await api.close();
  }
}
