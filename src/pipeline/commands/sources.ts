/**
 * Registering a source: its adapter parses the reference locally (a typo fails before any credit
 * is spent), then resolves it (a handle becomes the channel ID; a channel or playlist record is
 * kept), and the source is inserted with the videos it starts with (a `videos` source's list).
 */
import type { Queryable } from '../../db/connection.ts';
import { deleteSource, insertSource, SourceExistsError, sourcesMatching, type SourceMatch } from '../../db/sources.ts';
import { rememberVideos } from '../../db/source-videos.ts';
import { rememberPages } from '../../db/pages.ts';
import { rememberMedia } from '../../db/media.ts';
import { MEDIA_MODE_DEFAULT, type MediaMode } from '../../domain/media.ts';
import type { Source } from '../../db/schema.ts';
import type { SearchFilterValues, SourceInclude, SourceKind } from '../../domain/sources.ts';
import { silentLogger } from '../../log.ts';
import type { PipelineDeps } from '../deps.ts';
import type { SourceRef, SourceSpec } from '../kinds/adapter.ts';
import { adapterFor } from '../kinds/index.ts';
import { judgeGatewayForbidden } from '../services/upstream-holds.ts';
import { sourceRefKeys } from './source-ref.ts';

export interface NewSourceInput {
  kind: SourceKind;
  /** the reference (channel, playlist, search query); for `videos`, use `refs` */
  ref?: string;
  /** every reference with where it came from (a `videos` source: one per ID or URL) */
  refs?: SourceRef[];
  /** undefined: the kind's default */
  limit?: number | undefined;
  langs: string[];
  textOnly: boolean;
  cron: string | null;
  include?: SourceInclude[];
  filters?: SearchFilterValues;
  generateMissing?: boolean;
  maxGenerateMinutes?: number | null;
  /** `--mode` of a `media` source */
  mediaMode?: MediaMode;
  /** where a list of IDs came from (a file name, `stdin`), for the source's title */
  origin?: string;
}

export function sourceSpec(input: NewSourceInput): SourceSpec {
  return {
    kind: input.kind,
    refs: input.refs ?? (input.ref !== undefined ? [{ value: input.ref, where: 'id-or-url' }] : []),
    limit: input.limit,
    langs: input.langs,
    textOnly: input.textOnly,
    cron: input.cron,
    include: input.include ?? [],
    filters: input.filters ?? {},
    generateMissing: input.generateMissing ?? false,
    maxGenerateMinutes: input.maxGenerateMinutes ?? null,
    mediaMode: input.mediaMode,
    origin: input.origin,
  };
}

/** Check a source's reference and options locally (no API call): throws SourceSpecError or InvalidRequestError. */
export function parseSource(input: NewSourceInput): SourceSpec {
  const spec = sourceSpec(input);
  return adapterFor(spec.kind).parse(spec);
}

/**
 * A stored source the reference being added names already (channel or playlist: the reference as
 * given, its canonical ID or a channel's handle), read from Postgres: no API call, no credit.
 */
async function storedSourceFor(sql: Queryable, spec: SourceSpec): Promise<SourceMatch | undefined> {
  const ref = spec.refs.length === 1 ? spec.refs[0] : undefined;
  if ((spec.kind !== 'channel' && spec.kind !== 'playlist') || ref === undefined) return undefined;
  const matches = await sourcesMatching(sql, { ...sourceRefKeys(ref.value), id: null });
  return matches.find((m) => m.kind === spec.kind);
}

export async function registerSource(
  deps: Pick<PipelineDeps, 'sql' | 'api'> & Partial<Pick<PipelineDeps, 'log'>>,
  input: NewSourceInput,
): Promise<Source> {
  const spec = parseSource(input);
  // the same channel or playlist added again is refused from what is stored, before the paid
  // lookup that resolves it (and a database not set up fails here, before any credit is spent)
  const stored = await storedSourceFor(deps.sql, spec);
  if (stored) throw new SourceExistsError(stored.kind, stored.externalId, stored.id);
  const resolved = await adapterFor(spec.kind)
    .resolve(deps, spec)
    // a gateway's 403 is a refused key (exit 3) only when /me says so too
    .catch(async (e: unknown) => {
      throw await judgeGatewayForbidden({ api: deps.api, log: deps.log ?? silentLogger() }, e);
    });
  const source = await insertSource(deps.sql, {
    kind: spec.kind,
    ref: resolved.ref,
    externalId: resolved.externalId,
    title: resolved.title,
    maxVideos: resolved.maxVideos,
    langs: spec.langs,
    textOnly: spec.textOnly,
    cron: spec.cron,
    include: spec.include,
    search: resolved.search,
    generateMissing: spec.generateMissing,
    maxGenerateMinutes: spec.maxGenerateMinutes,
    mediaMode: spec.kind === 'media' ? (spec.mediaMode ?? MEDIA_MODE_DEFAULT) : null,
  });
  try {
    // a videos source's list is its listing: without it the source must not exist
    await rememberVideos(deps.sql, source.id, resolved.videoIds, false);
    if (resolved.pageUrls) await rememberPages(deps.sql, source.id, resolved.pageUrls);
    if (resolved.mediaUrls) await rememberMedia(deps.sql, source.id, resolved.mediaUrls);
  } catch (e: unknown) {
    await deleteSource(deps.sql, source.id);
    throw e;
  }
  return source;
}
