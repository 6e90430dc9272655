-- vsi: backward-compatible
-- Embeddings stored as pgvector's `halfvec` (2 bytes a dimension instead of 4; HNSW up to 4000
-- dimensions), their per-model HNSW indexes on `embedding::halfvec(N)` with halfvec_cosine_ops.
-- Compatible: an older build writes `vector` values (cast implicitly to halfvec) and reads
-- through `embedding::vector(N)` (an explicit cast: right answers, without the index).
-- Where pgvector is absent nothing changes: embeddings_ensure() creates the halfvec table when
-- the extension arrives.
CREATE OR REPLACE FUNCTION "embeddings_ensure"() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  IF to_regclass('embeddings') IS NOT NULL THEN
    RETURN 'ready';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') THEN
    IF NOT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
      RETURN 'not-installed';
    END IF;
    BEGIN
      CREATE EXTENSION IF NOT EXISTS vector;
    EXCEPTION
      WHEN insufficient_privilege THEN RETURN 'not-permitted';
      -- another process created it at the same moment
      WHEN unique_violation THEN NULL;
    END;
  END IF;
  BEGIN
    -- the type is resolved only now: the function itself is created without pgvector
    EXECUTE $ddl$
      CREATE TABLE IF NOT EXISTS "embeddings" (
      	"model" text NOT NULL,
      	"sha256" text NOT NULL,
      	"dimensions" integer NOT NULL,
      	"embedding" halfvec NOT NULL,
      	"tokens" integer NOT NULL,
      	"embedded_at" timestamp with time zone DEFAULT now() NOT NULL,
      	CONSTRAINT "embeddings_model_sha256_pk" PRIMARY KEY("model","sha256")
      );
    $ddl$;
  EXCEPTION
    WHEN unique_violation THEN NULL;
  END;
  RETURN 'ready';
END
$$;
--> statement-breakpoint
-- An existing table of `vector`s: its HNSW indexes dropped (an expression index on
-- `embedding::vector(N)` cannot follow the column's new type), the column converted, and each
-- dropped index built again on halfvec under its name (src/db/embeddings.ts hnswIndexName).
DO $$
DECLARE
  ix record;
BEGIN
  -- no table (pgvector absent), or already halfvec
  IF NOT EXISTS (
    SELECT 1 FROM pg_attribute a
    WHERE a.attrelid = to_regclass('embeddings') AND a.attname = 'embedding'
      AND format_type(a.atttypid, a.atttypmod) = 'vector'
  ) THEN
    RETURN;
  END IF;
  CREATE TEMP TABLE "embeddings_hnsw_rebuild" ON COMMIT DROP AS
    SELECT c.relname AS name, s.model, s.dimensions
    FROM pg_index i
      JOIN pg_class c ON c.oid = i.indexrelid
      JOIN (SELECT DISTINCT model, dimensions FROM embeddings) s
        ON c.relname = 'embeddings_hnsw_' || left(encode(sha256(convert_to(s.model, 'UTF8')), 'hex'), 16) || '_' || s.dimensions
    WHERE i.indrelid = 'embeddings'::regclass;
  FOR ix IN SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    WHERE i.indrelid = 'embeddings'::regclass AND c.relname LIKE 'embeddings\_hnsw\_%'
  LOOP
    EXECUTE format('DROP INDEX %I', ix.name);
  END LOOP;
  ALTER TABLE "embeddings" ALTER COLUMN "embedding" TYPE halfvec USING "embedding"::halfvec;
  FOR ix IN SELECT * FROM "embeddings_hnsw_rebuild" WHERE dimensions BETWEEN 1 AND 4000 LOOP
    EXECUTE format(
      'CREATE INDEX %I ON embeddings USING hnsw ((embedding::halfvec(%s)) halfvec_cosine_ops) WHERE model = %L AND dimensions = %s',
      ix.name, ix.dimensions, ix.model, ix.dimensions);
  END LOOP;
END
$$;
