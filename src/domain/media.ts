/**
 * Media of every platform (a `media` source): which platform a media URL belongs to, the
 * transcript modes a source may ask for, what a media item's purchase costs before it is bought,
 * and what its transcript state means. Pure: no I/O.
 *
 * A URL of the video platform is a video (bought through `videoIds` batches like any listed
 * video, stored in `videos`/`transcripts`: once whichever source lists it); a URL of one of the
 * four social platforms, or a public media file URL, is a media item (`media`): `/metadata`
 * (1 credit), then, for a video, the universal `/transcript` with the source's mode.
 */
import { TRANSCRIPT_MODES } from '../api/enums.ts';
import { generateCredits, PRICES, startedMinutes } from './prices.ts';

/** The four social platforms by their published identifiers, and the neutral hosts the tests use for them. */
export const SOCIAL_PLATFORMS = [
  { platform: 'tiktok', hosts: ['tiktok'], standIn: 'clips' },
  { platform: 'instagram', hosts: ['instagram'], standIn: 'photos' },
  { platform: 'twitter', hosts: ['twitter', 'x'], standIn: 'micro' },
  { platform: 'facebook', hosts: ['facebook', 'fb'], standIn: 'social' },
] as const;
export type SocialPlatform = (typeof SOCIAL_PLATFORMS)[number]['platform'];

/** What a media item's `platform` column holds: a social platform, or `file` for a public media file URL. */
export type MediaPlatform = SocialPlatform | 'file';

/** Every value of a media item's `platform` column. */
export const MEDIA_PLATFORMS: readonly MediaPlatform[] = [...SOCIAL_PLATFORMS.map((p) => p.platform), 'file'];

/** File name endings of a public media file URL (audio or video). */
const MEDIA_FILE_EXTENSIONS = ['mp4', 'mov', 'webm', 'mkv', 'm4v', 'mp3', 'm4a', 'wav', 'ogg', 'opus', 'flac', 'aac'];

/** The social platform of a URL (a host label is its identifier or its stand-in), or undefined. */
export function socialPlatformOf(url: URL): SocialPlatform | undefined {
  const labels = url.hostname.toLowerCase().split('.');
  // `x.com`: the label must be the registrable name, not any `x` label
  const name = labels.length >= 2 ? labels[labels.length - 2]! : labels[0]!;
  return SOCIAL_PLATFORMS.find(
    (p) => (p.hosts as readonly string[]).includes(name) || labels.includes(p.platform) || labels.includes(p.standIn),
  )?.platform;
}

/** Whether a URL names a media file (its path ends in an audio or video file name). */
export function isMediaFileUrl(url: URL): boolean {
  const ext = /\.([a-z0-9]{2,5})$/i.exec(url.pathname)?.[1]?.toLowerCase();
  return ext !== undefined && MEDIA_FILE_EXTENSIONS.includes(ext);
}

/** The platform of a media URL that is not the video platform's; undefined: not a media URL we take. */
export function mediaPlatformOf(url: URL): MediaPlatform | undefined {
  return socialPlatformOf(url) ?? (isMediaFileUrl(url) ? 'file' : undefined);
}

/** `--mode` of a media source: `native` (captions only), `auto` (captions, else generated), `generate`. */
export const MEDIA_MODES = TRANSCRIPT_MODES;
export type MediaMode = (typeof MEDIA_MODES)[number];
export const MEDIA_MODE_DEFAULT: MediaMode = 'native';

/** Modes that may buy a generated transcript (2 credits per started minute): they need a minutes budget. */
export function modeGenerates(mode: MediaMode): boolean {
  return mode !== 'native';
}

/**
 * What a media item's transcript is: `none` (an image, a carousel or a post: metadata only, no
 * transcript bought), `pending` (its job in flight), `stored` (with content), `empty` (no speech:
 * `content: []`, charged and not bought again), `failed` (refused for this media: not bought
 * again), `expired` (its job's result was gone after its hour; bought again within the retry cap),
 * `over-budget` (the source's minutes budget left it out), `retry` (a failure a later sync
 * retries within the cap).
 */
export const MEDIA_TRANSCRIPT_STATES = [
  'none',
  'pending',
  'stored',
  'empty',
  'failed',
  'expired',
  'over-budget',
  'retry',
] as const;
export type MediaTranscriptState = (typeof MEDIA_TRANSCRIPT_STATES)[number];

/** States a later sync buys the transcript again from (within the retry cap). */
export const MEDIA_TRANSCRIPT_RETRY_STATES: readonly MediaTranscriptState[] = ['expired', 'retry', 'over-budget'];

/** States `status` counts as a transcript not stored (failed, or to buy again). */
export const MEDIA_TRANSCRIPT_UNSTORED_STATES: readonly MediaTranscriptState[] = [
  'failed',
  ...MEDIA_TRANSCRIPT_RETRY_STATES,
];

/** Media types that have speech to transcribe: a video (a carousel's videos are not transcribed). */
export function hasTranscript(type: string): boolean {
  return type === 'video';
}

/** The price of one media item's metadata. */
export const MEDIA_METADATA_CREDITS = PRICES.metadata;

/**
 * What one transcript of a media item costs at the published prices: 1 for `native`; for `auto`
 * and `generate`, the generated price of its duration (2 per started minute; `auto` may cost
 * less, when captions exist, and is estimated at the most).
 */
export function mediaTranscriptCredits(mode: MediaMode, durationS: number | null): number {
  if (mode === 'native') return PRICES.nativeTranscript;
  return generateCredits(durationS ?? 0);
}

/** The started minutes a generated transcript of the media counts against the source's budget (0 in `native`). */
export function mediaBudgetMinutes(mode: MediaMode, durationS: number | null): number {
  return modeGenerates(mode) ? startedMinutes(durationS ?? 0) : 0;
}

/**
 * The link that opens a media item at `seconds`: a media file's URL with a Media Fragments
 * `#t=` (browsers seek a media file to it); a social platform's post URL as it is, since none of
 * the four takes a start time in a post's URL. Unknown moment, a URL with a fragment already, or
 * one that does not parse: the URL as it is.
 */
export function mediaMomentUrl(url: string, seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) return url;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return url;
  }
  if (u.hash !== '' || mediaPlatformOf(u) !== 'file') return url;
  return `${url}#t=${Math.max(0, Math.floor(seconds))}`;
}
