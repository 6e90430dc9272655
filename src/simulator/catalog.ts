/**
 * The synthetic catalog: channels (with handles and custom names), their regular videos, shorts
 * and live streams, playlists, and transcripts, all derived from the seed.
 *
 * Only the index is stored eagerly (video ID -> channel, kind, position); metadata and transcripts
 * are generated on demand from per-entity random streams, so a 5000-video channel with 150-chunk
 * transcripts costs a few hundred kilobytes, and generating a video twice gives the same bytes.
 */
import type { Channel, Playlist, TranscriptChunk, Video } from '../api/schemas.ts';
import { parseChannelRef, parsePlaylistRef, parseVideoRef } from './ids.ts';
import { rngFor, type Rng } from './prng.ts';
import * as text from './text.ts';
import { LANGS, type Lang } from './text.ts';
import type { CatalogSettings } from './options.ts';

/** The catalog settings (options.ts) plus the seed and the platform segment used in URLs. */
export type CatalogOptions = CatalogSettings & { seed: number; platform: string };

export const VIDEO_KINDS = ['video', 'short', 'live'] as const;
export type VideoKind = (typeof VIDEO_KINDS)[number];

/** Where a video sits: channel index, kind, and position in upload order (0 = oldest). */
export interface VideoRef {
  channel: number;
  kind: VideoKind;
  index: number;
}

export type VideoFate = 'public' | 'private' | 'gone';

/** The cheap facts of a video: enough to decide a batch item's outcome without generating it. */
export interface VideoFacts {
  id: string;
  ref: VideoRef;
  channelId: string;
  fate: VideoFate;
  /** languages with a transcript, the first one being the default */
  transcriptLanguages: Lang[];
  /** seconds (0 for a stream that is live now) */
  durationS: number;
}

interface ChannelEntry {
  index: number;
  id: string;
  name: string;
  /** without `@`; unique, compared case-insensitively */
  handle: string;
  customName: string;
  lang: Lang;
  createdMs: number;
  /** regular videos at generation time; later ones were added by `addVideos` */
  initialRegular: number;
  counts: Record<VideoKind, number>;
  playlistIds: string[];
}

interface PlaylistEntry {
  id: string;
  channel: number;
  index: number;
  entries: VideoRef[];
}

/** What tests and the admin API see of a channel. */
export interface ChannelInfo {
  id: string;
  name: string;
  /** with `@` */
  handle: string;
  customName: string;
  url: string;
  /** regular videos (what a channel batch draws from) */
  videoCount: number;
  shortCount: number;
  liveCount: number;
  playlistIds: string[];
}

/** The catalog's "now" for upload dates: videos are spread before this instant. */
const CATALOG_AS_OF_MS = Date.UTC(2025, 0, 1);
const ADDED_VIDEO_SPACING_MS = 6 * 3_600_000;
const DAY_MS = 86_400_000;

/**
 * A change made to one video after the catalog was generated, as a platform changes under its
 * users: metadata edited, a transcript language added or removed, captions re-uploaded (a new
 * revision of a language's transcript: different text), the video taken down and back.
 */
export interface VideoEdit {
  title?: string;
  description?: string;
  tags?: string[];
  durationS?: number;
  /** null: no thumbnail */
  thumbnail?: string | null;
  transcriptLanguages?: string[];
  fate?: VideoFate;
  /** per language, the revision of its transcript (0: as generated) */
  transcriptRevisions?: Record<string, number>;
}

export class Catalog {
  readonly opts: CatalogOptions;
  /** per video ID, what changed since generation (absent: nothing; every answer as generated) */
  private readonly edits = new Map<string, VideoEdit>();
  /** per video ID, how many edits it has had: what a copy of an answer was made from (0: none) */
  private readonly editCounts = new Map<string, number>();
  private readonly chans: ChannelEntry[] = [];
  private readonly playlists = new Map<string, PlaylistEntry>();
  private readonly videoIndex = new Map<string, VideoRef>();
  /** video ID per channel and kind, in upload order */
  private readonly idsByChannel: Array<Record<VideoKind, string[]>> = [];
  private readonly byChannelId = new Map<string, number>();
  private readonly byHandle = new Map<string, number>();
  private readonly byCustom = new Map<string, number>();

  constructor(opts: CatalogOptions) {
    this.opts = opts;
    const count = Math.max(opts.channels, opts.channelSizes?.length ?? 0);
    for (let c = 0; c < count; c++) this.generateChannel(c);
    for (let c = 0; c < count; c++) this.generatePlaylists(c);
  }

  // -------------------------------------------------------------------------------------------
  // Generation of the index

  private rng(...parts: Array<string | number>): Rng {
    return rngFor(this.opts.seed, ...parts);
  }

  private uniqueId(prefix: string, length: number, ...parts: Array<string | number>): string {
    for (let salt = 0; ; salt++) {
      const id = prefix + this.rng('id', ...parts, salt).chars(length);
      if (!this.videoIndex.has(id) && !this.byChannelId.has(id) && !this.playlists.has(id)) return id;
    }
  }

  private generateChannel(c: number): void {
    const r = this.rng('channel', c);
    const name = text.channelName(r);
    let slug = name
      .normalize('NFKD')
      .replace(/[^A-Za-z0-9]/g, '')
      .slice(0, 20);
    // handles are 3..30 characters: pad the short ones the way people do
    if (slug.length < 3) slug = `${slug}Channel`;
    let handle = slug.toLowerCase();
    let customName = slug;
    if (this.byHandle.has(handle)) handle = `${handle}${c}`;
    if (this.byCustom.has(customName.toLowerCase())) customName = `${customName}${c}`;
    const exact = this.opts.channelSizes?.[c];
    const regular = exact ?? r.int(this.opts.videosPerChannel.min, this.opts.videosPerChannel.max);
    const entry: ChannelEntry = {
      index: c,
      id: this.uniqueId('UC', 22, 'channel', c),
      name,
      handle,
      customName,
      lang: r.chance(0.7) ? 'en' : r.pick(LANGS),
      createdMs: Date.UTC(2008 + r.int(0, 12), r.int(0, 11), r.int(1, 28)),
      initialRegular: regular,
      counts: { video: 0, short: 0, live: 0 },
      playlistIds: [],
    };
    this.chans.push(entry);
    this.idsByChannel.push({ video: [], short: [], live: [] });
    this.byChannelId.set(entry.id, c);
    this.byHandle.set(handle.toLowerCase(), c);
    this.byCustom.set(customName.toLowerCase(), c);
    this.extend(c, 'video', regular);
    this.extend(c, 'short', this.opts.shortsPerChannel);
    this.extend(c, 'live', this.opts.livesPerChannel);
  }

  private extend(c: number, kind: VideoKind, n: number): string[] {
    const entry = this.chans[c]!;
    const ids = this.idsByChannel[c]![kind];
    const added: string[] = [];
    for (let k = 0; k < n; k++) {
      const index = entry.counts[kind]++;
      const id = this.uniqueId('', 11, 'video', c, kind, index);
      this.videoIndex.set(id, { channel: c, kind, index });
      ids.push(id);
      added.push(id);
    }
    return added;
  }

  private generatePlaylists(c: number): void {
    const entry = this.chans[c]!;
    const ids = this.idsByChannel[c]!;
    for (let p = 0; p < this.opts.playlistsPerChannel; p++) {
      const r = this.rng('playlist', c, p);
      const available = ids.video.length + ids.short.length + ids.live.length;
      const size = Math.min(available, r.int(this.opts.playlistSize.min, this.opts.playlistSize.max));
      const seen = new Set<string>();
      const entries: VideoRef[] = [];
      // rejection sampling is cheap here: sizes are small next to the channel, or the loop ends
      // through the `seen` bound when a playlist takes most of a channel
      for (let tries = 0; entries.length < size && tries < size * 20; tries++) {
        const roll = r.next();
        const kind: VideoKind =
          roll < 0.1 && ids.short.length > 0 ? 'short' : roll < 0.15 && ids.live.length > 0 ? 'live' : 'video';
        if (ids[kind].length === 0) continue;
        const index = r.int(0, ids[kind].length - 1);
        const key = `${kind}:${index}`;
        if (seen.has(key)) continue;
        seen.add(key);
        entries.push({ channel: c, kind, index });
      }
      const id = this.uniqueId('PL', 32, 'playlist', c, p);
      this.playlists.set(id, { id, channel: c, index: p, entries });
      entry.playlistIds.push(id);
    }
  }

  // -------------------------------------------------------------------------------------------
  // Lookup

  /** A video ID or URL to its place in the catalog; undefined when unknown or malformed. */
  findVideo(idOrUrl: string): VideoRef | undefined {
    const id = parseVideoRef(idOrUrl);
    return id === undefined ? undefined : this.videoIndex.get(id);
  }

  /** A channel ID, channel URL (ID or custom-name form) or handle (with or without `@`). */
  findChannel(ref: string): number | undefined {
    const parsed = parseChannelRef(ref);
    if (!parsed) return undefined;
    switch (parsed.kind) {
      case 'id':
        return this.byChannelId.get(parsed.id);
      case 'handle':
        // a bare word may also be a custom name
        return this.byHandle.get(parsed.handle.toLowerCase()) ?? this.byCustom.get(parsed.handle.toLowerCase());
      case 'custom':
        return this.byCustom.get(parsed.name.toLowerCase()) ?? this.byHandle.get(parsed.name.toLowerCase());
    }
  }

  findPlaylist(ref: string): string | undefined {
    const id = parsePlaylistRef(ref);
    return id !== undefined && this.playlists.has(id) ? id : undefined;
  }

  videoId(ref: VideoRef): string {
    return this.idsByChannel[ref.channel]![ref.kind][ref.index]!;
  }

  channelId(c: number): string {
    return this.chans[c]!.id;
  }

  channelCount(): number {
    return this.chans.length;
  }

  // -------------------------------------------------------------------------------------------
  // Listings

  /** IDs of a channel's videos of one kind, newest first, at most `limit`. */
  channelVideoIds(c: number, kind: VideoKind, limit = Number.POSITIVE_INFINITY): string[] {
    const ids = this.idsByChannel[c]![kind];
    const out: string[] = [];
    for (let i = ids.length - 1; i >= 0 && out.length < limit; i--) out.push(ids[i]!);
    return out;
  }

  /** The entries of a playlist of one kind, in playlist order, at most `limit`. */
  playlistVideoIds(playlistId: string, kind: VideoKind, limit = Number.POSITIVE_INFINITY): string[] {
    const p = this.playlists.get(playlistId);
    if (!p) return [];
    const out: string[] = [];
    for (const e of p.entries) {
      if (out.length >= limit) break;
      if (e.kind === kind) out.push(this.videoId(e));
    }
    return out;
  }

  /** Append `n` new regular videos to a channel; they come first in its listing. Newest first. */
  addVideos(c: number, n: number): string[] {
    return this.extend(c, 'video', n).reverse();
  }

  channels(): ChannelInfo[] {
    return this.chans.map((c) => ({
      id: c.id,
      name: c.name,
      handle: `@${c.handle}`,
      customName: c.customName,
      url: this.channelUrl(c.id),
      videoCount: c.counts.video,
      shortCount: c.counts.short,
      liveCount: c.counts.live,
      playlistIds: [...c.playlistIds],
    }));
  }

  /** A uniformly drawn catalog video (search results, synthetic pages). */
  randomVideo(r: Rng): VideoRef {
    const channel = r.int(0, this.chans.length - 1);
    const counts = this.chans[channel]!.counts;
    const kind: VideoKind =
      r.chance(0.85) || counts.short + counts.live === 0 ? 'video' : counts.short > 0 ? 'short' : 'live';
    return { channel, kind, index: r.int(0, Math.max(0, counts[kind] - 1)) };
  }

  // -------------------------------------------------------------------------------------------
  // Entities

  facts(ref: VideoRef): VideoFacts {
    const ch = this.chans[ref.channel]!;
    const r = this.rng('facts', ref.channel, ref.kind, ref.index);
    const roll = r.next();
    const fate: VideoFate =
      roll < this.opts.privateShare
        ? 'private'
        : roll < this.opts.privateShare + this.opts.goneShare
          ? 'gone'
          : 'public';
    const langs: Lang[] = [];
    if (!r.chance(this.opts.noTranscriptShare)) {
      langs.push(r.chance(0.85) ? ch.lang : 'en');
      const extra = r.chance(0.6) ? 0 : r.chance(0.6) ? 1 : 2;
      for (let i = 0; i < extra; i++) {
        const l = r.pick(LANGS);
        if (!langs.includes(l)) langs.push(l);
      }
    }
    let durationS: number;
    if (ref.kind === 'short') durationS = r.int(5, 60);
    else if (ref.kind === 'live') durationS = r.chance(0.3) ? 0 : r.int(1800, 4 * 3600);
    else durationS = r.chance(0.7) ? r.int(60, 1200) : r.int(1200, 3 * 3600);
    const edit = this.edits.get(this.videoId(ref));
    return {
      id: this.videoId(ref),
      ref,
      channelId: ch.id,
      fate: edit?.fate ?? fate,
      transcriptLanguages: edit?.transcriptLanguages ? ([...edit.transcriptLanguages] as Lang[]) : langs,
      durationS: edit?.durationS ?? durationS,
    };
  }

  /** Apply `patch` to a video (merged with earlier edits; a revision map is merged per language). */
  editVideo(ref: VideoRef, patch: VideoEdit): void {
    const id = this.videoId(ref);
    const before = this.edits.get(id) ?? {};
    const revisions = patch.transcriptRevisions
      ? { ...before.transcriptRevisions, ...patch.transcriptRevisions }
      : before.transcriptRevisions;
    this.edits.set(id, { ...before, ...patch, ...(revisions ? { transcriptRevisions: revisions } : {}) });
    this.editCounts.set(id, this.editGeneration(id) + 1);
  }

  /** How many edits a video has had: a kept copy of an answer made at another count is stale. */
  editGeneration(videoId: string): number {
    return this.editCounts.get(videoId) ?? 0;
  }

  /** The Video resource. Optional fields are sometimes absent and nullable ones sometimes null. */
  video(ref: VideoRef): Video {
    const f = this.facts(ref);
    const ch = this.chans[ref.channel]!;
    const r = this.rng('video', ref.channel, ref.kind, ref.index);
    const lang = r.chance(0.9) ? ch.lang : r.pick(LANGS);
    const v: Video = {
      id: f.id,
      title: text.title(r, lang),
      description: text.description(r, lang),
      duration: f.durationS,
      channel: { id: ch.id, name: ch.name },
      tags: text.tags(r, lang),
      transcriptLanguages: [...f.transcriptLanguages],
    };
    if (!r.chance(0.05)) v.thumbnail = `https://img.${this.opts.platform}.com/vi/${f.id}/hqdefault.jpg`;
    const edit = this.edits.get(f.id);
    if (edit?.title !== undefined) v.title = edit.title;
    if (edit?.description !== undefined) v.description = edit.description;
    if (edit?.tags !== undefined) v.tags = [...edit.tags];
    if (edit?.thumbnail === null) delete v.thumbnail;
    else if (edit?.thumbnail !== undefined) v.thumbnail = edit.thumbnail;
    const dateRoll = r.next();
    if (dateRoll < 0.03) v.uploadDate = null;
    else if (dateRoll >= 0.06) v.uploadDate = new Date(this.uploadMs(ref, r)).toISOString();
    const liveNow = ref.kind === 'live' && f.durationS === 0;
    const viewRoll = r.next();
    if (viewRoll < 0.03 || liveNow) v.viewCount = null;
    else if (viewRoll >= 0.05) v.viewCount = Math.floor(10 ** (r.next() * 7));
    const likeRoll = r.next();
    if (likeRoll < 0.1) v.likeCount = null;
    else if (likeRoll >= 0.12) {
      const views = typeof v.viewCount === 'number' ? v.viewCount : 10_000;
      v.likeCount = Math.floor(views * r.next() * 0.08);
    }
    return v;
  }

  private uploadMs(ref: VideoRef, r: Rng): number {
    const ch = this.chans[ref.channel]!;
    if (ref.kind === 'video' && ref.index >= ch.initialRegular) {
      return CATALOG_AS_OF_MS + (ref.index - ch.initialRegular + 1) * ADDED_VIDEO_SPACING_MS;
    }
    const total = ref.kind === 'video' ? ch.initialRegular : ch.counts[ref.kind];
    const span = CATALOG_AS_OF_MS - ch.createdMs;
    return Math.floor(ch.createdMs + (span * (ref.index + 1)) / (total + 1) + (r.next() * DAY_MS) / 2);
  }

  /** The chunks of a transcript in one of the video's languages (the caller checks which). */
  transcriptChunks(ref: VideoRef, lang: string): TranscriptChunk[] {
    const revision = this.edits.get(this.videoId(ref))?.transcriptRevisions?.[lang] ?? 0;
    // revision 0 draws exactly what an unedited catalog draws
    const r =
      revision === 0
        ? this.rng('transcript', ref.channel, ref.kind, ref.index, lang)
        : this.rng('transcript', ref.channel, ref.kind, ref.index, lang, revision);
    const count = r.int(this.opts.transcriptChunks.min, this.opts.transcriptChunks.max);
    const tagged = this.rng('transcript-lang-tag', ref.channel, ref.kind, ref.index).chance(0.5);
    const scriptLang: Lang = (LANGS as readonly string[]).includes(lang) ? (lang as Lang) : 'en';
    // caption-like timings: a few seconds per line, short gaps, spoken at about 15 characters per
    // second; a short transcript of a long video simply covers its beginning
    const chunks: TranscriptChunk[] = [];
    let offset = r.int(0, 2000);
    for (let i = 0; i < count; i++) {
      const line = text.captionText(r, scriptLang);
      const duration = Math.min(12_000, Math.max(800, Math.round(line.length * 65 * (0.8 + r.next() * 0.4))));
      const chunk: TranscriptChunk = { text: line, offset, duration };
      if (tagged) chunk.lang = lang;
      chunks.push(chunk);
      offset += duration + (r.chance(0.3) ? r.int(50, 1500) : 0);
    }
    return chunks;
  }

  channel(c: number): Channel {
    const ch = this.chans[c]!;
    const r = this.rng('channel-meta', c);
    const out: Channel = { id: ch.id, name: ch.name, handle: `@${ch.handle}` };
    const d = r.next();
    if (d >= 0.1) out.description = d < 0.2 ? '' : text.description(r, ch.lang);
    if (!r.chance(0.05)) out.subscriberCount = Math.floor(10 ** (2 + r.next() * 6));
    out.videoCount = ch.counts.video + ch.counts.short + ch.counts.live;
    if (!r.chance(0.05)) out.viewCount = Math.floor(10 ** (4 + r.next() * 6));
    out.thumbnail = `https://img.${this.opts.platform}.com/ch/${ch.id}/avatar.jpg`;
    if (!r.chance(0.3)) out.banner = `https://img.${this.opts.platform}.com/ch/${ch.id}/banner.jpg`;
    return out;
  }

  playlist(playlistId: string): Playlist | undefined {
    const p = this.playlists.get(playlistId);
    if (!p) return undefined;
    const ch = this.chans[p.channel]!;
    const r = this.rng('playlist-meta', p.channel, p.index);
    const out: Playlist = {
      id: p.id,
      title: text.title(r, ch.lang),
      videoCount: p.entries.length,
      channel: { id: ch.id, name: ch.name },
    };
    const d = r.next();
    if (d >= 0.1) out.description = d < 0.4 ? '' : text.description(r, ch.lang);
    if (!r.chance(0.2)) out.viewCount = Math.floor(10 ** (2 + r.next() * 5));
    if (!r.chance(0.1)) out.lastUpdated = new Date(CATALOG_AS_OF_MS - r.int(0, 900) * DAY_MS).toISOString();
    return out;
  }

  /** The channel index of a playlist. */
  playlistChannel(playlistId: string): number | undefined {
    return this.playlists.get(playlistId)?.channel;
  }

  channelUrl(channelId: string): string {
    return `https://www.${this.opts.platform}.com/channel/${channelId}`;
  }

  videoUrl(videoId: string): string {
    return `https://www.${this.opts.platform}.com/watch?v=${videoId}`;
  }
}
