-- vsi: backward-compatible
-- A media passage carries an empty tsvector (issue #34: nothing stored that nothing reads). Media
-- search reads media_segments (src/db/search.ts), and since 0035 no full-text index holds a media
-- passage's entries, so the tsvector every media passage carried was computed on every write (most
-- of what writing one cost) and read by nothing; media passages are cut for search by meaning. The
-- trigger of 0025 now writes an empty one for them and the full one for every other kind (a kind
-- added later is searchable by default). Backward-compatible: no build searches media passages by
-- their tsvector (every build's transcript and page search names its own kind), and a build that
-- cuts passages without these columns still gets them filled by the trigger. The media passages
-- already cut are emptied here; their room is reused once autovacuum has passed.
CREATE OR REPLACE FUNCTION "passages_search_fields"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.config := search_config(NEW.lang);
  NEW.tsv := CASE WHEN NEW.kind = 'media' THEN ''::tsvector
                  ELSE to_tsvector(NEW.config, search_document(NEW.text)) END;
  RETURN NEW;
END
$$;
--> statement-breakpoint
UPDATE "passages" SET "tsv" = ''::tsvector WHERE "kind" = 'media' AND "tsv" <> ''::tsvector;
