CREATE TABLE "batch_item_counts" (
	"job_id" text NOT NULL,
	"state" text NOT NULL,
	"error_code" text DEFAULT '' NOT NULL,
	"n" integer NOT NULL,
	CONSTRAINT "batch_item_counts_job_id_state_error_code_pk" PRIMARY KEY("job_id","state","error_code")
);
--> statement-breakpoint
CREATE TABLE "credit_reservations" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "credit_reservations_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"source_id" integer,
	"credits" integer NOT NULL,
	"holder" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"released_at" timestamp with time zone,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "credit_reservations_credits_ck" CHECK ("credit_reservations"."credits" >= 0)
);
--> statement-breakpoint
CREATE TABLE "item_counts" (
	"shard" smallint NOT NULL,
	"state" text NOT NULL,
	"error_code" text DEFAULT '' NOT NULL,
	"reason_code" text DEFAULT '' NOT NULL,
	"n" bigint NOT NULL,
	CONSTRAINT "item_counts_shard_state_error_code_reason_code_pk" PRIMARY KEY("shard","state","error_code","reason_code")
);
--> statement-breakpoint
CREATE TABLE "prune_runs" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "prune_runs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	"dry_run" boolean DEFAULT false NOT NULL,
	"trigger" text NOT NULL,
	"freed" jsonb,
	"error" text
);
--> statement-breakpoint
CREATE TABLE "source_stats" (
	"source_id" integer PRIMARY KEY NOT NULL,
	"videos" integer DEFAULT 0 NOT NULL,
	"transcripts" integer DEFAULT 0 NOT NULL,
	"refreshed_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "batch_items" ADD COLUMN "payload_sha256" text;--> statement-breakpoint
ALTER TABLE "batch_items" ADD COLUMN "payload_bytes" integer;--> statement-breakpoint
ALTER TABLE "batch_items" ADD COLUMN "payload_pruned_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "sources" ADD COLUMN "max_credits_per_day" integer;--> statement-breakpoint
ALTER TABLE "batch_item_counts" ADD CONSTRAINT "batch_item_counts_job_id_batches_job_id_fk" FOREIGN KEY ("job_id") REFERENCES "public"."batches"("job_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "credit_reservations" ADD CONSTRAINT "credit_reservations_source_id_sources_id_fk" FOREIGN KEY ("source_id") REFERENCES "public"."sources"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "source_stats" ADD CONSTRAINT "source_stats_source_id_sources_id_fk" FOREIGN KEY ("source_id") REFERENCES "public"."sources"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "credit_reservations_open_idx" ON "credit_reservations" USING btree ("expires_at") WHERE "credit_reservations"."released_at" is null;--> statement-breakpoint
CREATE INDEX "credit_reservations_released_idx" ON "credit_reservations" USING btree ("released_at");--> statement-breakpoint
CREATE INDEX "prune_runs_started_idx" ON "prune_runs" USING btree ("started_at");--> statement-breakpoint
CREATE INDEX "batch_items_prunable_idx" ON "batch_items" USING btree (coalesce("sunk_at", "landed_at")) WHERE "batch_items"."payload_pruned_at" is null and "batch_items"."state" in ('sunk', 'failed');--> statement-breakpoint
CREATE INDEX "batches_submitted_at_idx" ON "batches" USING btree ("submitted_at");--> statement-breakpoint
CREATE INDEX "sync_runs_started_idx" ON "sync_runs" USING btree ("started_at");--> statement-breakpoint
ALTER TABLE "sources" ADD CONSTRAINT "sources_max_credits_per_day_ck" CHECK ("sources"."max_credits_per_day" is null or "sources"."max_credits_per_day" >= 1);