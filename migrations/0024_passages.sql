-- vsi: backward-compatible
-- Passages (issue #31): every transcript cut into token-aware windows for embedding models, with
-- their moments, chunk ranges, token counts and content hashes. Cut in Node (the tokenizer) by the
-- search indexer from the same `search_index_queue` that keeps the search windows current, in one
-- transaction per SEARCH_INDEX_CHUNK keys: search_index_build() below rebuilds the windows of the
-- keys it took, src/db/passages.ts re-cuts their passages keeping every unchanged one's row.
-- Compatible: a build that does not know passages still takes keys off the queue with
-- search_index_pending() (its windows stay right; those keys' passages wait for the next change).
CREATE TABLE "passages" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "passages_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"kind" text NOT NULL,
	"doc" text NOT NULL,
	"lang" text NOT NULL,
	"n" integer NOT NULL,
	"text" text NOT NULL,
	"tokens" integer NOT NULL,
	"sha256" text NOT NULL,
	"start_s" double precision,
	"end_s" double precision,
	"first_chunk" integer,
	"last_chunk" integer,
	"headings" text[],
	"anchor" text,
	"cut_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "passages_doc_idx" ON "passages" USING btree ("kind","doc","lang","n");--> statement-breakpoint
CREATE INDEX "passages_cut_at_idx" ON "passages" USING btree ("cut_at","id");
--> statement-breakpoint
-- The windows of the given keys rebuilt from the transcripts as they are now (the part of
-- search_index_pending() after it took the keys; the Node indexer takes them itself).
CREATE FUNCTION "search_index_build"(video_ids text[], langs text[]) RETURNS void LANGUAGE plpgsql SET jit = off AS $$
BEGIN
  DELETE FROM transcript_windows w USING unnest(video_ids, langs) AS k(video_id, lang)
  WHERE w.video_id = k.video_id AND w.lang = k.lang;
  INSERT INTO transcript_windows (video_id, lang, n, start_s, end_s, text, config, tsv)
  SELECT r.video_id, r.lang, r.n, r.start_s, r.end_s, r.text, r.config, r.tsv
  FROM transcript_window_rows r JOIN unnest(video_ids, langs) AS k(video_id, lang) ON k.video_id = r.video_id AND k.lang = r.lang;
END
$$;
--> statement-breakpoint
-- As in 0015, and a deleted transcript's passages go at once too.
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
    DELETE FROM search_index_queue q USING old_rows o WHERE q.video_id = o.video_id AND q.lang = o.lang;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "transcript_windows_truncate"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM transcript_windows;
  DELETE FROM passages WHERE kind = 'transcript';
  DELETE FROM search_index_queue;
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- Every stored transcript queued once, so the indexer cuts its passages (its windows are rebuilt
-- alike, unchanged).
INSERT INTO search_index_queue (video_id, lang) SELECT video_id, lang FROM transcripts ON CONFLICT DO NOTHING;
