-- vsi: backward-compatible
-- Media of every platform (issue #30 part 1): media items of the four social platforms and media
-- files (`media`), which source lists which (`source_media`), their search segments
-- (`media_segments`), a media source's `--mode` (`sources.media_mode`); a sync's metadata reads
-- and media transcript jobs recorded as batches (kind media, mode media or generate).
-- Additive, and the checks only widened: a build of 0020 keeps working on it.
CREATE TABLE "media" (
	"url" text PRIMARY KEY NOT NULL,
	"platform" text NOT NULL,
	"type" text NOT NULL,
	"media_id" text,
	"title" text,
	"description" text,
	"author_username" text,
	"author_display_name" text,
	"author" jsonb,
	"views" bigint,
	"likes" bigint,
	"comments" bigint,
	"shares" bigint,
	"media_info" jsonb,
	"duration_s" double precision,
	"tags" text[] DEFAULT '{}'::text[] NOT NULL,
	"posted_at" timestamp with time zone,
	"additional_data" jsonb,
	"metadata_sha256" text NOT NULL,
	"transcript_state" text NOT NULL,
	"transcript_mode" text,
	"transcript_lang" text,
	"transcript_content" jsonb,
	"transcript_text" text,
	"transcript_sha256" text,
	"transcript_attempts" integer DEFAULT 0 NOT NULL,
	"transcript_job_id" text,
	"transcript_reason" text,
	"transcript_at" timestamp with time zone,
	"first_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"job_id" text,
	"source_id" integer,
	CONSTRAINT "media_transcript_state_ck" CHECK ("media"."transcript_state" in ('none', 'pending', 'stored', 'empty', 'failed', 'expired', 'over-budget', 'retry'))
);
--> statement-breakpoint
CREATE TABLE "media_segments" (
	"url" text NOT NULL,
	"n" integer NOT NULL,
	"offset_ms" bigint,
	"text" text NOT NULL,
	"tsv" "tsvector" NOT NULL,
	CONSTRAINT "media_segments_url_n_pk" PRIMARY KEY("url","n")
);
--> statement-breakpoint
CREATE TABLE "source_media" (
	"source_id" integer NOT NULL,
	"url" text NOT NULL,
	"first_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "source_media_source_id_url_pk" PRIMARY KEY("source_id","url")
);
--> statement-breakpoint
ALTER TABLE "batch_submissions" DROP CONSTRAINT "batch_submissions_kind_ck";--> statement-breakpoint
ALTER TABLE "batches" DROP CONSTRAINT "batches_kind_ck";--> statement-breakpoint
ALTER TABLE "batches" DROP CONSTRAINT "batches_mode_ck";--> statement-breakpoint
ALTER TABLE "events" DROP CONSTRAINT "events_type_ck";--> statement-breakpoint
ALTER TABLE "sources" DROP CONSTRAINT "sources_kind_ck";--> statement-breakpoint
ALTER TABLE "video_sync" DROP CONSTRAINT "video_sync_kind_ck";--> statement-breakpoint
ALTER TABLE "sources" ADD COLUMN "media_mode" text;--> statement-breakpoint
ALTER TABLE "source_media" ADD CONSTRAINT "source_media_source_id_sources_id_fk" FOREIGN KEY ("source_id") REFERENCES "public"."sources"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "media_updated_at_idx" ON "media" USING btree ("updated_at");--> statement-breakpoint
CREATE INDEX "media_segments_tsv_idx" ON "media_segments" USING gin ("tsv");--> statement-breakpoint
CREATE INDEX "source_media_url_idx" ON "source_media" USING btree ("url");--> statement-breakpoint
ALTER TABLE "batch_submissions" ADD CONSTRAINT "batch_submissions_kind_ck" CHECK ("batch_submissions"."kind" in ('video', 'transcript', 'page', 'media'));--> statement-breakpoint
ALTER TABLE "batches" ADD CONSTRAINT "batches_kind_ck" CHECK ("batches"."kind" in ('video', 'transcript', 'page', 'media'));--> statement-breakpoint
ALTER TABLE "batches" ADD CONSTRAINT "batches_mode_ck" CHECK ("batches"."mode" in ('batch', 'generate', 'crawl', 'scrape', 'media') and ("batches"."mode" = 'batch' or ("batches"."mode" = 'generate' and "batches"."kind" = 'transcript') or ("batches"."mode" = 'generate' and "batches"."kind" = 'media') or ("batches"."mode" in ('crawl', 'scrape') and "batches"."kind" = 'page') or ("batches"."mode" = 'media' and "batches"."kind" = 'media')));--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_type_ck" CHECK ("events"."type" in ('video.added', 'video.changed', 'video.gone', 'video.returned', 'transcript.added', 'transcript.changed', 'translation.refused', 'page.added', 'page.changed', 'page.gone', 'page.returned', 'media.added', 'media.changed', 'batch.completed', 'batch.expired', 'source.synced', 'source.failed', 'account.hold', 'account.hold_lifted'));--> statement-breakpoint
ALTER TABLE "sources" ADD CONSTRAINT "sources_media_mode_ck" CHECK ("sources"."media_mode" is null or "sources"."media_mode" in ('native', 'auto', 'generate'));--> statement-breakpoint
ALTER TABLE "sources" ADD CONSTRAINT "sources_kind_ck" CHECK ("sources"."kind" in ('playlist', 'channel', 'videos', 'search', 'website', 'pages', 'media'));--> statement-breakpoint
ALTER TABLE "video_sync" ADD CONSTRAINT "video_sync_kind_ck" CHECK ("video_sync"."kind" in ('video', 'transcript', 'page', 'media'));