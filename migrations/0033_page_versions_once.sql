-- The current version of a web page stored once (issue #34), as 0029 did for transcripts: the
-- newest `page_versions` row held a second copy of the content `pages` holds. The history table
-- becomes `page_version_rows`, where the current version's content is null; triggers on `pages`
-- fill it from the row that a change, a delete or a truncate replaces, in the same statement, and
-- clear it when an earlier content comes back. `page_versions` becomes a view with the same
-- columns in the same order, the current content read from `pages`: what people read from it
-- reads the same. It is automatically updatable for every column but `content` (and deletable);
-- an INSERT into it goes through `page_versions_insert`, which stores no copy of a current page.
--
-- Not backward-compatible: the build before this one writes versions itself with
-- `INSERT INTO page_versions ... ON CONFLICT (url, content_sha256) DO NOTHING` (src/db/pages.ts
-- writeVersionsAndSections), and Postgres 15 refuses an ON CONFLICT target on a view that takes
-- its inserts with an INSTEAD OF trigger ("there is no unique or exclusion constraint matching
-- the ON CONFLICT specification"); a view whose `content` is derived cannot take them otherwise.
-- An older daemon therefore schedules nothing new on this schema, and its landings of pages fail
-- (and retry) until a daemon of this build takes them (test/integration/page-versions-once.test.ts).
ALTER TABLE "page_versions" RENAME TO "page_version_rows";--> statement-breakpoint
ALTER TABLE "page_version_rows" RENAME CONSTRAINT "page_versions_url_content_sha256_pk" TO "page_version_rows_url_content_sha256_pk";--> statement-breakpoint
ALTER TABLE "page_version_rows" ALTER COLUMN "content" DROP NOT NULL;--> statement-breakpoint
-- What it stores now is past versions only, written once when replaced and seldom read: pglz, as
-- 0029 chose for past transcripts (docs/performance.md). A value copied as it is keeps the
-- compression it has, so the triggers copy a new one (`|| ''`), which this column's method compresses.
ALTER TABLE "page_version_rows" ALTER COLUMN "content" SET COMPRESSION pglz;--> statement-breakpoint
CREATE VIEW "page_versions" AS
  SELECT v.url, v.content_sha256, v.name, v.description, v.og_url,
    coalesce(v.content,
      (SELECT p.content FROM pages p WHERE p.url = v.url AND p.content_sha256 = v.content_sha256)) AS content,
    v.count_characters, v.stored_at, v.job_id
  FROM page_version_rows v;
--> statement-breakpoint
ALTER VIEW "page_versions" ALTER COLUMN "stored_at" SET DEFAULT now();--> statement-breakpoint
-- An INSERT into the view (a person's SQL, bench/scale/seed.ts): the row as given, but the content
-- of the page's current version is not stored again. A duplicate (url, content_sha256) fails as it
-- did on the table.
CREATE FUNCTION "page_versions_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.content IS NULL THEN
    RAISE EXCEPTION 'null value in column "content" of relation "page_versions" violates not-null constraint'
      USING ERRCODE = 'not_null_violation', COLUMN = 'content', TABLE = 'page_versions';
  END IF;
  INSERT INTO page_version_rows (url, content_sha256, name, description, og_url, content, count_characters, stored_at, job_id)
  VALUES (NEW.url, NEW.content_sha256, NEW.name, NEW.description, NEW.og_url,
    CASE WHEN EXISTS (
      SELECT 1 FROM pages p WHERE p.url = NEW.url AND p.content_sha256 = NEW.content_sha256 AND p.content = NEW.content)
    THEN NULL ELSE NEW.content || '' END,
    NEW.count_characters, NEW.stored_at, NEW.job_id);
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "page_versions_insert" INSTEAD OF INSERT ON "page_versions"
  FOR EACH ROW EXECUTE FUNCTION page_versions_insert();
--> statement-breakpoint
-- Where a page's current content is stored, kept by whoever writes `pages`: a version the
-- statement replaces (its content changed, its row deleted) gets its content back from the old
-- row; a version that becomes current again (an earlier content returned, a page stored again
-- after a delete) gives its copy up. Only versions whose copy equals the page's content are
-- cleared, so the view reads exactly what was stored.
CREATE FUNCTION "pages_current_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE page_version_rows v SET content = p.content || ''
    FROM pages p
    WHERE v.content IS NULL AND v.url = p.url AND v.content_sha256 = p.content_sha256;
  ELSIF TG_OP = 'DELETE' THEN
    UPDATE page_version_rows v SET content = o.content || ''
    FROM old_rows o
    WHERE v.content IS NULL AND v.url = o.url AND v.content_sha256 = o.content_sha256;
  ELSIF TG_OP = 'UPDATE' THEN
    UPDATE page_version_rows v SET content = o.content || ''
    FROM old_rows o LEFT JOIN new_rows n ON n.url = o.url
    WHERE n.content_sha256 IS DISTINCT FROM o.content_sha256
      AND v.content IS NULL AND v.url = o.url AND v.content_sha256 = o.content_sha256;
    UPDATE page_version_rows v SET content = NULL
    FROM new_rows n LEFT JOIN old_rows o ON o.url = n.url
    WHERE o.content_sha256 IS DISTINCT FROM n.content_sha256
      AND v.content IS NOT NULL AND v.url = n.url AND v.content_sha256 = n.content_sha256 AND v.content = n.content;
  ELSE
    UPDATE page_version_rows v SET content = NULL
    FROM new_rows n
    WHERE v.content IS NOT NULL AND v.url = n.url AND v.content_sha256 = n.content_sha256 AND v.content = n.content;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "pages_current_version_insert" AFTER INSERT ON "pages"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION pages_current_version();
--> statement-breakpoint
CREATE TRIGGER "pages_current_version_update" AFTER UPDATE ON "pages"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION pages_current_version();
--> statement-breakpoint
CREATE TRIGGER "pages_current_version_delete" AFTER DELETE ON "pages"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION pages_current_version();
--> statement-breakpoint
CREATE TRIGGER "pages_current_version_truncate" BEFORE TRUNCATE ON "pages"
  FOR EACH STATEMENT EXECUTE FUNCTION pages_current_version();
--> statement-breakpoint
-- The copies stored so far cleared, a range of pages at a time (a year is hundreds of thousands
-- of pages): only where the version's content equals the page's.
DO $$
DECLARE
  lo text := '';
  hi text;
  step constant int := 10000;
BEGIN
  LOOP
    SELECT max(url) INTO hi FROM (SELECT url FROM pages WHERE url > lo ORDER BY url LIMIT step) s;
    EXIT WHEN hi IS NULL;
    UPDATE page_version_rows v SET content = NULL
    FROM pages p
    WHERE p.url > lo AND p.url <= hi AND v.content IS NOT NULL
      AND v.url = p.url AND v.content_sha256 = p.content_sha256 AND v.content = p.content;
    lo := hi;
  END LOOP;
END
$$;
