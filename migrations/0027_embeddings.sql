-- vsi: backward-compatible
-- Embeddings (issue #32): vectors of passages per (model, content hash) with pgvector, the claims
-- that keep two embedders from paying for one text, the tokens spent per day and the budget's
-- refusals. Compatible: new tables, a new index on passages, a new function; an older build
-- reads none of them.
CREATE TABLE "embedding_claims" (
	"model" text NOT NULL,
	"sha256" text NOT NULL,
	"claimed_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"error" text,
	CONSTRAINT "embedding_claims_model_sha256_pk" PRIMARY KEY("model","sha256")
);
--> statement-breakpoint
CREATE TABLE "embedding_refusals" (
	"day" date NOT NULL,
	"model" text NOT NULL,
	"first_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_at" timestamp with time zone DEFAULT now() NOT NULL,
	"refusals" integer DEFAULT 1 NOT NULL,
	"tokens_asked" integer NOT NULL,
	"tokens_spent" bigint NOT NULL,
	"budget" bigint NOT NULL,
	CONSTRAINT "embedding_refusals_day_model_pk" PRIMARY KEY("day","model")
);
--> statement-breakpoint
CREATE TABLE "embedding_usage" (
	"day" date NOT NULL,
	"model" text NOT NULL,
	"tokens" bigint DEFAULT 0 NOT NULL,
	"requests" integer DEFAULT 0 NOT NULL,
	"inputs" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "embedding_usage_day_model_pk" PRIMARY KEY("day","model")
);
--> statement-breakpoint
CREATE INDEX "passages_sha256_idx" ON "passages" USING btree ("sha256");
--> statement-breakpoint
-- The embeddings table needs pgvector's `vector` type: created here when the server has the
-- extension (and this role may create it), else left to embeddings_ensure() at a later migrate or
-- when an embedder starts, so that a database without pgvector migrates and keeps text search.
-- Answers what is missing: 'ready', 'not-installed' (the server lacks pgvector) or
-- 'not-permitted' (it has it; CREATE EXTENSION vector needs a superuser or the database owner
-- with the extension trusted).
CREATE FUNCTION "embeddings_ensure"() RETURNS text LANGUAGE plpgsql AS $$
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
      	"embedding" vector NOT NULL,
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
SELECT "embeddings_ensure"();
