CREATE TABLE "batch_items" (
	"job_id" text NOT NULL,
	"video_id" text NOT NULL,
	"state" text NOT NULL,
	"error_code" text,
	"payload" jsonb,
	"landed_at" timestamp with time zone,
	"sunk_at" timestamp with time zone,
	"payload_raw" text,
	"reason" text,
	"resubmitted_in" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "batch_items_job_id_video_id_pk" PRIMARY KEY("job_id","video_id"),
	CONSTRAINT "batch_items_state_ck" CHECK ("batch_items"."state" in ('processing', 'landed', 'sunk', 'failed', 'retryable', 'quarantined'))
);
--> statement-breakpoint
CREATE TABLE "batches" (
	"job_id" text PRIMARY KEY NOT NULL,
	"source_id" integer,
	"kind" text NOT NULL,
	"lang" text,
	"status" text NOT NULL,
	"error_code" text,
	"total" integer,
	"succeeded" integer,
	"failed" integer,
	"credits_estimated" integer NOT NULL,
	"submitted_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone,
	"polls" integer DEFAULT 0 NOT NULL,
	"request" jsonb NOT NULL,
	"text_only" boolean,
	"last_polled_at" timestamp with time zone,
	"next_poll_at" timestamp with time zone,
	"terminal_at" timestamp with time zone,
	"replay_of" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "batches_kind_ck" CHECK ("batches"."kind" in ('video', 'transcript')),
	CONSTRAINT "batches_status_ck" CHECK ("batches"."status" in ('submitted', 'queued', 'active', 'completed', 'failed', 'expired')),
	CONSTRAINT "batches_lang_ck" CHECK ("batches"."kind" = 'transcript' or "batches"."lang" is null)
);
--> statement-breakpoint
CREATE TABLE "channels" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text,
	"handle" text,
	"description" text,
	"subscriber_count" bigint,
	"video_count" bigint,
	"view_count" bigint,
	"thumbnail" text,
	"banner" text,
	"raw" jsonb,
	"fetched_at" timestamp with time zone,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "credit_snapshots" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "credit_snapshots_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"taken_at" timestamp with time zone DEFAULT now() NOT NULL,
	"organization_id" text,
	"plan" text,
	"max_credits" bigint,
	"used_credits" bigint,
	"reason" text,
	"source_id" integer
);
--> statement-breakpoint
CREATE TABLE "playlists" (
	"id" text PRIMARY KEY NOT NULL,
	"title" text,
	"description" text,
	"video_count" bigint,
	"view_count" bigint,
	"last_updated" timestamp with time zone,
	"channel_id" text,
	"channel_name" text,
	"raw" jsonb,
	"fetched_at" timestamp with time zone,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "source_videos" (
	"source_id" integer NOT NULL,
	"video_id" text NOT NULL,
	"first_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_listed_at" timestamp with time zone,
	CONSTRAINT "source_videos_source_id_video_id_pk" PRIMARY KEY("source_id","video_id")
);
--> statement-breakpoint
CREATE TABLE "sources" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "sources_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"kind" text NOT NULL,
	"ref" text NOT NULL,
	"external_id" text NOT NULL,
	"max_videos" integer NOT NULL,
	"langs" text[] DEFAULT '{}'::text[] NOT NULL,
	"text_only" boolean DEFAULT false NOT NULL,
	"cron" text,
	"paused" boolean DEFAULT false NOT NULL,
	"last_synced_at" timestamp with time zone,
	"title" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_error" text,
	"last_error_code" text,
	"last_error_at" timestamp with time zone,
	"initial_sync_done" boolean DEFAULT false NOT NULL,
	CONSTRAINT "sources_kind_ck" CHECK ("sources"."kind" in ('playlist', 'channel')),
	CONSTRAINT "sources_max_videos_ck" CHECK ("sources"."max_videos" >= 1)
);
--> statement-breakpoint
CREATE TABLE "sync_runs" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "sync_runs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"source_id" integer,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	"outcome" text,
	"detail" text,
	"videos_listed" integer,
	"videos_submitted" integer,
	"credits_estimated" integer,
	"job_ids" text[],
	CONSTRAINT "sync_runs_outcome_ck" CHECK ("sync_runs"."outcome" is null or "sync_runs"."outcome" in ('submitted', 'up-to-date', 'refused-credits', 'refused-upstream', 'error'))
);
--> statement-breakpoint
CREATE TABLE "transcripts" (
	"video_id" text NOT NULL,
	"lang" text NOT NULL,
	"text" text NOT NULL,
	"chunks" jsonb,
	"available_langs" text[],
	"content_sha256" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"first_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_job_id" text,
	"text_only" boolean,
	CONSTRAINT "transcripts_video_id_lang_pk" PRIMARY KEY("video_id","lang")
);
--> statement-breakpoint
CREATE TABLE "video_sync" (
	"video_id" text NOT NULL,
	"kind" text NOT NULL,
	"lang" text DEFAULT '' NOT NULL,
	"last_job_id" text,
	"last_state" text,
	"last_error_code" text,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_check_at" timestamp with time zone,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "video_sync_video_id_kind_lang_pk" PRIMARY KEY("video_id","kind","lang"),
	CONSTRAINT "video_sync_kind_ck" CHECK ("video_sync"."kind" in ('video', 'transcript'))
);
--> statement-breakpoint
CREATE TABLE "videos" (
	"id" text PRIMARY KEY NOT NULL,
	"title" text,
	"description" text,
	"duration_s" double precision,
	"channel_id" text,
	"channel_name" text,
	"tags" text[],
	"thumbnail" text,
	"upload_date" timestamp with time zone,
	"view_count" bigint,
	"like_count" bigint,
	"transcript_languages" text[],
	"first_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_job_id" text
);
--> statement-breakpoint
ALTER TABLE "batch_items" ADD CONSTRAINT "batch_items_job_id_batches_job_id_fk" FOREIGN KEY ("job_id") REFERENCES "public"."batches"("job_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "batches" ADD CONSTRAINT "batches_source_id_sources_id_fk" FOREIGN KEY ("source_id") REFERENCES "public"."sources"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "credit_snapshots" ADD CONSTRAINT "credit_snapshots_source_id_sources_id_fk" FOREIGN KEY ("source_id") REFERENCES "public"."sources"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "source_videos" ADD CONSTRAINT "source_videos_source_id_sources_id_fk" FOREIGN KEY ("source_id") REFERENCES "public"."sources"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sync_runs" ADD CONSTRAINT "sync_runs_source_id_sources_id_fk" FOREIGN KEY ("source_id") REFERENCES "public"."sources"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "batch_items_landed_idx" ON "batch_items" USING btree ("job_id","video_id") WHERE "batch_items"."state" = 'landed';--> statement-breakpoint
CREATE INDEX "batch_items_retryable_idx" ON "batch_items" USING btree ("job_id","video_id") WHERE "batch_items"."state" = 'retryable' and "batch_items"."resubmitted_in" is null;--> statement-breakpoint
CREATE INDEX "batch_items_video_id_idx" ON "batch_items" USING btree ("video_id");--> statement-breakpoint
CREATE UNIQUE INDEX "batches_one_in_flight_uq" ON "batches" USING btree ("source_id","kind",coalesce("lang", '')) WHERE "batches"."status" in ('submitted', 'queued', 'active');--> statement-breakpoint
CREATE INDEX "batches_in_flight_idx" ON "batches" USING btree ("status","next_poll_at") WHERE "batches"."status" in ('submitted', 'queued', 'active');--> statement-breakpoint
CREATE INDEX "batches_source_id_idx" ON "batches" USING btree ("source_id","submitted_at");--> statement-breakpoint
CREATE INDEX "credit_snapshots_taken_at_idx" ON "credit_snapshots" USING btree ("taken_at");--> statement-breakpoint
CREATE INDEX "source_videos_video_id_idx" ON "source_videos" USING btree ("video_id");--> statement-breakpoint
CREATE UNIQUE INDEX "sources_kind_external_id_uq" ON "sources" USING btree ("kind","external_id");--> statement-breakpoint
CREATE INDEX "sync_runs_source_started_idx" ON "sync_runs" USING btree ("source_id","started_at");--> statement-breakpoint
CREATE INDEX "video_sync_next_check_idx" ON "video_sync" USING btree ("next_check_at") WHERE "video_sync"."next_check_at" is not null;--> statement-breakpoint
CREATE INDEX "videos_channel_id_idx" ON "videos" USING btree ("channel_id");