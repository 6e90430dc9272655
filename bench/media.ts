/**
 * The media workload: one `media` source of `items` URLs of the four social platforms (1 000 at
 * scale 1), run as a user runs it (a daemon with poller and sink already running, then
 * `backfill --source`): each item's metadata read and stored, then each video's native transcript
 * bought as a transcript job (202) and landed by the poller. Figures: items stored per second
 * over the backfill, how long after its job ended upstream the last transcript was stored (land
 * lag), every item stored once (one `media.added` each), the credits /me charged against the
 * published prices (1 per item + 1 per video), and each process's peak RSS.
 */
import { registerSource } from '../src/pipeline/commands/sources.ts';
import type { BenchEnv } from './setup.ts';
import { runWorkload, type WorkloadFigures } from './workload.ts';

/** Simulated ms a transcript job stays active. */
export const MEDIA_JOB_MS = 500;
const HOSTS = [
  (n: number) => `https://www.tiktok.com/@bench/video/${n}`,
  (n: number) => `https://www.instagram.com/reel/B${n}`,
  (n: number) => `https://twitter.com/bench/status/${n}`,
  (n: number) => `https://www.facebook.com/i/videos/${n}`,
];

export interface MediaFigures {
  workload: WorkloadFigures;
  items: number;
  /** `media` rows of the source */
  stored: number;
  videos: number;
  /** transcripts stored, or recorded empty (no speech) */
  transcripts: number;
  addedEvents: number;
  itemsPerS: number;
  /** from the last transcript job's end upstream to the last transcript stored, s */
  landLagS: number;
  /** the published prices: 1 per item, 1 per video's native transcript */
  expectedCredits: number;
  credits: number;
}

const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

export async function runMediaWorkload(env: BenchEnv, items: number): Promise<MediaFigures> {
  env.sim.setJobSettings({ transcriptJobMs: MEDIA_JOB_MS });
  const urls = Array.from({ length: items }, (_, i) => HOSTS[i % HOSTS.length]!(100_000 + i));
  const videos = urls.filter((u) => env.sim.media.metadata(u)?.type === 'video').length;
  const source = await registerSource(
    { sql: env.db.sql, api: env.api },
    {
      kind: 'media',
      refs: urls.map((value, i) => ({ value, where: `item ${i + 1}` })),
      langs: [],
      textOnly: false,
      cron: null,
    },
  );
  const workload = await runWorkload(env, 'media', [source.id]);
  const [r] = await env.db.sql<
    { stored: number; transcripts: number; added: number; lastJobEndMs: number | null; lastStoredMs: number | null }[]
  >`
    select
      (select count(*)::int from source_media sm join media m using (url) where sm.source_id = ${source.id}) as stored,
      (select count(*)::int from source_media sm join media m using (url)
        where sm.source_id = ${source.id} and m.transcript_state in ('stored', 'empty')) as transcripts,
      (select count(*)::int from events where type = 'media.added' and source_id = ${source.id}) as added,
      (select extract(epoch from max(submitted_at)) * 1000 from batches
        where source_id = ${source.id} and kind = 'media' and mode = 'generate')::float8 as "lastJobEndMs",
      (select extract(epoch from max(transcript_at)) * 1000 from media m join source_media sm using (url)
        where sm.source_id = ${source.id})::float8 as "lastStoredMs"`;
  const jobEnd = (r!.lastJobEndMs ?? 0) + MEDIA_JOB_MS + 100;
  return {
    workload,
    items,
    stored: r!.stored,
    videos,
    transcripts: r!.transcripts,
    addedEvents: r!.added,
    itemsPerS: round(r!.stored / Math.max(0.001, workload.wallS), 1),
    landLagS: round(Math.max(0, ((r!.lastStoredMs ?? jobEnd) - jobEnd) / 1000)),
    expectedCredits: items + videos,
    credits: workload.credits,
  };
}

export function renderMedia(m: MediaFigures): string {
  const w = m.workload;
  return (
    `Media: ${m.items} items on 4 platforms (${m.videos} videos), backfill ${w.wallS} s; ${m.stored} stored (${m.addedEvents} media.added), ` +
    `${m.transcripts} transcripts (stored or empty) = ${m.itemsPerS} items/s; land lag ${m.landLagS} s after the last job ended; ` +
    `credits ${m.credits} (published prices ${m.expectedCredits}); peak RSS daemon ${w.peakRssMb.daemon} MB / backfill ${w.peakRssMb.backfill} MB\n`
  );
}
