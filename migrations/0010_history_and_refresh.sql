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
-- Deferred constraint triggers: they run at commit, after everything else the transaction does.
-- Inserting an event takes the events id lock (migrations/0009) until commit; taken at the
-- upsert, it would be held through the rest of the transaction (the item outcomes, the counters)
-- and could close a lock cycle with a writer that holds a counter row and waits for it. The
-- WHEN clauses keep an update of a measurement only (view and like counts) from queueing anything.
DO $$
BEGIN
  ALTER TABLE "transcript_versions" ALTER COLUMN "text" SET COMPRESSION lz4;
  ALTER TABLE "transcript_versions" ALTER COLUMN "chunks" SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
  RAISE NOTICE 'lz4 compression not available on this server; keeping the default';
END
$$;
--> statement-breakpoint
CREATE FUNCTION "batch_source_id"(job text) RETURNS integer LANGUAGE sql STABLE AS $$
  SELECT source_id FROM batches WHERE job_id = job
$$;
--> statement-breakpoint
CREATE FUNCTION "videos_added"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  src integer := batch_source_id(NEW.last_job_id);
BEGIN
  INSERT INTO events (type, data, source_id, video_id)
  VALUES ('video.added', jsonb_build_object('videoId', NEW.id, 'sourceId', src, 'jobId', NEW.last_job_id), src, NEW.id);
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE FUNCTION "videos_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  src integer := batch_source_id(NEW.last_job_id);
  fields jsonb := '{}'::jsonb;
BEGIN
  -- the contract's field names (the API's), old and new as JSON values
  IF NEW.title IS DISTINCT FROM OLD.title THEN
    fields := fields || jsonb_build_object('title', jsonb_build_object('old', OLD.title, 'new', NEW.title));
  END IF;
  IF NEW.description IS DISTINCT FROM OLD.description THEN
    fields := fields || jsonb_build_object('description', jsonb_build_object('old', OLD.description, 'new', NEW.description));
  END IF;
  IF NEW.tags IS DISTINCT FROM OLD.tags THEN
    fields := fields || jsonb_build_object('tags', jsonb_build_object('old', to_jsonb(OLD.tags), 'new', to_jsonb(NEW.tags)));
  END IF;
  IF NEW.duration_s IS DISTINCT FROM OLD.duration_s THEN
    fields := fields || jsonb_build_object('duration', jsonb_build_object('old', OLD.duration_s, 'new', NEW.duration_s));
  END IF;
  IF NEW.thumbnail IS DISTINCT FROM OLD.thumbnail THEN
    fields := fields || jsonb_build_object('thumbnail', jsonb_build_object('old', OLD.thumbnail, 'new', NEW.thumbnail));
  END IF;
  IF NEW.transcript_languages IS DISTINCT FROM OLD.transcript_languages THEN
    fields := fields || jsonb_build_object('transcriptLanguages',
      jsonb_build_object('old', to_jsonb(OLD.transcript_languages), 'new', to_jsonb(NEW.transcript_languages)));
  END IF;
  IF fields <> '{}'::jsonb THEN
    INSERT INTO video_changes (video_id, field, old_value, new_value, job_id)
    SELECT NEW.id, f.key, f.value->'old', f.value->'new', NEW.last_job_id FROM jsonb_each(fields) AS f;
    INSERT INTO events (type, data, source_id, video_id)
    VALUES ('video.changed', jsonb_build_object('videoId', NEW.id, 'sourceId', src, 'jobId', NEW.last_job_id, 'fields', fields), src, NEW.id);
  END IF;
  IF OLD.gone_at IS NULL AND NEW.gone_at IS NOT NULL THEN
    INSERT INTO video_changes (video_id, field, old_value, new_value, job_id)
    VALUES (NEW.id, 'gone', 'null'::jsonb, to_jsonb(NEW.gone_reason), NEW.last_job_id);
    INSERT INTO events (type, data, source_id, video_id)
    VALUES ('video.gone', jsonb_build_object('videoId', NEW.id, 'sourceId', src, 'jobId', NEW.last_job_id, 'reason', NEW.gone_reason), src, NEW.id);
  ELSIF OLD.gone_at IS NOT NULL AND NEW.gone_at IS NULL THEN
    INSERT INTO video_changes (video_id, field, old_value, new_value, job_id)
    VALUES (NEW.id, 'gone', to_jsonb(OLD.gone_reason), 'null'::jsonb, NEW.last_job_id);
    INSERT INTO events (type, data, source_id, video_id)
    VALUES ('video.returned', jsonb_build_object('videoId', NEW.id, 'sourceId', src, 'jobId', NEW.last_job_id), src, NEW.id);
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER "videos_added" AFTER INSERT ON "videos" DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION videos_added();
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER "videos_changed" AFTER UPDATE ON "videos" DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (
    (OLD.title, OLD.description, OLD.tags, OLD.duration_s, OLD.thumbnail, OLD.transcript_languages, OLD.gone_at IS NULL)
      IS DISTINCT FROM
    (NEW.title, NEW.description, NEW.tags, NEW.duration_s, NEW.thumbnail, NEW.transcript_languages, NEW.gone_at IS NULL))
  EXECUTE FUNCTION videos_changed();
--> statement-breakpoint
-- A transcript's versions are keyed by content_sha256 (its content, language and available
-- languages: src/db/transcripts.ts). The version a change replaces is recorded too when it is
-- missing (a transcript stored before this migration), so both sides of every change are kept
-- without copying every stored transcript here.
CREATE FUNCTION "transcripts_history"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  src integer := batch_source_id(NEW.last_job_id);
  changed text[] := '{}';
BEGIN
  IF TG_OP = 'UPDATE' THEN
    INSERT INTO transcript_versions (video_id, lang, content_sha256, text, chunks, available_langs, job_id, first_seen_at, last_seen_at, last_job_id)
    VALUES (OLD.video_id, OLD.lang, OLD.content_sha256, OLD.text, OLD.chunks, OLD.available_langs, OLD.last_job_id, OLD.updated_at, now(), OLD.last_job_id)
    ON CONFLICT (video_id, lang, content_sha256) DO NOTHING;
  END IF;
  INSERT INTO transcript_versions (video_id, lang, content_sha256, text, chunks, available_langs, job_id, last_job_id)
  VALUES (NEW.video_id, NEW.lang, NEW.content_sha256, NEW.text, NEW.chunks, NEW.available_langs, NEW.last_job_id, NEW.last_job_id)
  ON CONFLICT (video_id, lang, content_sha256) DO UPDATE SET last_seen_at = now(), last_job_id = excluded.last_job_id;
  IF TG_OP = 'INSERT' THEN
    INSERT INTO events (type, data, source_id, video_id)
    VALUES ('transcript.added',
      jsonb_build_object('videoId', NEW.video_id, 'sourceId', src, 'lang', NEW.lang, 'sha256', NEW.content_sha256, 'jobId', NEW.last_job_id, 'origin', NEW.origin),
      src, NEW.video_id);
  ELSE
    -- what differs, for a consumer that wants only new words (`text`) and not, say, a language
    -- added to the video (`availableLangs`)
    IF NEW.text IS DISTINCT FROM OLD.text THEN changed := changed || 'text'::text; END IF;
    IF NEW.chunks IS DISTINCT FROM OLD.chunks THEN changed := changed || 'chunks'::text; END IF;
    IF NEW.available_langs IS DISTINCT FROM OLD.available_langs THEN changed := changed || 'availableLangs'::text; END IF;
    IF NEW.origin IS DISTINCT FROM OLD.origin THEN changed := changed || 'origin'::text; END IF;
    INSERT INTO events (type, data, source_id, video_id)
    VALUES ('transcript.changed',
      jsonb_build_object('videoId', NEW.video_id, 'sourceId', src, 'lang', NEW.lang, 'sha256', NEW.content_sha256,
        'previousSha256', OLD.content_sha256, 'jobId', NEW.last_job_id, 'origin', NEW.origin, 'changed', to_jsonb(changed)),
      src, NEW.video_id);
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER "transcripts_added" AFTER INSERT ON "transcripts" DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION transcripts_history();
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER "transcripts_changed" AFTER UPDATE ON "transcripts" DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (OLD.content_sha256 IS DISTINCT FROM NEW.content_sha256)
  EXECUTE FUNCTION transcripts_history();
