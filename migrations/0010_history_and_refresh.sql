CREATE TABLE "transcript_versions" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "transcript_versions_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"video_id" text NOT NULL,
	"lang" text NOT NULL,
	"content_sha256" text NOT NULL,
	"text" text NOT NULL,
	"chunks" jsonb,
	"available_langs" text[],
	"job_id" text,
	"first_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_job_id" text
);
--> statement-breakpoint
CREATE TABLE "video_changes" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "video_changes_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"video_id" text NOT NULL,
	"field" text NOT NULL,
	"old_value" jsonb,
	"new_value" jsonb,
	"job_id" text,
	"changed_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "sources" ADD COLUMN "refresh_after_ms" bigint;--> statement-breakpoint
ALTER TABLE "videos" ADD COLUMN "gone_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "videos" ADD COLUMN "gone_reason" text;--> statement-breakpoint
CREATE UNIQUE INDEX "transcript_versions_content_uq" ON "transcript_versions" USING btree ("video_id","lang","content_sha256");--> statement-breakpoint
CREATE INDEX "video_changes_video_id_idx" ON "video_changes" USING btree ("video_id","id");--> statement-breakpoint
-- Custom SQL: history and change events of videos and transcripts (issue #14).
-- Triggers, so that every writer (the poller, the sink, replay, a generated transcript, a
-- person's SQL) leaves history and exactly one event per change, in the transaction that makes
-- it; an upsert that writes nothing (identical content, src/db/videos.ts, transcripts.ts) fires
-- nothing, which is what keeps a replay or an unchanged rerun silent.
--
-- Statement-level triggers with transition tables: one INSERT ... SELECT per statement for the
-- history and the events of a 500-row chunk. (Row-level triggers, one plpgsql call and three
-- inserts per row, took W1 of the benchmark from 10 s to 25 s.)
--
-- The events go through `event_queue` and are moved into `events` by one deferred trigger at
-- commit (`event_flush`, a row per transaction): inserting an event takes the events id lock
-- (migrations/0009) until commit; taken at the upsert, it would be held through the rest of the
-- transaction (the item outcomes, the per-source counters) and close a lock cycle with a writer
-- that holds such a counter row and waits for it. At commit it is held for one INSERT ... SELECT.
DO $$
BEGIN
  ALTER TABLE "transcript_versions" ALTER COLUMN "text" SET COMPRESSION lz4;
  ALTER TABLE "transcript_versions" ALTER COLUMN "chunks" SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
  RAISE NOTICE 'lz4 compression not available on this server; keeping the default';
END
$$;
--> statement-breakpoint
CREATE TABLE "event_queue" (
  "seq" bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  "txid" xid8 NOT NULL DEFAULT pg_current_xact_id(),
  "type" text NOT NULL,
  "data" jsonb NOT NULL,
  "source_id" integer,
  "video_id" text
);
--> statement-breakpoint
CREATE INDEX "event_queue_txid_idx" ON "event_queue" ("txid");
--> statement-breakpoint
CREATE TABLE "event_flush" ("txid" xid8 PRIMARY KEY);
--> statement-breakpoint
CREATE FUNCTION "event_flush"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH moved AS (DELETE FROM event_queue WHERE txid = NEW.txid RETURNING *)
  INSERT INTO events (type, data, source_id, video_id)
  SELECT type, data, source_id, video_id FROM moved ORDER BY seq;
  DELETE FROM event_flush WHERE txid = NEW.txid;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER "event_flush" AFTER INSERT ON "event_flush" DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION event_flush();
--> statement-breakpoint
-- queued events are moved into `events` when this transaction commits
CREATE FUNCTION "event_flush_at_commit"() RETURNS void LANGUAGE sql AS $$
  INSERT INTO event_flush (txid) VALUES (pg_current_xact_id()) ON CONFLICT DO NOTHING
$$;
--> statement-breakpoint
CREATE FUNCTION "videos_added"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_queue (type, data, source_id, video_id)
  SELECT 'video.added', jsonb_build_object('videoId', n.id, 'sourceId', b.source_id, 'jobId', n.last_job_id), b.source_id, n.id
  FROM new_rows n LEFT JOIN batches b ON b.job_id = n.last_job_id;
  IF FOUND THEN PERFORM event_flush_at_commit(); END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE FUNCTION "videos_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- the contract's field names (the API's), old and new as JSON values; a view or like count
  -- alone is a measurement and makes nothing
  WITH d AS (
    SELECT n.id, n.last_job_id AS job_id, b.source_id,
      (SELECT coalesce(jsonb_object_agg(f.key, f.value), '{}'::jsonb)
       FROM jsonb_each(jsonb_build_object(
         'title', CASE WHEN n.title IS DISTINCT FROM o.title THEN jsonb_build_object('old', o.title, 'new', n.title) END,
         'description', CASE WHEN n.description IS DISTINCT FROM o.description THEN jsonb_build_object('old', o.description, 'new', n.description) END,
         'tags', CASE WHEN n.tags IS DISTINCT FROM o.tags THEN jsonb_build_object('old', to_jsonb(o.tags), 'new', to_jsonb(n.tags)) END,
         'duration', CASE WHEN n.duration_s IS DISTINCT FROM o.duration_s THEN jsonb_build_object('old', o.duration_s, 'new', n.duration_s) END,
         'thumbnail', CASE WHEN n.thumbnail IS DISTINCT FROM o.thumbnail THEN jsonb_build_object('old', o.thumbnail, 'new', n.thumbnail) END,
         'transcriptLanguages', CASE WHEN n.transcript_languages IS DISTINCT FROM o.transcript_languages
           THEN jsonb_build_object('old', to_jsonb(o.transcript_languages), 'new', to_jsonb(n.transcript_languages)) END)) AS f
       WHERE f.value <> 'null'::jsonb) AS fields,
      CASE WHEN o.gone_at IS NULL AND n.gone_at IS NOT NULL THEN 'gone'
           WHEN o.gone_at IS NOT NULL AND n.gone_at IS NULL THEN 'returned' END AS gone_change,
      o.gone_reason AS old_reason, n.gone_reason AS new_reason
    FROM new_rows n JOIN old_rows o USING (id) LEFT JOIN batches b ON b.job_id = n.last_job_id
  ), changes AS (
    INSERT INTO video_changes (video_id, field, old_value, new_value, job_id)
    SELECT d.id, f.key, f.value->'old', f.value->'new', d.job_id FROM d, jsonb_each(d.fields) AS f
    UNION ALL
    SELECT d.id, 'gone',
      CASE WHEN d.gone_change = 'gone' THEN 'null'::jsonb ELSE to_jsonb(d.old_reason) END,
      CASE WHEN d.gone_change = 'gone' THEN to_jsonb(d.new_reason) ELSE 'null'::jsonb END, d.job_id
    FROM d WHERE d.gone_change IS NOT NULL
  )
  INSERT INTO event_queue (type, data, source_id, video_id)
  SELECT e.type, e.data, e.source_id, e.id FROM (
    SELECT 1 AS k, d.id, 'video.changed' AS type, d.source_id,
      jsonb_build_object('videoId', d.id, 'sourceId', d.source_id, 'jobId', d.job_id, 'fields', d.fields) AS data
    FROM d WHERE d.fields <> '{}'::jsonb
    UNION ALL
    SELECT 2, d.id, 'video.' || d.gone_change, d.source_id,
      jsonb_build_object('videoId', d.id, 'sourceId', d.source_id, 'jobId', d.job_id)
        || CASE WHEN d.gone_change = 'gone' THEN jsonb_build_object('reason', d.new_reason) ELSE '{}'::jsonb END
    FROM d WHERE d.gone_change IS NOT NULL
  ) e ORDER BY e.id, e.k;
  IF FOUND THEN PERFORM event_flush_at_commit(); END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "videos_added" AFTER INSERT ON "videos" REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION videos_added();
--> statement-breakpoint
CREATE TRIGGER "videos_changed" AFTER UPDATE ON "videos" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION videos_changed();
--> statement-breakpoint
-- A transcript's versions are keyed by content_sha256 (its content, language and available
-- languages: src/db/transcripts.ts). The version a change replaces is recorded too when it is
-- missing (a transcript stored before this migration), so both sides of every change are kept
-- without copying every stored transcript here.
CREATE FUNCTION "transcripts_added"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH versions AS (
    INSERT INTO transcript_versions (video_id, lang, content_sha256, text, chunks, available_langs, job_id, last_job_id)
    SELECT video_id, lang, content_sha256, text, chunks, available_langs, last_job_id, last_job_id FROM new_rows
    ON CONFLICT (video_id, lang, content_sha256) DO UPDATE SET last_seen_at = now(), last_job_id = excluded.last_job_id
  )
  INSERT INTO event_queue (type, data, source_id, video_id)
  SELECT 'transcript.added',
    jsonb_build_object('videoId', n.video_id, 'sourceId', b.source_id, 'lang', n.lang, 'sha256', n.content_sha256,
      'jobId', n.last_job_id, 'origin', n.origin),
    b.source_id, n.video_id
  FROM new_rows n LEFT JOIN batches b ON b.job_id = n.last_job_id
  ORDER BY n.video_id, n.lang;
  IF FOUND THEN PERFORM event_flush_at_commit(); END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE FUNCTION "transcripts_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH d AS (
    SELECT n.video_id, n.lang, n.content_sha256, n.text, n.chunks, n.available_langs, n.last_job_id, n.origin,
      o.content_sha256 AS old_sha, o.text AS old_text, o.chunks AS old_chunks, o.available_langs AS old_langs,
      o.last_job_id AS old_job_id, o.origin AS old_origin, o.updated_at AS old_updated_at
    FROM new_rows n JOIN old_rows o USING (video_id, lang)
    WHERE n.content_sha256 IS DISTINCT FROM o.content_sha256
  ), replaced AS (
    INSERT INTO transcript_versions (video_id, lang, content_sha256, text, chunks, available_langs, job_id, first_seen_at, last_seen_at, last_job_id)
    SELECT video_id, lang, old_sha, old_text, old_chunks, old_langs, old_job_id, old_updated_at, now(), old_job_id FROM d
    ON CONFLICT (video_id, lang, content_sha256) DO NOTHING
  ), latest AS (
    INSERT INTO transcript_versions (video_id, lang, content_sha256, text, chunks, available_langs, job_id, last_job_id)
    SELECT video_id, lang, content_sha256, text, chunks, available_langs, last_job_id, last_job_id FROM d
    ON CONFLICT (video_id, lang, content_sha256) DO UPDATE SET last_seen_at = now(), last_job_id = excluded.last_job_id
  )
  INSERT INTO event_queue (type, data, source_id, video_id)
  SELECT 'transcript.changed',
    jsonb_build_object('videoId', d.video_id, 'sourceId', b.source_id, 'lang', d.lang, 'sha256', d.content_sha256,
      'previousSha256', d.old_sha, 'jobId', d.last_job_id, 'origin', d.origin,
      -- what differs, for a consumer that wants only new words (`text`) and not, say, a
      -- language added to the video (`availableLangs`)
      'changed', to_jsonb(array_remove(ARRAY[
        CASE WHEN d.text IS DISTINCT FROM d.old_text THEN 'text' END,
        CASE WHEN d.chunks IS DISTINCT FROM d.old_chunks THEN 'chunks' END,
        CASE WHEN d.available_langs IS DISTINCT FROM d.old_langs THEN 'availableLangs' END,
        CASE WHEN d.origin IS DISTINCT FROM d.old_origin THEN 'origin' END], NULL))),
    b.source_id, d.video_id
  FROM d LEFT JOIN batches b ON b.job_id = d.last_job_id
  ORDER BY d.video_id, d.lang;
  IF FOUND THEN PERFORM event_flush_at_commit(); END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "transcripts_added" AFTER INSERT ON "transcripts" REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION transcripts_added();
--> statement-breakpoint
CREATE TRIGGER "transcripts_changed" AFTER UPDATE ON "transcripts" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION transcripts_changed();
--> statement-breakpoint
-- `status` counts the gone videos by reason: a few rows of a small partial index
CREATE INDEX "videos_gone_idx" ON "videos" ("gone_reason") WHERE "gone_at" IS NOT NULL;
