/**
 * Embeddings (issue #32, migrations/*_embeddings.sql): vectors per (model, passage content hash)
 * in `embeddings` (pgvector's `halfvec`: 2 bytes a dimension), the claims that keep two embedders from paying for one text, the
 * tokens spent per UTC day and the budget's refusals. Every statement of the embedder, `status`
 * and search by meaning on these tables is here.
 *
 * For search (issue #32 part 2): a model's vectors are `embeddings.embedding` of the rows with
 * that `model` and `dimensions`; join `passages` on `sha256` (one vector serves every passage of
 * that text). `nearestEmbeddings` orders them by cosine distance through the model's HNSW index.
 */
import type postgres from 'postgres';
import { sha256Hex } from '../domain/passages.ts';
import type { Queryable } from './connection.ts';

/** The embedder's budget checks ('EM'), one at a time across processes. */
const EMBEDDING_LOCK_NAMESPACE = 0x454d;

/**
 * Whether vectors can be stored: `ready`, or why not: the server lacks pgvector
 * (`not-installed`), or this role may not create it (`not-permitted`).
 */
export const EMBEDDINGS_STORE_STATES = ['ready', 'not-installed', 'not-permitted'] as const;
export type EmbeddingsStoreState = (typeof EMBEDDINGS_STORE_STATES)[number];

/** What to tell people when vectors cannot be stored. */
export const STORE_HINTS: Readonly<Record<Exclude<EmbeddingsStoreState, 'ready'>, string>> = {
  'not-installed':
    'the Postgres server lacks the pgvector extension: install it (postgresql-15-pgvector, the pgvector/pgvector image, or scripts/install-pgvector.sh); text search works without it',
  'not-permitted':
    'pgvector is installed but this role may not create it: run CREATE EXTENSION vector as a superuser in this database; text search works without it',
};

/** Creates the extension and the table when possible (`embeddings_ensure()`); what is missing. */
export async function ensureEmbeddingsStore(sql: Queryable): Promise<EmbeddingsStoreState> {
  const [row] = await sql<{ state: EmbeddingsStoreState }[]>`select embeddings_ensure() as state`;
  return row!.state;
}

/**
 * Whether vectors can be stored, without creating anything (for `status`): `ready` (the table
 * is there), `not-installed` (the server lacks pgvector), or `not-created` (it has it: the first
 * embedder to start creates the extension, which needs a superuser).
 */
export async function readEmbeddingsStoreState(sql: Queryable): Promise<'ready' | 'not-installed' | 'not-created'> {
  const [row] = await sql<{ table: boolean; available: boolean }[]>`
    select to_regclass('embeddings') is not null as table,
           exists (select 1 from pg_available_extensions where name = 'vector') as available`;
  if (row!.table) return 'ready';
  return row!.available ? 'not-created' : 'not-installed';
}

/** A passage text to embed: its content hash, text and tokens (of one of the passages holding it). */
export interface TextToEmbed {
  sha256: string;
  text: string;
  tokens: number;
}

/** The vector space of a model: its name, and its dimensions when fixed (EMBEDDINGS_DIMENSIONS). */
export interface ModelSpace {
  model: string;
  dimensions?: number | undefined;
}

/**
 * Up to `max` passage texts without a vector of `space`, claimed for `ttlMs` (taken by no other
 * embedder meanwhile; a claim whose time is up, its embedder dead, is taken again). Two
 * embedders claiming at once never get the same text: the second's insert waits for the first's
 * and then finds its claim standing.
 *
 * The texts come in content-hash order, from the first after `after` (the last one this embedder
 * claimed; '' for the start): a walk from the start would step over every text already embedded,
 * each claim costing more as the corpus fills.
 */
export async function claimTexts(
  sql: Queryable,
  space: ModelSpace,
  max: number,
  ttlMs: number,
  after = '',
): Promise<TextToEmbed[]> {
  const dims = space.dimensions ?? null;
  return sql<TextToEmbed[]>`
    with cand as (
      select distinct p.sha256 from passages p
      where p.sha256 > ${after}
        and not exists (
          select 1 from embeddings e
          where e.model = ${space.model} and e.sha256 = p.sha256
            and (${dims}::int is null or e.dimensions = ${dims}::int))
        and not exists (
          select 1 from embedding_claims c
          where c.model = ${space.model} and c.sha256 = p.sha256 and c.expires_at > now())
      -- one order for every claimer: two inserting overlapping texts in different orders deadlocked
      order by p.sha256
      limit ${Math.max(1, max)}::int
    ), claimed as (
      insert into embedding_claims (model, sha256, expires_at)
      select ${space.model}, cand.sha256, now() + ${ttlMs}::int * interval '1 millisecond' from cand
      on conflict (model, sha256) do update
        set claimed_at = now(), expires_at = excluded.expires_at, error = null
        where embedding_claims.expires_at <= now()
      returning sha256
    )
    -- one passage of each text, through the content-hash index whatever the table's size
    select c.sha256, p.text, p.tokens
    from claimed c cross join lateral (
      select p.text, p.tokens from passages p where p.sha256 = c.sha256 limit 1) p
    order by c.sha256`;
}

/**
 * What decides whether a claim can find anything new for `model`: the newest passage, and the
 * model's live claims (a claim let go or lapsed changes them). Equal marks a moment apart, with
 * nothing found at the first, mean nothing to find at the second, without reading `passages`
 * against `embeddings`.
 */
export async function claimMark(sql: Queryable, model: string): Promise<string> {
  const [r] = await sql<{ mark: string }[]>`
    select concat_ws('/',
      (select max(id) from passages),
      (select count(*) from embedding_claims where model = ${model} and expires_at > now()),
      (select min(expires_at) from embedding_claims where model = ${model} and expires_at > now())) as mark`;
  return r!.mark;
}

/** Claims let go without a vector (the provider failed, or the budget refused): taken again next time. */
export async function releaseClaims(sql: Queryable, model: string, sha256s: readonly string[]): Promise<void> {
  if (sha256s.length === 0) return;
  await sql`delete from embedding_claims where model = ${model} and sha256 = any(${sha256s as string[]}::text[])`;
}

/** Texts the provider refused (a 4xx asking again cannot fix): left alone for `retryAfterMs`, the error kept. */
export async function failClaims(
  sql: Queryable,
  model: string,
  sha256s: readonly string[],
  error: string,
  retryAfterMs: number,
): Promise<void> {
  if (sha256s.length === 0) return;
  await sql`
    update embedding_claims set error = ${error}, expires_at = now() + ${retryAfterMs}::int * interval '1 millisecond'
    where model = ${model} and sha256 = any(${sha256s as string[]}::text[])`;
}

/** pgvector's text form of a vector (of `vector` and `halfvec` alike). */
export function vectorLiteral(v: readonly number[]): string {
  return `[${v.join(',')}]`;
}

/**
 * The vectors of claimed texts stored and their claims dropped, in one transaction: a crash
 * before it leaves the claims to lapse (the texts are embedded again), never a vector without
 * its claim gone or a claim without its vector.
 */
export async function storeVectors(
  sql: postgres.Sql,
  model: string,
  rows: readonly { sha256: string; vector: readonly number[]; tokens: number }[],
): Promise<void> {
  if (rows.length === 0) return;
  const shas = rows.map((r) => r.sha256);
  await sql.begin(async (tx) => {
    await tx`
      insert into embeddings (model, sha256, dimensions, embedding, tokens)
      select ${model}, r.sha256, r.dims, r.v::halfvec, r.tokens
      from unnest(${shas}::text[], ${rows.map((r) => r.vector.length)}::int[],
                  ${rows.map((r) => vectorLiteral(r.vector))}::text[], ${rows.map((r) => r.tokens)}::int[])
        as r(sha256, dims, v, tokens)
      on conflict (model, sha256) do update
        set dimensions = excluded.dimensions, embedding = excluded.embedding, tokens = excluded.tokens, embedded_at = now()
        where embeddings.dimensions <> excluded.dimensions`;
    await tx`delete from embedding_claims where model = ${model} and sha256 = any(${shas}::text[])`;
  });
}

/** The name of a model's HNSW index at `dimensions`: its hash, so any model name makes a valid one. */
export function hnswIndexName(model: string, dimensions: number): string {
  return `embeddings_hnsw_${sha256Hex(model).slice(0, 16)}_${dimensions}`;
}

/** The most dimensions pgvector's HNSW index takes on `halfvec`. */
export const HALFVEC_HNSW_DIMENSIONS_MAX = 4_000;

function checkedDimensions(dimensions: number): number {
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > HALFVEC_HNSW_DIMENSIONS_MAX) {
    throw new RangeError(`not a vector dimension: ${dimensions}`);
  }
  return dimensions;
}

/** A string as an SQL literal (standard_conforming_strings, on since Postgres 9.1). */
function literal(s: string): string {
  return `'${s.replaceAll("'", "''")}'`;
}

/**
 * The partial HNSW index of one model at `dimensions` (pgvector's way to index vectors of mixed
 * dimensions: an expression index on `embedding::halfvec(N)`, per model), built CONCURRENTLY when
 * missing (writes go on meanwhile); an invalid one (a build that was interrupted) is rebuilt.
 * Answers whether it built one.
 */
export async function ensureModelIndex(sql: postgres.Sql, model: string, dimensions: number): Promise<boolean> {
  const n = checkedDimensions(dimensions);
  const name = hnswIndexName(model, n);
  const [found] = await sql<{ valid: boolean }[]>`
    select i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid
    where c.relname = ${name} and pg_table_is_visible(c.oid)`;
  if (found?.valid) return false;
  if (found) await sql.unsafe(`drop index concurrently if exists "${name}"`);
  await sql.unsafe(
    `create index concurrently if not exists "${name}" on embeddings ` +
      `using hnsw ((embedding::halfvec(${n})) halfvec_cosine_ops) ` +
      `where model = ${literal(model)} and dimensions = ${n}`,
  );
  return true;
}

/**
 * The `limit` vectors of `model` at `dimensions` nearest to `query` by cosine distance (0: same
 * direction, 2: opposite), nearest first, through the model's HNSW index (approximate, as HNSW
 * is: `hnsw.ef_search`, 40 by default, bounds how many it can return).
 */
export async function nearestEmbeddings(
  sql: Queryable,
  model: string,
  dimensions: number,
  query: readonly number[],
  limit: number,
): Promise<{ sha256: string; distance: number }[]> {
  const n = checkedDimensions(dimensions);
  const cast = sql.unsafe(`::halfvec(${n})`);
  return sql<{ sha256: string; distance: number }[]>`
    select sha256, (embedding${cast} <=> ${vectorLiteral(query)}${cast}) as distance
    from embeddings
    where model = ${model} and dimensions = ${n}
    order by embedding${cast} <=> ${vectorLiteral(query)}${cast}
    limit ${limit}::int`;
}

/** A budget check's answer: how many of the texts asked for fit (a prefix), and the day's tokens before. */
export interface TokenGrant {
  /** the UTC day the tokens are counted in (`settleTokens` corrects that day) */
  day: string;
  granted: number;
  spentBefore: number;
}

/**
 * Tokens counted before a request: the longest prefix of `tokens` (one count per text) that
 * keeps the day's tokens of every model within `budget` (undefined: no budget), added to today's
 * `embedding_usage` of `model` with one request. None fitting is recorded in
 * `embedding_refusals`. One check at a time across processes (an advisory lock), so two
 * embedders never both spend the last of the budget.
 */
export async function reserveTokens(
  sql: postgres.Sql,
  model: string,
  tokens: readonly number[],
  budget: number | undefined,
): Promise<TokenGrant> {
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${EMBEDDING_LOCK_NAMESPACE}, 0)`;
    const [today] = await tx<{ day: string; spent: number }[]>`
      select (now() at time zone 'utc')::date::text as day,
             coalesce((select sum(tokens) from embedding_usage where day = (now() at time zone 'utc')::date), 0)::float8 as spent`;
    const { day, spent } = today!;
    let granted = 0;
    let sum = 0;
    for (const t of tokens) {
      if (budget !== undefined && spent + sum + t > budget) break;
      sum += t;
      granted++;
    }
    if (granted === 0) {
      await tx`
        insert into embedding_refusals (day, model, tokens_asked, tokens_spent, budget)
        values (${day}::date, ${model}, ${tokens[0] ?? 0}, ${spent}, ${budget ?? 0})
        on conflict (day, model) do update
          set refusals = embedding_refusals.refusals + 1, last_at = now(),
              tokens_asked = excluded.tokens_asked, tokens_spent = excluded.tokens_spent, budget = excluded.budget`;
    } else {
      await tx`
        insert into embedding_usage (day, model, tokens, requests, inputs)
        values (${day}::date, ${model}, ${sum}, 1, ${granted})
        on conflict (day, model) do update
          set tokens = embedding_usage.tokens + excluded.tokens, requests = embedding_usage.requests + 1,
              inputs = embedding_usage.inputs + excluded.inputs`;
    }
    return { day, granted, spentBefore: spent };
  }) as Promise<TokenGrant>;
}

/**
 * A reservation corrected after the answer: `tokenDelta` (the billed count minus the estimate, or
 * minus the whole estimate when nothing was billed) and `inputDelta`, on the day it was counted.
 */
export async function settleTokens(
  sql: Queryable,
  model: string,
  day: string,
  tokenDelta: number,
  inputDelta = 0,
): Promise<void> {
  if (tokenDelta === 0 && inputDelta === 0) return;
  await sql`
    update embedding_usage set tokens = greatest(0, tokens + ${tokenDelta}), inputs = greatest(0, inputs + ${inputDelta})
    where day = ${day}::date and model = ${model}`;
}

/**
 * A search query's embedding, counted after it was answered: its tokens and one request added to
 * today's usage of `model`. Queries are never refused by the budget (someone waits for the
 * answer), but what they cost is in the day's figures.
 */
export async function recordQueryTokens(sql: Queryable, model: string, tokens: number): Promise<void> {
  await sql`
    insert into embedding_usage (day, model, tokens, requests, inputs)
    values ((now() at time zone 'utc')::date, ${model}, ${tokens}, 1, 0)
    on conflict (day, model) do update
      set tokens = embedding_usage.tokens + excluded.tokens, requests = embedding_usage.requests + 1`;
}

/** What `status`, `/metrics` and the overview show of one model's embeddings. */
export interface EmbeddingsFacts {
  model: string;
  /** passages, and those whose text has a vector of the model */
  passages: number;
  covered: number;
  /** distinct texts without a vector (what the embedder has yet to send) */
  backlog: number;
  /** texts the provider refused (a 4xx), not asked again for now */
  failed: number;
  /** today (UTC): tokens of every model, and this model's requests */
  tokensToday: number;
  requestsToday: number;
  /** today's budget refusals of this model (0: none) */
  refusedToday: number;
  /** every model with vectors, and how many texts each covers */
  models: { model: string; texts: number }[];
}

/**
 * The embeddings facts of `space`; the table must exist (`readEmbeddingsStoreState`). Passages
 * and vectors per model come from the counters of migrations/0031; the backlog is read from the
 * passages after the model's recorded coverage (`embedding_coverage`: every passage up to it had
 * a vector, and vectors are never taken back), so a model that once covered the corpus costs a
 * read of what was cut since, not of the corpus. A model never recorded is read against every
 * passage. Without the counters' triggers on `embeddings` (a role that could not attach them),
 * the vectors are counted here.
 */
export async function readEmbeddingsFacts(sql: Queryable, space: ModelSpace): Promise<EmbeddingsFacts> {
  const dims = space.dimensions ?? null;
  // read first, so that the planner sees the id (an index scan of the newest passages, each
  // probed against the model's vectors) rather than a third of the table (a scan of both)
  const [since] = await sql<{ through: number }[]>`
    select coalesce((
      select through_passage_id from embedding_coverage
      where model = ${space.model} and dimensions = coalesce(${dims}::int, 0)), 0)::float8 as through`;
  const [row] = await sql<(Omit<EmbeddingsFacts, 'model' | 'models'> & { counted: boolean })[]>`
    with waiting as (
      select count(*) as passages, count(distinct p.sha256) as texts
      from passages p
      where p.id > ${since!.through}::bigint and not exists (
        select 1 from embeddings e
        where e.model = ${space.model} and e.sha256 = p.sha256 and (${dims}::int is null or e.dimensions = ${dims}::int))
    ),
    stored as (select coalesce(sum(passages), 0) as passages from passage_counts)
    select
      (select passages from stored)::int as passages,
      ((select passages from stored) - (select passages from waiting))::int as covered,
      (select texts from waiting)::int as backlog,
      (select count(*) from embedding_claims where model = ${space.model} and error is not null and expires_at > now())::int as failed,
      (select coalesce(sum(tokens), 0) from embedding_usage where day = (now() at time zone 'utc')::date)::float8 as "tokensToday",
      (select coalesce(sum(requests), 0) from embedding_usage
        where day = (now() at time zone 'utc')::date and model = ${space.model})::int as "requestsToday",
      (select coalesce(sum(refusals), 0) from embedding_refusals
        where day = (now() at time zone 'utc')::date and model = ${space.model})::int as "refusedToday",
      exists (select 1 from pg_trigger
        where tgrelid = to_regclass('embeddings') and tgname = 'embeddings_count_insert') as counted`;
  const { counted, ...facts } = row!;
  const models = counted
    ? await sql<{ model: string; texts: number }[]>`
        select model, sum(texts)::int as texts from embedding_counts group by model having sum(texts) > 0 order by model`
    : await sql<{ model: string; texts: number }[]>`
        select model, count(*)::int as texts from embeddings group by model order by model`;
  return { model: space.model, ...facts, models: [...models] };
}
