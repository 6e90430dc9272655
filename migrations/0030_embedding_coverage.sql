-- vsi: backward-compatible
-- A model that has covered the corpus (issue #32): written by an embedder once idle, read by search
-- by meaning instead of reading every passage against the model's vectors on each query. An older
-- build neither writes nor reads it.
CREATE TABLE "embedding_coverage" (
	"model" text NOT NULL,
	"dimensions" integer NOT NULL,
	"through_passage_id" bigint NOT NULL,
	"checked_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "embedding_coverage_model_dimensions_pk" PRIMARY KEY("model","dimensions")
);
