-- vsi: backward-compatible
-- The search index built after the landing transaction, not in it (issue #12). Building a
-- transcript's windows (cutting the chunks, to_tsvector, the GIN index) was ~4.6 ms of Postgres
-- CPU per 150-chunk transcript, ~80% of landing it: the 200 transcripts/s one 5000-item batch
-- finishes upstream waited behind it. Now the trigger only queues the transcript's key, and the
-- search indexer builds the windows in small transactions of their own, with
-- search_index_pending() below (src/pipeline/search-index.ts: in every daemon with the poller or
-- sink role, at the end of backfill and replay, before the `search` command). Compatible: a
-- build that does not know the queue stores and reads as before; only its search misses what
-- was stored until a newer process runs the indexer.
CREATE TABLE "search_index_queue" (
	"video_id" text NOT NULL,
	"lang" text NOT NULL,
	"queued_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "search_index_queue_video_id_lang_pk" PRIMARY KEY("video_id","lang")
);
--> statement-breakpoint
CREATE INDEX "search_index_queue_queued_at_idx" ON "search_index_queue" USING btree ("queued_at");
--> statement-breakpoint
-- Stored, or its content changed: queued (once; a key already waiting stays). Deleted: its
-- windows go at once (a removed transcript is never found), and so does its key.
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
    DELETE FROM search_index_queue q USING old_rows o WHERE q.video_id = o.video_id AND q.lang = o.lang;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "transcript_windows_truncate"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM transcript_windows;
  DELETE FROM search_index_queue;
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- Up to `max_transcripts` queued keys, oldest first, taken off the queue (SKIP LOCKED: indexers
-- of several daemons share the queue, never the same key) and their windows rebuilt from the
-- transcript as it is now; a key whose transcript is gone only leaves the queue. Returns how many
-- keys it took. A landing transaction that stores a taken key again waits for this one to
-- commit, then queues it anew: the windows are never left older than the transcript.
-- jit off: see transcript_windows_sync in 0011 (compiling cost more than the work).
CREATE FUNCTION "search_index_pending"(max_transcripts integer) RETURNS integer LANGUAGE plpgsql SET jit = off AS $$
DECLARE
  video_ids text[];
  langs text[];
BEGIN
  WITH taken AS (
    DELETE FROM search_index_queue q
    WHERE (q.video_id, q.lang) IN (
      SELECT p.video_id, p.lang FROM search_index_queue p
      ORDER BY p.queued_at LIMIT greatest(max_transcripts, 1) FOR UPDATE SKIP LOCKED)
    RETURNING q.video_id, q.lang)
  SELECT array_agg(t.video_id), array_agg(t.lang) INTO video_ids, langs FROM taken t;
  IF video_ids IS NULL THEN
    RETURN 0;
  END IF;
  DELETE FROM transcript_windows w USING unnest(video_ids, langs) AS k(video_id, lang)
  WHERE w.video_id = k.video_id AND w.lang = k.lang;
  INSERT INTO transcript_windows (video_id, lang, n, start_s, end_s, text, config, tsv)
  SELECT r.video_id, r.lang, r.n, r.start_s, r.end_s, r.text, r.config, r.tsv
  FROM transcript_window_rows r JOIN unnest(video_ids, langs) AS k(video_id, lang) ON k.video_id = r.video_id AND k.lang = r.lang;
  RETURN cardinality(video_ids);
END
$$;
