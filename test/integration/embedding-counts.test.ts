/**
 * The embeddings' figures as `status`, `/metrics` and the overview read them (issue #32,
 * migrations/0031): passages and vectors per model from counters every writer keeps, and the
 * backlog from the passages cut after the model's recorded coverage, so a read costs what was cut
 * since rather than the corpus. Each figure is checked against a count of the tables themselves.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEmbeddingsFacts } from '../../src/db/embeddings.ts';
import { embeddedModels, recordCoverage } from '../../src/db/semantic-search.ts';
import { createDb } from '../../src/db/connection.ts';
import { collectStatus } from '../../src/pipeline/read/status.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let database: TestDatabase;

/** Passages of the corpus once covered: enough that the planner reads the newest by their id. */
const CORPUS = 20_000;
/** Passages cut after the coverage was recorded, of which WAITING_TEXTS distinct texts lack a vector. */
const LATER = 12;
const WAITING_TEXTS = 8;

/** `n` passages of distinct texts `${prefix}-${i}` (two later ones share a text). */
async function cut(prefix: string, n: number, shared = 0): Promise<void> {
  await database.sql`
    insert into passages (kind, doc, lang, n, text, tokens, sha256)
    select 'transcript', ${prefix} || '-' || (i / 10), 'en', i % 10, 'text ' || i, 2,
      ${prefix} || '-' || (case when i < ${shared} then 0 else i end)
    from generate_series(0, ${n - 1}) as i`;
}

/** Vectors of `model` for the passages' texts whose sha256 starts with `prefix`. */
async function embed(model: string, prefix: string, dimensions = 3): Promise<void> {
  const vector = `[${Array.from({ length: dimensions }, (_, i) => i + 1).join(',')}]`;
  await database.sql`
    insert into embeddings (model, sha256, dimensions, embedding, tokens)
    select distinct ${model}::text, sha256, ${dimensions}::int, ${vector}::halfvec, 2 from passages where sha256 like ${`${prefix}-%`}
    on conflict (model, sha256) do update
      set dimensions = excluded.dimensions, embedding = excluded.embedding, embedded_at = now()
      where embeddings.dimensions <> excluded.dimensions`;
}

/** The facts counted from the tables themselves, as the build before the counters read them. */
async function counted(model: string) {
  const [r] = await database.sql<{ passages: number; covered: number; backlog: number }[]>`
    select count(*)::int as passages, count(e.sha256)::int as covered,
      count(distinct p.sha256) filter (where e.sha256 is null)::int as backlog
    from passages p left join embeddings e on e.model = ${model} and e.sha256 = p.sha256`;
  const models = await database.sql<{ model: string; texts: number }[]>`
    select model, count(*)::int as texts from embeddings group by model order by model`;
  return { ...r!, models: [...models] };
}

beforeAll(async () => {
  database = await createTestDatabase('embedding_counts');
});
afterAll(async () => {
  await database?.drop();
});

describe('the embeddings figures of status', () => {
  it('equal a count of the tables, and status reads only the passages cut since the model covered the corpus', async () => {
    const { sql } = database;
    const model = 'counted-model';
    await cut('c', CORPUS);
    await embed(model, 'c');
    expect(await recordCoverage(sql, model)).toBe(true);
    await cut('later', LATER, LATER - WAITING_TEXTS + 1);
    await sql`analyze passages`;

    // on a connection of its own, whose statistics count only the tuples the facts and the whole
    // of `status` read
    const reader = createDb(database.url, { max: 1 });
    const { facts, status, read } = await reader.sql
      .begin(async (tx) => {
        const facts = await readEmbeddingsFacts(tx, { model });
        const status = await collectStatus(tx, { embeddings: { model } });
        const [r] = await tx<{ n: number }[]>`
          select (seq_tup_read + coalesce(idx_tup_fetch, 0))::int as n from pg_stat_xact_user_tables where relname = 'passages'`;
        return { facts, status, read: r!.n };
      })
      .finally(() => reader.close());
    const truth = await counted(model);
    expect(truth).toMatchObject({ passages: CORPUS + LATER, covered: CORPUS, backlog: WAITING_TEXTS });
    expect(facts).toMatchObject({
      passages: truth.passages,
      covered: truth.covered,
      backlog: truth.backlog,
      models: truth.models,
    });
    expect(status.searchIndex.passages).toBe(truth.passages);
    expect(status.embeddings).toMatchObject({
      passages: truth.passages,
      covered: truth.covered,
      backlog: truth.backlog,
    });
    // the passages after the recorded coverage (twice: the facts, then status's), not the corpus
    expect(read).toBeLessThan(10 * LATER);

    // the waiting texts embedded: nothing waits, every passage covered
    await embed(model, 'later');
    expect(await readEmbeddingsFacts(sql, { model })).toMatchObject({
      passages: CORPUS + LATER,
      covered: CORPUS + LATER,
      backlog: 0,
    });
  });

  it('without a recorded coverage, counts every passage against the vectors', async () => {
    const model = 'never-recorded';
    await embed(model, 'c');
    const truth = await counted(model);
    expect(truth.backlog).toBe(WAITING_TEXTS);
    expect(await readEmbeddingsFacts(database.sql, { model })).toMatchObject({
      passages: truth.passages,
      covered: truth.covered,
      backlog: truth.backlog,
    });
  });

  it('keeps the counters through every writer: a change of dimensions, deletes, truncates, a table created again', async () => {
    const { sql } = database;
    const models = async () => (await readEmbeddingsFacts(sql, { model: 'any' })).models;
    await embed('moved-model', 'later', 3);
    await embed('moved-model', 'later', 4);
    expect(await models()).toEqual((await counted('any')).models);
    expect((await embeddedModels(sql)).slice(0, 1)).toEqual([{ model: 'moved-model', dimensions: 4 }]);

    await sql`delete from passages where sha256 like 'later-%'`;
    await sql`delete from embeddings where model = 'moved-model' and sha256 = 'later-0'`;
    expect(await readEmbeddingsFacts(sql, { model: 'counted-model' })).toMatchObject({
      passages: CORPUS,
      covered: CORPUS,
      backlog: 0,
      models: (await counted('any')).models,
    });
    expect(await embeddedModels(sql)).toContainEqual({ model: 'moved-model', dimensions: 4 });

    // vectors taken away take the model's recorded coverage with them
    await sql`truncate embeddings`;
    expect(await models()).toEqual([]);
    expect(await embeddedModels(sql)).toEqual([]);
    expect(await readEmbeddingsFacts(sql, { model: 'counted-model' })).toMatchObject({
      passages: CORPUS,
      covered: 0,
      backlog: CORPUS,
    });

    // a table created again (as embeddings_ensure() does where pgvector came after the migration)
    // gets its counters back, with the vectors it holds counted
    await sql`drop table embeddings`;
    await sql`select embeddings_ensure()`;
    await embed('again-model', 'c');
    expect(await models()).toEqual([{ model: 'again-model', texts: CORPUS }]);

    await sql`truncate passages`;
    expect(await readEmbeddingsFacts(sql, { model: 'again-model' })).toMatchObject({ passages: 0, covered: 0 });
  });

  it('where the counters could not be attached, counts the vectors themselves', async () => {
    const { sql } = database;
    await sql`drop trigger embeddings_count_insert on embeddings`;
    await cut('u', 5);
    await embed('unattached-model', 'u');
    const truth = await counted('unattached-model');
    expect(truth.models).toContainEqual({ model: 'unattached-model', texts: 5 });
    expect((await readEmbeddingsFacts(sql, { model: 'unattached-model' })).models).toEqual(truth.models);
    expect(await embeddedModels(sql)).toContainEqual({ model: 'unattached-model', dimensions: 3 });
  });
});
