-- vsi: backward-compatible
-- Translated transcripts (issue #30, part 2: `--translate`): a source's target languages and its
-- minute budget, a transcript's origin `translation` with the language (and content hash) it was
-- translated from, and `translations`, which claims each one bought (once per video, language and
-- source content) and records those a budget refused. Additive, and the checks only widened: a
-- build of 0019 keeps working on it (it never writes a translation; its captions replace one).
CREATE TABLE "translations" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "translations_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"video_id" text NOT NULL,
	"lang" text NOT NULL,
	"from_lang" text NOT NULL,
	"from_sha256" text NOT NULL,
	"source_id" integer,
	"state" text NOT NULL,
	"duration_s" double precision NOT NULL,
	"minutes" integer NOT NULL,
	"credits_estimated" integer NOT NULL,
	"detail" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "translations_state_ck" CHECK ("translations"."state" in ('sending', 'stored', 'failed', 'unknown', 'refused-budget'))
);
--> statement-breakpoint
ALTER TABLE "events" DROP CONSTRAINT "events_type_ck";--> statement-breakpoint
ALTER TABLE "transcripts" DROP CONSTRAINT "transcripts_origin_ck";--> statement-breakpoint
ALTER TABLE "sources" ADD COLUMN "translate_langs" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "sources" ADD COLUMN "max_translate_minutes" integer;--> statement-breakpoint
ALTER TABLE "transcripts" ADD COLUMN "translated_from" text;--> statement-breakpoint
ALTER TABLE "transcripts" ADD COLUMN "translated_from_sha256" text;--> statement-breakpoint
ALTER TABLE "translations" ADD CONSTRAINT "translations_source_id_sources_id_fk" FOREIGN KEY ("source_id") REFERENCES "public"."sources"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "translations_bought_uq" ON "translations" USING btree ("video_id","lang","from_sha256") WHERE "translations"."state" in ('sending', 'stored', 'failed', 'unknown');--> statement-breakpoint
CREATE UNIQUE INDEX "translations_refused_uq" ON "translations" USING btree ("source_id","video_id","lang") WHERE "translations"."state" = 'refused-budget';--> statement-breakpoint
CREATE INDEX "translations_source_idx" ON "translations" USING btree ("source_id","state");--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_type_ck" CHECK ("events"."type" in ('video.added', 'video.changed', 'video.gone', 'video.returned', 'transcript.added', 'transcript.changed', 'translation.refused', 'page.added', 'page.changed', 'page.gone', 'page.returned', 'batch.completed', 'batch.expired', 'source.synced', 'source.failed', 'account.hold', 'account.hold_lifted'));--> statement-breakpoint
ALTER TABLE "sources" ADD CONSTRAINT "sources_max_translate_minutes_ck" CHECK ("sources"."max_translate_minutes" is null or "sources"."max_translate_minutes" >= 1);--> statement-breakpoint
ALTER TABLE "sources" ADD CONSTRAINT "sources_translate_budget_ck" CHECK (cardinality("sources"."translate_langs") = 0 or "sources"."max_translate_minutes" is not null);--> statement-breakpoint
ALTER TABLE "transcripts" ADD CONSTRAINT "transcripts_origin_ck" CHECK ("transcripts"."origin" in ('captions', 'generated', 'translation'));
--> statement-breakpoint
-- Custom SQL: a translated transcript's events (and history, through the same triggers) name the
-- source that bought it and the language it was translated from. A translation is stored with
-- `last_job_id` = 'translation:<translations.id>' (no batch): its source is that row's. Same
-- functions as migrations/0010 otherwise.
CREATE OR REPLACE FUNCTION "transcripts_added"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH versions AS (
    INSERT INTO transcript_versions (video_id, lang, content_sha256, text, chunks, available_langs, job_id, last_job_id)
    SELECT video_id, lang, content_sha256, text, chunks, available_langs, last_job_id, last_job_id FROM new_rows
    ON CONFLICT (video_id, lang, content_sha256) DO UPDATE SET last_seen_at = now(), last_job_id = excluded.last_job_id
  )
  INSERT INTO event_queue (type, data, source_id, video_id)
  SELECT 'transcript.added',
    jsonb_build_object('videoId', n.video_id, 'sourceId', coalesce(b.source_id, tr.source_id), 'lang', n.lang,
      'sha256', n.content_sha256, 'jobId', n.last_job_id, 'origin', n.origin)
      || CASE WHEN n.translated_from IS NOT NULL THEN jsonb_build_object('translatedFrom', n.translated_from) ELSE '{}'::jsonb END,
    coalesce(b.source_id, tr.source_id), n.video_id
  FROM new_rows n
    LEFT JOIN batches b ON b.job_id = n.last_job_id
    LEFT JOIN translations tr ON n.last_job_id LIKE 'translation:%' AND tr.id::text = substr(n.last_job_id, 13)
  ORDER BY n.video_id, n.lang;
  IF FOUND THEN PERFORM event_flush_at_commit(); END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "transcripts_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH d AS (
    SELECT n.video_id, n.lang, n.content_sha256, n.text, n.chunks, n.available_langs, n.last_job_id, n.origin,
      n.translated_from,
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
    jsonb_build_object('videoId', d.video_id, 'sourceId', coalesce(b.source_id, tr.source_id), 'lang', d.lang,
      'sha256', d.content_sha256, 'previousSha256', d.old_sha, 'jobId', d.last_job_id, 'origin', d.origin,
      -- what differs, for a consumer that wants only new words (`text`) and not, say, a
      -- language added to the video (`availableLangs`)
      'changed', to_jsonb(array_remove(ARRAY[
        CASE WHEN d.text IS DISTINCT FROM d.old_text THEN 'text' END,
        CASE WHEN d.chunks IS DISTINCT FROM d.old_chunks THEN 'chunks' END,
        CASE WHEN d.available_langs IS DISTINCT FROM d.old_langs THEN 'availableLangs' END,
        CASE WHEN d.origin IS DISTINCT FROM d.old_origin THEN 'origin' END], NULL)))
      || CASE WHEN d.translated_from IS NOT NULL THEN jsonb_build_object('translatedFrom', d.translated_from) ELSE '{}'::jsonb END,
    coalesce(b.source_id, tr.source_id), d.video_id
  FROM d
    LEFT JOIN batches b ON b.job_id = d.last_job_id
    LEFT JOIN translations tr ON d.last_job_id LIKE 'translation:%' AND tr.id::text = substr(d.last_job_id, 13)
  ORDER BY d.video_id, d.lang;
  IF FOUND THEN PERFORM event_flush_at_commit(); END IF;
  RETURN NULL;
END
$$;
