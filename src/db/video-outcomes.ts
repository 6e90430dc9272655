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
      c = {
        kind: r.kind,
        lang: r.lang,
        byState: Object.fromEntries(ITEM_STATES.map((s) => [s, 0])) as Record<ItemState, number>,
        none: 0,
      };
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
export async function sourceLanguageCoverage(
  sql: Queryable,
  sourceIds: readonly number[],
): Promise<SourceLanguageCoverage[]> {
  if (sourceIds.length === 0) return [];
  const rows = await probing(
    sql,
    (q) => q<CoverageRow[]>`
    select src.id as source_id, l.lang, s.last_state as state, coalesce(s.delivered_lang, '') as delivered_lang, count(*)::float8 as n
    from sources src
    cross join lateral (select distinct unnest(src.langs)) as l(lang)
    join source_videos sv on sv.source_id = src.id
    -- a probe per video (the limit keeps the planner from turning it into a join: see probing())
    left join lateral (
      select vs.last_state, vs.delivered_lang from video_sync vs
      where vs.video_id = sv.video_id and vs.kind = 'transcript' and vs.lang = l.lang
      limit 1
    ) s on true
    where src.id = any(${[...sourceIds]}::int[])
    group by 1, 2, 3, 4`,
  );
  return coverageOf(rows);
}

/** Per source and language asked, counted videos by their latest state and delivered language. */
interface CoverageRow {
  source_id: number;
  lang: string;
  state: string | null;
  delivered_lang: string;
  n: number;
}

function coverageOf(rows: readonly CoverageRow[]): SourceLanguageCoverage[] {
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

export interface SourceOutcomes {
  /** per source, its videos whose latest outcome carries an error code, by code (`SourceOutcomeError`) */
  errors: SourceOutcomeError[];
  /** per source and language it asks for, what its videos got (as `sourceLanguageCoverage`) */
  coverage: SourceLanguageCoverage[];
}

/**
 * What the overview shows of a page of sources, read from one probe per video: every `video_sync`
 * row of the video, by primary key prefix (two reads of 30 000 videos at 10x history took twice
 * as long). Errors: videos whose latest outcome (metadata, or a transcript in a language the
 * source asks for; another source's language is not its error) carries an errorCode, by code (in
 * flight, `processing`, is not an error). Coverage: per language the source asks for, the
 * video's transcript outcome in it, if any.
 */
export async function sourceOutcomes(sql: Queryable, sourceIds: readonly number[]): Promise<SourceOutcomes> {
  if (sourceIds.length === 0) return { errors: [], coverage: [] };
  const [r] = await probing(
    sql,
    (q) => q<{ errors: SourceOutcomeError[]; coverage: CoverageRow[] }[]>`
    with probed as materialized (
      select sv.source_id, sv.video_id, s.kind, s.lang, s.last_state, s.last_error_code, s.delivered_lang
      from source_videos sv
      -- offset 0 keeps it a probe per video: see probing()
      left join lateral (
        select vs.kind, vs.lang, vs.last_state, vs.last_error_code, vs.delivered_lang from video_sync vs
        where vs.video_id = sv.video_id
        offset 0
      ) s on true
      where sv.source_id = any(${[...sourceIds]}::int[])
    ),
    errors as (
      select p.source_id as "sourceId", p.kind, p.lang, p.last_error_code as "errorCode", p.last_state as state, count(*)::float8 as videos
      from probed p join sources src on src.id = p.source_id
      where p.last_error_code is not null and p.last_state <> 'processing'
        and (p.kind = 'video' or p.lang = any(case when cardinality(src.langs) = 0 then array['']::text[] else src.langs end))
      group by 1, 2, 3, 4, 5
    ),
    -- the videos with a transcript row in a language their source asks for (the primary key: one at most)
    matched as (
      select p.source_id, p.lang, p.last_state as state, coalesce(p.delivered_lang, '') as delivered_lang, count(*)::float8 as n
      from probed p join sources src on src.id = p.source_id
      where p.kind = 'transcript' and p.lang = any(src.langs)
      group by 1, 2, 3, 4
    ),
    -- and per language asked, the others: none bought yet (pending)
    unmatched as (
      select src.id as source_id, l.lang, null::text as state, '' as delivered_lang,
        (select count(*) from source_videos sv where sv.source_id = src.id)::float8
          - coalesce((select sum(m.n) from matched m where m.source_id = src.id and m.lang = l.lang), 0) as n
      from sources src cross join lateral (select distinct unnest(src.langs)) as l(lang)
      where src.id = any(${[...sourceIds]}::int[])
    ),
    coverage as (select * from matched union all select * from unmatched where n > 0)
    select
      coalesce((select json_agg(e order by e."sourceId", e.videos desc, e."errorCode", e.kind, e.lang) from errors e), '[]') as errors,
      coalesce((select json_agg(c) from coverage c), '[]') as coverage`,
  );
  return { errors: r!.errors, coverage: coverageOf(r!.coverage) };
}

/**
 * `read` with the per-video probes of a few sources planned as probes, whatever the history.
 * Left to itself the planner joins these sources' videos to the whole of `video_sync` (a hash
 * join over a sequential scan) once the table is large, so this read would grow with the history
 * (bench:scale measures it at 1x and 10x). The lateral subqueries (kept apart by their limit or
 * offset) make it one index probe per video. Those probes are costed as random reads, which
 * passes jit_above_cost, and JIT would take longer to compile them than they take to run, so it
 * is off for them (for the rest of the caller's transaction when there is one, the read-only
 * pages; else in one of their own).
 */
async function probing<T>(sql: Queryable, read: (q: Queryable) => Promise<T>): Promise<T> {
  if ('begin' in sql && typeof sql.begin === 'function') {
    return (await sql.begin('read only', async (tx) => {
      await tx`select set_config('jit', 'off', true)`;
      return read(tx);
    })) as T;
  }
  await sql`select set_config('jit', 'off', true)`;
  return read(sql);
}
