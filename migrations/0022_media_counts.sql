-- vsi: backward-compatible
-- Counters of media items by platform and transcript state, kept by triggers on `media` as
-- migrations/0019 keeps those of pages: `status` (every call), `/metrics` and the overview counted
-- the whole media table on each read, a cost that grew with the media. Additive: a build of 0021
-- writes media as before and the triggers count them.
CREATE TABLE "media_counts" (
	"shard" smallint NOT NULL,
	"platform" text NOT NULL,
	"transcript_state" text NOT NULL,
	"n" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "media_counts_shard_platform_transcript_state_pk" PRIMARY KEY("shard","platform","transcript_state")
);
--> statement-breakpoint
-- MEDIA_COUNT_SHARDS (src/db/media.ts) is the 16 below. A statement adds to the shard of its
-- connection. A shard has a row per platform and state, and one transaction may touch several in
-- several statements (an item stored, then its transcript): a transaction-scoped advisory lock
-- per shard, taken before its rows, makes two writers on one shard queue as on the single row of
-- a page_counts shard, never wait on each other in a cycle. An update that moves no item between
-- platform and state (most: a metadata read, a last-seen time) takes no lock and writes nothing.
CREATE FUNCTION "media_count_changes"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  delta jsonb;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    DELETE FROM media_counts;
    RETURN NULL;
  ELSIF TG_OP = 'INSERT' THEN
    SELECT jsonb_agg(jsonb_build_array(platform, transcript_state, n)) INTO delta
    FROM (SELECT platform, transcript_state, count(*) AS n FROM new_rows GROUP BY 1, 2) x;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT jsonb_agg(jsonb_build_array(platform, transcript_state, -n)) INTO delta
    FROM (SELECT platform, transcript_state, count(*) AS n FROM old_rows GROUP BY 1, 2) x;
  ELSE
    SELECT jsonb_agg(jsonb_build_array(platform, transcript_state, n)) INTO delta
    FROM (SELECT platform, transcript_state, sum(d) AS n FROM (
        SELECT platform, transcript_state, 1 AS d FROM new_rows
        UNION ALL SELECT platform, transcript_state, -1 FROM old_rows) u
      GROUP BY 1, 2 HAVING sum(d) <> 0) x;
  END IF;
  IF delta IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM pg_advisory_xact_lock(hashtext('media_counts'), pg_backend_pid() % 16);
  INSERT INTO media_counts AS c (shard, platform, transcript_state, n)
  SELECT pg_backend_pid() % 16, e->>0, e->>1, (e->>2)::bigint FROM jsonb_array_elements(delta) AS e
  ON CONFLICT (shard, platform, transcript_state) DO UPDATE SET n = c.n + excluded.n;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "media_count_insert" AFTER INSERT ON "media"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION media_count_changes();
--> statement-breakpoint
CREATE TRIGGER "media_count_update" AFTER UPDATE ON "media"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION media_count_changes();
--> statement-breakpoint
CREATE TRIGGER "media_count_delete" AFTER DELETE ON "media"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION media_count_changes();
--> statement-breakpoint
CREATE TRIGGER "media_count_truncate" AFTER TRUNCATE ON "media"
  FOR EACH STATEMENT EXECUTE FUNCTION media_count_changes();
--> statement-breakpoint
-- The triggers above lock the table against writers until this migration commits, so the
-- backfill counts every row exactly once.
INSERT INTO media_counts (shard, platform, transcript_state, n)
SELECT 0, platform, transcript_state, count(*) FROM media GROUP BY platform, transcript_state;
