/**
 * A `media` row from the metadata the upstream delivered for a platform item (or why it cannot be
 * one: kept raw, quarantined), and the row of a public media file URL, which has no metadata.
 * Kept apart from src/db/media.ts, which writes the rows, so what only reads media (`status`)
 * does not load the interface's schemas.
 */
import { createHash } from 'node:crypto';
import { firstIssue } from '../../api/issues.ts';
import { MetadataSchema } from '../../api/schemas.ts';
import { isStorableText } from '../../db/storable.ts';
import type { QuarantineReason } from '../../domain/items.ts';
import type { MediaPlatform } from '../../domain/media.ts';
import type { MediaRow } from '../../db/media.ts';

const count = (n: number | null | undefined): number | null =>
  n === null || n === undefined || !Number.isFinite(n) ? null : Math.round(n);

/** A media item's row from its delivered metadata (or why it cannot be one: kept raw, quarantined). */
export function mediaRowFromApi(
  url: string,
  raw: unknown,
): { row: MediaRow } | { reason: string; reasonCode: QuarantineReason } {
  const parsed = MetadataSchema.safeParse(raw);
  if (!parsed.success) {
    return {
      reason: `metadata does not match the interface at ${firstIssue(parsed.error)}`,
      reasonCode: 'schema',
    };
  }
  const m = parsed.data;
  const text = JSON.stringify(raw);
  if (!isStorableText(text) || text.includes('\\u0000')) {
    return { reason: 'metadata holds a character Postgres text cannot store', reasonCode: 'unstorable' };
  }
  const media = m.media as { type?: string; duration?: number } | undefined;
  const posted = m.createdAt ? new Date(m.createdAt) : null;
  const platform = m.platform as MediaPlatform;
  return {
    row: {
      url,
      platform,
      type: m.type,
      mediaId: m.id ?? null,
      title: m.title ?? null,
      description: m.description ?? null,
      authorUsername: m.author?.username ?? null,
      authorDisplayName: m.author?.displayName ?? null,
      author: m.author ?? null,
      views: count(m.stats?.views),
      likes: count(m.stats?.likes),
      comments: count(m.stats?.comments),
      shares: count(m.stats?.shares),
      mediaInfo: m.media ?? null,
      durationS: media?.type === 'video' && typeof media.duration === 'number' ? media.duration : null,
      tags: [...(m.tags ?? [])],
      postedAt: posted !== null && Number.isFinite(posted.getTime()) ? posted : null,
      additionalData: m.additionalData ?? null,
      metadataSha256: createHash('sha256').update(text).digest('hex'),
    },
  };
}

/** The row of a public media file URL: no metadata is bought for it (`/metadata` describes platform items). */
export function mediaFileRow(url: string): MediaRow {
  return {
    url,
    platform: 'file',
    type: 'video',
    mediaId: null,
    title: null,
    description: null,
    authorUsername: null,
    authorDisplayName: null,
    author: null,
    views: null,
    likes: null,
    comments: null,
    shares: null,
    mediaInfo: null,
    durationS: null,
    tags: [],
    postedAt: null,
    additionalData: null,
    metadataSha256: createHash('sha256').update(url).digest('hex'),
  };
}
