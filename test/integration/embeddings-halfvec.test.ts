/**
 * Embeddings stored as halfvec (migrations/*_embeddings_halfvec.sql): a table of `vector`s with
 * their per-model HNSW indexes, as the first embeddings migration made it, is converted in place,
 * each index built again on halfvec under its name, and both models' vectors (of different
 * dimensions) answer the same nearest neighbours as before; run again, the migration changes
 * nothing. And the dimensions asked of a model when EMBEDDINGS_DIMENSIONS is unset.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMBEDDINGS_DIMENSIONS_DEFAULT, loadConfig } from '../../src/config.ts';
import { hnswIndexName, nearestEmbeddings, storeVectors, vectorLiteral } from '../../src/db/embeddings.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const MIGRATIONS = join(import.meta.dirname, '../../migrations');
const HALFVEC_MIGRATION = readdirSync(MIGRATIONS).find((f) => f.endsWith('_embeddings_halfvec.sql'))!;

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase('embeddings_halfvec');
});
afterAll(async () => {
  await database?.drop();
});

/** A unit vector of `dims` dimensions from a seed: mostly along axis `seed % dims`. */
function unit(seed: number, dims: number): number[] {
  const v = Array.from({ length: dims }, (_, i) => Math.sin(seed * 12.9898 + i * 78.233) * 0.1);
  v[seed % dims]! += 1;
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

const MODELS = [
  { model: 'old-model', dims: 48 },
  { model: 'new-model', dims: 24 },
];
const TEXTS = 30;

async function runHalfvecMigration(): Promise<void> {
  const text = readFileSync(join(MIGRATIONS, HALFVEC_MIGRATION), 'utf8');
  await database.sql.begin(async (tx) => {
    for (const statement of text.split('--> statement-breakpoint')) await tx.unsafe(statement);
  });
}

async function indexDefinitions(): Promise<Map<string, string>> {
  const rows = await database.sql<{ name: string; def: string; valid: boolean }[]>`
    select c.relname as name, pg_get_indexdef(i.indexrelid) as def, i.indisvalid as valid
    from pg_index i join pg_class c on c.oid = i.indexrelid
    where i.indrelid = 'embeddings'::regclass and c.relname like 'embeddings\\_hnsw\\_%'`;
  expect(rows.every((r) => r.valid)).toBe(true);
  return new Map(rows.map((r) => [r.name, r.def]));
}

describe('embeddings as halfvec', () => {
  it('converts a table of vectors and its HNSW indexes; the same neighbours answer, at either dimension', async () => {
    const { sql } = database;
    // the table as migrations/*_embeddings.sql made it, with a vector index per model
    await sql`drop table embeddings`;
    await sql`create table embeddings (
      model text not null, sha256 text not null, dimensions integer not null, embedding vector not null,
      tokens integer not null, embedded_at timestamptz default now() not null, primary key (model, sha256))`;
    for (const { model, dims } of MODELS) {
      const rows = Array.from({ length: TEXTS }, (_, i) => ({ sha: `${model}-${i}`, v: vectorLiteral(unit(i, dims)) }));
      await sql`insert into embeddings (model, sha256, dimensions, embedding, tokens)
        select ${model}, r.sha, ${dims}, r.v::vector, 5 from unnest(${rows.map((r) => r.sha)}::text[], ${rows.map((r) => r.v)}::text[]) r(sha, v)`;
      await sql.unsafe(
        `create index "${hnswIndexName(model, dims)}" on embeddings using hnsw ((embedding::vector(${dims})) vector_cosine_ops) where model = '${model}' and dimensions = ${dims}`,
      );
    }
    const before = new Map<string, string[]>();
    for (const { model, dims } of MODELS) {
      const near = await sql.unsafe<{ sha256: string }[]>(
        `select sha256 from embeddings where model = $1
         order by embedding::vector(${dims}) <=> $2::vector(${dims}) limit 5`,
        [model, vectorLiteral(unit(7, dims))],
      );
      before.set(
        model,
        near.map((r) => r.sha256),
      );
    }

    await runHalfvecMigration();

    const [col] = await sql<{ type: string }[]>`
      select format_type(atttypid, atttypmod) as type from pg_attribute
      where attrelid = 'embeddings'::regclass and attname = 'embedding'`;
    expect(col!.type).toBe('halfvec');
    const defs = await indexDefinitions();
    expect([...defs.keys()].sort()).toEqual(MODELS.map((m) => hnswIndexName(m.model, m.dims)).sort());
    for (const def of defs.values()) expect(def).toMatch(/halfvec_cosine_ops/);
    for (const { model, dims } of MODELS) {
      const near = await nearestEmbeddings(sql, model, dims, unit(7, dims), 5);
      expect(near.map((r) => r.sha256)).toEqual(before.get(model));
      expect(near[0]!.distance).toBeLessThan(0.01);
    }
    // the plan goes through the model's index
    await sql.begin(async (tx) => {
      await tx`set local enable_seqscan = off`;
      const plan = await tx.unsafe(
        `explain select sha256 from embeddings where model = 'new-model' and dimensions = 24
         order by embedding::halfvec(24) <=> '${vectorLiteral(unit(3, 24))}'::halfvec(24) limit 5`,
      );
      expect(plan.map((r) => Object.values(r)[0]).join('\n')).toContain(hnswIndexName('new-model', 24));
    });

    // again: nothing to convert, nothing dropped
    await runHalfvecMigration();
    expect(await indexDefinitions()).toEqual(defs);

    // and the embedder's writes go on
    await storeVectors(sql, 'new-model', [{ sha256: 'new-model-x', vector: unit(99, 24), tokens: 3 }]);
    expect((await nearestEmbeddings(sql, 'new-model', 24, unit(99, 24), 1))[0]!.sha256).toBe('new-model-x');
  });
});

describe('the dimensions asked of a model', () => {
  const env = (more: Record<string, string>) =>
    loadConfig({ DATABASE_URL: 'postgres://127.0.0.1/x', EMBEDDINGS_BASE_URL: 'http://127.0.0.1:1', ...more })
      .embeddings!.dimensions;

  it("are the default for OpenAI's text-embedding-3 models, the model's own for others, EMBEDDINGS_DIMENSIONS when set", () => {
    expect(env({})).toBe(EMBEDDINGS_DIMENSIONS_DEFAULT);
    expect(env({ EMBEDDINGS_MODEL: 'text-embedding-3-large' })).toBe(EMBEDDINGS_DIMENSIONS_DEFAULT);
    expect(env({ EMBEDDINGS_MODEL: 'nomic-embed-text' })).toBeUndefined();
    expect(env({ EMBEDDINGS_MODEL: 'text-embedding-ada-002' })).toBeUndefined();
    expect(env({ EMBEDDINGS_DIMENSIONS: '1536' })).toBe(1536);
    expect(env({ EMBEDDINGS_MODEL: 'nomic-embed-text', EMBEDDINGS_DIMENSIONS: '256' })).toBe(256);
    expect(env({ EMBEDDINGS_DIMENSIONS: '4000' })).toBe(4000);
    expect(() => env({ EMBEDDINGS_DIMENSIONS: '4001' })).toThrow();
  });
});
