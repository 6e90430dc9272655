/**
 * Each video's latest outcome per kind and language, counted: what `status`, `/metrics` and the
 * overview show as "now". The installation's figures come from the counters the triggers of
 * migrations/0008 keep over `video_sync` (a few hundred rows whatever the history); a source's
 * from its own videos (`source_videos` joined to `video_sync` by primary key), so the cost follows
 * the sources asked for, not the installation.
 *
 * Every item ever received stays counted in `item_counts` (src/db/item-counts.ts): history.
 */
import type { BatchKind } from '../domain/batches.ts';
import { ITEM_STATES, type ItemState } from '../domain/items.ts';
import type { Queryable } from './connection.ts';
import { addToCoverage, emptyCoverage, type LanguageCoverage } from '../domain/coverage.ts';

export interface OutcomeCounts {
  kind: BatchKind;
  /** '' for metadata, and for transcripts asked in the default language */
  lang: string;
  /** per latest outcome, every ITEM_STATES state, zeros included */
  byState: Record<ItemState, number>;
  /** claimed by no batch yet and without an outcome (a claim released) */
  none: number;
}

/** Videos per kind and language by their latest outcome, from the counters. */
export async function outcomeCounts(sql: Queryable): Promise<OutcomeCounts[]> {
  const rows = await sql<{ kind: BatchKind; lang: string; state: string; n: number }[]>`
    select kind, lang, state, sum(n)::float8 as n from video_outcome_counts
    group by kind, lang, state having sum(n) <> 0 order by kind desc, lang, state`;
  const out = new Map<string, OutcomeCounts>();
  for (const r of rows) {
    const key = `${r.kind}\u0000${r.lang}`;
    let c = out.get(key);
    if (!c) {
      c = { kind: r.kind, lang: r.lang, byState: Object.fromEntries(ITEM_STATES.map((s) => [s, 0])) as Record<ItemState, number>, none: 0 };
      out.set(key, c);
    }
    // a state a newer version writes is shown with none rather than dropped silently
    if ((ITEM_STATES as readonly string[]).includes(r.state)) c.byState[r.state as ItemState] += r.n;
    else c.none += r.n;
  }
  return [...out.values()];
}

/** Every kind and language summed: the videos per latest outcome. */
export function totalOutcomes(counts: readonly OutcomeCounts[]): Record<ItemState, number> {
  const total = Object.fromEntries(ITEM_STATES.map((s) => [s, 0])) as Record<ItemState, number>;
  for (const c of counts) for (const s of ITEM_STATES) total[s] += c.byState[s];
  return total;
}

export interface OutcomeErrorCount {
  kind: BatchKind;
  lang: string;
  errorCode: string;
  /** the state the code left the videos in */
  state: ItemState;
  videos: number;
}

/**
 * Videos whose latest outcome carries an errorCode, by kind, language, code and state, the most
 * first. Videos still in flight are left out: the interface marks an unfinished item with the
 * code `processing`, which is not an error.
 */
export function outcomeErrorCounts(sql: Queryable): Promise<OutcomeErrorCount[]> {
  return sql<OutcomeErrorCount[]>`
    select kind, lang, error_code as "errorCode", state, sum(n)::float8 as videos from video_outcome_counts
    where error_code <> '' and state <> 'processing' group by kind, lang, error_code, state having sum(n) <> 0
    order by videos desc, error_code, kind, lang, state`;
}

/** Per language asked for (transcripts asked in the default language have none), from the counters. */
export async function languageCoverage(sql: Queryable): Promise<LanguageCoverage[]> {
  const rows = await sql<{ lang: string; state: string; delivered_lang: string; n: number }[]>`
    select lang, state, delivered_lang, sum(n)::float8 as n from video_outcome_counts
    where kind = 'transcript' and lang <> '' group by lang, state, delivered_lang having sum(n) <> 0`;
  const out = new Map<string, LanguageCoverage>();
  for (const r of rows) {
    let c = out.get(r.lang);
    if (!c) out.set(r.lang, (c = emptyCoverage(r.lang)));
    addToCoverage(c, r.state, r.delivered_lang, r.n);
  }
  return [...out.values()].sort((a, b) => a.lang.localeCompare(b.lang));
}

export interface SourceLanguageCoverage extends LanguageCoverage {
  sourceId: number;
}

/**
 * Per source and language it asks for, what its videos got (never bought counts as pending).
 * One primary-key probe into `video_sync` per video of these sources and language.
 */
export async function sourceLanguageCoverage(sql: Queryable, sourceIds: readonly number[]): Promise<SourceLanguageCoverage[]> {
  if (sourceIds.length === 0) return [];
  const rows = await sql<{ source_id: number; lang: string; state: string | null; delivered_lang: string; n: number }[]>`
    select src.id as source_id, l.lang, s.last_state as state, coalesce(s.delivered_lang, '') as delivered_lang, count(*)::float8 as n
    from sources src
    cross join lateral unnest(src.langs) as l(lang)
    join source_videos sv on sv.source_id = src.id
    left join video_sync s on s.video_id = sv.video_id and s.kind = 'transcript' and s.lang = l.lang
    where src.id = any(${[...sourceIds]}::int[])
    group by 1, 2, 3, 4`;
  const out = new Map<string, SourceLanguageCoverage>();
  for (const r of rows) {
    const key = `${r.source_id}\u0000${r.lang}`;
    let c = out.get(key);
    if (!c) out.set(key, (c = { sourceId: r.source_id, ...emptyCoverage(r.lang) }));
    addToCoverage(c, r.state, r.delivered_lang, r.n);
  }
  return [...out.values()].sort((a, b) => a.sourceId - b.sourceId || a.lang.localeCompare(b.lang));
}

export interface SourceOutcomeError {
  sourceId: number;
  kind: BatchKind;
  lang: string;
  errorCode: string;
  state: ItemState;
  videos: number;
}

/**
 * Per source, its videos whose latest outcome (metadata, or a transcript in a language the source
 * asks for) carries an errorCode, by code (in flight, `processing`, is not an error): the videos'
 * `video_sync` rows, by primary key prefix.
 */
export function sourceOutcomeErrors(sql: Queryable, sourceIds: readonly number[]): Promise<SourceOutcomeError[]> {
  if (sourceIds.length === 0) return Promise.resolve([]);
  return sql<SourceOutcomeError[]>`
    select sv.source_id as "sourceId", s.kind, s.lang, s.last_error_code as "errorCode", s.last_state as state, count(*)::float8 as videos
    from source_videos sv join video_sync s on s.video_id = sv.video_id
    join sources src on src.id = sv.source_id
    where sv.source_id = any(${[...sourceIds]}::int[]) and s.last_error_code is not null and s.last_state <> 'processing'
      -- the kinds and languages this source buys (another source's language is not its error)
      and (s.kind = 'video' or s.lang = any(case when cardinality(src.langs) = 0 then array['']::text[] else src.langs end))
    group by 1, 2, 3, 4, 5
    order by 1, videos desc, 4, 2, 3`;
}
