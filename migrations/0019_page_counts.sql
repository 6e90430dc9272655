-- vsi: backward-compatible
-- Counters of web pages (stored, gone) and of their versions, kept by triggers on `pages` and
-- `page_versions`: `status`, `/metrics` and the overview counted both tables on every read, a cost
-- that grew with the pages (bench:scale: /metrics 24.8 ms at 1x, 52.4 ms at 10x). Additive: a
-- build of 0018 writes pages as before and the triggers count them.
CREATE TABLE "page_counts" (
	"shard" smallint PRIMARY KEY NOT NULL,
	"stored" bigint DEFAULT 0 NOT NULL,
	"gone" bigint DEFAULT 0 NOT NULL,
	"versions" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
-- PAGE_COUNT_SHARDS (src/db/pages.ts) is the 16 below. A statement adds to the shard of its
-- connection: one row per writing transaction, and writers on other connections mostly on others.
CREATE FUNCTION "page_counts_add"(d_stored bigint, d_gone bigint, d_versions bigint)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF d_stored = 0 AND d_gone = 0 AND d_versions = 0 THEN
    RETURN;
  END IF;
  INSERT INTO page_counts AS c (shard, stored, gone, versions)
  VALUES (pg_backend_pid() % 16, d_stored, d_gone, d_versions)
  ON CONFLICT (shard) DO UPDATE
  SET stored = c.stored + excluded.stored, gone = c.gone + excluded.gone, versions = c.versions + excluded.versions;
END
$$;
--> statement-breakpoint
CREATE FUNCTION "pages_count_changes"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ds bigint := 0; dg bigint := 0;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE page_counts SET stored = 0, gone = 0 WHERE stored <> 0 OR gone <> 0;
    RETURN NULL;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    SELECT ds + count(*) FILTER (WHERE TG_OP = 'INSERT'), dg + count(*) FILTER (WHERE gone_at IS NOT NULL)
    INTO ds, dg FROM new_rows;
  END IF;
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    SELECT ds - count(*) FILTER (WHERE TG_OP = 'DELETE'), dg - count(*) FILTER (WHERE gone_at IS NOT NULL)
    INTO ds, dg FROM old_rows;
  END IF;
  PERFORM page_counts_add(ds, dg, 0);
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE FUNCTION "page_versions_count_changes"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  dv bigint;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE page_counts SET versions = 0 WHERE versions <> 0;
    RETURN NULL;
  ELSIF TG_OP = 'INSERT' THEN
    SELECT count(*) INTO dv FROM new_rows;
  ELSE
    SELECT -count(*) INTO dv FROM old_rows;
  END IF;
  PERFORM page_counts_add(0, 0, dv);
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "pages_count_insert" AFTER INSERT ON "pages"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION pages_count_changes();
--> statement-breakpoint
CREATE TRIGGER "pages_count_update" AFTER UPDATE ON "pages"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION pages_count_changes();
--> statement-breakpoint
CREATE TRIGGER "pages_count_delete" AFTER DELETE ON "pages"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION pages_count_changes();
--> statement-breakpoint
CREATE TRIGGER "pages_count_truncate" AFTER TRUNCATE ON "pages"
  FOR EACH STATEMENT EXECUTE FUNCTION pages_count_changes();
--> statement-breakpoint
CREATE TRIGGER "page_versions_count_insert" AFTER INSERT ON "page_versions"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION page_versions_count_changes();
--> statement-breakpoint
CREATE TRIGGER "page_versions_count_delete" AFTER DELETE ON "page_versions"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION page_versions_count_changes();
--> statement-breakpoint
CREATE TRIGGER "page_versions_count_truncate" AFTER TRUNCATE ON "page_versions"
  FOR EACH STATEMENT EXECUTE FUNCTION page_versions_count_changes();
--> statement-breakpoint
-- The triggers above lock both tables against writers until this migration commits, so the
-- backfill counts every row exactly once.
INSERT INTO page_counts (shard, stored, gone, versions)
SELECT 0, (SELECT count(*) FROM pages), (SELECT count(*) FROM pages WHERE gone_at IS NOT NULL),
  (SELECT count(*) FROM page_versions);
