-- vsi: backward-compatible
-- Passages of media transcripts, and of pages, cut through the same queue as transcripts' (issue
-- #31): the queue gets a `kind` (its key is now kind, document, language; a media item's or a
-- page's key is its URL with language ''), and `passage_removals` records every passage that goes
-- (a trigger on `passages`, in the deleting transaction) for `export --passages --cursor`.
-- Compatible: an older build queues transcripts without naming the kind (the default), and its
-- search_index_pending() (redefined below) takes only transcript keys; its deletes of passages
-- are recorded too; it still cuts a page's passages when it stores the page. Known gap: the
-- indexer of a build of 0024 takes keys of every kind off the queue itself and finds no
-- transcript for a media or page key, so while such a build runs beside a newer one, a media
-- item or page it takes keeps its old passages until it changes again.
CREATE TABLE "passage_removals" (
	"id" bigint PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"doc" text NOT NULL,
	"lang" text NOT NULL,
	"seq" bigint DEFAULT nextval('passages_id_seq') NOT NULL,
	"removed_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "search_index_queue" ADD COLUMN "kind" text DEFAULT 'transcript' NOT NULL;--> statement-breakpoint
ALTER TABLE "search_index_queue" DROP CONSTRAINT "search_index_queue_video_id_lang_pk";--> statement-breakpoint
ALTER TABLE "search_index_queue" ADD CONSTRAINT "search_index_queue_kind_video_id_lang_pk" PRIMARY KEY("kind","video_id","lang");--> statement-breakpoint
CREATE INDEX "passage_removals_seq_idx" ON "passage_removals" USING btree ("seq");--> statement-breakpoint
CREATE INDEX "passage_removals_removed_at_idx" ON "passage_removals" USING btree ("removed_at");--> statement-breakpoint
ALTER TABLE "search_index_queue" ADD CONSTRAINT "search_index_queue_kind_ck" CHECK ("search_index_queue"."kind" in ('transcript', 'page', 'media'));
--> statement-breakpoint
-- Every deleted passage recorded, whoever deletes it (a re-cut, a deleted transcript or media
-- item, an older build).
CREATE FUNCTION "passage_removals_record"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO passage_removals (id, kind, doc, lang)
  SELECT o.id, o.kind, o.doc, o.lang FROM old_rows o
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "passage_removals_recorded" AFTER DELETE ON "passages"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION passage_removals_record();
--> statement-breakpoint
-- As in 0024, the queue's deletes now only of transcript keys (a media key may share nothing
-- with a transcript's, but the kind says so).
CREATE OR REPLACE FUNCTION "transcript_windows_sync"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO search_index_queue (video_id, lang)
    SELECT DISTINCT k.video_id, k.lang FROM new_rows k
    ON CONFLICT DO NOTHING;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO search_index_queue (video_id, lang)
    SELECT DISTINCT n.video_id, n.lang
    FROM new_rows n LEFT JOIN old_rows o ON o.video_id = n.video_id AND o.lang = n.lang
    WHERE o.content_sha256 IS DISTINCT FROM n.content_sha256
    ON CONFLICT DO NOTHING;
  ELSE
    DELETE FROM transcript_windows w USING old_rows o WHERE w.video_id = o.video_id AND w.lang = o.lang;
    DELETE FROM passages p USING old_rows o WHERE p.kind = 'transcript' AND p.doc = o.video_id AND p.lang = o.lang;
    DELETE FROM search_index_queue q USING old_rows o
    WHERE q.kind = 'transcript' AND q.video_id = o.video_id AND q.lang = o.lang;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "transcript_windows_truncate"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM transcript_windows;
  DELETE FROM passages WHERE kind = 'transcript';
  DELETE FROM search_index_queue WHERE kind = 'transcript';
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- A deleted media item's passages and queued key go at once.
CREATE FUNCTION "media_passages_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    DELETE FROM passages WHERE kind = 'media';
    DELETE FROM search_index_queue WHERE kind = 'media';
  ELSE
    DELETE FROM passages p USING old_rows o WHERE p.kind = 'media' AND p.doc = o.url;
    DELETE FROM search_index_queue q USING old_rows o WHERE q.kind = 'media' AND q.video_id = o.url;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "media_passages_deleted" AFTER DELETE ON "media"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION media_passages_delete();
--> statement-breakpoint
CREATE TRIGGER "media_passages_truncated" AFTER TRUNCATE ON "media"
  FOR EACH STATEMENT EXECUTE FUNCTION media_passages_delete();
--> statement-breakpoint
-- As in 0015, taking only transcript keys: the search windows are a transcript's (older builds
-- call it; the newer indexer takes keys of every kind itself).
CREATE OR REPLACE FUNCTION "search_index_pending"(max_transcripts integer) RETURNS integer LANGUAGE plpgsql SET jit = off AS $$
DECLARE
  video_ids text[];
  langs text[];
BEGIN
  WITH taken AS (
    DELETE FROM search_index_queue q
    WHERE (q.kind, q.video_id, q.lang) IN (
      SELECT p.kind, p.video_id, p.lang FROM search_index_queue p WHERE p.kind = 'transcript'
      ORDER BY p.queued_at LIMIT greatest(max_transcripts, 1) FOR UPDATE SKIP LOCKED)
    RETURNING q.video_id, q.lang)
  SELECT array_agg(t.video_id), array_agg(t.lang) INTO video_ids, langs FROM taken t;
  IF video_ids IS NULL THEN
    RETURN 0;
  END IF;
  PERFORM search_index_build(video_ids, langs);
  RETURN cardinality(video_ids);
END
$$;
--> statement-breakpoint
-- Every media item with a transcript stored queued once, so the indexer cuts its passages.
INSERT INTO search_index_queue (kind, video_id, lang)
SELECT 'media', url, '' FROM media WHERE transcript_content IS NOT NULL
ON CONFLICT DO NOTHING;
