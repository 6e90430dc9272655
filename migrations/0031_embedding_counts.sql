-- vsi: backward-compatible
-- Counters of passages and of each model's vectors, kept by triggers on `passages` and
-- `embeddings` (issue #32): `status`, `/metrics` and the overview counted the embeddings' coverage
-- by reading every passage against the model's vectors, and listed the models by grouping every
-- vector, on every read: a cost that grew with the corpus. Now they read these counters, and only
-- the passages after the model's recorded coverage (`embedding_coverage`). Additive: an older build
-- writes passages and vectors as before and the triggers count them.
CREATE TABLE "embedding_counts" (
	"model" text NOT NULL,
	"dimensions" integer NOT NULL,
	"shard" smallint NOT NULL,
	"texts" bigint DEFAULT 0 NOT NULL,
	"last_embedded_at" timestamp with time zone,
	CONSTRAINT "embedding_counts_model_dimensions_shard_pk" PRIMARY KEY("model","dimensions","shard")
);
--> statement-breakpoint
CREATE TABLE "passage_counts" (
	"shard" smallint PRIMARY KEY NOT NULL,
	"passages" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
-- A statement adds to one of 16 shards, that of its connection, as page_counts_add
-- (migrations/0019) does: writers side by side seldom wait on one row; readers sum them.
CREATE FUNCTION "passages_count_changes"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  d bigint;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE passage_counts SET passages = 0 WHERE passages <> 0;
    RETURN NULL;
  ELSIF TG_OP = 'INSERT' THEN
    SELECT count(*) INTO d FROM new_rows;
  ELSE
    SELECT -count(*) INTO d FROM old_rows;
  END IF;
  IF d <> 0 THEN
    INSERT INTO passage_counts AS c (shard, passages) VALUES (pg_backend_pid() % 16, d)
    ON CONFLICT (shard) DO UPDATE SET passages = c.passages + excluded.passages;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "passages_count_insert" AFTER INSERT ON "passages"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION passages_count_changes();
--> statement-breakpoint
CREATE TRIGGER "passages_count_delete" AFTER DELETE ON "passages"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION passages_count_changes();
--> statement-breakpoint
CREATE TRIGGER "passages_count_truncate" AFTER TRUNCATE ON "passages"
  FOR EACH STATEMENT EXECUTE FUNCTION passages_count_changes();
--> statement-breakpoint
-- The triggers above lock `passages` against writers until this migration commits, so the
-- backfill counts every row exactly once.
INSERT INTO passage_counts (shard, passages) SELECT 0, count(*) FROM passages;
--> statement-breakpoint
-- A change of dimensions (the embedder's upsert) moves a vector from one (model, dimensions) to
-- another: an update counts as the old row gone and the new one added. A model's recorded
-- coverage (`embedding_coverage`: every passage up to an id had a vector) holds while its vectors
-- stay; vectors taken away (by hand: no build deletes them) take the record with them, and the
-- next idle embedder records it again once true.
CREATE FUNCTION "embeddings_count_changes"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE embedding_counts SET texts = 0 WHERE texts <> 0;
    DELETE FROM embedding_coverage;
    RETURN NULL;
  ELSIF TG_OP = 'INSERT' THEN
    INSERT INTO embedding_counts AS c (model, dimensions, shard, texts, last_embedded_at)
    SELECT model, dimensions, pg_backend_pid() % 16, count(*), max(embedded_at) FROM new_rows GROUP BY model, dimensions
    ON CONFLICT (model, dimensions, shard) DO UPDATE
      SET texts = c.texts + excluded.texts, last_embedded_at = greatest(c.last_embedded_at, excluded.last_embedded_at);
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO embedding_counts AS c (model, dimensions, shard, texts, last_embedded_at)
    SELECT model, dimensions, pg_backend_pid() % 16, sum(d), max(at) FROM (
      SELECT model, dimensions, 1 AS d, embedded_at AS at FROM new_rows
      UNION ALL
      SELECT model, dimensions, -1, NULL FROM old_rows
    ) AS moved GROUP BY model, dimensions
    ON CONFLICT (model, dimensions, shard) DO UPDATE
      SET texts = c.texts + excluded.texts,
        last_embedded_at = greatest(c.last_embedded_at, excluded.last_embedded_at);
    DELETE FROM embedding_coverage c USING old_rows o WHERE c.model = o.model AND c.dimensions = o.dimensions;
  ELSE
    INSERT INTO embedding_counts AS c (model, dimensions, shard, texts)
    SELECT model, dimensions, pg_backend_pid() % 16, -count(*) FROM old_rows GROUP BY model, dimensions
    ON CONFLICT (model, dimensions, shard) DO UPDATE SET texts = c.texts + excluded.texts;
    DELETE FROM embedding_coverage c WHERE c.model IN (SELECT model FROM old_rows);
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- The counters' triggers on `embeddings`, which exists only once pgvector does (it may be created
-- after this migration, by embeddings_ensure()): attached once, the table locked against writers
-- while its vectors are counted. A role that may not add triggers to the table leaves them
-- unattached; readers then count the vectors themselves (src/db/embeddings.ts).
CREATE FUNCTION "embedding_counts_attach"() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF to_regclass('embeddings') IS NULL OR EXISTS (
    SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass('embeddings') AND tgname = 'embeddings_count_insert'
  ) THEN
    RETURN;
  END IF;
  LOCK TABLE embeddings IN SHARE ROW EXCLUSIVE MODE;
  -- another process attached them while this one waited for the lock
  IF EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'embeddings'::regclass AND tgname = 'embeddings_count_insert') THEN
    RETURN;
  END IF;
  CREATE TRIGGER "embeddings_count_insert" AFTER INSERT ON "embeddings"
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION embeddings_count_changes();
  CREATE TRIGGER "embeddings_count_update" AFTER UPDATE ON "embeddings"
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION embeddings_count_changes();
  CREATE TRIGGER "embeddings_count_delete" AFTER DELETE ON "embeddings"
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION embeddings_count_changes();
  CREATE TRIGGER "embeddings_count_truncate" AFTER TRUNCATE ON "embeddings"
    FOR EACH STATEMENT EXECUTE FUNCTION embeddings_count_changes();
  DELETE FROM embedding_counts;
  -- a table created again (its vectors gone with the one dropped) covers nothing yet
  DELETE FROM embedding_coverage c WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.model = c.model);
  INSERT INTO embedding_counts (model, dimensions, shard, texts, last_embedded_at)
  SELECT model, dimensions, 0, count(*), max(embedded_at) FROM embeddings GROUP BY model, dimensions;
END
$$;
--> statement-breakpoint
-- Same as migrations/0028, but for the counters attached to the table it creates (or finds).
CREATE OR REPLACE FUNCTION "embeddings_ensure"() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  IF to_regclass('embeddings') IS NOT NULL THEN
    BEGIN
      PERFORM embedding_counts_attach();
    EXCEPTION
      WHEN insufficient_privilege THEN NULL;
    END;
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
  BEGIN
    PERFORM embedding_counts_attach();
  EXCEPTION
    WHEN insufficient_privilege THEN NULL;
  END;
  RETURN 'ready';
END
$$;
--> statement-breakpoint
SELECT "embedding_counts_attach"();
