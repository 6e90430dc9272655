CREATE TABLE "batch_submissions" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "batch_submissions_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"source_id" integer,
	"kind" text NOT NULL,
	"lang" text,
	"request" jsonb NOT NULL,
	"credits_estimated" integer NOT NULL,
	"used_credits_before" bigint,
	"state" text NOT NULL,
	"job_id" text,
	"detail" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "batch_submissions_state_ck" CHECK ("batch_submissions"."state" in ('sending', 'submitted', 'failed', 'unknown', 'not-created', 'lost', 'released')),
	CONSTRAINT "batch_submissions_kind_ck" CHECK ("batch_submissions"."kind" in ('video', 'transcript'))
);
--> statement-breakpoint
CREATE TABLE "upstream_holds" (
	"code" text PRIMARY KEY NOT NULL,
	"scope" text NOT NULL,
	"reason" text NOT NULL,
	"since" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "upstream_holds_code_ck" CHECK ("upstream_holds"."code" in ('unauthorized', 'upgrade-required', 'credits')),
	CONSTRAINT "upstream_holds_scope_ck" CHECK ("upstream_holds"."scope" in ('all', 'submit'))
);
--> statement-breakpoint
ALTER TABLE "batch_submissions" ADD CONSTRAINT "batch_submissions_source_id_sources_id_fk" FOREIGN KEY ("source_id") REFERENCES "public"."sources"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "batch_submissions_pending_idx" ON "batch_submissions" USING btree ("source_id","kind") WHERE "batch_submissions"."state" in ('sending', 'unknown', 'lost');