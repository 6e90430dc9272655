/**
 * The one interface every source kind implements. The scheduler and `sources add` call these and
 * nothing else that depends on the kind; src/pipeline/kinds/index.ts registers one adapter per
 * kind in a `Record<SourceKind, SourceAdapter>`, so a kind without an adapter does not compile.
 */
import type { CallOptions } from '../../api/client.ts';
import type { TranscriptBatchRequest, VideoBatchRequest } from '../../api/schemas.ts';
import type { Source } from '../../db/schema.ts';
import type { BatchKind } from '../../domain/batches.ts';
import { batchCredits } from '../../domain/prices.ts';
import type { MediaMode } from '../../domain/media.ts';
import type { SearchFilterValues, SourceInclude, SourceKind } from '../../domain/sources.ts';
import type { PipelineDeps } from '../deps.ts';
import type { CreditsRefusedError } from '../ingest/credits.ts';

/** One reference as the user gave it, and where it came from (for error messages). */
export interface SourceRef {
  value: string;
  /** e.g. `id-or-url`, `argument 3`, `ids.txt line 14` */
  where: string;
}

/** A `sources add` request, flags parsed (each kind checks which of them apply to it). */
export interface SourceSpec {
  kind: SourceKind;
  /** channel/playlist: one; videos: one or more; search: the query */
  refs: SourceRef[];
  /** `--limit`; undefined: the kind's default */
  limit?: number | undefined;
  langs: string[];
  textOnly: boolean;
  cron: string | null;
  include: SourceInclude[];
  /** search filters given on the command line, as given (the search adapter checks them) */
  filters: SearchFilterValues;
  generateMissing: boolean;
  maxGenerateMinutes: number | null;
  /** `--mode` of a `media` source (undefined: not given) */
  mediaMode?: MediaMode | undefined;
  /** a label for the list's origin (`ids.txt`, `stdin`), for the source's title */
  origin?: string | undefined;
}

/** What a sync plans to submit for one kind and language. */
export interface PlannedBatch {
  kind: BatchKind;
  lang: string | null;
  request: VideoBatchRequest | TranscriptBatchRequest;
  videos: number;
  credits: number;
}

/** A reference resolved to what the `sources` row holds. */
export interface ResolvedSource {
  ref: string;
  externalId: string;
  title: string | null;
  maxVideos: number;
  search: Source['search'];
  /** videos the source starts with (a `videos` source's list), remembered at registration */
  videoIds: string[];
  /** pages the source keeps (a `pages` source's list), remembered at registration */
  pageUrls?: string[];
  /** media URLs the source keeps (a `media` source's list, its video-platform URLs aside), remembered at registration */
  mediaUrls?: string[];
}

/** The video IDs a sync considers, in the source's order, and what listing them cost. */
export interface Listing {
  videoIds: string[];
  credits: number;
}

export type AdapterDeps = Pick<PipelineDeps, 'sql' | 'api'>;

/** What a kind's own sync needs from the sync run it is part of (its lease, run row and result are the caller's). */
export interface DocumentSyncRun {
  deps: PipelineDeps;
  source: Source;
  runId: number;
  result: {
    jobIds: string[];
    submitted: number;
    creditsEstimated: number;
    listed: number;
    detail?: string | undefined;
  };
  /** `backfill --refresh`: every document fetched again now */
  forceRefresh: boolean;
  signal: AbortSignal | undefined;
}

/** How a kind's own sync ended; the caller records it as a video source's sync would be. */
export type DocumentSyncEnd =
  | { end: 'submitted' }
  | { end: 'up-to-date'; detail: string }
  | { end: 'in-flight'; detail: string }
  | { end: 'refused'; refusal: CreditsRefusedError; accountLeft: number | undefined };

/** What a kind's sync would buy now, from Postgres alone: `backfill --dry-run`'s plan. */
export interface DocumentPlan {
  /** documents it would buy (pages crawled at most, or scraped) and their credits; 0 when none */
  documents: number;
  credits: number;
  /** a purchase of it is still in flight (nothing bought until it ends) */
  inFlight: boolean;
  /** documents the source holds now */
  known: number;
  /** what the plan cannot know before the purchase answers */
  unknowns: string[];
}

/**
 * A kind whose documents are not videos (web pages): its sync runs `sync` in place of the
 * listing, the diff and the video batches; `plan` answers the dry run. Everything around it (the
 * lease, the run row, holds, the credit guard's refusals, the run's end) stays the scheduler's.
 */
export interface DocumentSync {
  /**
   * The kind lists videos too (a `media` source's video-platform URLs): after `sync`, the
   * scheduler lists and submits them as for a `videos` source, in the same run.
   */
  readonly withVideos?: boolean;
  sync(run: DocumentSyncRun): Promise<DocumentSyncEnd>;
  /**
   * What the next sync would buy, spending nothing. `retryAttemptsMax` (RETRY_ATTEMPTS_MAX): an
   * item bought before whose result did not land counts while the sync would buy it again.
   */
  plan(
    sql: PipelineDeps['sql'],
    source: Source,
    forceRefresh: boolean,
    retryAttemptsMax: number,
  ): Promise<DocumentPlan>;
}

export interface SourceAdapter {
  readonly kind: SourceKind;
  /**
   * Check the reference and the options locally (no API call, no credit): a typo fails here,
   * naming the value, where it came from, and what would be valid (SourceSpecError).
   */
  parse(spec: SourceSpec): SourceSpec;
  /** Resolve the parsed reference to its canonical ID (through the API where the kind needs it). */
  resolve(deps: AdapterDeps, spec: SourceSpec): Promise<ResolvedSource>;
  /** Keep the source's own metadata record current (channels, playlists; 1 credit when stale). */
  refresh(deps: AdapterDeps, source: Source, o?: CallOptions): Promise<void>;
  /** The video IDs to consider now, remembered in `source_videos`, and what listing them cost. */
  list(deps: AdapterDeps, source: Source, o?: CallOptions): Promise<Listing>;
  /** The batches that buy `due` (videos due for `kind`/`lang`), each within `batchSize`. */
  buildBatches(
    source: Source,
    kind: BatchKind,
    lang: string | null,
    due: readonly string[],
    batchSize: number,
  ): PlannedBatch[];
  /** a kind whose documents are not videos syncs through this instead of list/buildBatches */
  readonly documents?: DocumentSync;
}

/** A reference or option of `sources add` that is wrong: exit 2, nothing registered. */
export class SourceSpecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SourceSpecError';
  }
}

/**
 * `videoIds` batches of at most `batchSize`: every kind submits only due IDs (the exact estimate,
 * and a video listed by several sources is bought once), so this is every adapter's builder.
 */
export function videoIdBatches(
  source: Pick<Source, 'textOnly'>,
  kind: BatchKind,
  lang: string | null,
  due: readonly string[],
  batchSize: number,
): PlannedBatch[] {
  const planned: PlannedBatch[] = [];
  for (let i = 0; i < due.length; i += batchSize) {
    const videoIds = due.slice(i, i + batchSize);
    const request: VideoBatchRequest | TranscriptBatchRequest =
      kind === 'video'
        ? { videoIds }
        : { videoIds, ...(lang !== null ? { lang } : {}), ...(source.textOnly ? { text: true } : {}) };
    planned.push({ kind, lang, request, videos: videoIds.length, credits: batchCredits(videoIds.length) });
  }
  return planned;
}

/** Options that only some kinds take: refuse them elsewhere rather than ignore them. */
export function refuseOptions(
  spec: SourceSpec,
  allowed: { include?: boolean; filters?: boolean; limit?: boolean },
): void {
  const kind = spec.kind;
  if (!allowed.include && spec.include.length > 0) {
    throw new SourceSpecError(`--include applies to channel and playlist sources, not to a ${kind} source`);
  }
  if (!allowed.filters) {
    const given = Object.keys(spec.filters);
    if (given.length > 0)
      throw new SourceSpecError(`--${kebab(given[0]!)} applies to search sources, not to a ${kind} source`);
  }
  if (!allowed.limit && spec.limit !== undefined) {
    throw new SourceSpecError(`--limit does not apply to a ${kind} source (it submits every ID it was given)`);
  }
  if (spec.maxGenerateMinutes !== null && !spec.generateMissing) {
    throw new SourceSpecError('--max-generate-minutes needs --generate-missing');
  }
}

/** The reference parsed but the upstream does not know it: exit 2, nothing registered. */
export class SourceNotFoundUpstreamError extends Error {
  constructor(kind: SourceKind, ref: string) {
    super(`${kind} ${JSON.stringify(ref)} was not found upstream`);
    this.name = 'SourceNotFoundUpstreamError';
  }
}

export function kebab(s: string): string {
  return s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}
