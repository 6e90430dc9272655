-- vsi: backward-compatible
-- Full-text search over passages (issues #31 and #34): one copy of a transcript's text serves
-- both embeddings and search. Each passage carries its language's text search configuration and
-- its tsvector (GIN-indexed), set on every write by the trigger below, so whatever writes a
-- passage (the indexer's transaction, a build that does not know these columns) writes it
-- searchable. src/db/search.ts reads passages; the search windows are no longer built.
-- Compatible: a build before this one still calls search_index_build() (kept, now doing
-- nothing) and cuts passages without these columns (the trigger fills them); its own search reads
-- the emptied windows and finds nothing until it is replaced. Its ingest is unaffected.
ALTER TABLE "passages" ADD COLUMN "config" "regconfig";
--> statement-breakpoint
ALTER TABLE "passages" ADD COLUMN "tsv" "tsvector";
--> statement-breakpoint
-- The configuration decided in one place (search_config of migrations/0011), the text as the
-- parser should read it (search_document: a CJK character a word).
CREATE FUNCTION "passages_search_fields"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.config := search_config(NEW.lang);
  NEW.tsv := to_tsvector(NEW.config, search_document(NEW.text));
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "passages_search_fields" BEFORE INSERT OR UPDATE OF "text", "lang" ON "passages"
  FOR EACH ROW EXECUTE FUNCTION passages_search_fields();
--> statement-breakpoint
-- the passages already cut, searchable at once (jit off: see transcript_windows_sync in 0011)
SET LOCAL jit = off;
--> statement-breakpoint
UPDATE "passages" SET "config" = search_config("lang"), "tsv" = to_tsvector(search_config("lang"), search_document("text"));
--> statement-breakpoint
ALTER TABLE "passages" ALTER COLUMN "config" SET NOT NULL;
--> statement-breakpoint
ALTER TABLE "passages" ALTER COLUMN "tsv" SET NOT NULL;
--> statement-breakpoint
CREATE INDEX "passages_tsv_idx" ON "passages" USING gin ("tsv");
--> statement-breakpoint
-- The windows are no longer built or read. The table, its triggers' deletes and this function
-- stay for a build before this one; the rows go now, with TRUNCATE (the files are returned at
-- once; a DELETE would leave every row dead until a VACUUM FULL), since nothing reads them but
-- an old build's search, which would only grow stale.
CREATE OR REPLACE FUNCTION "search_index_build"(video_ids text[], langs text[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  NULL;
END
$$;
--> statement-breakpoint
TRUNCATE "transcript_windows";
--> statement-breakpoint
-- Every stored transcript cut again: the cutter now always repeats the end of a passage at the
-- start of the next (a phrase across two chunks stays whole in one passage). Passages whose text
-- does not change keep their rows.
INSERT INTO "search_index_queue" ("video_id", "lang") SELECT "video_id", "lang" FROM "transcripts" ON CONFLICT DO NOTHING;
