ALTER TABLE "sources" DROP CONSTRAINT "sources_kind_ck";--> statement-breakpoint
DROP INDEX "batches_one_in_flight_uq";--> statement-breakpoint
ALTER TABLE "batches" ADD COLUMN "mode" text DEFAULT 'batch' NOT NULL;--> statement-breakpoint
ALTER TABLE "sources" ADD COLUMN "include" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "sources" ADD COLUMN "search" jsonb;--> statement-breakpoint
ALTER TABLE "sources" ADD COLUMN "generate_missing" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "sources" ADD COLUMN "max_generate_minutes" integer;--> statement-breakpoint
ALTER TABLE "sync_runs" ADD COLUMN "listing_credits" integer;--> statement-breakpoint
ALTER TABLE "transcripts" ADD COLUMN "origin" text DEFAULT 'captions' NOT NULL;--> statement-breakpoint
ALTER TABLE "batches" ADD CONSTRAINT "batches_mode_ck" CHECK ("batches"."mode" in ('batch', 'generate') and ("batches"."mode" = 'batch' or "batches"."kind" = 'transcript'));--> statement-breakpoint
ALTER TABLE "sources" ADD CONSTRAINT "sources_include_ck" CHECK ("sources"."include" <@ array['shorts', 'live']::text[]);--> statement-breakpoint
ALTER TABLE "sources" ADD CONSTRAINT "sources_max_generate_minutes_ck" CHECK ("sources"."max_generate_minutes" is null or "sources"."max_generate_minutes" >= 1);--> statement-breakpoint
ALTER TABLE "sources" ADD CONSTRAINT "sources_kind_ck" CHECK ("sources"."kind" in ('playlist', 'channel', 'videos', 'search'));--> statement-breakpoint
ALTER TABLE "transcripts" ADD CONSTRAINT "transcripts_origin_ck" CHECK ("transcripts"."origin" in ('captions', 'generated'));