/**
 * The four social platforms that `/metadata`, `/transcript` and `/extract` accept beside the
 * video platform. A URL belongs to one when a label of its host is the platform's published
 * identifier (`www.tiktok.com`) or the neutral stand-in the tests use (`clips.test`). Their posts
 * are synthetic: derived from the seed and the URL, the same on every read.
 */
import type { Media, Metadata } from '../api/schemas.ts';
import { hash32, rngFor, type Rng } from './prng.ts';
import { sentence, words } from './text.ts';

const SOCIAL_PLATFORMS = [
  { platform: 'tiktok', standIn: 'clips' },
  { platform: 'instagram', standIn: 'photos' },
  { platform: 'twitter', standIn: 'micro' },
  { platform: 'facebook', standIn: 'social' },
] as const;
export type SocialPlatform = (typeof SOCIAL_PLATFORMS)[number]['platform'];

/** Platforms that show no share count: `null` in `stats.shares` (the published document's example). */
const NO_SHARE_COUNT: ReadonlySet<SocialPlatform> = new Set(['instagram']);

const POST_TYPES = ['video', 'image', 'carousel', 'post'] as const;
const DAY_MS = 86_400_000;
/** Posts are spread over the two years before this instant. */
const POSTS_AS_OF_MS = Date.UTC(2025, 0, 1);

/**
 * The type a post's URL says it is, by the platforms' published URL forms (a TikTok or Facebook
 * `/video/`, an Instagram or Facebook `/reel/`, a `/photo/`); undefined: the URL does not say.
 */
function typeFromPath(url: URL): (typeof POST_TYPES)[number] | undefined {
  const path = url.pathname.toLowerCase();
  if (/\/(video|videos|reel|reels)\//.test(path)) return 'video';
  if (/\/(photo|photos)\//.test(path)) return 'image';
  return undefined;
}

/**
 * Whether a post's video has speech: about one in five has none (its transcript is `content: []`,
 * charged as any other). Deterministic per seed and URL.
 */
export function hasSpeech(seed: number, url: string): boolean {
  return hash32(`${seed}|speech|${url}`) % 5 !== 0;
}

/** The social platform of a URL, or undefined when it is none of the four. */
export function socialPlatformOf(url: URL): SocialPlatform | undefined {
  const labels = url.hostname.toLowerCase().split('.');
  // X's own host is Twitter's
  if (labels.length >= 2 && labels[labels.length - 2] === 'x') return 'twitter';
  return SOCIAL_PLATFORMS.find((p) => labels.includes(p.platform) || labels.includes(p.standIn))?.platform;
}

function mediaOf(r: Rng, type: (typeof POST_TYPES)[number], base: string, durationS: number): Media {
  switch (type) {
    case 'video':
      return { type: 'video', duration: durationS, thumbnailUrl: `${base}/thumb.jpg` };
    case 'image':
      return { type: 'image', url: `${base}/image.jpg` };
    case 'carousel': {
      const n = r.int(2, 5);
      const items: Array<Extract<Media, { type: 'carousel' }>['items'][number]> = [];
      for (let i = 0; i < n; i++) {
        items.push(
          r.chance(0.7)
            ? { type: 'image', url: `${base}/${i}.jpg` }
            : { type: 'video', duration: r.int(3, 60), thumbnailUrl: `${base}/${i}-thumb.jpg` },
        );
      }
      return { type: 'carousel', items };
    }
    case 'post':
      return { type: 'post' };
  }
}

/**
 * The Metadata of a post of a social platform; `durationS` is the length of its media when it
 * is a video (what a generated transcript or an extract of it is priced by).
 */
export function socialMetadata(seed: number, platform: SocialPlatform, url: URL, durationS: number): Metadata {
  const h = hash32(`${seed}|meta|${url.href}`);
  const r = rngFor(seed, 'social-post', url.href);
  const id = h.toString(36);
  const type = typeFromPath(url) ?? POST_TYPES[h % POST_TYPES.length]!;
  const base = `https://media.${url.hostname}/${id}`;
  const body: Metadata = {
    platform,
    type,
    id,
    url: url.href,
    title: h % 4 === 0 ? null : `Post ${id}`,
    description: h % 5 === 0 ? null : `Caption of post ${id} ✨`,
    author: { displayName: `User ${h % 1000}`, username: `user${h % 1000}`, verified: h % 11 === 0 },
    stats: {
      views: type === 'video' ? h % 100_000 : null,
      likes: h % 7 === 0 ? null : h % 10_000,
      comments: h % 500,
      shares: NO_SHARE_COUNT.has(platform) ? null : h % 300,
    },
    media: mediaOf(r, type, base, durationS),
    tags: words(r, 'en', r.int(0, 4))
      .split(' ')
      .filter((w) => w !== ''),
    createdAt: new Date(POSTS_AS_OF_MS - r.int(0, 730) * DAY_MS - r.int(0, DAY_MS - 1)).toISOString(),
  };
  if (r.chance(0.5)) body.additionalData = { language: 'en', caption: sentence(r, 'en', 3, 8) };
  return body;
}
