-- vsi: backward-compatible
-- Page search reads passages (issue #34: one copy of a page's text per purpose): a page's passages,
-- cut by the search indexer after the page lands and carrying their section's headings and anchor,
-- are its search index, as a transcript's have been since 0025. `page_sections`, the same text again
-- with a tsvector and a GIN index written in the landing transaction, is no longer written or read
-- (the admin page's sections are cut from `pages.content`).
-- Compatible: a build before this one still deletes and inserts a changed page's sections in its
-- landing transaction; the statements succeed and the trigger below keeps no row, so its landing
-- and its indexer (which cuts page passages as this build's does) are unaffected. Its page search
-- and its admin page's sections list read the emptied table and find nothing until it is replaced.
-- The table and its index stay for it.
CREATE FUNCTION "page_sections_not_kept"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "page_sections_not_kept" BEFORE INSERT ON "page_sections"
  FOR EACH ROW EXECUTE FUNCTION page_sections_not_kept();
--> statement-breakpoint
-- TRUNCATE, not DELETE: the files are returned at once (see 0025 for transcript_windows).
TRUNCATE "page_sections";
--> statement-breakpoint
-- Pages stored before their passages were cut (migrations/0026) have none yet: queued, so that
-- page search finds them once the indexer has run.
INSERT INTO "search_index_queue" ("kind", "video_id", "lang")
SELECT 'page', p."url", '' FROM "pages" p
WHERE NOT EXISTS (SELECT 1 FROM "passages" s WHERE s."kind" = 'page' AND s."doc" = p."url")
ON CONFLICT DO NOTHING;
