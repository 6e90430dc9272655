/**
 * Search by meaning (issue #32): the passages whose vectors of one model are nearest a query's,
 * with the filters of text search, through the model's partial HNSW index (src/db/embeddings.ts);
 * which models cover every passage (the choice of the model in use,
 * src/pipeline/read/search-model.ts); and the passage a text hit falls in, so hybrid search
 * counts a place found both ways once.
 */
import type { Queryable } from './connection.ts';
import { HALFVEC_HNSW_DIMENSIONS_MAX, vectorLiteral } from './embeddings.ts';
import type { PassageKind } from '../domain/passages.ts';

/** `hnsw.ef_search`'s default and most (pgvector): a scan cannot return more candidates than it. */
const EF_SEARCH_DEFAULT = 40;
const EF_SEARCH_MAX = 1_000;

export interface NearestFilter {
  model: string;
  dimensions: number;
  vector: readonly number[];
  kinds: readonly PassageKind[];
  /** only what this source holds */
  sourceId?: number | undefined;
  /** only transcripts in this language */
  lang?: string | undefined;
  /** only videos of this channel */
  channelId?: string | undefined;
  limit: number;
}

/** A passage near the query, with what a hit of its kind shows. */
export interface NearPassage {
  id: number;
  kind: PassageKind;
  doc: string;
  lang: string;
  n: number;
  text: string;
  startS: number | null;
  endS: number | null;
  headings: string[] | null;
  anchor: string | null;
  /** cosine distance to the query: 0 same direction, 2 opposite */
  distance: number;
  /** transcripts: the video's; pages: the page's name; media: the item's */
  title: string | null;
  channelId: string | null;
  channelName: string | null;
  origin: string | null;
  translatedFrom: string | null;
  platform: string | null;
  type: string | null;
  author: string | null;
}

/**
 * The `limit` passages nearest the query among those the filters keep, nearest first. A filter
 * drops candidates after the index scan found them, so the scan goes on past its first
 * `ef_search` candidates until enough are kept (pgvector 0.8's iterative scan, `relaxed_order`:
 * re-sorted here). Over-fetching a fixed multiple and filtering after would return fewer hits
 * than asked whenever the filter keeps a small share of the corpus (one source, one language).
 * Runs in a transaction of its own, or in the caller's.
 */
export async function nearestPassages(sql: Queryable, f: NearestFilter): Promise<NearPassage[]> {
  const n = f.dimensions;
  if (!Number.isInteger(n) || n < 1 || n > HALFVEC_HNSW_DIMENSIONS_MAX)
    throw new RangeError(`not a vector dimension: ${n}`);
  const cast = sql.unsafe(`::halfvec(${n})`);
  const q = vectorLiteral(f.vector);
  const efSearch = Math.min(EF_SEARCH_MAX, Math.max(EF_SEARCH_DEFAULT, f.limit));
  const kept = (p: string) => {
    const alias = sql.unsafe(p);
    return sql`${alias}.kind = any(${[...f.kinds]}::text[])
      ${f.lang !== undefined ? sql`and ${alias}.lang = ${f.lang}::text` : sql``}
      ${f.channelId !== undefined ? sql`and exists (select 1 from videos cv where cv.id = ${alias}.doc and cv.channel_id = ${f.channelId}::text)` : sql``}
      ${
        f.sourceId !== undefined
          ? sql`and (exists (select 1 from source_videos sv where sv.source_id = ${f.sourceId}::int and sv.video_id = ${alias}.doc and ${alias}.kind = 'transcript')
              or exists (select 1 from source_pages sp where sp.source_id = ${f.sourceId}::int and sp.url = ${alias}.doc and ${alias}.kind = 'page')
              or exists (select 1 from source_media sm where sm.source_id = ${f.sourceId}::int and sm.url = ${alias}.doc and ${alias}.kind = 'media'))`
          : sql``
      }
      and not exists (select 1 from pages gp where ${alias}.kind = 'page' and gp.url = ${alias}.doc and gp.gone_at is not null)`;
  };
  const run = async (tx: Queryable) => {
    await tx`select set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', ${String(efSearch)}, true)`;
    return tx<NearPassage[]>`
      with nearest as materialized (
        select e.sha256, (e.embedding${cast} <=> ${q}${cast}) as distance
        from embeddings e
        where e.model = ${f.model} and e.dimensions = ${n}::int
          and exists (select 1 from passages p where p.sha256 = e.sha256 and ${kept('p')})
        order by e.embedding${cast} <=> ${q}${cast}
        limit ${f.limit}::int
      )
      select p.id::float8 as id, p.kind, p.doc, p.lang, p.n, p.text, p.start_s as "startS", p.end_s as "endS",
        p.headings, p.anchor, nr.distance::float8 as distance,
        coalesce(v.title, pg.name, md.title) as title, v.channel_id as "channelId", v.channel_name as "channelName",
        case when p.kind = 'transcript' then coalesce(tr.origin, 'captions') end as origin,
        tr.translated_from as "translatedFrom", md.platform, md.type,
        coalesce(md.author_username, md.author_display_name) as author
      from nearest nr
        join passages p on p.sha256 = nr.sha256 and ${kept('p')}
        left join videos v on p.kind = 'transcript' and v.id = p.doc
        left join transcripts tr on p.kind = 'transcript' and tr.video_id = p.doc and tr.lang = p.lang
        left join pages pg on p.kind = 'page' and pg.url = p.doc
        left join media md on p.kind = 'media' and md.url = p.doc
      order by nr.distance, p.kind, p.doc, p.lang, p.n
      limit ${f.limit}::int`;
  };
  if ('savepoint' in sql) return run(sql);
  return (sql as Exclude<Queryable, { savepoint: unknown }>).begin(run) as Promise<NearPassage[]>;
}

/** A place a text hit names: a transcript's moment, a page's section, a media item's moment. */
export interface TextPlace {
  kind: PassageKind;
  doc: string;
  lang: string;
  seconds: number | null;
  anchor: string | null;
}

/**
 * The passage each place falls in (its id), or null: the first passage of that document whose
 * moments hold the second (passages overlap: the earlier one), or the first of the section.
 */
export async function passagesOfPlaces(sql: Queryable, places: readonly TextPlace[]): Promise<(number | null)[]> {
  if (places.length === 0) return [];
  const rows = await sql<{ i: number; id: number | null }[]>`
    select x.i, (
        select p.id::float8 from passages p
        where p.kind = x.kind and p.doc = x.doc
          and case when x.kind = 'page'
            then p.anchor is not distinct from x.anchor
            else p.lang = x.lang and x.s is not null and p.start_s <= x.s and x.s < coalesce(p.end_s, 'infinity')
          end
        order by p.n limit 1) as id
    from jsonb_to_recordset(${sql.json(places.map((p, i) => ({ i, kind: p.kind, doc: p.doc, lang: p.lang, s: p.seconds, anchor: p.anchor })))}::jsonb)
      as x(i int, kind text, doc text, lang text, s float8, anchor text)`;
  const out = new Array<number | null>(places.length).fill(null);
  for (const r of rows) out[r.i] = r.id;
  return out;
}

/**
 * Whether `model` (at `dimensions`, or any) covers the corpus: it has once had a vector of every
 * passage (`embedding_coverage`, written by an embedder), or, never recorded, it has one now
 * (read against every passage until one lacks it). A text the provider refused (its claim holds
 * the error) counts as covered: asking again the next day cannot keep the model from search.
 */
export async function modelCoversPassages(sql: Queryable, model: string, dimensions?: number): Promise<boolean> {
  const dims = dimensions ?? null;
  // the record first, on its own: planned in one statement with it, the read of every passage
  // (never run when the record is there) is costly enough at scale that the planner compiles the
  // statement with JIT, which takes longer than any answer
  const [recorded] = await sql<{ yes: boolean }[]>`
    select exists (
      select 1 from embedding_coverage where model = ${model} and dimensions = coalesce(${dims}::int, 0)
    ) as yes`;
  if (recorded!.yes) return true;
  const [r] = await sql<{ covers: boolean }[]>`
    select not exists (
      select 1 from passages p
      where not exists (
          select 1 from embeddings e
          where e.model = ${model} and e.sha256 = p.sha256 and (${dims}::int is null or e.dimensions = ${dims}::int))
        and not exists (
          select 1 from embedding_claims c where c.model = ${model} and c.sha256 = p.sha256 and c.error is not null)
    ) as covers`;
  return r!.covers;
}

/**
 * Records that `model` covers the corpus when every passage now has a vector of it or was refused
 * by the provider (one read of every passage, made by an idle embedder until it is true once);
 * returns whether it does.
 */
export async function recordCoverage(sql: Queryable, model: string, dimensions?: number): Promise<boolean> {
  const dims = dimensions ?? null;
  const rows = await sql<{ through: number }[]>`
    with look as (
      select coalesce((select max(id) from passages), 0) as through, not exists (
        select 1 from passages p
        where not exists (
            select 1 from embeddings e
            where e.model = ${model} and e.sha256 = p.sha256 and (${dims}::int is null or e.dimensions = ${dims}::int))
          and not exists (
            select 1 from embedding_claims c where c.model = ${model} and c.sha256 = p.sha256 and c.error is not null)
      ) as covers
    )
    insert into embedding_coverage (model, dimensions, through_passage_id)
    select ${model}, coalesce(${dims}::int, 0), through from look where covers
    on conflict (model, dimensions) do update
      set through_passage_id = greatest(embedding_coverage.through_passage_id, excluded.through_passage_id),
          checked_at = now()
    returning through_passage_id::float8 as through`;
  return rows.length > 0;
}

/**
 * Every (model, dimensions) with vectors, the most recently embedded first: from the counters of
 * migrations/0031, or, where their triggers are not attached, from the vectors themselves.
 */
export async function embeddedModels(sql: Queryable): Promise<{ model: string; dimensions: number }[]> {
  // two statements: one plan holding both branches is costed with the pass over every vector,
  // which may cross jit_above_cost even when the counters answer
  const [counted] = await sql<{ yes: boolean }[]>`
    select exists (select 1 from pg_trigger
      where tgrelid = to_regclass('embeddings') and tgname = 'embeddings_count_insert') as yes`;
  return counted!.yes
    ? sql<{ model: string; dimensions: number }[]>`
        select model, dimensions from embedding_counts
        group by model, dimensions having sum(texts) > 0
        order by max(last_embedded_at) desc nulls last, model`
    : sql<{ model: string; dimensions: number }[]>`
        select model, dimensions from embeddings
        group by model, dimensions
        order by max(embedded_at) desc nulls last, model`;
}
